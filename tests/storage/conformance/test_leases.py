"""Conformance: a lease has one holder at a time; it expires, renews, and is released (SPEC D2)."""

import time
from concurrent.futures import ThreadPoolExecutor


def test_one_holder_until_it_expires_or_is_released(store, backend):
    other = backend.agent_store()
    assert store.try_lease("maintenance", "gw-1", 60_000)
    assert store.try_lease("maintenance", "gw-1", 60_000)  # renewal by the holder
    assert not other.try_lease("maintenance", "gw-2", 60_000)
    assert other.try_lease("reset-clock", "gw-2", 60_000)  # another lease is independent
    other.release_lease("maintenance", "gw-2")  # not its lease: nothing happens
    assert not other.try_lease("maintenance", "gw-2", 60_000)
    store.release_lease("maintenance", "gw-1")
    assert other.try_lease("maintenance", "gw-2", 50)
    time.sleep(0.2)
    assert store.try_lease("maintenance", "gw-1", 60_000)  # gw-2's lease expired


def test_racing_takers_elect_exactly_one(backend):
    stores = [backend.agent_store("race") for _ in range(4)]

    def take(n):
        return stores[n % 4].try_lease("clock", f"holder-{n}", 60_000)

    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(take, range(16)))
    assert won.count(True) == 1
