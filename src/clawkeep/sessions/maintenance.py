"""Session maintenance (S4): age out synthetic sessions, cap the row count, fix DM scope.

Nothing is destroyed without a copy: a retired session's transcript is first written to
`agents/<id>/archive/<sessionId>.<ts>.jsonl.gz`, fsynced and read back, then its rows go.
Cleanup runs on writes that create sessions (in batches past a high-water mark) or on
demand, never on reads.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import api
from .. import validation as check
from ..config import AGENT_ID
from ..errors import ConflictError, InputError
from ..routing.keys import DURABLE_KINDS
from ..runtime import Runtime
from ..storage import AgentStore, SessionRecord
from ..timeutil import to_iso

MAINTENANCE_LEASE = "session-maintenance"
LEASE_TTL_MS = 10 * 60_000  # longer than any cleanup; a crashed holder's lease lapses by itself
DM_SCOPE_SHAPES = {"main": None, "per-peer": 2, "per-channel-peer": 3, "per-account-channel-peer": 4}


@dataclass
class CleanupPlan:
    stale: list[SessionRecord] = field(default_factory=list)  # older than pruneAfter
    over_cap: list[SessionRecord] = field(default_factory=list)  # evicted to get back to maxEntries
    wrong_scope: list[SessionRecord] = field(default_factory=list)  # --fix-dm-scope

    def victims(self) -> list[SessionRecord]:
        return [*self.stale, *self.over_cap, *self.wrong_scope]


def plan_cleanup(rt: Runtime, store: AgentStore, *, fix_dm_scope: bool = False) -> CleanupPlan:
    cfg = rt.config.session.maintenance
    sessions = store.list_sessions()
    plan = CleanupPlan()
    if fix_dm_scope:
        plan.wrong_scope = [s for s in sessions if _wrong_dm_scope(s, rt.config.session.dm_scope)]
    taken = {s.session_id for s in plan.wrong_scope}
    removable = sorted((s for s in sessions if s.kind not in DURABLE_KINDS and s.session_id not in taken),
                       key=lambda s: s.updated_at)
    cutoff = rt.now() - int(cfg.prune_after_delta.total_seconds() * 1000)
    plan.stale = [s for s in removable if s.updated_at < cutoff]
    remaining = len(sessions) - len(plan.stale) - len(plan.wrong_scope)
    leftovers = [s for s in removable if s.updated_at >= cutoff]
    excess = max(0, remaining - cfg.max_entries)
    plan.over_cap = leftovers[:excess]  # oldest unprotected first; durable rows still count
    return plan


def _wrong_dm_scope(session: SessionRecord, dm_scope: str) -> bool:
    """A DM row whose key shape belongs to another dmScope than the configured one."""
    if session.kind != "direct" or session.key.split(":")[2] == "dashboard":
        return False
    rest = len(session.key.split(":")) - 2
    return rest != DM_SCOPE_SHAPES[dm_scope]


def cleanup(rt: Runtime, *, dry_run: bool = False, enforce: bool = False, fix_dm_scope: bool = False
            ) -> api.CleanupReport:
    """`sessions cleanup`: report (warn mode / --dry-run) or archive and remove (enforce)."""
    apply = not dry_run and (enforce or rt.config.session.maintenance.mode == "enforce" or fix_dm_scope)
    store = rt.read_store()  # an agent without a database has nothing to clean: create none
    with _maintenance_lease(rt, store, needed=apply) as held:
        if apply and not held:
            raise ConflictError("another instance is running session maintenance on this database right now; "
                                "nothing was changed, try again in a minute")
        before = store.count_sessions()  # what the plan was made from ("archived 1 of 1", not "of 0")
        plan = plan_cleanup(rt, store, fix_dm_scope=fix_dm_scope)
        archived, refused = [], []
        for session in plan.victims() if apply else []:
            try:
                archived.append(archive_and_remove(rt, store, session))
            except InputError as exc:
                refused.append({**_brief(session), "reason": str(exc)})
    return api.CleanupReport(
        applied=apply,
        mode=rt.config.session.maintenance.mode,
        sessions=before,
        remaining=store.count_sessions(),
        stale=[_brief(s) for s in plan.stale],
        over_cap=[_brief(s) for s in plan.over_cap],
        wrong_dm_scope=[_brief(s) for s in plan.wrong_scope],
        archives=[str(p) for p in archived],
        refused=refused,
    )


def maybe_cleanup_after_create(rt: Runtime) -> None:
    """High-water batching: only when the row count passes maxEntries + buffer, in enforce mode."""
    cfg = rt.config.session.maintenance
    if cfg.mode != "enforce":
        return
    store = rt.store()
    if store.count_sessions() > cfg.max_entries + cfg.high_water_entries:
        with _maintenance_lease(rt, store, needed=True) as held:
            if not held:
                return  # another instance is cleaning up right now (SPEC D2: one at a time)
            for session in plan_cleanup(rt, store).victims():
                try:
                    archive_and_remove(rt, store, session)
                except InputError:
                    continue  # an id that cannot name an archive file: the row stays (see archive_path)


@contextmanager
def _maintenance_lease(rt: Runtime, store: AgentStore, *, needed: bool) -> Iterator[bool]:
    """Hold the store's maintenance lease while cleaning up, so instances sharing one database
    never archive and remove the same sessions twice."""
    if not needed:
        yield False
        return
    if not store.try_lease(MAINTENANCE_LEASE, rt.instance_id, LEASE_TTL_MS):
        yield False
        return
    try:
        yield True
    finally:
        store.release_lease(MAINTENANCE_LEASE, rt.instance_id)


def _brief(session: SessionRecord) -> dict[str, Any]:
    return {"key": session.key, "sessionId": session.session_id, "kind": session.kind,
            "updatedAt": to_iso(session.updated_at)}


def archive_path(rt: Runtime, session: SessionRecord) -> Path:
    """From checked ids only, and under the agent's archive folder: a row stored before import
    checked ids (`../x` as its id) is refused (and kept) rather than archived somewhere else."""
    if not isinstance(session.agent_id, str) or not AGENT_ID.fullmatch(session.agent_id):
        raise InputError(f"session {session.key!r} has agent id {check.shown(session.agent_id)}, which cannot name "
                         "a folder; it was not archived (kept as it is)")
    check.file_name_part(session.session_id, f"session id of {session.key!r} (not archived, kept as it is)")
    folder = rt.home / "agents" / session.agent_id / "archive"
    return check.inside(folder, folder / f"{session.session_id}.{rt.now()}.jsonl.gz", "archive file")


def write_archive(rt: Runtime, store: AgentStore, session: SessionRecord) -> Path:
    """Session row + every entry as gzipped JSONL; fsynced and verified by reading it back."""
    path = archive_path(rt, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "sessionRow", **session.__dict__}, ensure_ascii=False)]
    lines += [json.dumps({"seq": e.seq, "id": e.entry_id, "type": e.type, "role": e.role, "timestamp": e.timestamp,
                          "content": e.content, "meta": e.meta, "parentId": e.parent_entry_id}, ensure_ascii=False)
              for e in store.iter_entries(session.session_id)]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb") as gz:
            gz.write(("\n".join(lines) + "\n").encode("utf-8"))
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(tmp, path)
    with gzip.open(path, "rt", encoding="utf-8") as check:
        if sum(1 for _ in check) != len(lines):
            raise OSError(f"archive {path} did not read back completely")
    return path


def archive_and_remove(rt: Runtime, store: AgentStore, session: SessionRecord) -> Path:
    path = write_archive(rt, store, session)
    store.delete_session(session.session_id)
    return path
