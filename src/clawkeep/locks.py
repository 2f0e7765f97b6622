"""One lock per session: turns of one session run one at a time, different sessions in parallel.

`SessionLocks` orders the threads of one process (a gateway's worker pool); `FileSessionLocks`
adds an advisory file lock per session beside an embedded store, so a CLI turn, a cron job and a
gateway on the same home take turns too (PostgreSQL uses an advisory lock in the database).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import StorageError

try:
    import fcntl
except ImportError:  # not POSIX: the in-process lock only
    fcntl = None  # type: ignore[assignment]


class _Lock:
    """A re-entrant lock that can be weakly referenced (a bare RLock cannot)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()


class SessionLocks:
    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, _Lock] = weakref.WeakValueDictionary()
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, session_key: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.get(session_key)
            if entry is None:
                entry = _Lock()
                self._locks[session_key] = entry  # dropped once no turn of this session holds it
        with entry.lock:
            yield


class FileSessionLocks:
    """`SessionLocks` plus, at the outermost hold of a thread, an exclusive `flock` on
    `<folder>/<digest of the key>.lock`, waited for up to `timeout_ms` (a turn of the same session
    in another process), then a StorageError; nothing was changed by then."""

    def __init__(self, folder: Path, timeout_ms: int) -> None:
        self._threads = SessionLocks()
        self._folder, self._timeout_ms = folder, timeout_ms
        self._folder_made = False
        self._held = threading.local()  # keys whose file lock this thread holds (holds nest)

    @contextmanager
    def hold(self, session_key: str) -> Iterator[None]:
        with self._threads.hold(session_key):
            held = self._held.__dict__.setdefault("keys", set())
            if session_key in held or fcntl is None:
                yield
                return
            fd = self._acquire(session_key)
            held.add(session_key)
            try:
                yield
            finally:
                held.discard(session_key)
                os.close(fd)  # closing the descriptor releases its flock

    def _acquire(self, session_key: str) -> int:
        if not self._folder_made:  # once per store, not a mkdir on every turn
            self._folder.mkdir(parents=True, exist_ok=True)
            self._folder_made = True
        name = hashlib.sha256(session_key.encode()).hexdigest()[:32] + ".lock"
        try:
            fd = os.open(self._folder / name, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the folder was removed since: make it again
            self._folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._folder / name, os.O_RDWR | os.O_CREAT, 0o600)
        deadline, wait = time.monotonic() + self._timeout_ms / 1000, 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise StorageError(f"session {session_key} is busy in another process for more than "
                                       f"{self._timeout_ms} ms; nothing was changed, try again") from None
                time.sleep(wait)
                wait = min(wait * 2, 0.1)
