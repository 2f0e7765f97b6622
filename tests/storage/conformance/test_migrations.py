"""Conformance: every store records its schema history; reopening applies nothing twice.

(Upgrading databases written by older releases and refusing newer ones is backend-specific:
tests/storage/sqlite/test_migrations.py builds such files.)"""

from ..records import session


def check_history(history):
    assert history, "a store must record the migrations that built it"
    assert [m.version for m in history] == list(range(1, len(history) + 1))
    assert all(m.name for m in history)
    assert all(m.applied_at is not None and m.applied_at > 0 for m in history)  # a new database: applied now


def test_a_new_agent_store_records_its_migrations(store):
    check_history(store.applied_migrations())


def test_a_new_memory_index_records_its_migrations(memory_store):
    check_history(memory_store.applied_migrations())


def test_reopening_keeps_data_and_history(backend):
    first = backend.agent_store("db1")
    record = session()
    first.insert_session(record)
    history = first.applied_migrations()
    first.close()
    again = backend.agent_store("db1")
    assert again.applied_migrations() == history
    assert again.get_session(record.session_id) == record
