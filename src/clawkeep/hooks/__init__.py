"""Post-event hooks (session-memory on reset, the refusal log, the G5 metrics counters)."""

from __future__ import annotations

from ..events import SessionReset
from ..runtime import Runtime


def install(rt: Runtime) -> None:
    """Subscribe every built-in hook to the runtime's events. The session-memory hook's module
    (history sanitising, workspace files) is imported by the first reset, not by every process."""

    def on_reset(event: SessionReset) -> None:
        from .session_memory import on_reset as write_excerpt  # noqa: PLC0415 - first reset only

        write_excerpt(rt, event)

    rt.events.subscribe(SessionReset, on_reset)
    from .metrics import install as install_metrics  # noqa: PLC0415 - keeps `hooks` cheap to import

    install_metrics(rt)
    from .refusals import install as install_refusal_log  # noqa: PLC0415

    install_refusal_log(rt)
