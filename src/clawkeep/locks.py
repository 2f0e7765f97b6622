"""One lock per session: turns of one session run one at a time, different sessions in parallel.

In-process for now (threads of one engine, e.g. a gateway's worker pool); SQLite's
`BEGIN IMMEDIATE` already makes each write atomic across processes.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager


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
