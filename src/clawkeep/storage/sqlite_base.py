"""What every SQLite-backed store shares: the WAL connection, nested transactions, errors."""

from __future__ import annotations

import abc
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StorageError


def storage_error(path: str, exc: sqlite3.Error) -> StorageError:
    """A message naming the file and what is wrong; the caller's data is untouched."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StorageError(f"database {path} is locked by another process and stayed locked; nothing was changed")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StorageError(
            f"database {path} is corrupt or not a clawkeep database ({text}); nothing was changed. "
            "Move it aside or restore a backup."
        )
    if "readonly" in text or "unable to open" in text:
        return StorageError(f"database {path} cannot be opened for writing ({text})")
    return StorageError(f"database {path}: {text}")


class SqliteConnection(abc.ABC):
    """One connection per store, shared by threads under a lock; ":memory:" never touches disk."""

    schema_version = 1

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
        except sqlite3.Error as exc:
            raise storage_error(self.path, exc) from None
        except OSError as exc:
            raise StorageError(f"database {self.path} cannot be created: {exc}") from None

    @abc.abstractmethod
    def _schema(self) -> list[str]:
        """The CREATE statements of this store, run once per schema version."""

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > self.schema_version:
            raise StorageError(f"database {self.path} has schema version {version}; "
                               f"this clawkeep understands up to {self.schema_version}")
        if version < self.schema_version:
            with self.transaction():  # executescript() would commit early: one statement at a time
                self._upgrade(version)
                for statement in self._schema():
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {self.schema_version}")

    def _upgrade(self, from_version: int) -> None:
        """Changes CREATE ... IF NOT EXISTS cannot express (new columns), run before the schema."""

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
                    self._conn.execute("BEGIN IMMEDIATE")
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                if outer:
                    self._conn.execute("COMMIT")
            except BaseException as exc:
                if outer and self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(self.path, exc) from None
                raise

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
