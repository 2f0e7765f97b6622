"""Embedded SQLite backend: one WAL database per agent (`agents/<id>/agent.sqlite`)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from itertools import starmap
from pathlib import Path
from typing import Any

from ...errors import ConflictError, DuplicateError
from ...locks import FileSessionLocks, SessionLocks
from ..base import (
    AgentStore,
    CredentialRecord,
    EntryRecord,
    SearchRow,
    SessionFilter,
    SessionRecord,
    TextMatch,
    describe_entry,
)
from ..query import TextQuery
from . import bm25
from .connection import SqliteConnection, storage_error
from .fts import match_expression, vocab_sql
from .migrations import Migration

# Released migrations are never edited: a schema change is a new entry at the end.
MIGRATIONS = (
    Migration(1, "sessions, entries and their full-text index", (
        """CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    chat_type TEXT, channel TEXT, account TEXT, peer TEXT, label TEXT,
    origin TEXT NOT NULL DEFAULT 'chat',
    parent_session_id TEXT,
    session_started_at INTEGER NOT NULL,
    last_interaction_at INTEGER,
    updated_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    archived_at INTEGER,
    version INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    model TEXT,
    meta TEXT NOT NULL DEFAULT '{}'
)""",
        "CREATE UNIQUE INDEX IF NOT EXISTS sessions_current_key ON sessions(key) WHERE archived_at IS NULL",
        "CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent_session_id)",
        """CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    parent_entry_id TEXT,
    type TEXT NOT NULL,
    role TEXT,
    ts INTEGER NOT NULL,
    content TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL DEFAULT '{}'
)""",
        "CREATE INDEX IF NOT EXISTS entries_session ON entries(session_id, seq)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(tokens, tokenize = 'unicode61 remove_diacritics 2')",
        "CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts_vocab USING fts5vocab(entries_fts, 'row')",
    )),
    Migration(2, "index on (session_id, type, seq) for boundaries and compactions", (
        "CREATE INDEX IF NOT EXISTS entries_session_type ON entries(session_id, type, seq)",
    )),
    Migration(3, "client message ids scoped to their conversation (client_scope, client_id)", (
        "ALTER TABLE entries ADD COLUMN client_scope TEXT",
        "ALTER TABLE entries ADD COLUMN client_id TEXT",
        "CREATE UNIQUE INDEX IF NOT EXISTS entries_client ON entries(client_scope, client_id) "
        "WHERE client_id IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS entries_client_id ON entries(client_id) WHERE client_id IS NOT NULL",
    )),
    Migration(4, "running totals for the metrics (counters)", (
        "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL DEFAULT 0)",
    )),
    Migration(5, "leases: one holder at a time for periodic jobs", (
        "CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL, "
        "version INTEGER NOT NULL DEFAULT 0)",
    )),
    Migration(6, "caller credentials: tokens stored as the SHA-256 of their secret", (
        "CREATE TABLE IF NOT EXISTS credentials (name TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, "
        "scope TEXT NOT NULL, sandboxed INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, "
        "expires_at INTEGER, revoked_at INTEGER, last_used_at INTEGER)",
    )),
)
_CREDENTIAL_COLUMNS = "name, digest, scope, created_at, expires_at, revoked_at, last_used_at, sandboxed"

_SESSION_COLUMNS = (
    "session_id",
    "key",
    "agent_id",
    "kind",
    "chat_type",
    "channel",
    "account",
    "peer",
    "label",
    "origin",
    "parent_session_id",
    "session_started_at",
    "last_interaction_at",
    "updated_at",
    "created_at",
    "archived_at",
    "version",
    "message_count",
    "model",
    "meta",
)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ENTRY_COLUMNS = "seq, entry_id, session_id, parent_entry_id, type, role, ts, content, meta, client_scope, client_id"
_ENTRY_WIDTH = 11
_SEARCH_COLUMNS = ", ".join("e." + c.strip() for c in _ENTRY_COLUMNS.split(","))
_IDS_PER_QUERY = 500  # bound parameters per IN list (SQLite allows 32,766 since 3.32, older ones 999)
# What Python's str.strip() removes, for SQL's trim(): a blank text block never counts as text.
_BLANK_CODES = (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, *range(8192, 8203),
                8232, 8233, 8239, 8287, 12288)
_BLANKS = "char(" + ", ".join(str(c) for c in _BLANK_CODES) + ")"
# Appends go to the right edge of these B-trees: read it (and the FTS5 structure record) before
# a call's first write, so a damaged page there fails the call before anything commits.
# One statement (each scalar subquery one descent), so the probe costs one round trip per call.
_WRITE_PATH_PROBE = (
    "SELECT (SELECT max(rowid) FROM sessions), (SELECT max(seq) FROM entries),"
    " (SELECT group_concat(name || ':' || seq) FROM sqlite_sequence),"
    " (SELECT max(id) FROM entries_fts_content), (SELECT max(id) FROM entries_fts_docsize),"
    " (SELECT max(id) FROM entries_fts_data), (SELECT length(block) FROM entries_fts_data WHERE id = 10)"
)

# The per-connection table of each token's (row, position) instances the in-memory ranking reads
# (bm25.py); created with the connection, before a reader is made read-only.
_INSTANCES_TABLE = ("CREATE VIRTUAL TABLE IF NOT EXISTS temp.entries_fts_instances "
                    "USING fts5vocab(main, entries_fts, instance)")
# What every commit that writes the transcript index changes: FTS5's structure record (row 10 of
# %_data, whose write counter only grows) and its averages record (row 1: rows and tokens). Other
# commits (session rows, counters) leave the in-memory ranking of the index as it is.
_INDEX_STATE = ("SELECT (SELECT block FROM entries_fts_data WHERE id = 10), "
                "(SELECT block FROM entries_fts_data WHERE id = 1)")

# Rows whose stored tokens are kept beside an in-memory ranking, for as long as its state of the
# index (≈5 MB of ≈120-character token strings): a search re-ranks ~100 candidates by their
# tokens, and reading them back costs more than the ranking (100 rows of 10k: ≈0.15 ms).
MAX_KEPT_TOKENS = 20_000

Rows = Callable[[str, Sequence[Any]], list[Any]]


_SCAN = json.JSONDecoder().scan_once  # what json.loads runs, without its Python wrapper


def _json_value(text: str) -> Any:
    """json.loads of a stored JSON document (written by json.dumps: no surrounding blanks), a
    third faster; anything else (blanks, trailing data, bad JSON) goes through json.loads."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, TypeError):
        return json.loads(text)  # its own error for a bad document
    return value if end == len(text) else json.loads(text)


def _read_transaction(conn: sqlite3.Connection) -> Iterator[Rows]:
    """`rows(sql, params)` inside one read transaction of `conn` (already open: joined)."""
    if conn.in_transaction:
        yield lambda sql, params=(): conn.execute(sql, params).fetchall()
        return
    conn.execute("BEGIN")
    try:
        yield lambda sql, params=(): conn.execute(sql, params).fetchall()
    finally:
        conn.execute("COMMIT")


def _entries_where(session_id: str, after_seq: int | None, before_seq: int | None,
                   types: Sequence[str] | None) -> tuple[list[str], list[Any]]:
    """The WHERE terms and parameters that pick one session's entries between two seqs, of
    `types` (`iter_entries` and `count_entries` add their own)."""
    where, params = ["session_id = ?"], [session_id]
    if after_seq is not None:
        where.append("seq > ?")
        params.append(after_seq)
    if before_seq is not None:
        where.append("seq < ?")
        params.append(before_seq)
    if types:
        where.append(f"type IN ({', '.join('?' for _ in types)})")
        params.extend(types)
    return where, params


class SqliteAgentStore(SqliteConnection, AgentStore):
    """`path` is a file, or ":memory:" for the incognito store that never touches disk."""

    migrations = MIGRATIONS

    def __init__(self, path: str | Path, agent_id: str, *, synchronous: str = "NORMAL", busy_timeout_ms: int = 30_000,
                 group_commit: bool = True):
        self.agent_id = agent_id
        # turns of one session take turns across processes too (CLI, cron, a gateway on one home)
        self._session_locks = (SessionLocks() if str(path) == ":memory:"
                               else FileSessionLocks(Path(path).parent / "locks", busy_timeout_ms))
        # (index state, its in-memory ranking, stored tokens by seq read in that state)
        self._ranking: tuple[Any, bm25.SizesWithPostings, dict[int, str]] | None = None
        self._ranking_lock = threading.Lock()
        # Group commit: concurrent writers of this process share one COMMIT (connection.py).
        SqliteConnection.__init__(self, path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms,
                                  group_commit=group_commit)

    def _configure(self, conn: sqlite3.Connection) -> None:
        # Python's str.lower for label filters: SQLite's lower() folds ASCII only.
        conn.create_function("py_lower", 1, lambda v: v.lower() if isinstance(v, str) else v, deterministic=True)
        conn.execute(_INSTANCES_TABLE)

    def session_lock(self, key: str) -> AbstractContextManager[None]:
        return self._session_locks.hold(key)

    def try_lease(self, name: str, holder: str, ttl_ms: int) -> bool:
        now = int(time.time() * 1000)
        with self.transaction():
            rows = self._write(
                "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "holder = excluded.holder, expires_at = excluded.expires_at, version = leases.version + 1 "
                "WHERE leases.holder = excluded.holder OR leases.expires_at < ? RETURNING holder",
                (name, holder, now + int(ttl_ms), now)).fetchall()
        return bool(rows)

    def release_lease(self, name: str, holder: str) -> None:
        with self.transaction():
            self._write("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    # --- caller credentials ---------------------------------------------------------
    @staticmethod
    def _credential(row: Sequence[Any]) -> CredentialRecord:
        return CredentialRecord(*row[:7], sandboxed=bool(row[7]))

    def insert_credential(self, record: CredentialRecord) -> None:
        with self.transaction():
            try:
                self._write(f"INSERT INTO credentials ({_CREDENTIAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (record.name, record.digest, record.scope, record.created_at, record.expires_at,
                             record.revoked_at, record.last_used_at, int(record.sandboxed)))
            except sqlite3.IntegrityError:
                raise ConflictError(f"a token named {record.name!r} already exists") from None
            self._note(f"created token {record.name}")

    def credential_by_digest(self, digest: str) -> CredentialRecord | None:
        rows = self._query(f"SELECT {_CREDENTIAL_COLUMNS} FROM credentials WHERE digest = ?", (digest,))
        return self._credential(rows[0]) if rows else None

    def list_credentials(self) -> list[CredentialRecord]:
        rows = self._query(f"SELECT {_CREDENTIAL_COLUMNS} FROM credentials ORDER BY created_at, name")
        return [self._credential(r) for r in rows]

    def has_credentials(self) -> bool:
        return bool(self._query("SELECT 1 FROM credentials LIMIT 1"))

    def revoke_credential(self, name: str, at: int) -> CredentialRecord | None:
        with self.transaction():
            self._write("UPDATE credentials SET revoked_at = coalesce(revoked_at, ?) WHERE name = ?", (at, name))
            rows = self._write(f"SELECT {_CREDENTIAL_COLUMNS} FROM credentials WHERE name = ?", (name,)).fetchall()
            if rows:
                self._note(f"revoked token {name}")
        return self._credential(rows[0]) if rows else None

    def note_credential_use(self, name: str, at: int) -> None:
        with self.transaction():
            self._write("UPDATE credentials SET last_used_at = ? WHERE name = ?", (at, name))
            self._note("token use", minor=True)

    def _probe_write_path(self) -> None:
        self._conn.execute(_WRITE_PATH_PROBE).fetchall()

    # --- sessions -------------------------------------------------------------------
    @staticmethod
    def _session(row: Sequence[Any]) -> SessionRecord:
        values = dict(zip(_SESSION_COLUMNS, row, strict=True))
        values["meta"] = json.loads(values["meta"] or "{}")
        return SessionRecord(**values)

    def _select_sessions(self, where: str, params: Sequence[Any]) -> list[SessionRecord]:
        rows = self._query(f"SELECT {', '.join(_SESSION_COLUMNS)} FROM sessions WHERE {where}", params)
        return [self._session(r) for r in rows]

    def get_session(self, session_id: str) -> SessionRecord | None:
        found = self._select_sessions("session_id = ?", (session_id,))
        return found[0] if found else None

    def get_session_by_key(self, key: str) -> SessionRecord | None:
        found = self._select_sessions("key = ? AND archived_at IS NULL", (key,))
        return found[0] if found else None

    def _session_values(self, record: SessionRecord) -> list[Any]:
        values = [getattr(record, name) for name in _SESSION_COLUMNS]
        values[_SESSION_COLUMNS.index("meta")] = json.dumps(record.meta, ensure_ascii=False)
        return values

    def insert_session(self, record: SessionRecord) -> None:
        marks = ", ".join("?" for _ in _SESSION_COLUMNS)
        with self.transaction():
            try:
                self._write(
                    f"INSERT INTO sessions ({', '.join(_SESSION_COLUMNS)}) VALUES ({marks})",
                    self._session_values(record),
                )
            except sqlite3.IntegrityError:
                raise ConflictError(f"session key {record.key!r} already has a current session") from None
            self._note(f"created session {record.key} ({record.session_id})")

    def update_session(self, record: SessionRecord) -> None:
        columns = [c for c in _SESSION_COLUMNS if c not in ("session_id", "version")]
        values = dict(zip(_SESSION_COLUMNS, self._session_values(record), strict=True))
        assignments = ", ".join(f"{c} = ?" for c in columns)
        with self.transaction():
            cursor = self._write(
                f"UPDATE sessions SET {assignments}, version = version + 1 WHERE session_id = ? AND version = ?",
                [values[c] for c in columns] + [record.session_id, record.version],
            )
            if cursor.rowcount != 1:
                raise ConflictError(f"session {record.session_id} was changed by another writer; reload and retry")
            self._note(f"updated session {record.key}", minor=True)
        record.version += 1

    @staticmethod
    def _session_where(flt: SessionFilter) -> tuple[str, list[Any]]:
        where, params = ["1" if flt.include_archived else "archived_at IS NULL"], []
        if flt.kinds is not None:
            where.append(f"kind IN ({', '.join('?' for _ in flt.kinds)})" if flt.kinds else "0")
            params.extend(flt.kinds)
        if flt.label is not None:
            where.append("py_lower(coalesce(label, '')) = ?")
            params.append(flt.label.lower())
        if flt.updated_since is not None:  # SQLite integers are 64-bit: a bound outside is all or nothing
            if flt.updated_since > _INT64_MAX:
                where.append("0")
            else:
                where.append("updated_at >= ?")
                params.append(max(flt.updated_since, _INT64_MIN))
        if flt.parent_session_id is not None:
            where.append("parent_session_id = ?")
            params.append(flt.parent_session_id)
        if flt.descendants_of is not None:
            # the walk admits what the archived rule admits; the roots come in as one JSON array
            walk = "" if flt.include_archived else " AND s.archived_at IS NULL"
            where.append(
                "session_id IN (WITH RECURSIVE below(id) AS ("
                "SELECT s.session_id FROM sessions s WHERE s.parent_session_id IN (SELECT value FROM json_each(?))"
                f"{walk} UNION SELECT s.session_id FROM sessions s JOIN below ON s.parent_session_id = below.id"
                f"{walk}) SELECT id FROM below)")
            params.append(json.dumps(list(flt.descendants_of)))
        return " AND ".join(where), params

    def list_sessions(self, flt: SessionFilter = SessionFilter()) -> list[SessionRecord]:
        where, params = self._session_where(flt)
        tail = f" LIMIT {int(flt.limit)}" if flt.limit is not None else ""
        return self._select_sessions(f"{where} ORDER BY updated_at DESC{tail}", params)

    def count_sessions(self, flt: SessionFilter = SessionFilter()) -> int:
        where, params = self._session_where(flt)
        count = self._query(f"SELECT count(*) FROM sessions WHERE {where}", params)[0][0]
        return min(count, flt.limit) if flt.limit is not None else count

    def delete_session(self, session_id: str) -> None:
        with self.transaction():
            self._write(
                "DELETE FROM entries_fts WHERE rowid IN (SELECT seq FROM entries WHERE session_id = ?)", (session_id,)
            )
            self._write("DELETE FROM entries WHERE session_id = ?", (session_id,))
            self._write("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            self._note(f"deleted session {session_id}")

    # --- transcript -----------------------------------------------------------------
    @staticmethod
    def _entry(row: Sequence[Any]) -> EntryRecord:
        seq, entry_id, session_id, parent, etype, role, ts, content, meta, client_scope, client_id = row
        # positional (the field order of EntryRecord): half the time of keywords, and a search
        # decodes one per hit
        return EntryRecord(entry_id, session_id, etype, ts, role, _json_value(content),
                           {} if meta == "{}" else _json_value(meta),  # most entries: skip the parser
                           parent, seq, client_id, client_scope)

    def append_entry(self, entry: EntryRecord, *, index_text: str | None = None,
                     at_commit: bool = False) -> EntryRecord:
        with self.transaction():  # in process: `at_commit` changes nothing
            try:
                cursor = self._insert_entry(entry)
            except sqlite3.IntegrityError:
                what = f"message id {entry.client_id!r}" if entry.client_id else f"entry id {entry.entry_id!r}"
                raise DuplicateError(f"{what} already exists") from None
            entry.seq = cursor.lastrowid
            if index_text:
                self._write("INSERT INTO entries_fts (rowid, tokens) VALUES (?, ?)", (entry.seq, index_text))
            self._note(describe_entry(entry), minor=entry.type == "session")
        return entry

    def _insert_entry(self, entry: EntryRecord) -> sqlite3.Cursor:
        return self._write(
            "INSERT INTO entries (entry_id, session_id, parent_entry_id, type, role, ts, content, meta, "
            "client_scope, client_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.entry_id,
                entry.session_id,
                entry.parent_entry_id,
                entry.type,
                entry.role,
                entry.timestamp,
                json.dumps(entry.content, ensure_ascii=False),
                json.dumps(entry.meta, ensure_ascii=False),
                entry.client_scope if entry.client_id else None,
                entry.client_id,
            ),
        )

    def get_entry(self, entry_id: str) -> EntryRecord | None:
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE entry_id = ?", (entry_id,))
        return self._entry(rows[0]) if rows else None

    def get_entry_by_client_id(self, client_scope: str, client_id: str) -> EntryRecord | None:
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE client_scope = ? AND client_id = ?",
                           (client_scope, client_id))
        return self._entry(rows[0]) if rows else None

    def find_client_entry(self, session_id: str, client_id: str) -> EntryRecord | None:
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE client_id = ? AND session_id = ? "
                           "ORDER BY seq DESC LIMIT 1", (client_id, session_id))
        return self._entry(rows[0]) if rows else None

    def iter_entries(
        self,
        session_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        types: Sequence[str] | None = None,
        newest_first: bool = False,
        limit: int | None = None,
    ) -> Iterator[EntryRecord]:
        where, params = _entries_where(session_id, after_seq, before_seq, types)
        order = "DESC" if newest_first else "ASC"
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self._query(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE {' AND '.join(where)} ORDER BY seq {order}{tail}", params
        )
        return (self._entry(r) for r in rows)

    def scan_entries(self, *, after_seq: int = 0, limit: int = 1000, newest_first: bool = False) -> list[EntryRecord]:
        order = "DESC" if newest_first else "ASC"
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE seq > ? ORDER BY seq {order} LIMIT ?",
                           (int(after_seq), int(limit)))
        return [self._entry(r) for r in rows]

    def last_entry(self, session_id: str, types: Sequence[str] | None = None) -> EntryRecord | None:
        return next(self.iter_entries(session_id, types=types, newest_first=True, limit=1), None)

    def count_entries(
        self,
        session_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        types: Sequence[str] | None = None,
        exclude_roles: Sequence[str] = (),
        block_types: Sequence[str] | None = None,
    ) -> int:
        where, params = _entries_where(session_id, after_seq, before_seq, types)
        if exclude_roles:
            where.append(f"(role IS NULL OR role NOT IN ({', '.join('?' for _ in exclude_roles)}))")
            params.extend(exclude_roles)
        if block_types is not None:  # JSON1 inside SQLite: the content never reaches Python
            marks = ", ".join("?" for _ in block_types)
            # One json_each pass: plain-string content is a single top-level row (key NULL).
            where.append(
                "EXISTS (SELECT 1 FROM json_each(entries.content) AS b WHERE "
                f"(b.key IS NULL AND b.type = 'text' AND ? AND trim(b.value, {_BLANKS}) <> '') "
                f"OR (b.type = 'object' AND json_extract(b.value, '$.type') IN ({marks}) "
                "AND (json_extract(b.value, '$.type') <> 'text' "
                f"OR trim(coalesce(json_extract(b.value, '$.text'), ''), {_BLANKS}) <> '')))"
            )
            params.extend([int("text" in block_types), *block_types])
        return self._query(f"SELECT count(*) FROM entries WHERE {' AND '.join(where)}", params)[0][0]

    # --- search ---------------------------------------------------------------------
    def search(self, query: TextQuery, *, session_ids: Iterable[str] | None, limit: int) -> list[SearchRow]:
        if session_ids is None:
            found = self._ranked_from_memory(query, limit, self._search_rows)
            if found is not None:
                return found
        ranked = self._ranked(query, session_ids, limit)
        if ranked is None:
            return []
        # Rank inside a subquery and fetch the stored tokens only for the rows that survive the
        # LIMIT: reading `tokens` for every match costs ~20% at 1M rows. They are read from the
        # FTS5 content table directly (a B-tree lookup, where a join on the virtual table opens
        # an FTS5 cursor per row).
        rows = self._query(
            f"SELECT {_SEARCH_COLUMNS}, s.key, top.score, f.c0 FROM ({ranked[0]}) top "
            "JOIN entries e ON e.seq = top.rowid JOIN sessions s ON s.session_id = e.session_id "
            "JOIN entries_fts_content f ON f.id = top.rowid ORDER BY top.score, top.rowid",
            ranked[1],
        )
        return [self._search_row(r, r[_ENTRY_WIDTH + 1], r[_ENTRY_WIDTH + 2]) for r in rows]

    def rank_matches(self, query: TextQuery, *, session_ids: Iterable[str] | None, limit: int) -> list[TextMatch]:
        if session_ids is None:
            found = self._ranked_from_memory(query, limit, self._text_matches)
            if found is not None:
                return found
        ranked = self._ranked(query, session_ids, limit)
        if ranked is None:
            return []
        # The tokens come with the ranking: a B-tree lookup per surviving row inside SQLite is
        # cheaper than the one or two `load_tokens` round trips that re-ranking needed anyway.
        rows = self._query(f"SELECT top.rowid, top.score, f.c0 FROM ({ranked[0]}) top "
                           "JOIN entries_fts_content f ON f.id = top.rowid ORDER BY top.score, top.rowid", ranked[1])
        return list(starmap(TextMatch, rows))  # (seq, score, tokens) each

    def load_tokens(self, matches: Sequence[TextMatch]) -> None:
        missing = {m.seq: m for m in matches if m.tokens is None}
        for start in range(0, len(missing), _IDS_PER_QUERY):
            seqs = list(missing)[start:start + _IDS_PER_QUERY]
            for seq, tokens in self._query(
                    f"SELECT id, c0 FROM entries_fts_content WHERE id IN ({', '.join('?' for _ in seqs)})", seqs):
                missing[seq].tokens = tokens

    def load_rows(self, matches: Sequence[TextMatch]) -> None:
        missing = {m.seq: m for m in matches if m.row is None}
        for start in range(0, len(missing), _IDS_PER_QUERY):
            seqs = list(missing)[start:start + _IDS_PER_QUERY]
            for r in self._query(f"SELECT {_SEARCH_COLUMNS}, s.key FROM entries e JOIN sessions s "
                                 f"ON s.session_id = e.session_id WHERE e.seq IN ({', '.join('?' for _ in seqs)})",
                                 seqs):
                match = missing[r[0]]
                match.row = self._search_row(r, match.score, match.tokens or "")

    def _ranked(self, query: TextQuery, session_ids: Iterable[str] | None, limit: int) -> tuple[str, list[Any]] | None:
        """SQL and parameters of the best `limit` matches, (rowid, score), best first; ties go to
        the older row (the order the sorter gave them anyway). None: no session is visible."""
        params: list[Any] = [match_expression(query)]
        scope = ""
        if session_ids is not None:
            ids = list(session_ids)
            if not ids:
                return None
            # visibility filters inside the ranked subquery: before the limit, never after
            scope = f" AND rowid IN (SELECT seq FROM entries WHERE session_id IN ({', '.join('?' for _ in ids)}))"
            params.extend(ids)
        params.append(int(limit))
        return (f"SELECT rowid, bm25(entries_fts) AS score FROM entries_fts WHERE entries_fts MATCH ?{scope} "
                "ORDER BY score, rowid LIMIT ?", params)

    def _ranked_from_memory(self, query: TextQuery, limit: int,
                            fetch: Callable[[Rows, list[tuple[int, float]], dict[int, str]], list[Any]]
                            ) -> list[Any] | None:
        """`fetch(rows, best, kept tokens)` of the best `limit` matches as `_ranked` orders them, scored from the
        posting lists this process keeps (bm25.py), all read in one committed state of the file;
        None when FTS5 should rank: a phrase FTS5 reads differently, a prefix, the first search
        of a state of the index, or uncommitted rows of this thread's own transaction. Unscoped
        searches only: a visibility scope is a join FTS5 filters by before its limit."""
        phrases = bm25.phrases(query)
        if phrases is None:
            return None
        with self._snapshot() as rows:
            if rows is None:
                return None
            _, cache, tokens = self._ranking_of(rows(_INDEX_STATE, ())[0])
            if not cache.wanted():
                return None
            best = cache.top(rows, phrases, int(limit))
            if not best:
                return best
            return fetch(rows, best, tokens)

    def _ranking_of(self, state: Any) -> tuple[Any, bm25.SizesWithPostings, dict[int, str]]:
        """The in-memory ranking of this state of the index (a new one once it moved)."""
        with self._ranking_lock:
            if self._ranking is None or self._ranking[0] != state:
                self._ranking = (state, bm25.SizesWithPostings("entries_fts", "temp.entries_fts_instances"), {})
            return self._ranking

    @contextmanager
    def _snapshot(self) -> Iterator[Rows | None]:
        """`rows(sql, params)` reading one committed state of the file (a read transaction on a
        reader, or on the writer outside any transaction); None inside this thread's own
        transaction, whose rows are not committed yet."""
        try:
            if self._reads_apart():
                with self._reading() as reader:
                    yield from _read_transaction(reader.conn)
                return
            with self._lock:
                self._settle_reads()
                if self._depth or self._conn.in_transaction:
                    yield None
                    return
                yield from _read_transaction(self._conn)
        except sqlite3.Error as exc:
            raise storage_error(self.path, exc) from None

    def _search_rows(self, rows: Rows, best: list[tuple[int, float]], _kept: dict[int, str]) -> list[SearchRow]:
        """The rows `search` returns for ranked (seq, score) pairs, in their order."""
        marks = ", ".join("?" for _ in best)
        found = {r[0]: r for r in rows(
            f"SELECT {_SEARCH_COLUMNS}, s.key, f.c0 FROM entries e JOIN sessions s ON s.session_id = e.session_id "
            f"JOIN entries_fts_content f ON f.id = e.seq WHERE e.seq IN ({marks})", [seq for seq, _ in best])}
        return [self._search_row(found[seq], score, found[seq][_ENTRY_WIDTH + 1]) for seq, score in best
                if seq in found]

    @staticmethod
    def _text_matches(rows: Rows, best: list[tuple[int, float]], kept: dict[int, str]) -> list[TextMatch]:
        """The matches `rank_matches` returns for ranked (seq, score) pairs, with their tokens:
        those `kept` from earlier searches of this state of the index, the others read (and kept)."""
        texts = {seq: kept.get(seq) for seq, _ in best}  # one read of each: another thread may clear `kept`
        missing = [seq for seq, text in texts.items() if text is None]
        if missing:
            marks = ", ".join("?" for _ in missing)
            # from FTS5's content table (column c0), as `rank_matches`' own query reads them
            read = dict(rows(f"SELECT id, c0 FROM entries_fts_content WHERE id IN ({marks})", missing))
            texts.update(read)
            if len(kept) + len(read) > MAX_KEPT_TOKENS:
                kept.clear()  # starts over: memory stays bounded
            kept.update(read)
        return [TextMatch(seq, score, text) for seq, score in best if (text := texts[seq]) is not None]

    def _search_row(self, r: Sequence[Any], score: float, tokens: str) -> SearchRow:
        """A row of `_SEARCH_COLUMNS` then the session key; the entry is decoded when first used."""
        return SearchRow(None, r[_ENTRY_WIDTH], score, tokens, decode=partial(self._entry, r[:_ENTRY_WIDTH]))

    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        if not tokens:
            return {}
        unique = list(dict.fromkeys(tokens))

        def read() -> dict[str, int]:
            found = dict(self._query(vocab_sql("entries_fts_vocab", len(unique)), unique))
            return {t: found.get(t, 0) for t in unique}

        # Kept until anything is committed to the file, as the memory index does: a common
        # term's count walks its whole posting list, for every multi-word search.
        return dict(self._committed_read(("df", tuple(unique)), read))

    def indexed_documents(self) -> int:
        # max(rowid) is O(log n) where count(*) walks the whole index; rowids are entry seqs,
        # so this over-counts by the non-message entries, which only flattens idf slightly.
        return self._committed_read(
            "indexed", lambda: self._query("SELECT coalesce(max(rowid), 0) FROM entries_fts")[0][0])

    def server_info(self) -> dict[str, Any]:
        return {"storage": "sqlite", "storageVersion": f"SQLite {sqlite3.sqlite_version}", "pgvector": None}

    def indexed_messages(self) -> int:
        # FTS5's averages record (row 1 of %_data) starts with the table's row count: exact, and
        # one row read where count(*) would walk the whole index.
        def read() -> int:
            found = self._query("SELECT block FROM entries_fts_data WHERE id = 1")
            return bm25.fts_row_count(found[0][0] if found else None)

        return self._committed_read("indexed-count", read)

    # --- counters -------------------------------------------------------------------
    def add_counters(self, deltas: dict[str, int]) -> None:
        rows = [(name, int(value)) for name, value in deltas.items() if value]
        if not rows:
            return
        with self.transaction():
            for name, value in rows:
                self._write("INSERT INTO counters(name, value) VALUES (?, ?) "
                            "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value", (name, value))
            self._note("metrics counters", minor=True)

    def counters(self) -> dict[str, int]:
        return dict(self._query("SELECT name, value FROM counters"))
