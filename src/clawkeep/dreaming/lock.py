"""Locks of Dreaming: one sweep at a time per workspace, and short critical sections on the
recall store.

`SweepLock` is the interface: `acquire(owner)` returns a `Lease` or None when someone else
holds it (`holder()` says who). The file implementation takes an exclusive `flock` on
`memory/.dreams/short-term-promotion.lock` without waiting; the kernel releases it when the
holder exits, however it exits (kill -9 included), so a crashed sweep never blocks the next.
A database backend implements the same interface with a lease row (owner, expires_at) renewed
while the sweep runs, which also serialises sweeps of gateways on different machines.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import StorageError

RECALL_LOCK_TIMEOUT_S = 10.0  # a search waits at most this long to append its trace


@dataclass
class Lease:
    owner: str
    acquired_at: int  # ms
    release: Any  # () -> None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class SweepLock(Protocol):
    def acquire(self, owner: str) -> Lease | None:
        """The lease, or None at once when another sweep holds it."""

    def holder(self) -> dict[str, Any] | None:
        """Who holds it (owner, pid, host, since), or None when it is free."""


class FileSweepLock:
    def __init__(self, path: Path):
        self.path = path

    def acquire(self, owner: str) -> Lease | None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"Dreaming lock {self.path} cannot be taken ({exc.strerror or exc})") from None
        now = int(time.time() * 1000)
        info = json.dumps({"owner": owner, "pid": os.getpid(), "host": socket.gethostname(), "since": now})
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.encode("utf-8"), 0)

        def release() -> None:
            try:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

        return Lease(owner, now, _once(release))

    def holder(self) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raw = os.pread(fd, 4096, 0)
                try:
                    return json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    return {"owner": "unknown"}
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)


LEASE_NAME = "dreaming-sweep"
LEASE_TTL_MS = 120_000  # renewed every third of this while the sweep runs; a dead holder's lapses


class SharedSweepLock:
    """The file lock of this host plus a database lease (`AgentStore.try_lease`) that every
    instance on a shared database (PostgreSQL) competes for: two gateways on different machines
    never sweep at once. The lease is renewed while held; if its holder dies it lapses after
    LEASE_TTL_MS."""

    def __init__(self, local: FileSweepLock, store: Any, ttl_ms: int = LEASE_TTL_MS):
        self.local, self.store, self.ttl_ms = local, store, ttl_ms

    def acquire(self, owner: str) -> Lease | None:
        lease = self.local.acquire(owner)
        if lease is None:
            return None
        holder = f"{socket.gethostname()}:{os.getpid()}:{owner}"
        if not self.store.try_lease(LEASE_NAME, holder, self.ttl_ms):
            lease.release()
            self._elsewhere = True
            return None
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(self.ttl_ms / 3000):
                try:
                    self.store.try_lease(LEASE_NAME, holder, self.ttl_ms)
                except Exception:  # noqa: BLE001 - a failed renewal only shortens the lease
                    pass

        renewer = threading.Thread(target=renew, name="clawkeep-dreaming-lease", daemon=True)
        renewer.start()

        def release() -> None:
            stop.set()
            renewer.join(timeout=5)
            try:
                self.store.release_lease(LEASE_NAME, holder)
            finally:
                lease.release()

        return Lease(owner, lease.acquired_at, _once(release))

    def holder(self) -> dict[str, Any] | None:
        local = self.local.holder()
        if local is None and getattr(self, "_elsewhere", False):
            return {"owner": "another instance on the shared database", "lease": LEASE_NAME}
        return local


def _once(fn):
    done: list[bool] = []

    def call() -> None:
        if not done:
            done.append(True)
            fn()

    return call


@contextmanager
def held(path: Path, timeout_s: float = RECALL_LOCK_TIMEOUT_S) -> Iterator[None]:
    """A short exclusive section on `path` (the recall store), waiting up to `timeout_s`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StorageError(f"Dreaming recall store lock {path} is held by another process for more "
                                       f"than {timeout_s:.0f} s") from None
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
