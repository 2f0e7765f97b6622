"""The refusal log hook: every write-filter refusal (`MemoryRefused`) goes to the agent's
refusal log (memory/refusals.py), redacted; a log that cannot be written is a warning, never a
failed remember or turn."""

from __future__ import annotations

from ..events import MemoryRefused
from ..memory import refusals
from ..runtime import Runtime


def install(rt: Runtime) -> None:
    rt.events.subscribe(MemoryRefused, lambda event: _record(rt, event))


def _record(rt: Runtime, event: MemoryRefused) -> None:
    try:
        refusals.record(rt, event)
    except OSError as exc:
        rt.log_warning(f"memory refusal log: could not write {refusals.log_path(rt)}: {exc}")
