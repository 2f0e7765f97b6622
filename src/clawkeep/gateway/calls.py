"""Running engine operations off the event loop, and knowing what is in flight.

The engine is synchronous (SQLite, the embedding model, the chat model's HTTP); every call runs
in a worker thread under one capacity limit, so the event loop only ever awaits. `InFlight`
counts those calls so a shutdown can wait for them and refuse new ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from anyio import to_thread

from ..errors import ClawkeepError

T = TypeVar("T")


class ShuttingDown(ClawkeepError):
    code = "shutting_down"
    http_status = 503


class InFlight:
    def __init__(self, threads: int):
        self.limiter = anyio.CapacityLimiter(threads)
        self._count = 0
        self._closing = False
        self._idle = threading.Condition()

    def enter(self) -> None:
        with self._idle:
            if self._closing:
                raise ShuttingDown("the gateway is shutting down and takes no new work; retry against it "
                                   "once it is back (nothing of this request was stored)")
            self._count += 1

    def leave(self) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    @property
    def count(self) -> int:
        return self._count

    def close(self, grace_seconds: float) -> int:
        """Refuse new work and wait up to `grace_seconds` for what runs; returns how many calls
        were still running (they finish in their threads: each commits whole or not at all)."""
        deadline = time.monotonic() + grace_seconds
        with self._idle:
            self._closing = True
            while self._count and time.monotonic() < deadline:
                self._idle.wait(max(0.01, deadline - time.monotonic()))
            return self._count

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        self.enter()
        try:
            return await to_thread.run_sync(work, *args, limiter=self.limiter)
        finally:
            self.leave()
