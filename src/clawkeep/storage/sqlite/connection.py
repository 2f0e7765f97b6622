"""What every SQLite-backed store shares: the WAL connection, nested transactions, numbered
migrations, errors, and moving a damaged file aside."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ...errors import CorruptDatabaseError, StorageError
from ..base import AppliedMigration
from ..journal import current_journal, record_committed
from . import migrations as schema
from .migrations import Migration

T = TypeVar("T")

MAX_CACHED_READS = 4096  # _committed_read entries kept before the cache starts over
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT (and its extended codes), SQLITE_NOTADB


def is_corruption(exc: sqlite3.Error) -> bool:
    """The file is damaged or not SQLite at all (not: locked, read-only, a bad query)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    text = str(exc)
    return "file is not a database" in text or "disk image is malformed" in text


def storage_error(path: str, exc: sqlite3.Error) -> StorageError:
    """A message naming the file and what is wrong; the caller's data is untouched."""
    text = str(exc)
    if is_corruption(exc):
        return CorruptDatabaseError(path, text)
    if "locked" in text or "busy" in text:
        return StorageError(f"database {path} is locked by another process and stayed locked; nothing was changed")
    if "readonly" in text or "unable to open" in text:
        return StorageError(f"database {path} cannot be opened for writing ({text})")
    return StorageError(f"database {path}: {text}")


def move_aside(path: str | Path, label: str = "corrupt", *, keep: int | None = None) -> Path:
    """Rename a database and its -wal/-shm to `<name>.<label>-<UTC time>` beside it (never
    deleted). `keep` prunes older sets with the same label down to that many (derived stores
    only). OSError when the directory is not writable."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.{label}-{stamp}")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{label}-{stamp}.{counter}")
        counter += 1
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, Path(f"{target}{suffix}"))
    if keep is not None:
        older = sorted(p for p in path.parent.glob(f"{path.name}.{label}-*") if not p.name.endswith(("-wal", "-shm")))
        for stale in older[:-keep] if keep > 0 else older:
            for victim in (stale, Path(f"{stale}-wal"), Path(f"{stale}-shm")):
                victim.unlink(missing_ok=True)
    return target


class SqliteConnection:
    """One connection per store, shared by threads under a lock; ":memory:" never touches disk.

    Subclasses list their `migrations` (numbered from 1, never edited once released: a schema
    change is a new migration at the end)."""

    migrations: tuple[Migration, ...] = ()
    _ready = False  # set once the schema is in place: the write-path probe needs the tables
    _probed: object = None  # the journal (or True: this connection) the write path was last probed for
    _commits = 0  # transactions this connection committed (see change_token)

    def __init__(self, path: str | Path, *, synchronous: str, busy_timeout_ms: int):
        self.path = str(path)
        self._lock = threading.RLock()
        self._depth = 0
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                         timeout=busy_timeout_ms / 1000)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._migrate()
            self._ready = True
        except sqlite3.Error as exc:
            raise storage_error(self.path, exc) from None
        except OSError as exc:
            raise StorageError(f"database {self.path} cannot be created: {exc}") from None

    @property
    def schema_version(self) -> int:
        return schema.latest_version(self.migrations)

    def _migrate(self) -> None:
        if not schema.needs_work(self._conn, self.path, self.migrations):
            return
        try:
            with self.transaction():  # re-read inside: another process may be migrating the same file
                schema.apply(self._conn, self.path, self.migrations)
        except StorageError as exc:
            # An up-to-date database from before the history table, on a read-only file: its
            # history is recorded the next time it is opened for writing.
            if schema.user_version(self._conn) == self.schema_version and "cannot be opened for writing" in str(exc):
                return
            raise

    def applied_migrations(self) -> list[AppliedMigration]:
        with self._lock:
            try:
                return schema.history(self._conn)
            except sqlite3.Error as exc:
                raise storage_error(self.path, exc) from None

    def _probe_write_path(self) -> None:
        """Cheap reads (a few B-tree descents) of the pages the next writes will touch, run before
        the first write of a call (a `commit_journal()` block) or of the connection: a damaged
        page fails the call before anything is committed. A whole-file check is `clawkeep doctor`."""

    def _note(self, what: str, *, minor: bool = False) -> None:
        """Describe a change for the commit journal; kept only if its transaction commits.
        Minor notes (a session row's counters) are dropped when the transaction did more."""
        self.__dict__.setdefault("_pending", []).append((what, minor))

    def _maybe_probe(self) -> None:
        journal = current_journal()
        token = journal if journal is not None else True
        if self._ready and self._probed is not token:
            self._probe_write_path()
            self._probed = token

    def _committed(self) -> None:
        pending = self.__dict__.pop("_pending", [])
        notes = [what for what, minor in pending if not minor] or [what for what, _ in pending]
        record_committed(notes)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; nested calls join the outer transaction."""
        with self._lock:
            outer = self._depth == 0
            try:
                if outer:
                    self.__dict__.pop("_pending", None)
                    self._conn.execute("BEGIN IMMEDIATE")
                    self._maybe_probe()
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                if outer:
                    self._conn.execute("COMMIT")
                    self._commits += 1
                    self._committed()
            except BaseException as exc:
                if outer:
                    self.__dict__.pop("_pending", None)
                if outer and self._conn.in_transaction:
                    try:
                        self._conn.execute("ROLLBACK")
                    except sqlite3.Error:  # a damaged file can fail the rollback too; the first error says why
                        pass
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(self.path, exc) from None
                raise

    def change_token(self) -> tuple[int, int] | None:
        """A value that differs whenever anything was committed to the file since it was last
        taken, by this connection or another (SQLite's data_version counts only the others'),
        for in-process caches of what a query read; None inside a transaction (what it reads may
        still be rolled back: not cacheable). Call with the lock held."""
        if self._depth:
            return None
        return self._conn.execute("PRAGMA data_version").fetchone()[0], self._commits

    def _committed_read(self, key: Any, read: Callable[[], T]) -> T:
        """`read()`, kept per `key` until anything is committed to the file (by any connection):
        for what every search asks again (all file records, document frequencies). The values
        are shared: callers must not change them."""
        with self._lock:
            try:
                token = self.change_token()
            except sqlite3.Error as exc:
                raise storage_error(self.path, exc) from None
            if token is None:
                return read()
            cache = self.__dict__.get("_reads")
            if cache is None or cache[0] != token or len(cache[1]) > MAX_CACHED_READS:
                cache = self._reads = (token, {})
            if key not in cache[1]:
                cache[1][key] = read()
            return cache[1][key]

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(self.path, exc) from None

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Inside `transaction()`; IntegrityError is left to the caller (duplicates, conflicts)."""
        try:
            return self._conn.execute(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise storage_error(self.path, exc) from None
