"""Dreaming's service functions: what the CLI, the slash command and the API call.

Previews (`promote` without apply, `promote_explain`, `rem_harness`) load the state, fold the
waiting traces and rank in memory, and write nothing — not even the trace logs they read.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .. import api
from ..config import DeepPhaseConfig
from ..config.model import write_override
from ..errors import InputError
from ..memory import service as memory
from ..runtime import Runtime
from ..text.query import MAX_QUERY_CHARS
from . import backfill, deep, light, promotions, rem
from .claims import concept_tags
from .rank import WEIGHTS
from .schedule import next_run, settings, zone_for
from .sources import LiveSources
from .store import DreamsDir, held_sweep_lock, shared_store
from .sweep import model_for, new_run_id, run_sweep
from .working import Working, query_hash

ENABLED_KEY = ("plugins", "entries", "memory-core", "config", "dreaming", "enabled")


def dreams_dir(rt: Runtime) -> DreamsDir:
    return DreamsDir(memory.workspace(rt))


def status(rt: Runtime) -> api.DreamingStatus:
    cfg = settings(rt.config)
    dreams = dreams_dir(rt)
    state = dreams.read_json("state.json", {}) if dreams.root.is_dir() else {}
    entries, _ = dreams.load_store() if dreams.root.is_dir() else ({}, [])
    now = rt.now()
    today = datetime.fromtimestamp(now / 1000, tz=zone_for(rt.config)).date()
    promoted_today = sum(1 for e in entries.values() if e.promoted_at and e.promoted_item and e.promoted_run
                         and datetime.fromtimestamp(e.promoted_at / 1000, tz=zone_for(rt.config)).date() == today)
    return api.DreamingStatus(
        enabled=cfg.enabled, frequency=cfg.frequency,
        timezone=cfg.timezone or rt.config.session.reset.timezone,
        model=cfg.model, next_run=next_run(rt.config, now).isoformat() if cfg.enabled else None,
        last_sweep_at=state.get("lastSweepAt"), last_run_id=state.get("lastRunId"),
        phases=state.get("phases") or {}, lock=dreams.sweep_lock().holder() if dreams.root.is_dir() else None,
        short_term=len(entries), staged=sum(1 for e in entries.values() if e.staged_at and not e.promoted_at),
        grounded=sum(1 for e in entries.values() if e.grounded_count),
        promoted_today=promoted_today, pending_traces=_pending(dreams),
        dreams_file=str(dreams.workspace / "DREAMS.md"),
    )


def _pending(dreams: DreamsDir) -> int:
    total = 0
    for path in dreams.all_logs():
        try:
            with open(path, "rb") as log:
                total += sum(1 for _ in log)
        except OSError:
            continue
    return total


def set_enabled(rt: Runtime, enabled: bool) -> api.DreamingToggle:
    """`/dreaming on|off`: the overrides file beside the config file (the config file is never rewritten)."""
    path = write_override(rt.config_path or rt.home / "clawkeep.json5", ENABLED_KEY, enabled)
    settings(rt.config).enabled = enabled
    return api.DreamingToggle(enabled=enabled, config=str(path))


def gates_for(rt: Runtime, **overrides: Any) -> DeepPhaseConfig:
    """The deep-phase gates, with any CLI overrides (min_score, min_recall_count, min_unique_queries)."""
    base = settings(rt.config).deep
    changes = {k: v for k, v in overrides.items() if v is not None}
    return base.model_copy(update=changes) if changes else base


def preview(rt: Runtime, *, limit: int | None = None, gates: DeepPhaseConfig | None = None,
            with_rem: bool = False) -> dict[str, Any]:
    """Light, (REM) and Deep's decisions on the current state, in memory only."""
    now = rt.now()
    dreams = dreams_dir(rt)
    gates = gates or settings(rt.config).deep
    work = Working.load(dreams, settings(rt.config).light.dedupe_similarity)
    live = LiveSources(dreams.workspace, rt.store() if rt.has_database() else None)
    logs = [p for p in dreams.all_logs() if p.name not in work.folded]
    light_report = light.run(work, live, rt.config, dreams.read_traces(logs), now, None) \
        if dreams.workspace.is_dir() else light.LightReport()
    rem_report = rem.run(work, rt.config, now, model_for(rt), reinforce=False) if with_rem else None
    plan = deep.plan(rt, work, live, now, new_run_id(rt, now), gates, limit) if dreams.workspace.is_dir() else None
    return {"light": light_report, "rem": rem_report, "deep": plan, "work": work}


def promote(rt: Runtime, *, apply: bool = False, limit: int | None = None, **gates: Any
            ) -> api.SweepReport | api.PromoteReport:
    """`memory promote`: the ranked candidates and what Deep would do; `apply` runs Light and Deep now."""
    if limit is not None and not 1 <= limit <= 1000:
        raise InputError(f"limit {limit} is out of range; allowed 1-1000")
    chosen = gates_for(rt, **gates)
    if apply:
        result = run_sweep(rt, phases=("light", "deep"), limit=limit, gates=chosen)
        return result.model_copy(update={"applied": True})
    found = preview(rt, limit=limit, gates=chosen)
    plan = found["deep"]
    if plan is None:
        return api.PromoteReport(applied=False, candidates=[], decisions=[])
    shown = [r.to_json() for r in plan.ranked[:limit or chosen.limit]]
    return api.PromoteReport(applied=False, candidates=shown, decisions=[d.to_json() for d in plan.decisions],
                             gates=chosen.model_dump(by_alias=True))


def explain(rt: Runtime, query: str) -> api.ExplainReport:
    """`memory promote-explain QUERY`: every candidate the query is about (its words, its tags, or a
    recall by that very query), with each signal's value, the gates and Deep's decision."""
    if not query or not query.strip():
        raise InputError("promote-explain needs a query (words of the candidate you ask about)")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(f"promote-explain query is {len(query)} characters long; at most {MAX_QUERY_CHARS} are "
                         "allowed (a few words of the candidate are enough)")
    found = preview(rt)
    plan = found["deep"]
    if plan is None:
        return api.ExplainReport(query=query, candidates=[])
    wanted = set(concept_tags(query, limit=32))
    folded = query.casefold().strip()
    qhash = query_hash(query)
    decided = {d.ranked.entry.key: d for d in plan.decisions}
    rows = []
    for ranked in plan.ranked:
        entry = ranked.entry
        if not (wanted & set(concept_tags(entry.text, limit=32)) or folded in entry.text.casefold()
                or qhash in entry.query_hashes):
            continue
        row = ranked.to_json()
        decision = decided.get(entry.key)
        row["decision"] = decision.to_json()["status"] if decision else ("not chosen" if ranked.passed else "gated")
        row["decisionReason"] = decision.reason if decision else ranked.rejected
        row["queries"] = entry.queries
        rows.append(row)
    return api.ExplainReport(query=query, weights=dict(WEIGHTS), gates=plan_gates(rt), candidates=rows)


def plan_gates(rt: Runtime) -> dict[str, Any]:
    return settings(rt.config).deep.model_dump(by_alias=True)


def undo(rt: Runtime, target: str | None) -> api.UndoReport:
    """Undo a promotion run (default: the last) or one promoted item, under the sweep lock."""
    dreams = dreams_dir(rt)
    with held_sweep_lock(dreams, "promote-undo", shared_store(rt)):
        result = promotions.undo(dreams, dreams.workspace, target)
        work = Working.load(dreams, settings(rt.config).light.dedupe_similarity)
        now = rt.now()
        for item in result["items"]:
            entry = work.entries.get(item["key"])
            if entry is not None:
                entry.promoted_at = entry.promoted_item = entry.promoted_run = None
                entry.undone_at = now
        work.save(now)
    memory.sync_index(rt)
    return api.UndoReport(run_id=result["runId"], restored=result["restored"], items=result["items"])


def harness(rt: Runtime, *, path: str | None = None, grounded: bool = False) -> api.HarnessReport:
    """`memory rem-harness`: REM's themes, the ranked candidates and Deep's decisions on the current
    state — or, with `path` (grounded), each historical note read as its own day. Writes nothing."""
    if path is not None:
        return api.HarnessReport(grounded=True, days=[d.to_json() for d in backfill.grounded(rt, Path(path))])
    if grounded:
        raise InputError("rem-harness --grounded reads historical notes: give --path DIR as well")
    found = preview(rt, with_rem=True)
    plan = found["deep"]
    return api.HarnessReport(
        grounded=False, rem=found["rem"].to_json() if found["rem"] else None,
        candidates=[r.to_json() for r in plan.ranked[:settings(rt.config).light.limit]] if plan else [],
        decisions=[d.to_json() for d in plan.decisions] if plan else [],
        memory_preview="\n".join(plan.new_lines) if plan else "")
