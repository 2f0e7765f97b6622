"""Dreaming (SPEC Dr1–Dr2): background consolidation of short-term recall into MEMORY.md.

Opt-in (`plugins.entries.memory-core.config.dreaming.enabled`). While it is on, every
memory_search and Active Memory recall leaves a trace (`recorder`); a sweep (`sweep.run_sweep`,
on the `dreaming.frequency` cron via `run_due`, or `clawkeep memory dream`) runs Light (stage
and de-duplicate recent claims), REM (themes) and Deep (rank, gate, re-read, promote through the
ordinary write path), writing DREAMS.md for review and MEMORY.md only in Deep. Every promotion
can be undone (`service.undo`).

For the gateway's loop:

    from clawkeep import dreaming
    wake_at = dreaming.next_run(runtime.config, now)     # a datetime in the Dreaming zone
    dreaming.run_due(runtime)                            # sweeps when due; None otherwise
"""

from importlib import import_module
from typing import TYPE_CHECKING

from .recorder import install

if TYPE_CHECKING:
    from .schedule import is_due, next_run, previous_run
    from .sweep import PHASES, run_due, run_sweep

__all__ = ["PHASES", "install", "is_due", "next_run", "previous_run", "run_due", "run_sweep"]
_LATER = {"is_due": "schedule", "next_run": "schedule", "previous_run": "schedule", "PHASES": "sweep",
          "run_due": "sweep", "run_sweep": "sweep"}


def __getattr__(name: str) -> object:
    # Every engine installs the recorder; the sweep and the schedule (croniter) load when used.
    if name in _LATER:
        return getattr(import_module(f".{_LATER[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
