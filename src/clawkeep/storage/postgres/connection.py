"""What every PostgreSQL store shares: one connection pool per server and process, per-thread
transactions (nested calls join the outer one), numbered migrations in the store's own schema,
and errors that name the server (never its password) and say what to do.

Each store lives in its own schema (`<prefix>_agent_<id>`, `<prefix>_memory_<id>`), listed in
the catalog table `<prefix>.stores`, so the SQL of a store reads like the SQLite one and several
deployments can share one database under different `storage.schema` prefixes.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ...errors import ConflictError, DuplicateError, InputError, StorageError, StorageSettingsError
from ...validation import redact_url
from ..base import AppliedMigration
from ..journal import record_committed

try:  # the optional `postgres` extra
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover - reported by require_driver()
    psycopg = None  # type: ignore[assignment]

SCHEMA_LIMIT = 63  # PostgreSQL identifiers
# A pooled connection not taken for longer than this is checked (one empty query) before use; a
# fresher one is used as is and, if the server dropped it meanwhile, a single read retries on a new one.
IDLE_CHECK_S = 30.0
_CONFLICT_MARK = "clawkeep-conflict:"  # update_session's failed compare-and-set, raised by the server
_DUPLICATE_MARK = "clawkeep-duplicate:"  # an entry id or message id already stored (append_entry at commit)
_idle_since: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def _check_if_idle(conn: Any) -> None:
    """The pool's check as a connection is taken: the time since it was last taken stands for
    its idle time (at worst a connection held long is checked once more than needed). No `reset`
    callback marks its return: with one, the pool hands every returned connection to a worker
    thread (a thread switch each time: 40-90 µs of CPU per use of a pooled connection here)."""
    now = time.monotonic()
    taken = _idle_since.get(conn)  # None: a new connection, never used
    if taken is not None and now - taken > IDLE_CHECK_S:
        ConnectionPool.check_connection(conn)
    _idle_since[conn] = now


# In a SELECT over an aggregate: a cast that fails on the server with the text bound to its
# parameter (`conflict_text`), so a compare-and-set that matched no row aborts its transaction
# without a round trip of its own (the empty `left(…)` keeps the planner from folding it early).
CONFLICT_CAST = "(%s || left(count(*)::text, 0))::int"


def conflict_text(what: str) -> str:
    return _CONFLICT_MARK + what


def duplicate_text(what: str) -> str:
    return _DUPLICATE_MARK + what


def duplicate_message(exc: Exception) -> str | None:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, pg_errors.InvalidTextRepresentation) and _DUPLICATE_MARK in text:
        return text.split(_DUPLICATE_MARK, 1)[1].rpartition('"')[0]
    return None


def conflict_message(exc: Exception) -> str | None:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, pg_errors.InvalidTextRepresentation) and _CONFLICT_MARK in text:
        return text.split(_CONFLICT_MARK, 1)[1].rpartition('"')[0]
    if isinstance(exc, pg_errors.UniqueViolation) and exc.diag.constraint_name == "sessions_current_key":
        return "a session key already has a current session"
    return None


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]  # `{s}` is the store's quoted schema


def require_driver() -> None:
    if psycopg is None:
        raise InputError("storage.url is a PostgreSQL URL but the PostgreSQL driver is not installed: "
                         "pip install 'clawkeep[postgres]' (psycopg 3 and psycopg_pool)")


def redact(url: str) -> str:
    """host:port/database of a URL, as every message names the server (no user, no password)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host:
        found = re.search(r"host=([^&]+)", parts.query or "")
        host = found.group(1) if found else "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{host}{port}{parts.path or '/'}"


def schema_name(prefix: str, kind: str, name: str) -> str:
    """`<prefix>_<kind>_<name>`, shortened with a hash when it would exceed 63 bytes."""
    full = f"{prefix}_{kind}_{name}"
    if len(full) <= SCHEMA_LIMIT:
        return full
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    return f"{full[:SCHEMA_LIMIT - 13]}_{digest}"


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def lock_id(*parts: str) -> int:
    """A stable signed 64-bit advisory-lock id for a name."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def translate(url: str, exc: Exception, *, connecting: bool = False) -> Exception:
    """A psycopg error as a ClawkeepError naming the server and what to do."""
    where = redact(url)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = redact_url(text)  # a driver message quoting the connection string keeps no password
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return StorageSettingsError(f"storage.url {where}: the role may not do what clawkeep needs ({text}); "
                                    "grant it CREATE "
                          "on the database (and USAGE/CREATE on clawkeep's schemas), or use a URL whose role may")
    if isinstance(exc, pg_errors.InvalidAuthorizationSpecification | pg_errors.InvalidPassword):
        return StorageSettingsError(f"storage.url {where}: the server refused the login ({text}); "
                                    "check user and password")
    if isinstance(exc, pg_errors.InvalidCatalogName):
        return StorageSettingsError(f"storage.url {where}: no such database ({text}); create it first (createdb)")
    if isinstance(exc, psycopg.OperationalError):
        lowered = text.lower()
        if "password authentication failed" in lowered or "role" in lowered and "does not exist" in lowered:
            return StorageSettingsError(f"storage.url {where}: the server refused the login ({text}); "
                                    "check user and password")
        if "database" in lowered and "does not exist" in lowered:
            return StorageSettingsError(f"storage.url {where}: no such database ({text}); create it first (createdb)")
        if connecting:
            return StorageError(f"PostgreSQL at {where} cannot be reached ({text}); check that the server runs and "
                                "that storage.url names it")
        return StorageError(f"the connection to PostgreSQL at {where} failed ({text}); the step that failed was "
                            "rolled back (nothing it wrote was kept) and the next call reconnects")
    return StorageError(f"PostgreSQL at {where}: {text}")


class Database:
    """One pool per (url, size) and process, shared by every store on that server."""

    _pools: dict[tuple[str, int], tuple[Database, int]] = {}
    _guard = threading.Lock()

    def __init__(self, url: str, size: int, connect_timeout_ms: int):
        self.url = url
        timeout = max(1, round(connect_timeout_ms / 1000))
        try:  # one direct connection first: its error says why (a pool only says "timed out")
            psycopg.connect(url, connect_timeout=timeout).close()
        except psycopg.Error as exc:
            raise translate(url, exc, connecting=True) from None
        # autocommit: a single read is one round trip (no BEGIN/COMMIT around it); transactions
        # are explicit (`PgConnection.transaction`)
        self.pool = ConnectionPool(url, min_size=1, max_size=size, open=True, timeout=connect_timeout_ms / 1000,
                                   kwargs={"connect_timeout": timeout, "autocommit": True}, check=_check_if_idle,
                                   name=f"clawkeep {redact(url)}")
        self.migrated: set[tuple[str, int]] = set()  # (schema, version) checked while this pool is open
        # Turns holding a session lock keep a connection each (`PgAgentStore._pin`); at most half
        # the pool, so the reads they make through other stores (memory) always find one free.
        self.pin_limit = size // 2
        self.pins = 0
        self.pin_guard = threading.Lock()

    def try_pin(self, wait_s: float) -> Any | None:
        """A pooled connection for one turn to keep, or None when the pins' share is taken or
        no connection frees up within `wait_s`."""
        with self.pin_guard:
            if self.pins >= self.pin_limit:
                return None
            self.pins += 1
        try:
            return self.pool.getconn(timeout=wait_s)
        except Exception:  # noqa: BLE001 - PoolTimeout, a closed pool: the caller locks another way
            self.unpin(None)
            return None

    def unpin(self, conn: Any | None) -> None:
        with self.pin_guard:
            self.pins -= 1
        if conn is not None:
            self.pool.putconn(conn)

    @classmethod
    def acquire(cls, url: str, size: int, connect_timeout_ms: int) -> Database:
        with cls._guard:
            found = cls._pools.get((url, size))
            if found is None:
                found = (cls(url, size, connect_timeout_ms), 0)
            cls._pools[(url, size)] = (found[0], found[1] + 1)
            return found[0]

    @classmethod
    def release(cls, db: Database) -> None:
        with cls._guard:
            for key, (found, count) in list(cls._pools.items()):
                if found is db:
                    if count > 1:
                        cls._pools[key] = (found, count - 1)
                    else:
                        del cls._pools[key]
                        found.pool.close()


class PgConnection:
    """Base of the PostgreSQL stores: `schema` is created and migrated on first open."""

    migrations: tuple[Migration, ...] = ()
    kind = "?"

    def __init__(self, url: str, *, prefix: str, name: str, pool_size: int = 8, connect_timeout_ms: int = 10_000,
                 create: bool = True):
        require_driver()
        self.url = url
        self.prefix, self.name = prefix, name
        self.schema = schema_name(prefix, self.kind, name)
        self.s = quote(self.schema)
        self.path = f"{redact(url)} schema {self.schema}"  # what messages name
        self._local = threading.local()
        self.db = Database.acquire(url, pool_size, connect_timeout_ms)
        self._closed = False
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise

    # --- transactions -------------------------------------------------------------
    # Round trips are what a server on another host costs (docs/postgres.md): a single read is one
    # (autocommit, no health query), a transaction is pipelined (BEGIN travels with its first
    # statement, COMMIT with its last), and a turn's session lock travels with the turn's first
    # statement on the connection the turn works on (`pin`).
    def _current(self) -> Any:
        return getattr(self._local, "conn", None)

    def _pinned(self) -> Any:
        return getattr(self._local, "pinned", None)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._current() is not None:
            yield
            return
        pinned = self._pinned()
        source = nullcontext(pinned) if pinned is not None else self.db.pool.connection()
        self._local.notes = []
        self._local.after = []
        self._local.settle = []
        try:
            with source as conn:
                try:
                    # BEGIN and COMMIT by hand: psycopg's own transaction() waits for each
                    with conn.pipeline():
                        conn.execute("BEGIN")
                        self._send_pending_locks(conn)
                        self._local.conn = conn
                        try:
                            yield
                        finally:
                            self._local.conn = None
                        conn.execute("COMMIT")
                        # sent with the COMMIT, run once it is done
                        ran = [(conn.execute(sql), then) for sql, then in self._local.after]
                    for settle in self._local.settle:  # the results of writes nobody waited for
                        settle()
                    for cursor, then in ran:  # their rows came with the pipeline's end
                        if then is not None:
                            then(cursor.fetchone())
                except BaseException:
                    if not conn.broken:
                        conn.rollback()
                    raise
        except psycopg.Error as exc:
            self._local.notes = []
            raise self._translate(exc) from None
        except BaseException:
            self._local.notes = []
            raise
        notes, self._local.notes = self._local.notes, []
        if notes:
            record_committed([w for w, minor in notes if not minor] or [w for w, _ in notes])

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """A connection for several reads that must agree (the vector matrix's listing and fetch):
        the thread's transaction connection, else a pooled one inside a transaction of its own."""
        current = self._current()
        if current is not None:
            yield current
            return
        try:
            with self.db.pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            raise translate(self.url, exc) from None

    def _after_commit(self, sql: str, then: Callable[[Any], None] | None = None) -> None:
        """Run `sql` right after the current transaction commits (in the same round trip);
        `then` gets its first row."""
        after = self._local.after
        sql = sql.replace("{s}", self.s)
        if all(sql != queued for queued, _then in after):
            after.append((sql, then))

    def _on_commit(self, settle: Any) -> None:
        """Call `settle()` once the current transaction has committed (its pipeline synced): a
        write whose result it reads was not waited for inside the transaction."""
        self._local.settle.append(settle)

    def _note(self, what: str, *, minor: bool = False) -> None:
        notes = getattr(self._local, "notes", None)
        if notes is not None:
            notes.append((what, minor))

    def _translate(self, exc: Exception) -> Exception:
        duplicate = duplicate_message(exc)
        if duplicate is not None:
            return DuplicateError(duplicate)
        conflict = conflict_message(exc)
        if conflict is not None:
            return ConflictError(conflict)
        if isinstance(exc, pg_errors.LockNotAvailable):
            return self._busy_error()
        return translate(self.url, exc)

    def _busy_error(self) -> Exception:
        return StorageError(f"PostgreSQL at {redact(self.url)}: a lock stayed busy; nothing was changed, try again")

    def _query(self, sql: str, params: Sequence[Any] | dict | None = None) -> list[Any]:
        sql = sql.replace("{s}", self.s)
        current = self._current()
        if current is not None:  # errors are translated where the transaction ends
            return current.execute(sql, params).fetchall()
        pinned = self._pinned()
        if pinned is not None:
            try:
                return self._pinned_read(pinned, sql, params)
            except psycopg.Error as exc:
                raise self._translate(exc) from None
        for attempt in range(2):
            used = None
            try:
                with self.db.pool.connection() as conn:
                    used = conn
                    return conn.execute(sql, params).fetchall()
            except psycopg.OperationalError as exc:
                # a pooled connection the server dropped (a restart): a read is safe to repeat
                if attempt == 0 and used is not None and _dropped(used, exc):
                    self.db.pool.check()  # its idle siblings were dropped with it: let them go first
                    continue
                raise translate(self.url, exc) from None
            except psycopg.Error as exc:
                raise translate(self.url, exc) from None
        raise AssertionError("unreachable")

    def _queries(self, statements: Sequence[tuple[str, Sequence[Any] | None]]) -> list[list[Any]]:
        """The rows of several independent reads, sent together: one round trip (a pipeline on
        one pooled connection, each read autocommitted as `_query`'s are). Inside the thread's
        transaction or on a pinned connection they run as `_query` runs them."""
        if len(statements) < 2 or self._current() is not None or self._pinned() is not None:
            return [self._query(sql, params) for sql, params in statements]
        for attempt in range(2):
            used = None
            try:
                with self.db.pool.connection() as conn:
                    used = conn
                    with conn.pipeline():  # one Sync when the block ends, every result read then
                        cursors = [conn.execute(sql.replace("{s}", self.s), params) for sql, params in statements]
                    return [cur.fetchall() for cur in cursors]
            except psycopg.OperationalError as exc:
                if attempt == 0 and used is not None and _dropped(used, exc):  # as in `_query`
                    self.db.pool.check()
                    continue
                raise translate(self.url, exc) from None
            except psycopg.Error as exc:
                raise translate(self.url, exc) from None
        raise AssertionError("unreachable")

    def _write(self, sql: str, params: Sequence[Any] | dict | None = None) -> Any:
        """Inside `transaction()`: queued in the pipeline; fetching its rows waits for them."""
        conn = self._current()
        assert conn is not None, "writes run inside transaction()"
        return conn.execute(sql.replace("{s}", self.s), params)

    # --- locks that travel with the next statement ----------------------------------
    lock_timeout_ms = 30_000

    def _pinned_read(self, conn: Any, sql: str, params: Sequence[Any] | dict | None) -> list[Any]:
        pending = list(getattr(self._local, "pending", None) or ())
        if not pending:
            return conn.execute(sql, params).fetchall()
        # the locks and the read in one simple query (parameters bound here): one round trip
        prefix = self._lock_sql(pending)
        try:
            return self._locking_read(conn, prefix + sql, params, prefix.count(";"), pending)
        except psycopg.OperationalError as exc:
            if self._local.sent or not _dropped(conn, exc):
                raise
            # the turn's first statement met a connection the server dropped: no lock was
            # taken on it, so once more on a new one
            self.db.pool.putconn(conn)
            self.db.pool.check()  # the server dropped the idle ones too (a restart): let them go first
            fresh = self.db.pool.getconn()
            self._local.pinned = fresh
            return self._locking_read(fresh, prefix + sql, params, prefix.count(";"), pending)

    def _locking_read(self, conn: Any, sql: str, params: Any, skip: int, pending: list[int]) -> list[Any]:
        with psycopg.ClientCursor(conn) as cur:
            cur.execute(sql, params)
            self._local.sent.extend(pending)
            self._local.pending.clear()
            for _ in range(skip):
                cur.nextset()
            return cur.fetchall()

    def _lock_sql(self, idents: Sequence[int]) -> str:
        # one statement: its columns are computed in order, so the timeout is set before the waits
        return (f"SELECT set_config('lock_timeout', '{int(self.lock_timeout_ms)}ms', true), "
                + ", ".join(f"pg_advisory_lock({int(ident)})" for ident in idents) + "; ")

    def _send_pending_locks(self, conn: Any) -> None:
        """Queue the session locks asked for on this (pinned) connection before the statement
        that follows: they wait on the server (lock_timeout bounds the wait)."""
        pending = getattr(self._local, "pending", None)
        if not pending or conn is not self._pinned():
            return
        for statement in self._lock_sql(pending).split("; ")[:-1]:
            conn.execute(statement)
        self._local.sent.extend(pending)
        pending.clear()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            Database.release(self.db)

    # --- schema ---------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        return self.migrations[-1].version if self.migrations else 0

    def _migrate(self) -> None:
        """Once per store while the process keeps its pool open (stores of one server share it):
        one read when the schema is current, else the migrations."""
        key = (self.schema, self.schema_version)
        if key in self.db.migrated:
            return
        if not self._schema_is_current():
            self._apply_migrations()
        self.db.migrated.add(key)

    def _schema_is_current(self) -> bool:
        try:
            with self.db.pool.connection() as conn:
                # behind the migration lock (a migrator's transaction is waited for), one round trip
                newest = conn.execute(f"SELECT (SELECT max(version) FROM {self.s}.schema_migrations) "
                                      "FROM (SELECT pg_advisory_xact_lock(%s)) AS migrating",
                                      (lock_id("migrate", self.schema),)).fetchone()[0]
        except (pg_errors.UndefinedTable, pg_errors.InvalidSchemaName):
            return False
        except psycopg.Error as exc:
            raise translate(self.url, exc, connecting=True) from None
        return newest == self.schema_version

    def _apply_migrations(self) -> None:
        catalog = quote(self.prefix)
        latest = self.schema_version
        with self.transaction():
            # one migrator per schema at a time, across processes
            self._write("SELECT pg_advisory_xact_lock(%s)", (lock_id("migrate", self.schema),))
            self._write(f"CREATE SCHEMA IF NOT EXISTS {catalog}")
            self._write(f"CREATE TABLE IF NOT EXISTS {catalog}.stores (kind TEXT NOT NULL, name TEXT NOT NULL, "
                        "schema_name TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (kind, name))")
            self._write("CREATE SCHEMA IF NOT EXISTS {s}")
            self._write("CREATE TABLE IF NOT EXISTS {s}.schema_migrations (version INTEGER PRIMARY KEY, "
                        "name TEXT NOT NULL, applied_at BIGINT)")
            done = {row[0] for row in self._write("SELECT version FROM {s}.schema_migrations").fetchall()}
            newest = max(done, default=0)
            if newest > latest:
                raise StorageError(
                    f"database {self.path} has schema version {newest}, newer than this clawkeep understands "
                    f"(up to {latest}); it was written by a newer clawkeep: upgrade clawkeep to open it. "
                    "Nothing was changed")
            for m in self.migrations:
                if m.version in done:
                    continue
                for statement in m.statements:
                    self._write(statement)
                self._write("INSERT INTO {s}.schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                            (m.version, m.name, int(time.time() * 1000)))
            self._write(f"INSERT INTO {catalog}.stores (kind, name, schema_name, created_at) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT DO NOTHING", (self.kind, self.name, self.schema, int(time.time() * 1000)))

    def server_info(self) -> dict[str, Any]:
        """What `status` names: the server's version and whether pgvector is installed there."""
        version, vector = self._query("SELECT current_setting('server_version'), (SELECT coalesce(installed_version, "
                                      "default_version || ' (available, not installed in this database)') "
                                      "FROM pg_available_extensions WHERE name = 'vector')")[0]
        return {"storage": "postgres", "storageVersion": f"PostgreSQL {str(version).split()[0]}",
                "pgvector": vector}

    def applied_migrations(self) -> list[AppliedMigration]:
        rows = self._query("SELECT version, name, applied_at FROM {s}.schema_migrations ORDER BY version")
        return [AppliedMigration(*row) for row in rows]


def catalog_names(url: str, prefix: str, kind: str, *, pool_size: int = 8,
                  connect_timeout_ms: int = 10_000) -> list[str]:
    """The names of the stores of one kind under a prefix (no schema is created)."""
    require_driver()
    db = Database.acquire(url, pool_size, connect_timeout_ms)
    try:
        with db.pool.connection() as conn:  # no catalog yet: no stores (one round trip either way)
            rows = conn.execute(f"SELECT name FROM {quote(prefix)}.stores WHERE kind = %s ORDER BY name",
                                (kind,)).fetchall()
            return [r[0] for r in rows]
    except (pg_errors.UndefinedTable, pg_errors.InvalidSchemaName):
        return []
    except psycopg.Error as exc:
        raise translate(url, exc) from None
    finally:
        Database.release(db)


def clean_text(value: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL: it becomes U+FFFD (only in derived, searchable text)."""
    return value.replace("\x00", "\ufffd") if value and "\x00" in value else value


def _dropped(conn: Any, exc: Exception) -> bool:
    """The server ended this connection (a restart, pg_terminate_backend): psycopg may not mark it
    broken before the next statement, but the error's SQLSTATE says so (08: connection exception,
    57P01-57P03: the server shut it down)."""
    state = getattr(exc, "sqlstate", None) or ""
    return conn.broken or conn.closed or state.startswith("08") or state in ("57P01", "57P02", "57P03")
