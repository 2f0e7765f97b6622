"""`clawkeep doctor`: check every database under the home; `--repair` fixes what it can.

* `agents/<id>/agent.sqlite` (durable: sessions, transcripts): SQLite's integrity check plus the
  FTS5 index's own integrity check. Never rebuilt automatically. With repair, what is readable
  is salvaged (storage/sqlite/salvage.py) into a NEW file with the current schema (written by
  storage/sqlite/repair.py), the search index is rebuilt from the salvaged messages with the
  same analyser appends use, the new file must pass the integrity checks, then the damaged
  original is renamed to `agent.sqlite.corrupt-<time>` (kept, never deleted) and the new file
  takes its place.
* `agents/<id>/memory.sqlite` (derived from the Markdown files): checked the same way; with
  repair it is moved aside and rebuilt (it also rebuilds itself when use hits the damage).

Stop other clawkeep processes (a gateway, a watcher) before repairing: the check refuses a
database another process holds a write lock on, but cannot see one that is merely open.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from .errors import ClawkeepError, StorageError
from .memory import rebuild
from .routing.keys import SYNTHETIC_KINDS, normalize_agent_id, parse_key
from .runtime import Runtime
from .sessions.transcript import index_text_for, plain_text
from .storage import move_aside
from .storage.sqlite import repair as sql
from .storage.sqlite.salvage import Salvage, TableSpec, salvage

AGENT_DB, MEMORY_DB = "agent.sqlite", "memory.sqlite"
FTS_TABLES = {AGENT_DB: sql.AGENT_FTS_TABLES, MEMORY_DB: sql.MEMORY_FTS_TABLES}
check_database = sql.check_database


def doctor(rt: Runtime, *, repair: bool = False, agent: str | None = None) -> dict[str, Any]:
    agents = [normalize_agent_id(agent)] if agent else _agents(rt.home)
    files = []
    for agent_id in agents:
        folder = rt.home / "agents" / agent_id
        files.append(_durable(rt, agent_id, folder / AGENT_DB, repair))
        files.append(_derived(rt, agent_id, folder / MEMORY_DB, repair))
    healthy = all(f["status"] in ("ok", "missing", "repaired", "rebuilt") for f in files)
    return {"home": str(rt.home), "repair": repair, "healthy": healthy, "files": files}


def _agents(home: Path) -> list[str]:
    folder = home / "agents"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir()
                  if p.is_dir() and ((p / AGENT_DB).exists() or (p / MEMORY_DB).exists()))


def _checked(agent_id: str, kind: str, path: Path, repair: bool, hint: str) -> tuple[dict[str, Any], list[str]]:
    """One database file's report (missing, ok or corrupt, checked with the FTS tables of its file
    name; `hint` when corrupt and no repair was asked for) and its problems: the caller repairs
    when there are problems and `repair`."""
    out: dict[str, Any] = {"agent": agent_id, "kind": kind, "path": str(path)}
    if not path.exists():
        return {**out, "status": "missing", "problems": []}, []
    problems = check_database(path, FTS_TABLES[path.name])
    out.update(status="ok" if not problems else "corrupt", problems=problems)
    if problems and not repair:
        out["hint"] = hint
    return out, problems


# --- the durable store ------------------------------------------------------------------------
def _durable(rt: Runtime, agent_id: str, path: Path, repair: bool) -> dict[str, Any]:
    out, problems = _checked(agent_id, "agent", path, repair,
                             "never rebuilt automatically: `clawkeep doctor --repair` salvages it into a new file")
    if not problems or not repair:
        return out
    try:
        out["repair"] = repair_agent_database(rt, agent_id, path)
        out["status"] = "repaired"
    except ClawkeepError as exc:
        out.update(status="repair-failed", error=str(exc))
    return out


def _json_is(value: Any, kind: type) -> bool:
    return value is None or isinstance(json.loads(value), kind)


def _is_session(row: dict[str, Any]) -> bool:
    return (isinstance(row["session_id"], str) and isinstance(row["key"], str) and row["key"].startswith("agent:")
            and isinstance(row["agent_id"], str) and isinstance(row["kind"], str)
            and all(isinstance(row[c], int) for c in ("session_started_at", "updated_at", "created_at"))
            and _json_is(row.get("meta"), dict))


def _is_entry(row: dict[str, Any]) -> bool:
    return (isinstance(row["entry_id"], str) and isinstance(row["session_id"], str) and isinstance(row["type"], str)
            and isinstance(row["ts"], int) and (row["role"] is None or isinstance(row["role"], str))
            and isinstance(json.loads(row["content"]), list) and _json_is(row.get("meta"), dict))


def _is_credential(row: dict[str, Any]) -> bool:
    digest = row["digest"]
    return (isinstance(row["name"], str) and isinstance(digest, str) and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest) and isinstance(row["scope"], str)
            and isinstance(row["created_at"], int) and isinstance(row.get("sandboxed") or 0, int)
            and all(row.get(c) is None or isinstance(row[c], int)
                    for c in ("expires_at", "revoked_at", "last_used_at")))


def agent_specs() -> list[TableSpec]:
    # credentials are salvaged too: a repair that dropped them would leave a gateway that asks for no token
    return [TableSpec("sessions", sql.agent_table_columns("sessions"), _is_session),
            TableSpec("entries", sql.agent_table_columns("entries"), _is_entry, rowid_column="seq"),
            TableSpec("credentials", sql.agent_table_columns("credentials"), _is_credential)]


def repair_agent_database(rt: Runtime, agent_id: str, path: Path) -> dict[str, Any]:
    """Salvage a damaged agent.sqlite into a new file and swap it in; the original is kept."""
    rt.release_store(agent_id)
    sql.ensure_not_in_use(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = path.parent / f".doctor-{stamp}"
    new = path.with_name(f"{path.name}.recovered-{stamp}")
    try:
        work.mkdir()
        source = work / "source.sqlite"
        shutil.copyfile(path, source)
        if Path(f"{path}-wal").exists():
            shutil.copyfile(f"{path}-wal", f"{source}-wal")
        found = salvage(source, agent_specs(), work)
        counts = write_recovered(new, agent_id, found)
        problems = check_database(new, FTS_TABLES[AGENT_DB])
        if problems:
            raise StorageError(f"the salvaged copy of {path} failed its own check ({problems[0]}); "
                               "the original was left in place")
        kept = move_aside(path, "corrupt")
        try:
            os.replace(new, path)
        except OSError:
            os.replace(kept, path)  # put the original back rather than leave no database at all
            raise
    except OSError as exc:
        raise StorageError(f"could not repair {path}: {exc}; the original was left in place") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for leftover in (new, Path(f"{new}-wal"), Path(f"{new}-shm")):
            leftover.unlink(missing_ok=True)
    return {"method": found.method, "notes": found.notes, "header": found.header,
            "recoveredPath": str(path), "corruptKeptAt": str(kept), **counts}


def write_recovered(path: Path, agent_id: str, found: Salvage) -> dict[str, Any]:
    """Write salvaged rows into a new database with the current schema and a rebuilt FTS index."""
    return sql.write_recovered(path, agent_id, found, index_text=index_text_for, reconstruct=_reconstruct_session)


def _reconstruct_session(agent_id: str, session_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A session row whose page was lost, rebuilt from its surviving entries (the header entry
    names its key; without one it becomes a dashboard thread so it stays reachable)."""
    header = next((r for r in rows if r["type"] == "session"), None)
    stated = json.loads(header["meta"] or "{}").get("key") if header else None
    key = stated or f"agent:{agent_id}:dashboard:{session_id}"
    try:
        parsed = parse_key(key)
        kind, chat_type, channel = parsed.kind, parsed.chat_type, parsed.channel
    except ClawkeepError:
        key, kind, chat_type, channel = f"agent:{agent_id}:dashboard:{session_id}", "dashboard", "direct", "dashboard"
    times = [r["ts"] for r in rows]
    resets = [r["ts"] for r in rows if r["type"] == "reset"]
    users = [r for r in rows if r["type"] == "message" and r["role"] == "user"]
    title = plain_text(json.loads(users[0]["content"])).splitlines()[0][:80] if users else None
    meta = {"recoveredBy": "clawkeep doctor", **({"title": title} if title else {})}
    return {"session_id": session_id, "key": key, "agent_id": agent_id, "kind": kind, "chat_type": chat_type,
            "channel": channel, "label": "recovered by clawkeep doctor",
            "origin": kind if kind in SYNTHETIC_KINDS else "chat", "session_started_at": max(resets or [min(times)]),
            "last_interaction_at": max((r["ts"] for r in users), default=None), "updated_at": max(times),
            "created_at": min(times), "archived_at": None, "meta": json.dumps(meta, ensure_ascii=False)}


# --- the derived memory index -------------------------------------------------------------------
def _derived(rt: Runtime, agent_id: str, path: Path, repair: bool) -> dict[str, Any]:
    out, problems = _checked(agent_id, "memory", path, repair,
                             "derived from the Markdown files: rebuilt on next use, or now with --repair")
    if not problems or not repair:
        return out
    from .memory import service as memory  # deferred: search and embeddings, only for a repair

    own = agent_id == rt.agent_id
    target = rt if own else Runtime(rt.home, rt.config, agent_id)
    try:
        cached, target.memory_index = target.memory_index, None
        if cached is not None:
            cached.store.close()
        store, info = rebuild.replace_corrupt(target, path, problems[0])
        store.close()
        report = memory.index(target)
        out.update(status="rebuilt", rebuild={**info, "chunks": report.chunks, "indexed": len(report.indexed)})
    except ClawkeepError as exc:
        out.update(status="repair-failed", error=str(exc))
    finally:
        if not own:
            target.close()
    return out
