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


def _enable_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """`PRAGMA journal_mode = WAL`, retried: on a new file that another connection is opening too,
    SQLite answers "database is locked" at once instead of waiting its busy timeout (measured:
    28 of 300 races of six openers), and the first opener converts the file within milliseconds."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


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


class _Group:
    """The logical transactions of several threads committed by one COMMIT (group commit)."""

    __slots__ = ("members", "done", "error")

    def __init__(self) -> None:
        self.members = 0
        self.done = False
        self.error: BaseException | None = None


class _Reader:
    """A read-only connection of the pool (group commit), used by one thread at a time, with
    its `_committed_read` cache: (its data_version when filled, values by key)."""

    __slots__ = ("conn", "reads")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.reads: tuple[int, dict[Any, Any]] | None = None


class _Checkpointer:
    """Copies a WAL file's committed frames into the database on a thread of its own.

    SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL pages: that
    commit copies ~4 MB and syncs the database file. Appending three transcript entries per
    transaction to a 100k-message store, one transaction in twenty took over 10 ms that way (p99
    45–48 ms, max 138–159 ms) against p99 2–4 ms without it. So the writer's automatic
    checkpoint is off, and this thread runs a PASSIVE checkpoint (it never blocks readers or
    writers) after every CHECKPOINT_COMMITS commits, or CHECKPOINT_EVERY_S after the last one.
    (It cannot cheaply learn how many frames are waiting: reading the -shm file's header would
    mean opening and closing a descriptor on it, and closing any descriptor of a file drops every
    POSIX lock this process holds on it — SQLite's WAL locks included; another process then lost
    acknowledged commits in the kill -9 test.)
    SQLite starts the WAL over only when a write begins after every frame was copied; a writer
    that never pauses would keep the file growing, so once it holds CHECKPOINT_HOLD_FRAMES the
    thread checkpoints again holding the store's lock (copying only what was committed
    meanwhile), and the next write starts the file over.
    Durability is unchanged: a commit is durable in the WAL under the configured mode either way.
    A checkpoint that fails or finds readers in the way is retried the next time; if this thread
    falls behind by CHECKPOINT_INLINE commits, the committing thread checkpoints itself, as
    SQLite would have (the WAL never grows without bound)."""

    def __init__(self, path: str, busy_timeout_ms: int, synchronous: str, writers: Any):
        self._path, self._busy_timeout_ms, self._synchronous = path, busy_timeout_ms, synchronous
        self._writers = writers  # the store's lock: held, no transaction of this process is open
        self._pending = 0  # commits since the last checkpoint started
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def committed(self, writer: sqlite3.Connection) -> None:
        """After each COMMIT, with the store's lock held (so `writer` is free to use)."""
        self._pending += 1
        if self._pending >= CHECKPOINT_INLINE:  # the thread is stuck or gone: do it here
            self._pending = 0
            try:
                writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:
                pass  # the next commit tries again; nothing committed depends on it
            return
        if self._thread is None or self._pid != os.getpid():  # a forked child starts its own
            with self._lock:
                if (self._thread is None or self._pid != os.getpid()) and not self._stopping:
                    self._pid = os.getpid()
                    self._thread = threading.Thread(target=self._run, daemon=True, name="clawkeep-checkpoint")
                    self._thread.start()
        if self._pending >= CHECKPOINT_COMMITS:
            self._wake.set()

    def _run(self) -> None:
        conn = None
        try:
            while not self._stopping:
                self._wake.wait(CHECKPOINT_EVERY_S)
                self._wake.clear()
                if self._stopping or not self._pending:
                    continue
                self._pending = 0
                try:
                    if conn is None:
                        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False,
                                               timeout=self._busy_timeout_ms / 1000)
                        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                    busy, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if (not busy and frames >= CHECKPOINT_HOLD_FRAMES
                            and self._writers.acquire(timeout=CHECKPOINT_EVERY_S)):
                        try:
                            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                        finally:
                            self._writers.release()
                except sqlite3.Error:
                    pass  # retried after the next commits (a damaged file reports itself on the writer)
        finally:
            if conn is not None:
                conn.close()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            thread = self._thread if self._pid == os.getpid() else None
        self._wake.set()
        if thread is not None:
            thread.join(10)


# Under FULL every commit syncs the WAL already, and a checkpoint syncing the database beside
# those commits cost group commit 5–12% of its durable throughput (4 writers, 6 alternated runs,
# checkpointing every CHECKPOINT_COMMITS):
# there SQLite keeps checkpointing inside the commit, where the waiting writers join the next group.
CHECKPOINT_OFF_COMMIT_MODES = frozenset({"NORMAL", "OFF", "1", "0"})
# About SQLite's own 1,000-page trigger for the 3-4 pages a small transcript commit writes: each
# checkpoint copies a hot page (the FTS tail, a session row) once however often it changed, so
# every 32 commits copied the same pages 8 times as often (≈8% of an appended message's CPU).
CHECKPOINT_COMMITS = 256  # commits between checkpoints ...
CHECKPOINT_EVERY_S = 1.0  # ... or this long after the last commit
CHECKPOINT_INLINE = 500  # commits without a checkpoint before the committing thread runs one
CHECKPOINT_HOLD_FRAMES = 8_192  # ≈32 MB of 4 KiB pages


class SqliteConnection:
    """One connection per store, shared by threads under a lock; ":memory:" never touches disk.

    Subclasses list their `migrations` (numbered from 1, never edited once released: a schema
    change is a new migration at the end).

    Group commit (`group_commit=True`, the agent store): concurrent writers of this process share
    one COMMIT — one fsync under `synchronous=FULL`. Each outermost `transaction()` runs inside
    a group transaction, as a SAVEPOINT once the group holds others' writes (its failure rolls
    back only its own writes); when it is done the caller waits until a COMMIT that includes it
    has returned, so nothing is acknowledged before it is durable under the configured mode. The last writer of a burst
    commits: a writer whose group still has writers queued behind it lets them join first, up to
    GROUP_MAX members. A read outside any transaction runs on a read-only connection of a small
    pool (WAL: it sees the last COMMIT, never an open group), so readers neither wait for the
    writers nor end their group early; in memory (one connection only) it first commits an open
    group. Either way readers only ever see committed rows."""

    migrations: tuple[Migration, ...] = ()
    _ready = False  # set once the schema is in place: the write-path probe needs the tables
    _probed: object = None  # the journal (or True: this connection) the write path was last probed for
    GROUP_MAX = 64  # logical transactions per COMMIT at most
    commits = 0  # COMMITs this connection ran (with group commit: `grouped` transactions in them)
    grouped = 0
    GROUP_WAIT_S = 0.05  # a waiting member re-checks this often (the committer also notifies)
    # Idle read-only connections kept for reads outside a transaction (group commit). A pool only
    # grows to the reads that ran at once, so this caps what a busy gateway keeps: at 4, ten
    # concurrent turns re-opened a reader every fifth turn (≈10% of a record-mode turn's CPU).
    READERS_KEPT = 16
    _checkpointer: _Checkpointer | None = None  # a file's WAL checkpoints, off the commit path

    def __init__(self, path: str | Path, *, synchronous: str, busy_timeout_ms: int, group_commit: bool = False):
        self.path = str(path)
        self._lock = threading.RLock()
        self._depth = 0
        self._group_commit = group_commit
        self._group: _Group | None = None  # the open group transaction, if any
        self._owner: int | None = None  # the thread running a transaction body (group commit)
        self._queued = 0  # writers waiting for the lock to start a transaction
        self._queue_lock = threading.Lock()
        self._committed_cond = threading.Condition(self._lock)
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._synchronous = synchronous
        # Reads outside a transaction on their own connections (a file with group commit only).
        self._read_apart = group_commit and self.path != ":memory:"
        self._readers: list[_Reader] = []  # idle ones
        self._readers_lock = threading.Lock()  # the pool
        self._closed = False
        self._local = threading.local()  # .reader: the one this thread's current read uses
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                         timeout=busy_timeout_ms / 1000)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if self.path != ":memory:":
                _enable_wal(self._conn, busy_timeout_ms)
                if synchronous.upper() in CHECKPOINT_OFF_COMMIT_MODES:
                    self._conn.execute("PRAGMA wal_autocheckpoint = 0")  # _Checkpointer does it off the commit path
                    self._checkpointer = _Checkpointer(self.path, self._busy_timeout_ms, synchronous, self._lock)
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._configure(self._conn)
            self._migrate()
            self._ready = True
        except sqlite3.Error as exc:
            raise storage_error(self.path, exc) from None
        except OSError as exc:
            raise StorageError(f"database {self.path} cannot be created: {exc}") from None

    def _configure(self, conn: sqlite3.Connection) -> None:
        """Per-connection setup (SQL functions) for the writer and every reader."""

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
            self._settle_reads()
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
        if self._checkpointer is not None:  # first: the writer's close then checkpoints what is left
            self._checkpointer.stop()
        with self._lock:
            self._settle_reads()
            with self._readers_lock:
                self._closed = True  # later reads go to the closed writer connection: an error
                idle, self._readers = self._readers, []
            self._conn.close()
        for reader in idle:  # one still reading is closed when its read returns it
            reader.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; nested calls join the outer transaction. With group
        commit the outermost one runs inside the open group and returns once the group committed."""
        if self._group_commit:
            group, notes = yield from self._grouped()
            if group is not None:  # the outermost call: answered once its group is durable
                self._await_commit(group)
                record_committed(notes)
            return
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
                    self.commits += 1
                    self._committed()
                    self._after_commit()
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

    def _after_commit(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.committed(self._conn)

    def change_token(self) -> tuple[int, int] | None:
        """A value that differs whenever anything was committed to the file since it was last
        taken, by this connection or another (SQLite's data_version counts only the others'),
        for in-process caches of what a query read; None inside a transaction (what it reads may
        still be rolled back, or is not committed yet: not cacheable). Call with the lock held."""
        if self._depth or self._conn.in_transaction:  # also an open group commit
            return None
        return self._conn.execute("PRAGMA data_version").fetchone()[0], self.commits

    def _committed_read(self, key: Any, read: Callable[[], T]) -> T:
        """`read()`, kept per `key` until anything is committed to the file (by any connection):
        for what every search asks again (all file records, document frequencies). The values
        are shared: callers must not change them."""
        if self._reads_apart():  # one reader answers both the token and `read()`'s queries
            try:
                with self._reading() as reader:
                    # data_version numbers are the connection's own: one cache per reader
                    token = reader.conn.execute("PRAGMA data_version").fetchone()[0]
                    cache = reader.reads
                    if cache is None or cache[0] != token or len(cache[1]) > MAX_CACHED_READS:
                        cache = reader.reads = (token, {})
                    if key not in cache[1]:
                        cache[1][key] = read()  # as new as the token or newer: a later token re-reads
                    return cache[1][key]
            except sqlite3.Error as exc:
                raise storage_error(self.path, exc) from None
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
    # --- group commit ----------------------------------------------------------------------
    def _grouped(self) -> Iterator[None]:
        """The body of one outermost transaction inside the open group (opened here if none is),
        as a savepoint when the group already holds others' writes. Returns (the group, or None
        for a nested call; this transaction's journal notes)."""
        me = threading.get_ident()
        if self._owner == me:  # nested: this thread is inside its own transaction body
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return None, []
        with self._queue_lock:
            self._queued += 1  # counted before waiting for the lock: the group ahead waits for us
        with self._lock:
            with self._queue_lock:
                self._queued -= 1
            group = self._join_group()
            alone = not group.members  # nothing of others to keep: no savepoint, a failure rolls all back
            if not alone:
                try:
                    self._conn.execute("SAVEPOINT ck_write")
                except sqlite3.Error as exc:
                    self._leave_group(group)
                    raise storage_error(self.path, exc) from None
            self.__dict__.pop("_pending", None)
            self._owner, self._depth = me, 1
            try:
                yield
                if not alone:
                    self._conn.execute("RELEASE ck_write")
            except BaseException as exc:
                self.__dict__.pop("_pending", None)
                if alone:
                    self._rollback_group()
                else:
                    try:
                        self._conn.execute("ROLLBACK TO ck_write")
                        self._conn.execute("RELEASE ck_write")
                    except sqlite3.Error:  # SQLite rolled the whole transaction back: the group is lost
                        self._fail_group(exc)
                    self._leave_group(group)
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(self.path, exc) from None
                raise
            finally:
                self._owner, self._depth = None, 0
            group.members += 1
            pending = self.__dict__.pop("_pending", [])
        return group, [what for what, minor in pending if not minor] or [what for what, _ in pending]

    def _join_group(self) -> _Group:
        """The group this writer joins (a new one when none is open or it is full)."""
        try:
            if self._group is not None and self._group.members >= self.GROUP_MAX:
                self._commit_group()
            if self._group is None:
                self._conn.execute("BEGIN IMMEDIATE")
                self._group = _Group()
            group = self._group
            self._maybe_probe()
            return group
        except BaseException as exc:  # this writer never joined: the members already in stay
            if self._group is not None:
                self._leave_group(self._group)
            if isinstance(exc, sqlite3.Error):
                raise storage_error(self.path, exc) from None
            raise

    def _leave_group(self, group: _Group) -> None:
        """A writer failed without becoming a member: an empty group nobody will join is rolled
        back (its write lock released); otherwise the waiting members re-check who commits."""
        if self._group is group and not group.members and not self._queued:
            self._rollback_group()
        else:
            self._committed_cond.notify_all()

    def _await_commit(self, group: _Group) -> None:
        """Return once `group` is committed: the writer that finds no one queued behind it commits
        (an open group always has such a writer); the others wait to be told."""
        with self._lock:
            while not group.done:
                if self._group is group and not (self._queued and group.members < self.GROUP_MAX):
                    self._commit_group()
                else:
                    self._committed_cond.wait(self.GROUP_WAIT_S)
        if group.error is not None:
            error = group.error
            if isinstance(error, sqlite3.Error):
                raise storage_error(self.path, error) from None
            raise StorageError(f"database {self.path}: the commit failed ({error}); nothing was changed")

    def _commit_group(self) -> None:
        """COMMIT the open group (the lock is held); every member is told, success or not."""
        group, self._group = self._group, None
        if group is None:
            return
        try:
            self._conn.execute("COMMIT")
            self.commits += 1
            self.grouped += group.members
            self._after_commit()
        except sqlite3.Error as exc:
            group.error = exc
            self._rollback_quietly()
        self._finish(group)

    def _rollback_group(self) -> None:
        group, self._group = self._group, None
        self._rollback_quietly()
        if group is not None:
            self._finish(group)

    def _fail_group(self, exc: BaseException) -> None:
        group, self._group = self._group, None
        self._rollback_quietly()
        if group is not None:
            group.error = exc
            self._finish(group)

    def _finish(self, group: _Group) -> None:
        group.done = True
        self._committed_cond.notify_all()

    def _rollback_quietly(self) -> None:
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:  # a damaged file can fail the rollback too; the first error says why
                pass

    def _settle_reads(self) -> None:
        """Before a read outside a transaction: commit an open group (readers see committed rows
        only). Inside a transaction a writer sees the rows of the group's earlier members: they
        commit with it or not at all."""
        if self._group is not None and self._owner is None:
            self._commit_group()

    # --- reads beside the writer (group commit) -------------------------------------------
    def _reads_apart(self) -> bool:
        """This read runs on a reader: group commit on a file, and this thread is not inside its
        own transaction (whose body reads the group's rows on the writer's connection)."""
        return self._read_apart and self._owner != threading.get_ident() and not self._closed

    @contextmanager
    def _reading(self) -> Iterator[_Reader]:
        """A read-only connection for this thread's read (the one it already uses when nested)."""
        pinned = getattr(self._local, "reader", None)
        if pinned is not None:
            yield pinned
            return
        with self._readers_lock:
            reader = self._readers.pop() if self._readers else None  # the last returned: its cache is warm
        if reader is None:
            reader = _Reader(self._open_reader())
        self._local.reader = reader
        try:
            yield reader
        finally:
            self._local.reader = None
            with self._readers_lock:
                keep = not self._closed and len(self._readers) < self.READERS_KEPT
                if keep:
                    self._readers.append(reader)
            if not keep:
                reader.conn.close()

    def _open_reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=self._busy_timeout_ms / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")  # a checkpoint on close syncs alike
            self._configure(conn)  # before query_only: a store may create its temp tables there
            conn.execute("PRAGMA query_only = 1")
        except BaseException:
            conn.close()
            raise
        return conn

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if self._reads_apart():
            try:
                with self._reading() as reader:
                    return reader.conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(self.path, exc) from None
        with self._lock:
            self._settle_reads()
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
