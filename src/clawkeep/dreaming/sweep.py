"""One Dreaming sweep: Light → REM → Deep under the sweep lock, then DREAMS.md and the state.

Order of the writes (what a crash at any point leaves):
1. the promotion record (`pending`), then MEMORY.md in one atomic rename, then the record
   (`applied`): a crash leaves MEMORY.md before or after; the next sweep settles the record
   and finds the promoted facts already in memory (duplicates, never written twice);
2. the short-term store, phase signals and checkpoint, in one atomic save (one file): a crash
   before it means the next sweep folds the same traces and notes again, from the same saved
   state; never the new counts with the old checkpoint;
3. the folded trace logs are deleted; DREAMS.md's blocks and diary entry; state.json.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from .. import api
from ..config import DeepPhaseConfig
from ..events import DreamingProgress, MemoryWritten
from ..memory import service as memory
from ..memory.workspace import ensure_workspace
from ..runtime import Runtime
from . import deep, diary, dreams_file, light, promotions, rem
from .schedule import is_due, settings, zone_for
from .sources import LiveSources
from .store import DreamsDir, shared_store
from .working import Working

PHASES = ("light", "rem", "deep")
MAX_RUNS_KEPT = 30


def new_run_id(rt: Runtime, now: int) -> str:
    stamp = datetime.fromtimestamp(now / 1000, tz=zone_for(rt.config))
    return f"d-{stamp:%Y%m%d-%H%M}-{secrets.token_hex(2)}"


def model_for(rt: Runtime) -> Any:
    """REM's and the diary's model: `dreaming.model`, else the agent's primary; None without one."""
    return rt.models.chat_model(settings(rt.config).model)


def run_due(rt: Runtime, now: int | None = None) -> api.SweepReport | None:
    """For the gateway's background loop: run a sweep when the schedule says one is due."""
    now = rt.now() if now is None else now
    ws = memory.workspace(rt)
    last = DreamsDir(ws).read_json("state.json", {}).get("lastSweepAt") if ws.is_dir() else None
    if not is_due(rt.config, last, now):
        return None
    return run_sweep(rt, now, trigger="schedule")


def run_sweep(rt: Runtime, now: int | None = None, *, phases: tuple[str, ...] = PHASES, limit: int | None = None,
              gates: DeepPhaseConfig | None = None, trigger: str = "manual") -> api.SweepReport:
    """Run the phases (in Light → REM → Deep order) now; another sweep holding the lock makes
    this one return `status: locked` at once, with who holds it."""
    now = rt.now() if now is None else now
    ws = memory.workspace(rt)
    run_id = new_run_id(rt, now)
    if not memory.has_memory(rt):
        return api.SweepReport(status="no-workspace", run_id=run_id, workspace=str(ws))
    dreams = DreamsDir(ensure_workspace(ws))
    lock = dreams.sweep_lock(shared_store(rt))
    lease = lock.acquire(run_id)
    if lease is None:
        return api.SweepReport(status="locked", run_id=run_id, holder=lock.holder())
    with lease:
        out = _sweep(rt, dreams, run_id, now, [p for p in PHASES if p in phases], limit,
                     gates or settings(rt.config).deep, trigger)
    # the run as written to state.json (each phase's own report inside), checked against its shape
    return api.SweepReport.model_validate(out)


def _progress(rt: Runtime, run_id: str, step: str, **details: Any) -> None:
    rt.events.publish(DreamingProgress(rt.now(), rt.agent_id, run_id, step, details))


def _sweep(rt: Runtime, dreams: DreamsDir, run_id: str, now: int, phases: list[str], limit: int | None,
           gates: DeepPhaseConfig, trigger: str) -> dict[str, Any]:
    config = rt.config
    ws = dreams.workspace
    _progress(rt, run_id, "started", phases=phases)
    settled = promotions.recover(dreams, ws)
    work = Working.load(dreams, settings(config).light.dedupe_similarity)
    live = LiveSources(ws, rt.store() if rt.has_database() else None)
    when = datetime.fromtimestamp(now / 1000, tz=zone_for(config)).strftime("%Y-%m-%d %H:%M %Z").strip()
    text = dreams_file.read(ws)
    out: dict[str, Any] = {"status": "ok", "runId": run_id, "at": now, "trigger": trigger, "phases": phases}
    light_report = rem_report = None
    logs = []
    if "light" in phases:
        logs = dreams.take_logs(run_id)
        fresh = [p for p in logs if p.name not in work.folded]
        light_report = light.run(work, live, config, dreams.read_traces(fresh), now, dreams.path("session-corpus"))
        work.folded += [p.name for p in fresh]
        text = dreams_file.with_block(text, "light", light.block(light_report, when))
        out["light"] = light_report.to_json()
        _progress(rt, run_id, "light:done", staged=len(light_report.staged))
    model = model_for(rt) if "rem" in phases or "deep" in phases else None
    if "rem" in phases:
        rem_report = rem.run(work, config, now, model)
        text = dreams_file.with_block(text, "rem", rem.block(rem_report, when))
        out["rem"] = rem_report.to_json()
        _progress(rt, run_id, "rem:done", themes=len(rem_report.themes))
    decisions: list[deep.Decision] = []
    if "deep" in phases:
        plan = deep.plan(rt, work, live, now, run_id, gates, limit)
        _progress(rt, run_id, "deep:planned", promote=[d.item.id for d in plan.promoted if d.item])
        applied = None
        if plan.after is not None:
            promotions.begin(dreams, plan, now)
            applied = deep.apply(ws, plan)
            promotions.finish(dreams, run_id, applied)
            _progress(rt, run_id, "deep:written", mode=applied.mode)
        _mark(rt, work, plan, applied, now)
        decisions = plan.decisions
        text = dreams_file.with_block(text, "deep", deep.block(plan, applied, when))
        out["deep"] = {"mode": applied.mode if applied else "nothing", "ranked": len(plan.ranked),
                       "passed": sum(1 for r in plan.ranked if r.passed), "repaired": plan.repaired,
                       "lossRefused": plan.loss_refused, "decisions": [d.to_json() for d in plan.decisions]}
        out["promoted"] = [{"id": d.item.id, "text": d.item.text, "supersedes": d.supersedes}
                           for d in plan.promoted if d.item is not None]
    work.save(now)
    for log in logs:
        log.unlink(missing_ok=True)
    if phases != ["light"] and (light_report or rem_report or decisions):
        entry, author = diary.write(model, light_report, rem_report, decisions)
        text = dreams_file.with_diary_entry(text, diary.entry(f"{when} · {run_id}", entry))
        out["diary"] = {"text": entry, "author": author}
    dreams_file.write(ws, text)
    _save_state(dreams, run_id, now, out, settled)
    _progress(rt, run_id, "finished", status="ok")
    return out


def _mark(rt: Runtime, work: Working, plan: deep.DeepPlan, applied: deep.Applied | None, now: int) -> None:
    """Record in the store what Deep decided: promoted entries (and duplicates of what memory
    already holds) are not candidates any more."""
    for d in plan.decisions:
        entry = work.entries.get(d.ranked.entry.key)
        if entry is None:
            continue
        if d.status == "promoted" and d.item is not None and applied is not None and applied.mode != "nothing":
            entry.promoted_at, entry.promoted_item, entry.promoted_run = now, d.item.id, plan.run_id
            rt.events.publish(MemoryWritten(rt.now(), rt.agent_id, "dream", "MEMORY.md", d.item.id,
                                            superseded=tuple(d.supersedes)))
        elif d.status == "duplicate" and d.supersedes and not d.reason.startswith("the same fact"):
            entry.promoted_at, entry.promoted_item = now, d.supersedes[0]


def _save_state(dreams: DreamsDir, run_id: str, now: int, out: dict[str, Any], settled: list[str]) -> None:
    state = dreams.read_json("state.json", {})
    runs = list(state.get("runs") or [])
    runs.append({"runId": run_id, "at": now, "phases": out["phases"], "trigger": out["trigger"],
                 "promoted": [p["id"] for p in out.get("promoted", [])], "recovered": settled})
    state.update({"lastSweepAt": now, "lastRunId": run_id, "runs": runs[-MAX_RUNS_KEPT:]})
    for phase in out["phases"]:
        state.setdefault("phases", {})[phase] = {"lastRunAt": now, "runId": run_id}
    dreams.write_json("state.json", state)
