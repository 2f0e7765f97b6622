"""Conformance: channel message ids are idempotent per (client_scope, client_id), never per bare id."""

import pytest

from clawkeep.errors import DuplicateError
from clawkeep.text.analyzer import analyze_document

from ..records import message, session


def test_one_client_id_per_conversation(store):
    a, b = session(), session()
    store.insert_session(a)
    store.insert_session(b)
    first = store.append_entry(message(a.session_id, "hi", client_id="42", client_scope="telegram:acct:chat1"))
    other = store.append_entry(message(b.session_id, "hi", client_id="42", client_scope="telegram:acct:chat2"))
    assert first.seq != other.seq
    with pytest.raises(DuplicateError, match="42"):
        store.append_entry(message(a.session_id, "again", client_id="42", client_scope="telegram:acct:chat1"))
    assert store.get_entry_by_client_id("telegram:acct:chat1", "42").entry_id == first.entry_id
    assert store.get_entry_by_client_id("telegram:acct:chat2", "42").entry_id == other.entry_id
    assert store.get_entry_by_client_id("telegram:acct:chat3", "42") is None
    assert store.find_client_entry(b.session_id, "42").entry_id == other.entry_id
    assert store.find_client_entry(a.session_id, "nope") is None


def test_entries_without_client_ids_never_collide(store):
    s = session()
    store.insert_session(s)
    for i in range(3):
        store.append_entry(message(s.session_id, f"m{i}", client_scope="scope-without-id"))
    assert store.count_entries(s.session_id) == 3
    assert all(e.client_id is None for e in store.iter_entries(s.session_id))


def test_a_write_not_waited_for_settles_at_commit_and_a_duplicate_rolls_its_transaction_back(store):
    s = session()
    store.insert_session(s)
    first = store.append_entry(message(s.session_id, "hi", client_id="7", client_scope="c1"))
    fresh = store.get_session(s.session_id)
    counted = fresh.message_count
    with pytest.raises(DuplicateError, match="7"), store.transaction():
        store.append_entry(message(s.session_id, "again", client_id="7", client_scope="c1"), at_commit=True)
        fresh.message_count += 5
        store.update_session(fresh)  # rolled back with the duplicate
    assert store.count_entries(s.session_id) == 1
    assert store.get_session(s.session_id).message_count == counted
    later = message(s.session_id, "the deploy broke", client_id="8", client_scope="c1")
    with store.transaction():
        store.append_entry(later, index_text=analyze_document("the deploy broke"), at_commit=True)
    assert later.seq > first.seq  # set once the transaction committed
    assert store.get_entry_by_client_id("c1", "8").seq == later.seq
