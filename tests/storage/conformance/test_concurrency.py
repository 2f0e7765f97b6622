"""Conformance: threads sharing one store, two store objects on one database, the session lock."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from clawkeep.errors import ConflictError
from clawkeep.storage import TextQuery

from ..records import append_text, message, session

THREADS, PER_THREAD = 8, 40


def test_threads_appending_to_one_store_lose_nothing(store):
    sessions = [session() for _ in range(THREADS)]
    for s in sessions:
        store.insert_session(s)

    def write(n):
        sid = sessions[n].session_id
        for i in range(PER_THREAD):
            append_text(store, sid, f"thread{n} message {i} walrus")
            if i % 10 == 0:
                fresh = store.get_session(sid)
                fresh.message_count += 1
                store.update_session(fresh)  # only this thread writes this row: never a conflict

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(write, range(THREADS)))
    seqs = [e.seq for s in sessions for e in store.iter_entries(s.session_id)]
    assert len(seqs) == len(set(seqs)) == THREADS * PER_THREAD
    for s in sessions:
        assert [e.seq for e in store.iter_entries(s.session_id)] == sorted(
            e.seq for e in store.iter_entries(s.session_id))
        assert store.get_session(s.session_id).message_count == PER_THREAD // 10
    assert store.document_frequency(["walrus"]) == {"walrus": THREADS * PER_THREAD}


def test_two_store_objects_on_one_database(backend):
    one, two = backend.agent_store("shared"), backend.agent_store("shared")
    record = session()
    one.insert_session(record)
    assert two.get_session(record.session_id) == record
    entry = append_text(two, record.session_id, "written by two")
    assert one.get_entry(entry.entry_id).seq == entry.seq
    assert [r.entry.entry_id for r in one.search(TextQuery.words("written"), session_ids=None, limit=5)] == [
        entry.entry_id]
    a, b = one.get_session(record.session_id), two.get_session(record.session_id)
    a.label = "from one"
    one.update_session(a)
    b.label = "from two"
    with pytest.raises(ConflictError):
        two.update_session(b)

    def append_many(st, tag):
        for i in range(30):
            st.append_entry(message(record.session_id, f"{tag}{i}"))

    workers = [threading.Thread(target=append_many, args=(st, tag)) for st, tag in ((one, "a"), (two, "b"))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert one.count_entries(record.session_id) == two.count_entries(record.session_id) == 61


def test_session_lock_serialises_one_session_only(store):
    inside, overlaps, other_ran = [], [], threading.Event()

    def turn(key, hold):
        with store.session_lock(key):
            inside.append(key)
            if inside.count(key) > 1:
                overlaps.append(key)
            time.sleep(hold)
            inside.remove(key)

    with store.session_lock("agent:main:a"):
        with store.session_lock("agent:main:a"):  # re-entrant in the holding thread
            pass
        blocked = threading.Thread(target=turn, args=("agent:main:a", 0))
        free = threading.Thread(target=lambda: (turn("agent:main:b", 0), other_ran.set()))
        blocked.start()
        free.start()
        assert other_ran.wait(5), "another session's turn must not wait for this one"
        time.sleep(0.05)
        assert blocked.is_alive(), "a second turn of the same session must wait"
    blocked.join(5)
    assert not blocked.is_alive()
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda _: turn("agent:main:c", 0.005), range(12)))
    assert overlaps == []
