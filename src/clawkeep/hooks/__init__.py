"""Post-event hooks (session-memory on reset, the refusal log, the G5 metrics counters)."""

from __future__ import annotations

from ..events import SessionReset
from ..runtime import Runtime
from .metrics import install as install_metrics
from .refusals import install as install_refusal_log


def install(rt: Runtime) -> None:
    """Subscribe every built-in hook to the runtime's events. The session-memory hook's module
    (history sanitising, workspace files) is imported by the first reset, not by every process."""

    def on_reset(event: SessionReset) -> None:
        from .session_memory import on_reset as write_excerpt  # deferred: history sanitising, first reset only

        write_excerpt(rt, event)

    rt.events.subscribe(SessionReset, on_reset)
    install_metrics(rt)
    install_refusal_log(rt)
