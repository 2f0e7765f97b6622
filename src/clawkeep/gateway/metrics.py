"""`GET /v1/metrics` in Prometheus text format (G5).

Per gateway process: request counts and latencies by route, turn latency by mode. From the
agent database (so every process on it reports the same): the memory-system metrics of seed
001 §6.2 — compactions per 100 turns, recall hit rate, supersession rate, adoption of injected
memory — and their running totals (`hooks.metrics`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..engine import Engine
from ..events import TurnCompleted

disable_created_metrics()  # `_created` timestamps per series double the output and say nothing here
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
RATES = {"compactionsPer100Turns": "clawkeep_compactions_per_100_turns", "recallHitRate": "clawkeep_recall_hit_rate",
         "supersessionRate": "clawkeep_supersession_rate", "adoptionRate": "clawkeep_adoption_rate",
         "toolCallsPerTurn": "clawkeep_tool_calls_per_turn"}


class _MemoryMetrics:
    """A collector that reads the running totals when scraped."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def collect(self) -> Iterator[Any]:
        figures = self.engine.metrics().to_json()
        for key, name in RATES.items():
            if figures.get(key) is not None:
                yield GaugeMetricFamily(name, f"{key} (seed 001 §6.2), over this agent's database",
                                        value=figures[key])
        totals = CounterMetricFamily("clawkeep_events", "Running totals of the memory system", labels=["name"])
        for name, value in sorted(figures.get("counters", {}).items()):
            totals.add_metric([name], value)
        yield totals
        status = self.engine.status()
        yield GaugeMetricFamily("clawkeep_sessions", "Sessions of this agent", value=status.sessions)
        yield GaugeMetricFamily("clawkeep_messages", "Stored messages of this agent", value=status.messages)


class GatewayMetrics:
    def __init__(self, engine: Engine):
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter("clawkeep_http_requests", "HTTP requests", ["method", "route", "status"],
                                registry=self.registry)
        self.latency = Histogram("clawkeep_http_request_seconds", "HTTP request latency", ["route"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.turns = Histogram("clawkeep_turn_seconds", "Turn latency (routing to recorded reply)", ["mode"],
                               buckets=LATENCY_BUCKETS, registry=self.registry)
        self.registry.register(_MemoryMetrics(engine))
        engine.runtime.events.subscribe(TurnCompleted, self._turn)

    def _turn(self, event: TurnCompleted) -> None:
        self.turns.labels(event.mode).observe(event.elapsed_ms / 1000)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
