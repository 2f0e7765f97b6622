"""The gateway's background work, on one clock thread: warm-up (index sync, embedding model,
detector), the memory file watcher and transcript indexing, the daily/idle reset clock,
session maintenance in batches, the metrics flush and the Dreaming schedule. Each job runs as in-flight work, so a
shutdown waits for it; a failing job is logged and tried again at its next time."""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config.gateway import GatewayConfig
from ..engine import Engine
from ..errors import ClawkeepError
from .calls import InFlight, ShuttingDown

log = logging.getLogger("clawkeep.gateway")
METRICS_FLUSH_SECONDS = 5.0
DREAMING_CHECK_SECONDS = 30.0  # the cron's resolution is a minute; checking is a file read
TICK_SECONDS = 0.5  # how often the clock looks at its jobs (each has its own interval)


def warm_up(engine: Engine, *, watch: bool) -> dict[str, Any]:
    """Load what the first turn would otherwise wait for, keep the index fresh by watching, and
    take what is loaded out of the garbage collector's walks (the gateway's first background job)."""
    report = engine.memory_index().to_json()
    engine.memory_warm()
    if watch:
        engine.memory_watch()
    engine.classify("what did we decide?")  # compiles the detector's rules now, not on the first turn
    frozen = freeze_start_up()
    return {"indexed": len(report.get("indexed", [])), "chunks": report.get("chunks"), "watching": watch,
            "frozenObjects": frozen}


def freeze_start_up() -> int:
    """Collect once, then move every object alive now out of the cyclic collector's reach
    (`gc.freeze`): what a server loaded to start (modules, config models, the loaded index and
    model, compiled rules) is never garbage, and each full collection walked it again — ≈60 ms at
    80k objects, a pause in whichever request it fell on. Done once, after the warm-up: objects
    made later stay collectable. Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@dataclass
class Job:
    name: str
    every_seconds: float | None  # None: once, at start
    run: Callable[[], Any]
    next_at: float = 0.0
    runs: int = 0
    last: dict[str, Any] = field(default_factory=dict)


class Background:
    def __init__(self, engine: Engine, settings: GatewayConfig, inflight: InFlight):
        self.engine, self.settings, self.inflight = engine, settings, inflight
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.jobs = [
            Job("warm-up", None, self._warm_up),
            Job("reset-clock", settings.clock_seconds, engine.sessions_roll_over),
            Job("maintenance", settings.maintenance_minutes * 60, self._maintenance),
            Job("metrics-flush", METRICS_FLUSH_SECONDS, engine.runtime.metrics.flush),
            Job("dreaming", DREAMING_CHECK_SECONDS, self._dream),
        ]
        self.jobs[2].next_at = time.monotonic() + settings.maintenance_minutes * 60  # not at start

    def add(self, job: Job) -> None:
        """Another periodic job (e.g. the Dreaming schedule)."""
        self.jobs.append(job)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="clawkeep-clock", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, self.settings.shutdown_grace_seconds))
        try:
            self.engine.runtime.metrics.flush()
        except ClawkeepError as exc:
            log.warning("metrics flush at shutdown failed: %s", exc)

    def report(self) -> list[dict[str, Any]]:
        return [{"name": j.name, "runs": j.runs, **j.last} for j in self.jobs]

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for job in self.jobs:
                if now >= job.next_at and not self._stop.is_set():
                    self._run(job)
                    job.next_at = float("inf") if job.every_seconds is None else now + job.every_seconds
            self._stop.wait(TICK_SECONDS)

    def _run(self, job: Job) -> None:
        started = time.perf_counter()
        try:
            self.inflight.enter()
        except ShuttingDown:
            return
        try:
            result = job.run()
            job.last = {"ok": True, "at": time.time(), "elapsedMs": round((time.perf_counter() - started) * 1000, 1)}
            if result:
                job.last["result"] = result if isinstance(result, (list, dict, str, int)) else str(result)
                log.info("background %s", job.name, extra={"event": job.name, "result": job.last["result"]})
        except Exception as exc:  # noqa: BLE001 - a job never takes the gateway down
            job.last = {"ok": False, "at": time.time(), "error": f"{type(exc).__name__}: {exc}"}
            log.warning("background job %s failed: %s", job.name, exc)
        finally:
            job.runs += 1
            self.inflight.leave()

    # --- jobs -----------------------------------------------------------------------
    def _warm_up(self) -> dict[str, Any]:
        return warm_up(self.engine, watch=self.settings.watch)

    def _dream(self) -> dict[str, Any] | None:
        """The managed Dreaming cron (`dreaming.frequency`): a sweep when one is due."""
        report = self.engine.dream_if_due()
        if report is None:
            return None
        data = report.to_json()
        return {"status": data["status"], "runId": data["runId"], "promoted": len(data.get("promoted", []))}

    def _maintenance(self) -> dict[str, Any] | None:
        report = self.engine.sessions_cleanup().to_json()
        found = len(report.get("stale", [])) + len(report.get("overCap", []))
        if not found:
            return None
        return {"applied": report.get("applied"), "stale": len(report.get("stale", [])),
                "overCap": len(report.get("overCap", [])), "archives": len(report.get("archives", []))}
