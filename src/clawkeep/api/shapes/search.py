"""Results of the two searches: `sessions_search` and `memory_search`."""

from __future__ import annotations

from pydantic import Field

from .base import Shape


class SearchHit(Shape):
    session_key: str
    session_id: str
    message_id: str
    role: str | None = None
    timestamp: str | None = None
    snippet: str
    client_message_id: str | None = None
    rerank_score: float | None = Field(None, description="The cross-encoder's score, on a hit the rerank stage "
                                                         "scored (tools.sessions.search.rerank); absent otherwise.")


class SearchResult(Shape):
    hits: list[SearchHit]


class MemoryHit(Shape):
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str | None = None
    origin: str | None = None
    session_key: str | None = None
    message_ids: list[str] | None = None
    expired: str | None = Field(None, description="Set on a plan whose day (ISO date) has passed: stale, not current.")


class MemorySearchResult(Shape):
    results: list[MemoryHit]
