"""Conformance: running totals for the metrics add up, across store objects on one database."""

import threading


def test_counters_start_empty_and_add_up(store):
    assert store.counters() == {}
    store.add_counters({"turns": 2, "recall.ok": 1, "zero": 0})
    store.add_counters({"turns": 3})
    assert store.counters() == {"turns": 5, "recall.ok": 1}


def test_counters_from_two_store_objects_and_threads_add_up(store, backend):
    other = backend.agent_store()

    def bump(target):
        for _ in range(50):
            target.add_counters({"turns": 1})

    threads = [threading.Thread(target=bump, args=(s,)) for s in (store, other, store, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.counters()["turns"] == other.counters()["turns"] == 200
