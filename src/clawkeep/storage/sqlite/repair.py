"""The SQL side of `clawkeep doctor`: checking a database file, refusing one in use, and writing
salvaged rows (salvage.py) into a new file with the current schema and a rebuilt FTS index.

What a row means (shape checks, how a lost session row is rebuilt, which tokens a message is
indexed under) stays with the caller, which passes it in.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ...errors import StorageError
from ..base import EntryRecord
from .salvage import Salvage
from .sessions import SqliteAgentStore

AGENT_FTS_TABLES = ["entries_fts"]
MEMORY_FTS_TABLES = ["chunks_fts"]


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


def ensure_not_in_use(path: Path) -> None:
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


def agent_table_columns(table: str) -> list[str]:
    """The columns of an agent-store table in the current schema."""
    template = SqliteAgentStore(":memory:", "doctor")
    try:
        return [row[1] for row in template._query(f"PRAGMA table_info({table})")]
    finally:
        template.close()


def write_recovered(path: Path, agent_id: str, found: Salvage, *,
                    index_text: Callable[[EntryRecord], str | None],
                    reconstruct: Callable[[str, str, list[dict[str, Any]]], dict[str, Any]]) -> dict[str, Any]:
    """Write salvaged rows into a new database with the current schema and a rebuilt FTS index.
    `index_text(entry)`: the analysed tokens an append would index; `reconstruct(agent_id,
    session_id, entry_rows)`: a session row for entries whose session row was lost."""
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
            _insert_session(conn, session_columns, reconstruct(agent_id, sid, by_session[sid]), current)
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
            tokens = index_text(record)  # the same analysed tokens an append writes
            if tokens:
                conn.execute("INSERT INTO entries_fts (rowid, tokens) VALUES (?, ?)", (seq, tokens))
                indexed += 1
        credentials = found.tables.get("credentials")
        kept_credentials = _insert_credentials(conn, credentials.rows.values()) if credentials else 0
        conn.execute("UPDATE sessions SET message_count = (SELECT count(*) FROM entries e "
                     "WHERE e.session_id = sessions.session_id AND e.type = 'message')")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return {
        "sessions": {"recovered": len(known) + len(rebuilt), "fromRows": len(known),
                     "rebuiltFromEntries": len(rebuilt)},
        "messages": {"recovered": messages, "expected": expected_messages},
        "entries": {"recovered": written, "highestSeqBefore": entries.expected_max_rowid, "skipped": skipped,
                    "foundByPageScan": entries.scanned, "unreadableSeqRanges": entries.unreadable[:20]},
        "indexedMessages": indexed,
        "credentials": {"recovered": kept_credentials,
                        "highestRowidBefore": credentials.expected_max_rowid if credentials else None},
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


def _insert_credentials(conn: sqlite3.Connection, rows: Any) -> int:
    """Salvaged tokens, as they were (a revoked one stays revoked); a name or digest seen twice keeps the first."""
    columns = [r[1] for r in conn.execute("PRAGMA table_info(credentials)")]
    kept = 0
    for row in rows:
        names = [c for c in columns if c in row]
        placeholders = ", ".join("?" for _ in names)
        cursor = conn.execute(f"INSERT OR IGNORE INTO credentials ({', '.join(names)}) VALUES ({placeholders})",
                              [row[c] for c in names])
        kept += cursor.rowcount
    return kept


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
