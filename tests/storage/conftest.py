"""The storage conformance harness: every file under conformance/ runs against each backend
chosen by `--backend` (default: sqlite and postgres), through the factory only.

A backend is a `Harness`: how to open a fresh agent store, a second object on the same
database, and a memory index. PostgreSQL runs on real servers (tests/helpers/pg_servers.py): agent
stores on Debian's PostgreSQL, memory indexes on the pgvector bundle; each test gets its own
schema prefix, dropped afterwards. Memory-index tests also run as `postgres-stock`: the index on
Debian's PostgreSQL, which has no pgvector (vectors in a plain column, exact top-k).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawkeep.config import StorageConfig
from clawkeep.storage import AgentStore, MemoryStore, open_agent_store, open_memory_index


class Harness:
    name = "?"

    def __init__(self, root: Path, request: pytest.FixtureRequest):
        self.root = root
        self.request = request
        self._open: list = []

    def config(self, db: str, *, vectors: bool = False) -> StorageConfig:
        return StorageConfig()

    def agent_store(self, db: str = "main", agent_id: str = "main") -> AgentStore:
        """A store on database `db` (created empty on first use); each call is a new object."""
        store = open_agent_store(self.root / db, agent_id, self.config(db))
        self._open.append(store)
        return store

    def memory_store(self, db: str = "memory", vector_store: str = "numpy") -> MemoryStore:
        store = open_memory_index(self.root / db / "memory.sqlite", self.config(db, vectors=True),
                                  vector_store=vector_store)
        self._open.append(store)
        return store

    def close(self) -> None:
        for store in reversed(self._open):
            try:
                store.close()
            except Exception:  # noqa: BLE001 - already closed by the test
                pass


class SqliteHarness(Harness):
    name = "sqlite"


class PostgresHarness(Harness):
    name = "postgres"
    vector_server = "pgvector_url"

    def __init__(self, root: Path, request: pytest.FixtureRequest):
        super().__init__(root, request)
        self.tag = "t" + uuid.uuid4().hex[:10]
        self.prefixes: dict[str, str] = {}

    def config(self, db: str, *, vectors: bool = False) -> StorageConfig:
        url = self.request.getfixturevalue(self.vector_server if vectors else "pg_url")
        prefix = self.prefixes.setdefault((url, db), f"{self.tag}_{re.sub('[^a-z0-9]', '', db.lower())[:10]}")
        return StorageConfig(url=url, schema=prefix)

    def close(self) -> None:
        super().close()
        import psycopg

        for url, _db in self.prefixes:
            with psycopg.connect(url, autocommit=True) as conn:
                for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                            (f"{self.tag}%",)).fetchall():
                    conn.execute(f'DROP SCHEMA "{name}" CASCADE')


class StockPostgresHarness(PostgresHarness):
    """The memory index on a PostgreSQL without pgvector."""

    name = "postgres-stock"
    vector_server = "pg_url"


HARNESSES = {"sqlite": SqliteHarness, "postgres": PostgresHarness, "postgres-stock": StockPostgresHarness}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        chosen = list(metafunc.config.getoption("--backend"))
        if "postgres" in chosen and "memory_store" in metafunc.fixturenames:
            chosen.append("postgres-stock")
        metafunc.parametrize("backend_name", chosen)


@pytest.fixture
def backend(backend_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    harness = HARNESSES[backend_name](tmp_path, request)
    yield harness
    harness.close()


@pytest.fixture
def store(backend: Harness) -> AgentStore:
    return backend.agent_store()


@pytest.fixture
def memory_store(backend: Harness) -> MemoryStore:
    return backend.memory_store()
