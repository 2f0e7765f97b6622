"""The engine's status (with the memory metrics) and the doctor's report."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Shape


class Metrics(Shape):
    """G5 (seed 001 §6.2): the memory system's health, from running totals (hooks.metrics)."""

    turns: int
    compactions_per100_turns: float | None = Field(None, alias="compactionsPer100Turns")
    recall_hit_rate: float | None = None
    supersession_rate: float | None = None
    adoption_rate: float | None = None
    tool_calls_per_turn: float | None = None
    counters: dict[str, int] = Field(default_factory=dict)


class EngineStatus(Shape):
    home: str
    agent_id: str
    agents: list[str]
    database: str | None = None
    storage: str  # the backend: "sqlite" or "postgres"
    storage_version: str | None = None  # "SQLite 3.45.1", "PostgreSQL 16.2"
    pgvector: str | None = None  # PostgreSQL: pgvector's version on the server (None: not there)
    sessions: int
    messages: int
    indexed_messages: int
    dm_scope: str
    visibility: str
    # tools.sessions.search.rerank as configured: provider, candidates, weight, model or endpoint
    sessions_search_rerank: dict[str, Any] = Field(default_factory=dict)
    reset_mode: str
    maintenance_mode: str
    config_warnings: list[str] = Field(default_factory=list)
    metrics: Metrics | None = None
    chat_model: str | None = None  # agents.defaults.model.primary; null: record mode


class DoctorReport(Shape):
    """Per-file health of every agent database and memory index (and what a repair did)."""

    ok: bool | None = None
