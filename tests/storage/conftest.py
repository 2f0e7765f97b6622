"""The storage conformance harness: every file under conformance/ runs against the backend
chosen by `--backend` (default sqlite), through the factory only.

A backend is a `Harness`: how to open a fresh agent store, a second object on the same
database, and a memory index. PostgreSQL (SPEC D1) uses CLAWKEEP_TEST_POSTGRES_URL; until its
backend lands, the factory refuses it ("not available in this build") and so does every test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawkeep.config import StorageConfig
from clawkeep.storage import AgentStore, MemoryStore, open_agent_store, open_memory_index


class Harness:
    name = "?"

    def __init__(self, root: Path):
        self.root = root
        self._open: list = []

    def config(self) -> StorageConfig:
        return StorageConfig()

    def agent_store(self, db: str = "main", agent_id: str = "main") -> AgentStore:
        """A store on database `db` (created empty on first use); each call is a new object."""
        store = open_agent_store(self.root / db, agent_id, self.config())
        self._open.append(store)
        return store

    def memory_store(self, db: str = "memory", vector_store: str = "numpy") -> MemoryStore:
        store = open_memory_index(self.root / f"{db}.index", self.config(), vector_store=vector_store)
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
    """Each test gets its own database name suffix under the server in CLAWKEEP_TEST_POSTGRES_URL."""

    name = "postgres"

    def __init__(self, root: Path):
        super().__init__(root)
        self.url = os.environ.get("CLAWKEEP_TEST_POSTGRES_URL", "postgresql://localhost/clawkeep_test")
        self.schema = f"t_{uuid.uuid4().hex[:12]}"

    def config(self) -> StorageConfig:
        return StorageConfig(url=self.url)


HARNESSES = {"sqlite": SqliteHarness, "postgres": PostgresHarness}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", [metafunc.config.getoption("--backend")])


@pytest.fixture
def backend(backend_name: str, tmp_path: Path) -> Iterator[Harness]:
    harness = HARNESSES[backend_name](tmp_path)
    yield harness
    harness.close()


@pytest.fixture
def store(backend: Harness) -> AgentStore:
    return backend.agent_store()


@pytest.fixture
def memory_store(backend: Harness) -> MemoryStore:
    return backend.memory_store()
