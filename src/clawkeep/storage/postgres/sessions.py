"""PostgreSQL agent store (SPEC D1/D2): sessions, transcript entries and their full-text index
in the schema `<prefix>_agent_<id>`, shared by every instance on the database.

Across instances: a turn holds a PostgreSQL advisory lock on its session key (`session_lock`),
session rows are compare-and-set on `version`, a client message id is unique per conversation
(a unique index: two instances delivering one message store it once), and `try_lease` elects
the one instance that runs a periodic job.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from ...errors import ConflictError, DuplicateError, StorageError
from ...locks import SessionLocks
from ..base import (
    AgentStore,
    CredentialRecord,
    EntryRecord,
    SearchRow,
    SessionFilter,
    SessionRecord,
    TextMatch,
    describe_entry,
    has_block,
)
from ..documents_base import Document, DocumentConflict, DocumentStore
from ..query import TextQuery
from .connection import (
    CONFLICT_CAST,
    Migration,
    PgConnection,
    clean_text,
    conflict_text,
    duplicate_text,
    lock_id,
    psycopg,
    translate,
)
from .fts import Ranked, Ranker, tsvector_literal
from .notify import GenerationWatch, bump_sql

# Released migrations are never edited: a schema change is a new entry at the end.
MIGRATIONS = (
    Migration(1, "sessions, entries, their full-text index and leases", (
        """CREATE TABLE {s}.sessions (
    session_id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    chat_type TEXT, channel TEXT, account TEXT, peer TEXT, label TEXT,
    origin TEXT NOT NULL DEFAULT 'chat',
    parent_session_id TEXT,
    session_started_at BIGINT NOT NULL,
    last_interaction_at BIGINT,
    updated_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    archived_at BIGINT,
    version BIGINT NOT NULL DEFAULT 0,
    message_count BIGINT NOT NULL DEFAULT 0,
    model TEXT,
    meta TEXT NOT NULL DEFAULT '{}'
)""",
        "CREATE UNIQUE INDEX sessions_current_key ON {s}.sessions(key) WHERE archived_at IS NULL",
        "CREATE INDEX sessions_parent ON {s}.sessions(parent_session_id)",
        "CREATE INDEX sessions_updated ON {s}.sessions(updated_at DESC)",
        """CREATE TABLE {s}.entries (
    seq BIGSERIAL PRIMARY KEY,
    entry_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    parent_entry_id TEXT,
    type TEXT NOT NULL,
    role TEXT,
    ts BIGINT NOT NULL,
    content TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL DEFAULT '{}',
    client_scope TEXT,
    client_id TEXT
)""",
        "CREATE INDEX entries_session ON {s}.entries(session_id, seq)",
        "CREATE INDEX entries_session_type ON {s}.entries(session_id, type, seq)",
        "CREATE UNIQUE INDEX entries_client ON {s}.entries(client_scope, client_id) WHERE client_id IS NOT NULL",
        "CREATE INDEX entries_client_id ON {s}.entries(client_id) WHERE client_id IS NOT NULL",
        # id = the entry's seq; session_id copied so visibility filters before the ranking
        """CREATE TABLE {s}.entry_index (
    id BIGINT PRIMARY KEY,
    session_id TEXT NOT NULL,
    tokens TEXT NOT NULL,
    tsv TSVECTOR NOT NULL
)""",
        "CREATE INDEX entry_index_tsv ON {s}.entry_index USING gin (tsv)",
        "CREATE INDEX entry_index_session ON {s}.entry_index(session_id)",
        "CREATE TABLE {s}.leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL, "
        "version BIGINT NOT NULL DEFAULT 0)",
    )),
    Migration(2, "memory documents (SPEC D4) and their conflicts", (
        "CREATE SEQUENCE {s}.document_seq",
        "CREATE TABLE {s}.documents (path TEXT PRIMARY KEY, text TEXT NOT NULL, version BIGINT NOT NULL, "
        "seq BIGINT NOT NULL, deleted BOOLEAN NOT NULL DEFAULT FALSE, updated_at BIGINT NOT NULL, updated_by TEXT)",
        "CREATE INDEX documents_seq ON {s}.documents(seq)",
        "CREATE TABLE {s}.document_conflicts (id BIGSERIAL PRIMARY KEY, path TEXT NOT NULL, kept_as TEXT NOT NULL, "
        "base_version BIGINT, current_version BIGINT, holder TEXT NOT NULL, at BIGINT NOT NULL)",
    )),
    Migration(3, "running totals for the metrics (counters)", (
        "CREATE TABLE {s}.counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL DEFAULT 0)",
    )),
    Migration(4, "caller credentials: tokens stored as the SHA-256 of their secret", (
        "CREATE TABLE {s}.credentials (name TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, scope TEXT NOT NULL, "
        "sandboxed BOOLEAN NOT NULL DEFAULT FALSE, created_at BIGINT NOT NULL, expires_at BIGINT, revoked_at BIGINT, "
        "last_used_at BIGINT)",
    )),
    # moved right after every commit that wrote to entry_index (see fts.PostingCache)
    Migration(5, "a generation of the full-text index (searches keep its matches in memory)", (
        "CREATE SEQUENCE {s}.entry_index_generation",
    )),
)
_GENERATION_SQL = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {s}.entry_index_generation"
_CREDENTIAL_COLUMNS = "name, digest, scope, created_at, expires_at, revoked_at, last_used_at, sandboxed"
_DOC_COLUMNS = "path, text, version, seq, deleted, updated_by"
# Document writes take turns until they commit, so `seq` numbers become visible in order: a
# mirror pulls every write after the highest seq it has seen, and a write that drew a lower
# number but committed later would otherwise never reach it. Memory document writes are rare.
_DOC_WRITERS_LOCK = "SELECT pg_advisory_xact_lock(hashtext('{s}.documents'))"

_SESSION_COLUMNS = ("session_id", "key", "agent_id", "kind", "chat_type", "channel", "account", "peer", "label",
                    "origin", "parent_session_id", "session_started_at", "last_interaction_at", "updated_at",
                    "created_at", "archived_at", "version", "message_count", "model", "meta")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ENTRY_COLUMNS = "seq, entry_id, session_id, parent_entry_id, type, role, ts, content, meta, client_scope, client_id"
_ENTRY_WIDTH = 11
# What Python's str.strip() removes: a blank text block never counts as text.
_BLANKS = "".join(chr(c) for c in (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, *range(8192, 8203),
                                   8232, 8233, 8239, 8287, 12288))
_NUL_ESCAPE = "\\u0000"  # JSON text PostgreSQL's jsonb refuses
LOCK_POLL_S = (0.002, 0.05)  # first and longest wait between tries of a busy session lock
INDEXED_TTL_S = 10.0  # how long indexed_documents() trusts what this process knows
PIN_WAIT_S = 0.2  # a turn waits this long for a pooled connection of its own, then locks on the shared one


class PgAgentStore(PgConnection, AgentStore, DocumentStore):
    migrations = MIGRATIONS
    kind = "agent"

    def __init__(self, url: str, agent_id: str, *, prefix: str = "clawkeep", pool_size: int = 8,
                 connect_timeout_ms: int = 10_000, lock_timeout_ms: int = 30_000, search_freshness: str = "notify"):
        self.agent_id = agent_id
        self.search_freshness = search_freshness  # storage.searchFreshness
        self._watch: GenerationWatch | None = None
        self._session_locks = SessionLocks()
        self._held: dict[str, int] = {}  # key -> depth, for the advisory lock (re-entrant per thread)
        self._held_guard = threading.Lock()
        self._lock_conn: Any = None
        self._lock_conn_guard = threading.Lock()
        self.lock_timeout_ms = lock_timeout_ms
        self._indexed: tuple[float, int] | None = None  # (when, estimate) for indexed_documents()
        PgConnection.__init__(self, url, prefix=prefix, name=agent_id, pool_size=pool_size,
                              connect_timeout_ms=connect_timeout_ms)

    # --- the turn lock across instances ---------------------------------------------
    def session_lock(self, key: str) -> AbstractContextManager[None]:
        return self._hold(key)

    @contextmanager
    def _hold(self, key: str) -> Iterator[None]:
        # Threads of this process queue on the in-process lock; the one holding it then takes the
        # advisory lock every instance sees, on the connection its turn works on (`_pin`): the
        # lock travels with the turn's first statement and is released after its last.
        with self._session_locks.hold(key):
            with self._held_guard:
                depth = self._held.get(key, 0)
                self._held[key] = depth + 1
            try:
                if depth:
                    yield
                else:
                    with self._pin(lock_id(self.schema, key), key):
                        yield
            finally:
                with self._held_guard:
                    if self._held[key] <= 1:
                        del self._held[key]
                    else:
                        self._held[key] -= 1

    @contextmanager
    def _pin(self, ident: int, key: str) -> Iterator[None]:
        """This thread's statements run on one pooled connection while it holds a session lock."""
        local = self._local
        if self._pinned() is None:
            if self._current() is not None:  # a transaction already runs elsewhere: lock beside it
                with self._separate_lock(ident, key):
                    yield
                return
            pinned = self.db.try_pin(PIN_WAIT_S)
            if pinned is None:  # the pool is busy: the shared lock connection, as before
                with self._separate_lock(ident, key):
                    yield
                return
            local.pinned, local.pending, local.sent, local.pins = pinned, [], [], 0
        local.pins += 1
        local.pending.append(ident)
        try:
            yield
        finally:
            self._unpin(ident)

    def _unpin(self, ident: int) -> None:
        local = self._local
        conn = local.pinned
        local.pins -= 1
        if ident in local.pending:  # never sent: no statement ran while it was held
            local.pending.remove(ident)
        elif ident in local.sent:
            local.sent.remove(ident)
            try:
                conn.execute("SELECT pg_advisory_unlock(%s)", (ident,))
            except Exception:  # noqa: BLE001 - the connection is gone, and with it the lock
                pass
        if local.pins == 0:
            local.pinned = None
            self.db.unpin(conn)

    def _busy_error(self) -> Exception:
        return StorageError(f"a session is busy in another instance for more than {self.lock_timeout_ms} ms "
                            "(storage.busyTimeoutMs); nothing was changed, try again")

    @contextmanager
    def _separate_lock(self, ident: int, key: str) -> Iterator[None]:
        self._advisory(ident, key, take=True)
        try:
            yield
        finally:
            self._advisory(ident, key, take=False)

    def _lock_connection(self) -> Any:
        if self._lock_conn is None or self._lock_conn.closed or self._lock_conn.broken:
            self._lock_conn = psycopg.connect(self.url, autocommit=True)
        return self._lock_conn

    def _advisory(self, ident: int, key: str, *, take: bool) -> None:
        deadline = time.monotonic() + self.lock_timeout_ms / 1000
        wait = LOCK_POLL_S[0]
        reconnected = False
        while True:
            with self._lock_conn_guard:
                reused = self._lock_conn is not None and not self._lock_conn.closed and not self._lock_conn.broken
                try:
                    conn = self._lock_connection()
                    if not take:
                        conn.execute("SELECT pg_advisory_unlock(%s)", (ident,))
                        return
                    if conn.execute("SELECT pg_try_advisory_lock(%s)", (ident,)).fetchone()[0]:
                        return
                except psycopg.Error as exc:
                    if not take:  # the connection is gone, and with it the lock
                        return
                    if reused and conn.broken and not reconnected:
                        # the server dropped the idle connection (a restart): nothing was taken on
                        # it, so take the lock once more on a new one
                        reconnected = True
                        continue
                    raise translate(self.url, exc) from None
            if time.monotonic() > deadline:
                raise StorageError(f"session {key} is busy in another instance for more than "
                                   f"{self.lock_timeout_ms} ms (storage.busyTimeoutMs); nothing was changed, try again")
            time.sleep(wait)
            wait = min(wait * 2, LOCK_POLL_S[1])

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        with self._lock_conn_guard:
            if self._lock_conn is not None:
                self._lock_conn.close()
                self._lock_conn = None
        PgConnection.close(self)

    # --- leases -----------------------------------------------------------------------
    def try_lease(self, name: str, holder: str, ttl_ms: int) -> bool:
        with self.transaction():
            rows = self._write(
                "INSERT INTO {s}.leases AS l (name, holder, expires_at) "
                "VALUES (%s, %s, clock_timestamp() + %s * interval '1 millisecond') "
                "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, "
                "version = l.version + 1 WHERE l.holder = excluded.holder OR l.expires_at < clock_timestamp() "
                "RETURNING holder", (name, holder, int(ttl_ms))).fetchall()
        return bool(rows)

    def release_lease(self, name: str, holder: str) -> None:
        with self.transaction():
            self._write("DELETE FROM {s}.leases WHERE name = %s AND holder = %s", (name, holder))

    # --- caller credentials ---------------------------------------------------------
    @staticmethod
    def _credential(row: Sequence[Any]) -> CredentialRecord:
        return CredentialRecord(*row[:7], sandboxed=bool(row[7]))

    def insert_credential(self, record: CredentialRecord) -> None:
        with self.transaction():
            made = self._write(f"INSERT INTO {{s}}.credentials ({_CREDENTIAL_COLUMNS}) "
                               "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                               (record.name, record.digest, record.scope, record.created_at, record.expires_at,
                                record.revoked_at, record.last_used_at, record.sandboxed)).fetchall()
            if not made:  # the name is taken (a digest never repeats: 256 random bits)
                raise ConflictError(f"a token named {record.name!r} already exists")
            self._note(f"created token {record.name}")

    def credential_by_digest(self, digest: str) -> CredentialRecord | None:
        rows = self._query(f"SELECT {_CREDENTIAL_COLUMNS} FROM {{s}}.credentials WHERE digest = %s", (digest,))
        return self._credential(rows[0]) if rows else None

    def list_credentials(self) -> list[CredentialRecord]:
        rows = self._query(f"SELECT {_CREDENTIAL_COLUMNS} FROM {{s}}.credentials ORDER BY created_at, name")
        return [self._credential(r) for r in rows]

    def has_credentials(self) -> bool:
        return bool(self._query("SELECT 1 FROM {s}.credentials LIMIT 1"))

    def revoke_credential(self, name: str, at: int) -> CredentialRecord | None:
        with self.transaction():
            rows = self._write(f"UPDATE {{s}}.credentials SET revoked_at = coalesce(revoked_at, %s) WHERE name = %s "
                               f"RETURNING {_CREDENTIAL_COLUMNS}", (at, name)).fetchall()
            if rows:
                self._note(f"revoked token {name}")
        return self._credential(rows[0]) if rows else None

    def note_credential_use(self, name: str, at: int) -> None:
        with self.transaction():
            self._write("UPDATE {s}.credentials SET last_used_at = %s WHERE name = %s", (at, name))
            self._note("token use", minor=True)

    # --- counters -------------------------------------------------------------------
    def add_counters(self, deltas: dict[str, int]) -> None:
        rows = sorted((name, int(value)) for name, value in deltas.items() if value)  # one lock order: no deadlock
        if not rows:
            return
        with self.transaction():
            for name, value in rows:
                self._write("INSERT INTO {s}.counters AS c (name, value) VALUES (%s, %s) "
                            "ON CONFLICT (name) DO UPDATE SET value = c.value + excluded.value", (name, value))
            self._note("metrics counters", minor=True)

    def counters(self) -> dict[str, int]:
        return {name: int(value) for name, value in self._query("SELECT name, value FROM {s}.counters")}

    # --- memory documents (D4) ------------------------------------------------------
    def doc_get(self, path: str) -> Document | None:
        rows = self._query(f"SELECT {_DOC_COLUMNS} FROM {{s}}.documents WHERE path = %s", (path,))
        return Document(*rows[0]) if rows else None

    def doc_put(self, path: str, text: str, expected_version: int | None, holder: str) -> Document:
        now = int(time.time() * 1000)
        with self.transaction():
            self._write(_DOC_WRITERS_LOCK)
            if expected_version is None:  # create, or bring a tombstone back
                rows = self._write(
                    "INSERT INTO {s}.documents AS d (path, text, version, seq, updated_at, updated_by) "
                    "VALUES (%s, %s, 1, nextval('{s}.document_seq'), %s, %s) ON CONFLICT (path) DO UPDATE SET "
                    "text = excluded.text, version = d.version + 1, seq = excluded.seq, deleted = FALSE, "
                    f"updated_at = excluded.updated_at, updated_by = excluded.updated_by WHERE d.deleted "
                    f"RETURNING {_DOC_COLUMNS}", (path, clean_text(text), now, holder)).fetchall()
            else:
                rows = self._write(
                    "UPDATE {s}.documents SET text = %s, version = version + 1, seq = nextval('{s}.document_seq'), "
                    f"deleted = FALSE, updated_at = %s, updated_by = %s WHERE path = %s AND version = %s "
                    f"RETURNING {_DOC_COLUMNS}", (clean_text(text), now, holder, path, expected_version)).fetchall()
            if not rows:
                raise ConflictError(f"memory document {path} was changed by another writer (expected version "
                                    f"{expected_version}); re-read it and try again")
            self._note(f"wrote memory document {path}")
        return Document(*rows[0])

    def doc_delete(self, path: str, expected_version: int, holder: str) -> Document:
        with self.transaction():
            self._write(_DOC_WRITERS_LOCK)
            rows = self._write(
                "UPDATE {s}.documents SET text = '', version = version + 1, seq = nextval('{s}.document_seq'), "
                f"deleted = TRUE, updated_at = %s, updated_by = %s WHERE path = %s AND version = %s AND NOT deleted "
                f"RETURNING {_DOC_COLUMNS}", (int(time.time() * 1000), holder, path, expected_version)).fetchall()
            if not rows:
                raise ConflictError(f"memory document {path} was changed by another writer; not deleted")
        return Document(*rows[0])

    def doc_head(self) -> int:
        return int(self._query("SELECT coalesce(max(seq), 0) FROM {s}.documents")[0][0])

    def doc_changes(self, after_seq: int) -> list[Document]:
        rows = self._query(f"SELECT {_DOC_COLUMNS} FROM {{s}}.documents WHERE seq > %s ORDER BY seq", (after_seq,))
        return [Document(*r) for r in rows]

    def doc_record_conflict(self, conflict: DocumentConflict) -> None:
        with self.transaction():
            self._write("INSERT INTO {s}.document_conflicts (path, kept_as, base_version, current_version, holder, at) "
                        "VALUES (%s, %s, %s, %s, %s, %s)", (conflict.path, conflict.kept_as, conflict.base_version,
                                                            conflict.current_version, conflict.holder, conflict.at))

    def doc_conflicts(self, limit: int = 50) -> list[DocumentConflict]:
        rows = self._query("SELECT path, kept_as, base_version, current_version, holder, at "
                           "FROM {s}.document_conflicts ORDER BY id DESC LIMIT %s", (int(limit),))
        return [DocumentConflict(*r) for r in rows]

    # --- sessions -------------------------------------------------------------------
    @staticmethod
    def _session(row: Sequence[Any]) -> SessionRecord:
        values = dict(zip(_SESSION_COLUMNS, row, strict=True))
        values["meta"] = json.loads(values["meta"] or "{}")
        return SessionRecord(**values)

    def _select_sessions(self, where: str, params: Sequence[Any]) -> list[SessionRecord]:
        rows = self._query(f"SELECT {', '.join(_SESSION_COLUMNS)} FROM {{s}}.sessions WHERE {where}", params)
        return [self._session(r) for r in rows]

    def get_session(self, session_id: str) -> SessionRecord | None:
        found = self._select_sessions("session_id = %s", (session_id,))
        return found[0] if found else None

    def get_session_by_key(self, key: str) -> SessionRecord | None:
        found = self._select_sessions("key = %s AND archived_at IS NULL", (key,))
        return found[0] if found else None

    def _session_values(self, record: SessionRecord) -> list[Any]:
        values = [getattr(record, name) for name in _SESSION_COLUMNS]
        values[_SESSION_COLUMNS.index("meta")] = json.dumps(record.meta, ensure_ascii=False)
        return values

    def insert_session(self, record: SessionRecord) -> None:
        marks = ", ".join("%s" for _ in _SESSION_COLUMNS)
        with self.transaction():
            inserted = self._write(f"INSERT INTO {{s}}.sessions ({', '.join(_SESSION_COLUMNS)}) VALUES ({marks}) "
                                   "ON CONFLICT DO NOTHING RETURNING 1", self._session_values(record)).fetchall()
            if not inserted:
                raise ConflictError(f"session key {record.key!r} already has a current session")
            self._note(f"created session {record.key} ({record.session_id})")

    def update_session(self, record: SessionRecord) -> None:
        columns = [c for c in _SESSION_COLUMNS if c not in ("session_id", "version")]
        values = dict(zip(_SESSION_COLUMNS, self._session_values(record), strict=True))
        assignments = ", ".join(f"{c} = %s" for c in columns)
        # No round trip of its own: the compare-and-set is checked on the server (a row that
        # matched nothing fails the statement), so the update travels with the COMMIT. A
        # ConflictError comes from the transaction's next round trip, which rolls it all back.
        changed = conflict_text(f"session {record.session_id} was changed by another writer; reload and retry")
        taken = conflict_text(f"session key {record.key!r} already has a current session")
        with self.transaction():
            self._write(f"WITH u AS (UPDATE {{s}}.sessions SET {assignments}, version = version + 1 "
                        "WHERE session_id = %s AND version = %s "
                        # a current session of the same key: refused like SQLite's unique index
                        "AND (%s::bigint IS NOT NULL OR NOT EXISTS (SELECT 1 FROM {s}.sessions o WHERE o.key = %s "
                        "AND o.archived_at IS NULL AND o.session_id <> %s)) RETURNING 1) "
                        f"SELECT CASE WHEN count(*) = 1 THEN 0 WHEN EXISTS (SELECT 1 FROM {{s}}.sessions o "
                        "WHERE o.key = %s AND o.archived_at IS NULL AND o.session_id <> %s AND %s::bigint IS NULL) "
                        f"THEN {CONFLICT_CAST} ELSE {CONFLICT_CAST} END FROM u",
                        [values[c] for c in columns] + [record.session_id, record.version, record.archived_at,
                                                        record.key, record.session_id, record.key, record.session_id,
                                                        record.archived_at, taken, changed])
            self._note(f"updated session {record.key}", minor=True)
        record.version += 1

    @staticmethod
    def _session_where(flt: SessionFilter) -> tuple[str, list[Any]]:
        where, params = ["TRUE" if flt.include_archived else "archived_at IS NULL"], []
        if flt.kinds is not None:
            where.append("kind = ANY(%s)")
            params.append(list(flt.kinds))
        if flt.label is not None:
            where.append("lower(coalesce(label, '')) = %s")
            params.append(flt.label.lower())
        if flt.updated_since is not None:
            if flt.updated_since > _INT64_MAX:
                where.append("FALSE")
            else:
                where.append("updated_at >= %s")
                params.append(max(flt.updated_since, _INT64_MIN))
        if flt.parent_session_id is not None:
            where.append("parent_session_id = %s")
            params.append(flt.parent_session_id)
        if flt.descendants_of is not None:
            walk = "" if flt.include_archived else " AND c.archived_at IS NULL"
            where.append(
                "session_id IN (WITH RECURSIVE below(id) AS ("
                f"SELECT c.session_id FROM {{s}}.sessions c WHERE c.parent_session_id = ANY(%s){walk} "
                f"UNION SELECT c.session_id FROM {{s}}.sessions c JOIN below ON c.parent_session_id = below.id{walk}) "
                "SELECT id FROM below)")
            params.append(list(flt.descendants_of))
        return " AND ".join(where), params

    def list_sessions(self, flt: SessionFilter = SessionFilter()) -> list[SessionRecord]:
        where, params = self._session_where(flt)
        tail = f" LIMIT {int(flt.limit)}" if flt.limit is not None else ""
        return self._select_sessions(f"{where} ORDER BY updated_at DESC, session_id{tail}", params)

    def count_sessions(self, flt: SessionFilter = SessionFilter()) -> int:
        where, params = self._session_where(flt)
        count = self._query(f"SELECT count(*) FROM {{s}}.sessions WHERE {where}", params)[0][0]
        return min(count, flt.limit) if flt.limit is not None else count

    def delete_session(self, session_id: str) -> None:
        with self.transaction():
            self._write("DELETE FROM {s}.entry_index WHERE session_id = %s", (session_id,))
            self._bump_index()
            self._write("DELETE FROM {s}.entries WHERE session_id = %s", (session_id,))
            self._write("DELETE FROM {s}.sessions WHERE session_id = %s", (session_id,))
            self._note(f"deleted session {session_id}")

    # --- transcript -----------------------------------------------------------------
    @staticmethod
    def _entry(row: Sequence[Any]) -> EntryRecord:
        seq, entry_id, session_id, parent, etype, role, ts, content, meta, client_scope, client_id = row
        return EntryRecord(entry_id=entry_id, session_id=session_id, type=etype, timestamp=ts, role=role,
                           content=json.loads(content), meta=json.loads(meta), parent_entry_id=parent, seq=seq,
                           client_id=client_id, client_scope=client_scope)

    def append_entry(self, entry: EntryRecord, *, index_text: str | None = None,
                     at_commit: bool = False) -> EntryRecord:
        values = (entry.entry_id, entry.session_id, entry.parent_entry_id, entry.type, entry.role, entry.timestamp,
                  json.dumps(entry.content, ensure_ascii=False), json.dumps(entry.meta, ensure_ascii=False),
                  entry.client_scope if entry.client_id else None, entry.client_id)
        indexed = bool(index_text and index_text.strip())
        what = f"message id {entry.client_id!r}" if entry.client_id else f"entry id {entry.entry_id!r}"
        sql = ("WITH e AS (INSERT INTO {s}.entries (entry_id, session_id, parent_entry_id, type, role, ts, content, "
               "meta, client_scope, client_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
               "ON CONFLICT DO NOTHING RETURNING seq, session_id)")  # a duplicate id: no row
        if indexed:  # the entry and its index row in one statement
            sql += (", i AS (INSERT INTO {s}.entry_index (id, session_id, tokens, tsv) "
                    "SELECT seq, session_id, %s, %s::tsvector FROM e)")
            values += (index_text, tsvector_literal(index_text))
        if at_commit:  # not waited for: a duplicate fails the statement on the server, so the
            # transaction rolls back and DuplicateError comes where it ends
            sql += (" SELECT CASE WHEN count(*) = 1 THEN max(seq) "
                    "ELSE (%s || left(count(*)::text, 0))::bigint END FROM e")
            values += (duplicate_text(f"{what} already exists"),)
        else:
            sql += " SELECT seq FROM e"
        with self.transaction():
            cursor = self._write(sql, values)
            if indexed:
                self._bump_index()
            self._note(describe_entry(entry), minor=entry.type == "session")
            settle = self._entry_written(entry, cursor, indexed, what)
            if at_commit:
                self._on_commit(settle)
            else:
                settle()
        return entry

    def _entry_written(self, entry: EntryRecord, cursor: Any, indexed: bool, what: str) -> Any:
        """What reads the entry's seq once its INSERT's result is there (now, or at commit)."""
        def settle() -> None:
            rows = cursor.fetchall()
            if not rows:
                raise DuplicateError(f"{what} already exists")
            entry.seq = rows[0][0]
            if indexed:
                self._indexed = (time.monotonic(), max(entry.seq, self._indexed[1] if self._indexed else 0))
        return settle

    def _one_entry(self, where: str, params: Sequence[Any]) -> EntryRecord | None:
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM {{s}}.entries WHERE {where}", params)
        return self._entry(rows[0]) if rows else None

    def get_entry(self, entry_id: str) -> EntryRecord | None:
        return self._one_entry("entry_id = %s", (entry_id,))

    def get_entry_by_client_id(self, client_scope: str, client_id: str) -> EntryRecord | None:
        return self._one_entry("client_scope = %s AND client_id = %s", (client_scope, client_id))

    def find_client_entry(self, session_id: str, client_id: str) -> EntryRecord | None:
        return self._one_entry("client_id = %s AND session_id = %s ORDER BY seq DESC LIMIT 1",
                               (client_id, session_id))

    @staticmethod
    def _entry_where(session_id: str, after_seq: int | None, before_seq: int | None,
                     types: Sequence[str] | None) -> tuple[list[str], list[Any]]:
        where, params = ["session_id = %s"], [session_id]
        if after_seq is not None:
            where.append("seq > %s")
            params.append(max(min(after_seq, _INT64_MAX), _INT64_MIN))
        if before_seq is not None:
            where.append("seq < %s")
            params.append(max(min(before_seq, _INT64_MAX), _INT64_MIN))
        if types:
            where.append("type = ANY(%s)")
            params.append(list(types))
        return where, params

    def iter_entries(self, session_id: str, *, after_seq: int | None = None, before_seq: int | None = None,
                     types: Sequence[str] | None = None, newest_first: bool = False,
                     limit: int | None = None) -> Iterator[EntryRecord]:
        where, params = self._entry_where(session_id, after_seq, before_seq, types)
        order = "DESC" if newest_first else "ASC"
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM {{s}}.entries WHERE {' AND '.join(where)} "
                           f"ORDER BY seq {order}{tail}", params)
        return (self._entry(r) for r in rows)

    def entries_near(self, starts: Sequence[tuple[str, int]], *, types: Sequence[str] | None = None,
                     before: int, after: int, before_of: int | None = None) -> list[list[EntryRecord]]:
        if not starts:
            return []
        wanted = len(starts) if before_of is None else before_of
        typed = " AND e.type = ANY(%s)" if types else ""
        cols = ", ".join("e." + c.strip() for c in _ENTRY_COLUMNS.split(","))
        near = (f"(SELECT * FROM {{s}}.entries e WHERE s.k <= {int(wanted)} AND e.session_id = s.sid "
                f"AND e.seq < s.at{typed} "
                f"ORDER BY e.seq DESC LIMIT {max(int(before), 0)}) UNION ALL "
                f"(SELECT * FROM {{s}}.entries e WHERE e.session_id = s.sid AND e.seq > s.at{typed} "
                f"ORDER BY e.seq LIMIT {max(int(after), 0)})")
        rows = self._query(f"SELECT s.k, {cols} FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY "
                           f"s(sid, at, k), LATERAL ({near}) e ORDER BY s.k, e.seq",
                           [[sid for sid, _ in starts], [max(min(seq, _INT64_MAX), _INT64_MIN) for _, seq in starts],
                            *([list(types)] * 2 if types else [])])
        found: list[list[EntryRecord]] = [[] for _ in starts]
        for row in rows:
            found[int(row[0]) - 1].append(self._entry(row[1:]))
        return found

    def scan_entries(self, *, after_seq: int = 0, limit: int = 1000, newest_first: bool = False) -> list[EntryRecord]:
        order = "DESC" if newest_first else "ASC"
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM {{s}}.entries WHERE seq > %s ORDER BY seq {order} LIMIT %s",
                           (int(after_seq), int(limit)))
        return [self._entry(r) for r in rows]

    def last_entry(self, session_id: str, types: Sequence[str] | None = None) -> EntryRecord | None:
        return next(self.iter_entries(session_id, types=types, newest_first=True, limit=1), None)

    def count_entries(self, session_id: str, *, after_seq: int | None = None, before_seq: int | None = None,
                      types: Sequence[str] | None = None, exclude_roles: Sequence[str] = (),
                      block_types: Sequence[str] | None = None) -> int:
        where, params = self._entry_where(session_id, after_seq, before_seq, types)
        if exclude_roles:
            where.append("(role IS NULL OR NOT role = ANY(%s))")
            params.append(list(exclude_roles))
        if block_types is None:
            return self._query(f"SELECT count(*) FROM {{s}}.entries WHERE {' AND '.join(where)}", params)[0][0]
        # jsonb in the server; the rare content holding an escaped NUL (which jsonb refuses) is
        # counted in Python by the base class's rule.
        text_ok = "text" in block_types
        sql_where = where + [
            "strpos(content, %s) = 0",
            "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(content::jsonb) WHEN 'array' "
            "THEN content::jsonb WHEN 'string' THEN jsonb_build_array(jsonb_build_object('type', 'text', "
            "'text', content::jsonb #>> '{}')) ELSE '[]'::jsonb END) AS b "
            "WHERE jsonb_typeof(b) = 'object' AND b->>'type' = ANY(%s) "
            "AND (b->>'type' <> 'text' OR (%s AND btrim(coalesce(b->>'text', ''), %s) <> '')))",
        ]
        count = self._query(f"SELECT count(*) FROM {{s}}.entries WHERE {' AND '.join(sql_where)}",
                            [*params, _NUL_ESCAPE, list(block_types), text_ok, _BLANKS])[0][0]
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM {{s}}.entries WHERE {' AND '.join(where)} "
                           "AND strpos(content, %s) > 0", [*params, _NUL_ESCAPE])
        return count + sum(1 for r in rows if has_block(self._entry(r).content, block_types))

    # --- search ---------------------------------------------------------------------
    def _bump_index(self) -> None:
        """Once the transaction commits: move the index's generation and announce it (same round trip)."""
        self._after_commit(bump_sql("{s}.entry_index_generation", self.schema), self._moved)

    def _moved(self, row: Sequence[Any]) -> None:
        if self._watch is not None:  # this process's own write is known at once
            self._watch.wrote(int(row[0]))

    def _ranker(self) -> Ranker:
        ranker = self.__dict__.get("_text_ranker")
        if ranker is None:
            if self.search_freshness == "notify" and self._watch is None:  # started by the first search
                self._watch = GenerationWatch(self.url, self.schema, _GENERATION_SQL.replace("{s}", self.s))
            ranker = self.__dict__["_text_ranker"] = Ranker("{s}.entry_index", self._query,
                                                            "SELECT coalesce(max(id), 0) FROM {s}.entry_index",
                                                            generation_sql=_GENERATION_SQL, watch=self._watch)
        return ranker

    def _rank(self, query: TextQuery, session_ids: Iterable[str] | None, limit: int, *, rows: bool = False) -> Ranked:
        with_rows = (", ".join("e." + c.strip() for c in _ENTRY_COLUMNS.split(",")) + ", s.key",
                     "JOIN {s}.entries e ON e.seq = i.id JOIN {s}.sessions s ON s.session_id = e.session_id"
                     ) if rows else None
        if session_ids is None:
            return self._ranker().rank(query, limit, with_rows=with_rows)
        ids = list(session_ids)
        if not ids:
            return Ranked([], True)
        # the caller's visibility applies before each phrase's candidate cut and the limit
        return self._ranker().rank(query, limit, " AND m.session_id = ANY(%s)", (ids,), with_rows)

    def search(self, query: TextQuery, *, session_ids: Iterable[str] | None, limit: int) -> list[SearchRow]:
        matches = self.rank_matches(query, session_ids=session_ids, limit=limit)
        self.load_rows(matches)
        return [m.row for m in matches if m.row is not None]

    def rank_matches(self, query: TextQuery, *, session_ids: Iterable[str] | None, limit: int) -> list[TextMatch]:
        ranked = self._rank(query, session_ids, limit, rows=True)
        matches = [TextMatch(seq, score, tokens) for seq, score, tokens in ranked.rows]
        # rows that came with the candidates: decoded when asked for (load_rows)
        self._local.came_along = ranked.extra or {}
        return matches

    def _fill(self, match: TextMatch, row: Sequence[Any] | None) -> None:
        if row is not None and row[0] is not None:
            match.row = SearchRow(self._entry(row[:_ENTRY_WIDTH]), row[_ENTRY_WIDTH], match.score, match.tokens or "")
        else:  # deleted since it was ranked
            match.tokens = None

    def load_rows(self, matches: Sequence[TextMatch]) -> None:
        missing = [m for m in matches if m.row is None and m.tokens is not None]
        came = getattr(self._local, "came_along", None) or {}
        for m in [m for m in missing if m.seq in came]:
            self._fill(m, came[m.seq])
        missing = [m for m in missing if m.row is None and m.tokens is not None]
        if not missing:
            return
        cols = ", ".join("e." + c.strip() for c in _ENTRY_COLUMNS.split(","))
        found = {r[0]: r for r in self._query(
            f"SELECT {cols}, s.key FROM {{s}}.entries e JOIN {{s}}.sessions s ON s.session_id = e.session_id "
            "WHERE e.seq = ANY(%s)", ([m.seq for m in missing],))}
        for m in missing:
            self._fill(m, found.get(m.seq))
        if self._watch is not None:  # entries never change: kept for the next search while the index stays
            self._ranker().keep_rows({m.seq: (m.tokens, tuple(found[m.seq])) for m in missing if m.seq in found
                                      and m.tokens is not None})

    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        counts = self._ranker().document_frequency(tokens)
        return {t: counts.get(t, 0) for t in tokens}

    def indexed_documents(self) -> int:
        # an estimate that scales idf: this process's newest seq, or the table's max(id) read
        # again once it is INDEXED_TTL_S old (other instances' messages)
        now = time.monotonic()
        known = self._indexed
        if known is None or now - known[0] > INDEXED_TTL_S:
            known = (now, int(self._query("SELECT coalesce(max(id), 0) FROM {s}.entry_index")[0][0]))
            self._indexed = known
        return known[1]

    def indexed_messages(self) -> int:
        # no row-count record as FTS5 keeps: a count, on demand (status), over the index's own rows
        return int(self._query("SELECT count(*) FROM {s}.entry_index")[0][0])
