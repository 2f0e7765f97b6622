"""The one place stores are opened: every caller asks here, none constructs a backend class.

The backend is chosen by `storage.url`: unset (or `sqlite:`) is the embedded SQLite database
under the home; `postgresql://…` is SPEC D1's PostgreSQL backend (not in this build yet).
"""

from __future__ import annotations

from pathlib import Path

from ..config import StorageConfig
from ..errors import InputError
from .base import AgentStore
from .memory_base import MemoryStore
from .sqlite import SqliteAgentStore, SqliteMemoryStore
from .sqlite.connection import move_aside

__all__ = ["agent_database_path", "move_aside", "open_agent_store", "open_agent_store_file", "open_in_memory_store",
           "open_memory_index"]

POSTGRES_SCHEMES = ("postgresql:", "postgres:")


def agent_database_path(home: Path, agent_id: str) -> Path:
    return home / "agents" / agent_id / "agent.sqlite"


def _check_url(config: StorageConfig) -> None:
    url = config.url
    if not url or url.startswith("sqlite"):
        return
    if url.startswith(POSTGRES_SCHEMES):
        raise InputError(f"storage.url = {url!r}: the PostgreSQL backend is not available in this build; "
                         "allowed: unset (embedded SQLite)")
    raise InputError(f"storage.url = {url!r} is not supported by this build; allowed: unset (embedded SQLite)")


def open_agent_store(home: Path, agent_id: str, config: StorageConfig) -> AgentStore:
    """The durable store for one agent, chosen by `storage.url`."""
    _check_url(config)
    return open_agent_store_file(agent_database_path(home, agent_id), agent_id, config)


def open_agent_store_file(path: Path | str, agent_id: str, config: StorageConfig | None = None) -> AgentStore:
    """An agent store in one SQLite file (doctor's recovered copy, benchmarks, tests)."""
    config = config or StorageConfig()
    return SqliteAgentStore(path, agent_id, synchronous=config.synchronous, busy_timeout_ms=config.busy_timeout_ms)


def open_in_memory_store(agent_id: str) -> AgentStore:
    """Process-local store (incognito sessions, read stand-ins): never written to disk, gone on exit."""
    return SqliteAgentStore(":memory:", agent_id)


def open_memory_index(path: Path | str, config: StorageConfig | None = None, *,
                      vector_store: str = "numpy") -> MemoryStore:
    """An agent's memory index (derived from its Markdown files), chosen by `storage.url` like
    the agent store. `vector_store`: the SQLite top-k backend, "numpy" or "sqlite-vec"."""
    config = config or StorageConfig()
    _check_url(config)
    # synchronous stays NORMAL: the index can always be rebuilt from Markdown
    return SqliteMemoryStore(path, busy_timeout_ms=config.busy_timeout_ms, vector_store=vector_store)
