"""SQLite: one WAL file per agent, synchronous from the config, in-memory stores never touch disk,
and every store class is opened through the factory."""

import sqlite3
from pathlib import Path

import pytest

from clawkeep.config import StorageConfig
from clawkeep.storage import open_agent_store, open_in_memory_store, open_memory_index
from tests.helpers.engine import open_engine

from ..records import session


def test_database_is_per_agent_sqlite_in_wal_mode(engine, home: Path):
    engine.message("hello")
    db = home / "agents" / "main" / "agent.sqlite"
    assert db.exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize(("setting", "level"), [("NORMAL", 1), ("FULL", 2)])
def test_synchronous_follows_the_config(tmp_path, setting, level):
    store = open_agent_store(tmp_path, "main", StorageConfig(synchronous=setting))
    assert store._query("PRAGMA synchronous")[0][0] == level
    assert store._query("PRAGMA journal_mode")[0][0] == "wal"
    store.close()
    index = open_memory_index(tmp_path / "memory.sqlite", StorageConfig(synchronous="FULL"))
    assert index._query("PRAGMA synchronous")[0][0] == 1  # derived data: always NORMAL
    index.close()


def test_in_memory_store_never_touches_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = open_in_memory_store("main")
    store.insert_session(session())
    assert store.count_sessions() == 1
    store.close()
    assert list(tmp_path.iterdir()) == []


def test_sqlite_urls_mean_the_embedded_database(tmp_path):
    for url in ("sqlite:", "sqlite", ""):
        assert StorageConfig(url=url).url is None
    store = open_agent_store(tmp_path, "main", StorageConfig(url="sqlite:"))
    assert type(store).__module__ == "clawkeep.storage.sqlite.sessions"
    store.close()


def test_engine_stores_all_come_from_the_factory(home):
    with open_engine(home) as eng:
        eng.message("hello")
        rt = eng.runtime
        assert type(rt.store()).__module__ == "clawkeep.storage.sqlite.sessions"
        assert rt.incognito_store().path == ":memory:"
