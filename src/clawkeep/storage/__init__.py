"""Storage backends behind one interface (`AgentStore`)."""

from __future__ import annotations

from pathlib import Path

from ..config import StorageConfig
from ..errors import InputError
from .base import AgentStore, EntryRecord, SearchRow, SessionRecord
from .sqlite import SqliteAgentStore

__all__ = ["AgentStore", "EntryRecord", "SearchRow", "SessionRecord", "open_agent_store", "open_memory_store"]


def agent_database_path(home: Path, agent_id: str) -> Path:
    return home / "agents" / agent_id / "agent.sqlite"


def open_agent_store(home: Path, agent_id: str, config: StorageConfig) -> AgentStore:
    """The durable store for one agent, chosen by `storage.url`."""
    if config.url and not config.url.startswith("sqlite"):
        raise InputError(
            f"storage.url = {config.url!r} is not supported by this build; allowed: unset (embedded SQLite)"
        )
    return SqliteAgentStore(
        agent_database_path(home, agent_id), agent_id,
        synchronous=config.synchronous, busy_timeout_ms=config.busy_timeout_ms,
    )


def open_memory_store(agent_id: str) -> AgentStore:
    """Process-local store for incognito sessions: never written to disk, gone on exit."""
    return SqliteAgentStore(":memory:", agent_id)
