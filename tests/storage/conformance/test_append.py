"""Conformance: appending transcript entries and reading them back."""

import pytest

from clawkeep.errors import DuplicateError
from clawkeep.storage import EntryRecord

from ..records import append_text, message, session


@pytest.fixture
def sid(store):
    record = session()
    store.insert_session(record)
    return record.session_id


def test_appended_entries_read_back_in_order_with_their_fields(store, sid):
    first = store.append_entry(message(sid, "hello", meta={"k": "v"}, parent_entry_id=None))
    second = store.append_entry(EntryRecord("reset-1", sid, "reset", 3_000, meta={"reason": "daily"},
                                            parent_entry_id=first.entry_id))
    third = append_text(store, sid, "ünïcode 上海 text", role="assistant", at=4_000)
    assert first.seq < second.seq < third.seq
    got = list(store.iter_entries(sid))
    assert [e.entry_id for e in got] == [first.entry_id, "reset-1", third.entry_id]
    assert got[0].content == [{"type": "text", "text": "hello"}] and got[0].meta == {"k": "v"}
    assert got[1].type == "reset" and got[1].parent_entry_id == first.entry_id and got[1].timestamp == 3_000
    assert got[2].role == "assistant" and got[2].content[0]["text"] == "ünïcode 上海 text"
    assert store.get_entry(third.entry_id).seq == third.seq
    assert store.get_entry("missing") is None


def test_iter_entries_bounds_types_order_and_limit(store, sid):
    seqs = [store.append_entry(message(sid, f"m{i}")).seq for i in range(6)]
    store.append_entry(EntryRecord("cmp", sid, "compaction", 9_000))
    ids = lambda **kw: [e.seq for e in store.iter_entries(sid, **kw)]  # noqa: E731
    assert ids(after_seq=seqs[1], before_seq=seqs[4]) == seqs[2:4]
    assert ids(types=("message",), newest_first=True, limit=2) == [seqs[5], seqs[4]]
    assert [e.entry_id for e in store.iter_entries(sid, types=("compaction",))] == ["cmp"]
    assert store.last_entry(sid).entry_id == "cmp"
    assert store.last_entry(sid, types=("message",)).seq == seqs[5]
    assert store.last_entry("no-such-session") is None


def test_entries_near_reads_both_sides_of_each_start_in_one_call(store, sid):
    other = session()
    store.insert_session(other)
    seqs = [store.append_entry(message(sid, f"m{i}")).seq for i in range(7)]
    store.append_entry(message(other.session_id, "elsewhere"))  # another session's entry in between
    store.append_entry(EntryRecord("cmp", sid, "compaction", 9_000))
    seqs.append(store.append_entry(message(sid, "m7")).seq)
    near = store.entries_near([(sid, seqs[3]), (sid, seqs[0]), (sid, seqs[7]), ("no-such-session", 1)],
                              types=("message",), before=2, after=3)
    assert [[e.seq for e in found] for found in near] == [
        [seqs[1], seqs[2], seqs[4], seqs[5], seqs[6]],  # in seq order, the start itself left out
        [seqs[1], seqs[2], seqs[3]],  # nothing before the first
        [seqs[5], seqs[6]],  # the compaction is no message; the other session's entry is not this one's
        [],
    ]
    assert [e.entry_id for e in store.entries_near([(sid, seqs[7])], before=1, after=0)[0]] == ["cmp"]
    assert store.entries_near([(sid, seqs[3])], before=0, after=1)[0][0].seq == seqs[4]
    # before only for the first `before_of` starts
    assert [[e.seq for e in found] for found in store.entries_near(
        [(sid, seqs[3]), (sid, seqs[5])], types=("message",), before=1, after=1, before_of=1)] == [
        [seqs[2], seqs[4]], [seqs[6]]]
    assert store.entries_near([], before=2, after=2) == []


def test_count_entries_matches_what_iter_entries_yields(store, sid):
    store.append_entry(message(sid, "user words"))
    store.append_entry(message(sid, "   ", role="assistant"))  # blank text: no text block
    store.append_entry(EntryRecord("tool", sid, "message", 1, role="toolResult",
                                   content=[{"type": "toolResult", "text": "x"}]))
    store.append_entry(EntryRecord("img", sid, "message", 1, role="user", content=[{"type": "image", "ref": "a"}]))
    store.append_entry(EntryRecord("plain", sid, "message", 1, role="assistant", content="plain string"))
    assert store.count_entries(sid) == 5
    assert store.count_entries(sid, exclude_roles=("toolResult",)) == 4
    assert store.count_entries(sid, block_types=("text",)) == 2
    assert store.count_entries(sid, block_types=("text", "image")) == 3
    assert store.count_entries(sid, block_types=("text", "image", "toolResult"), exclude_roles=("user",)) == 2


def test_a_duplicate_entry_id_is_refused_and_changes_nothing(store, sid):
    entry = store.append_entry(message(sid, "once", entry_id="same"))
    with pytest.raises(DuplicateError):
        store.append_entry(message(sid, "twice", entry_id="same"))
    assert [e.seq for e in store.iter_entries(sid)] == [entry.seq]


def test_a_failed_transaction_leaves_nothing_behind(store, sid):
    with pytest.raises(RuntimeError), store.transaction():
        store.append_entry(message(sid, "inside"))
        store.append_entry(message(sid, "also inside"))
        raise RuntimeError("boom")
    assert list(store.iter_entries(sid)) == []
    with store.transaction(), store.transaction():  # nested: joins the outer one
        store.append_entry(message(sid, "committed"))
    assert len(list(store.iter_entries(sid))) == 1
