"""SQLite: databases written by older releases upgrade through the numbered migrations, their
history is recorded, a database from a newer release is refused untouched, and two openers of a
new file never run a step twice."""

import sqlite3
import threading

import pytest

from clawkeep.errors import StorageError
from clawkeep.storage import open_agent_store_file, open_memory_index
from clawkeep.storage.sqlite.memory import MIGRATIONS as MEMORY_MIGRATIONS
from clawkeep.storage.sqlite.sessions import MIGRATIONS as AGENT_MIGRATIONS

from ..records import message, session

LATEST = AGENT_MIGRATIONS[-1].version


def make_old(path, version):
    """A database as release `version` left it: no history table, user_version = version."""
    store = open_agent_store_file(path, "main")
    s = session("agent:main:main", session_id="old-session")
    store.insert_session(s)
    store.append_entry(message(s.session_id, "written before the upgrade", entry_id="old-entry"),
                       index_text="written before the upgrade")
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE schema_migrations")
        if version < 3:
            conn.execute("DROP INDEX entries_client")
            conn.execute("DROP INDEX entries_client_id")
            conn.execute("ALTER TABLE entries DROP COLUMN client_scope")
            conn.execute("ALTER TABLE entries DROP COLUMN client_id")
        if version < 2:
            conn.execute("DROP INDEX entries_session_type")
        conn.execute(f"PRAGMA user_version = {version}")


def shape(path):
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        columns = {t: [r[1:3] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
        indexes = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                                     "AND name NOT LIKE 'sqlite_autoindex%'"))
        return columns, indexes, conn.execute("PRAGMA user_version").fetchone()[0]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_database_upgrades_and_records_its_history(tmp_path, version):
    path = tmp_path / "agent.sqlite"
    make_old(path, version)
    store = open_agent_store_file(path, "main")
    history = store.applied_migrations()
    assert [m.version for m in history] == list(range(1, LATEST + 1))
    assert [m.applied_at is None for m in history] == [m.version <= version for m in history]
    assert store.get_entry("old-entry").content[0]["text"] == "written before the upgrade"
    s = store.get_session("old-session")
    store.append_entry(message(s.session_id, "after", client_id="9", client_scope="cli:x"))
    assert store.get_entry_by_client_id("cli:x", "9") is not None
    store.close()
    fresh = tmp_path / "fresh.sqlite"
    open_agent_store_file(fresh, "main").close()
    assert shape(path) == shape(fresh)
    again = open_agent_store_file(path, "main")
    assert again.applied_migrations() == history  # nothing re-run, nothing re-recorded
    again.close()


def test_a_newer_database_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "agent.sqlite"
    open_agent_store_file(path, "main").close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    before = path.read_bytes()
    with pytest.raises(StorageError, match=f"schema version {LATEST + 1}, newer than this clawkeep understands "
                                           f"\\(up to {LATEST}\\).*upgrade clawkeep"):
        open_agent_store_file(path, "main")
    assert path.read_bytes() == before


def test_a_history_row_from_a_newer_release_is_refused(tmp_path):
    path = tmp_path / "agent.sqlite"
    open_agent_store_file(path, "main").close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (?, 'from the future', 1)", (LATEST + 5,))
        conn.execute("PRAGMA user_version = 0")  # as if a downgrade tool had reset it
    with pytest.raises(StorageError, match="newer than this clawkeep"):
        open_agent_store_file(path, "main")


def test_memory_index_history(tmp_path):
    path = tmp_path / "memory.sqlite"
    open_memory_index(path).close()
    with sqlite3.connect(path) as conn:  # as the release before recorded migrations left it
        conn.execute("DROP TABLE schema_migrations")
    store = open_memory_index(path)
    assert [(m.version, m.applied_at) for m in store.applied_migrations()] == [
        (m.version, None) for m in MEMORY_MIGRATIONS]
    store.close()


def test_concurrent_openers_of_a_new_file_migrate_it_once(tmp_path):
    path = tmp_path / "agent.sqlite"
    stores, errors, start = [], [], threading.Barrier(6)

    def open_it():
        start.wait()
        try:
            stores.append(open_agent_store_file(path, "main"))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [m.version for m in stores[0].applied_migrations()] == list(range(1, LATEST + 1))
    for s in stores:
        s.close()


def test_migrations_are_numbered_without_gaps():
    for migrations in (AGENT_MIGRATIONS, MEMORY_MIGRATIONS):
        assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))
        assert all(m.name and m.statements for m in migrations)
