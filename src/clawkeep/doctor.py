"""`clawkeep doctor`: check every database under the home; `--repair` fixes what it can.

* `agents/<id>/agent.sqlite` (durable: sessions, transcripts): `PRAGMA integrity_check` plus the
  FTS5 index's own integrity check. Never rebuilt automatically. With repair, what is readable
  is salvaged (storage/salvage.py) into a NEW file with the current schema, the search index is
  rebuilt from the salvaged messages with the same analyser appends use, the new file must pass
  the integrity checks, then the damaged original is renamed to `agent.sqlite.corrupt-<time>`
  (kept, never deleted) and the new file takes its place.
* `agents/<id>/memory.sqlite` (derived from the Markdown files): checked the same way; with
  repair it is moved aside and rebuilt (it also rebuilds itself when use hits the damage).

Stop other clawkeep processes (a gateway, a watcher) before repairing: the check refuses a
database another process holds a write lock on, but cannot see one that is merely open.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .errors import ClawkeepError, StorageError
from .memory import rebuild
from .routing.keys import SYNTHETIC_KINDS, normalize_agent_id, parse_key
from .runtime import Runtime
from .sessions.transcript import index_text_for, plain_text
from .storage.base import EntryRecord
from .storage.salvage import Salvage, TableSpec, salvage
from .storage.sqlite import SqliteAgentStore
from .storage.sqlite_base import move_aside

AGENT_DB, MEMORY_DB = "agent.sqlite", "memory.sqlite"
FTS_TABLES = {AGENT_DB: ["entries_fts"], MEMORY_DB: ["chunks_fts"]}


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


def check_database(path: Path, fts_tables: list[str]) -> list[str]:
    """What is wrong with a database file ([] = healthy). The first look is read-only, so a
    damaged file's write-ahead log is never checkpointed into it."""
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
        try:
            found = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    if found != ["ok"]:
        return found
    conn = sqlite3.connect(path, isolation_level=None)  # FTS5's integrity-check is an INSERT command
    try:
        for table in fts_tables:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    except sqlite3.DatabaseError as exc:
        return [f"full-text index: {exc}"]
    finally:
        conn.close()
    return []


# --- the durable store ------------------------------------------------------------------------
def _durable(rt: Runtime, agent_id: str, path: Path, repair: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"agent": agent_id, "kind": "agent", "path": str(path)}
    if not path.exists():
        return {**out, "status": "missing", "problems": []}
    problems = check_database(path, FTS_TABLES[AGENT_DB])
    out.update(status="ok" if not problems else "corrupt", problems=problems)
    if problems and not repair:
        out["hint"] = "never rebuilt automatically: `clawkeep doctor --repair` salvages it into a new file"
    if not problems or not repair:
        return out
    try:
        out["repair"] = repair_agent_database(rt, agent_id, path)
        out["status"] = "repaired"
    except ClawkeepError as exc:
        out.update(status="repair-failed", error=str(exc))
    return out


def _ensure_not_in_use(path: Path) -> None:
    try:
        conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StorageError(f"database {path} is in use by another process; stop it (a gateway, a watcher) "
                               "and run `clawkeep doctor --repair` again") from None
    except sqlite3.DatabaseError:
        pass  # too damaged to lock: nothing can be writing to it
    finally:
        conn.close()


def _table_columns(table: str) -> list[str]:
    template = SqliteAgentStore(":memory:", "doctor")
    try:
        return [row[1] for row in template._query(f"PRAGMA table_info({table})")]
    finally:
        template.close()


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


def agent_specs() -> list[TableSpec]:
    return [TableSpec("sessions", _table_columns("sessions"), _is_session),
            TableSpec("entries", _table_columns("entries"), _is_entry, rowid_column="seq")]


def repair_agent_database(rt: Runtime, agent_id: str, path: Path) -> dict[str, Any]:
    """Salvage a damaged agent.sqlite into a new file and swap it in; the original is kept."""
    rt.release_store(agent_id)
    _ensure_not_in_use(path)
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
    SqliteAgentStore(path, agent_id).close()  # the current schema, empty
    sessions = found.tables["sessions"]
    entries = found.tables["entries"]
    expected_messages = sum(r.get("message_count") or 0 for r in sessions.rows.values()) if sessions.rows else None
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        session_columns = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
        entry_columns = [r[1] for r in conn.execute("PRAGMA table_info(entries)")]
        conn.execute("BEGIN")
        current: set[str] = set()
        known: set[str] = set()
        # current rows first, newest first: if two claim one key, the newer stays current
        for row in sorted(sessions.rows.values(), key=lambda r: (r["archived_at"] is not None, -r["updated_at"])):
            if row["session_id"] in known:
                continue
            _insert_session(conn, session_columns, row, current)
            known.add(row["session_id"])
        by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for seq in sorted(entries.rows):
            by_session[entries.rows[seq]["session_id"]].append(entries.rows[seq])
        rebuilt = [sid for sid in by_session if sid not in known]
        for sid in rebuilt:
            _insert_session(conn, session_columns, _reconstruct_session(agent_id, sid, by_session[sid]), current)
        written = skipped = indexed = messages = 0
        for seq in sorted(entries.rows):
            row = {**entries.rows[seq], "meta": entries.rows[seq].get("meta") or "{}"}
            if not _insert_entry(conn, entry_columns, row):
                skipped += 1
                continue
            written += 1
            record = EntryRecord(row["entry_id"], row["session_id"], row["type"], row["ts"], role=row["role"],
                                 content=json.loads(row["content"]))
            messages += row["type"] == "message"
            tokens = index_text_for(record)  # the same analysed tokens an append writes
            if tokens:
                conn.execute("INSERT INTO entries_fts (rowid, tokens) VALUES (?, ?)", (seq, tokens))
                indexed += 1
        conn.execute("UPDATE sessions SET message_count = (SELECT count(*) FROM entries e "
                     "WHERE e.session_id = sessions.session_id AND e.type = 'message')")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return {
        "sessions": {"recovered": len(known) + len(rebuilt), "fromRows": len(known), "rebuiltFromEntries": len(rebuilt)},
        "messages": {"recovered": messages, "expected": expected_messages},
        "entries": {"recovered": written, "highestSeqBefore": entries.expected_max_rowid, "skipped": skipped,
                    "foundByPageScan": entries.scanned, "unreadableSeqRanges": entries.unreadable[:20]},
        "indexedMessages": indexed,
    }


def _insert_session(conn: sqlite3.Connection, columns: list[str], row: dict[str, Any], current: set[str]) -> None:
    row = {**row, "meta": row.get("meta") or "{}", "version": row.get("version") or 0,
           "origin": row.get("origin") or "chat", "message_count": 0}
    if row["archived_at"] is None:
        if row["key"] in current:
            row["archived_at"] = row["updated_at"]
        else:
            current.add(row["key"])
    names = [c for c in columns if c in row]
    conn.execute(f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                 [row[c] for c in names])


def _insert_entry(conn: sqlite3.Connection, columns: list[str], row: dict[str, Any]) -> bool:
    names = [c for c in columns if c in row]
    sql = f"INSERT INTO entries ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    for attempt in (row, {**row, "client_scope": None, "client_id": None}):
        try:
            conn.execute(sql, [attempt.get(c) for c in names])
            return True
        except sqlite3.IntegrityError:
            continue  # a duplicate client id: keep the entry, drop the id; a duplicate entry id: skip
    return False


def _reconstruct_session(agent_id: str, session_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A session row whose page was lost, rebuilt from its surviving entries (the header entry
    names its key; without one it becomes a dashboard thread so it stays reachable)."""
    header = next((r for r in rows if r["type"] == "session"), None)
    key = (json.loads(header["meta"] or "{}").get("key") if header else None) or f"agent:{agent_id}:dashboard:{session_id}"
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
    out: dict[str, Any] = {"agent": agent_id, "kind": "memory", "path": str(path)}
    if not path.exists():
        return {**out, "status": "missing", "problems": []}
    problems = check_database(path, FTS_TABLES[MEMORY_DB])
    out.update(status="ok" if not problems else "corrupt", problems=problems)
    if problems and not repair:
        out["hint"] = "derived from the Markdown files: rebuilt on next use, or now with --repair"
    if not problems or not repair:
        return out
    from .memory import service as memory  # noqa: PLC0415 - heavy (search, embeddings) and only for repairs

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
