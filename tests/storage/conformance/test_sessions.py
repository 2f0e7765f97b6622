"""Conformance: session rows, one current session per key, optimistic versions."""

import pytest

from clawkeep.errors import ConflictError

from ..records import append_text, session


def test_insert_and_read_back_every_field(store):
    record = session("agent:main:telegram:direct:alice", chat_type="direct", channel="telegram", account="acct",
                     peer="alice", label="Trip", origin="chat", last_interaction_at=1_500, message_count=2,
                     model="m", meta={"title": "Lisbon", "nested": {"n": [1, 2]}, "ü": "上海"})
    store.insert_session(record)
    got = store.get_session(record.session_id)
    assert got == record
    assert store.get_session_by_key(record.key) == record
    assert store.get_session("nope") is None and store.get_session_by_key("agent:main:nope") is None


def test_one_current_session_per_key(store):
    old = session("agent:main:main")
    store.insert_session(old)
    with pytest.raises(ConflictError):
        store.insert_session(session("agent:main:main"))
    old.archived_at = 5_000
    store.update_session(old)
    new = session("agent:main:main", updated_at=6_000)
    store.insert_session(new)
    assert store.get_session_by_key("agent:main:main").session_id == new.session_id
    assert store.get_session(old.session_id).archived_at == 5_000


def test_versions_refuse_a_stale_writer(store, backend):
    record = session()
    store.insert_session(record)
    mine, theirs = store.get_session(record.session_id), backend.agent_store().get_session(record.session_id)
    assert mine.version == theirs.version == 0
    mine.label = "mine"
    store.update_session(mine)
    assert mine.version == 1
    theirs.label = "theirs"
    with pytest.raises(ConflictError):
        backend.agent_store().update_session(theirs)
    assert store.get_session(record.session_id).label == "mine"
    fresh = store.get_session(record.session_id)
    fresh.message_count = 7
    store.update_session(fresh)
    assert store.get_session(record.session_id).version == 2


def test_delete_removes_entries_and_their_search_rows(store):
    record = session()
    store.insert_session(record)
    entry = append_text(store, record.session_id, "zanzibar itinerary")
    store.delete_session(record.session_id)
    assert store.get_session(record.session_id) is None
    assert store.get_entry(entry.entry_id) is None
    from clawkeep.storage import TextQuery

    assert store.search(TextQuery.words("zanzibar"), session_ids=None, limit=10) == []
