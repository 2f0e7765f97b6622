"""The one place stores are opened: every caller asks here, none constructs a backend class.

The backend is chosen by `storage.url`: unset is the embedded SQLite database under the home;
`postgresql://…` is SPEC D1's PostgreSQL backend (one schema per store, several instances may
share the database). Incognito stores stay process-local SQLite in memory either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import StorageConfig
from .base import AgentStore
from .memory_base import MemoryStore
from .sqlite import SqliteAgentStore, SqliteMemoryStore
from .sqlite.connection import move_aside

__all__ = ["agent_database_path", "agent_store_exists", "check_storage", "known_agent_ids", "move_aside",
           "open_agent_store", "open_agent_store_file", "open_in_memory_store", "open_memory_index"]


def _postgres() -> Any:
    """The PostgreSQL backend's package, imported when `storage.url` names a server."""
    from . import postgres  # deferred: the driver (psycopg, its pool) only for a postgresql:// URL

    return postgres


def agent_database_path(home: Path, agent_id: str) -> Path:
    return home / "agents" / agent_id / "agent.sqlite"


def open_agent_store(home: Path, agent_id: str, config: StorageConfig) -> AgentStore:
    """The durable store for one agent, chosen by `storage.url`."""
    if config.is_postgres:
        return _postgres().PgAgentStore(config.url, agent_id, prefix=config.schema_prefix,
                                        pool_size=config.pool_size, connect_timeout_ms=config.connect_timeout_ms,
                                        lock_timeout_ms=config.busy_timeout_ms,
                                        search_freshness=config.search_freshness)
    return open_agent_store_file(agent_database_path(home, agent_id), agent_id, config)


def known_agent_ids(home: Path, config: StorageConfig) -> set[str]:
    """Agents that have a durable store (nothing is created)."""
    if config.is_postgres:
        return set(_postgres().catalog_names(config.url, config.schema_prefix, "agent", pool_size=config.pool_size,
                                             connect_timeout_ms=config.connect_timeout_ms))
    agents_dir = home / "agents"
    return {p.parent.name for p in agents_dir.glob("*/agent.sqlite")} if agents_dir.is_dir() else set()


def check_storage(config: StorageConfig) -> None:
    """PostgreSQL: log in to the server once (nothing is created); its error says what is wrong."""
    if config.is_postgres:
        connection = _postgres().connection
        connection.require_driver()
        database = connection.Database
        database.release(database.acquire(config.url, config.pool_size, config.connect_timeout_ms))


def agent_store_exists(home: Path, agent_id: str, config: StorageConfig) -> bool:
    if config.is_postgres:
        return agent_id in known_agent_ids(home, config)
    return agent_database_path(home, agent_id).is_file()


def open_agent_store_file(path: Path | str, agent_id: str, config: StorageConfig | None = None) -> AgentStore:
    """An agent store in one SQLite file (doctor's recovered copy, benchmarks, tests)."""
    config = config or StorageConfig()
    return SqliteAgentStore(path, agent_id, synchronous=config.synchronous, busy_timeout_ms=config.busy_timeout_ms,
                            group_commit=config.group_commit)


def open_in_memory_store(agent_id: str) -> AgentStore:
    """Process-local store (incognito sessions, read stand-ins): never written to disk, gone on exit."""
    return SqliteAgentStore(":memory:", agent_id)


def open_memory_index(path: Path | str, config: StorageConfig | None = None, *,
                      vector_store: str = "numpy", name: str | None = None) -> MemoryStore:
    """An agent's memory index (derived from its Markdown files), chosen by `storage.url` like
    the agent store. SQLite: the file `path`, `vector_store` "numpy" or "sqlite-vec". PostgreSQL:
    the index called `name` (default: the name of `path`'s directory, the agent id), pgvector
    when the server has it, else exact top-k over a plain column (postgres/vectors.py)."""
    config = config or StorageConfig()
    if config.is_postgres:
        return _postgres().PgMemoryStore(config.url, name or Path(path).parent.name, prefix=config.schema_prefix,
                                         pool_size=config.pool_size, connect_timeout_ms=config.connect_timeout_ms,
                                         search_freshness=config.search_freshness)
    # synchronous stays NORMAL: the index can always be rebuilt from Markdown
    return SqliteMemoryStore(path, busy_timeout_ms=config.busy_timeout_ms, vector_store=vector_store)
