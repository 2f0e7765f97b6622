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

from .recorder import install
from .schedule import is_due, next_run, previous_run
from .sweep import PHASES, run_due, run_sweep

__all__ = ["PHASES", "install", "is_due", "next_run", "previous_run", "run_due", "run_sweep"]
