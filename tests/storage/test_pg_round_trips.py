"""Round trips per operation on PostgreSQL (issue 30), counted on the wire: the engine talks to a
real server (the pgvector bundle, and Debian's PostgreSQL without pgvector, whose memory index
keeps its vectors in a plain column) through tests/helpers/pg_wire.py's loopback proxy, which counts each
request the client waits on (Query, Sync, a Flush not riding on a Sync). The counts are
deterministic, so each operation has a budget and this test fails over it.

A statement's preparation (psycopg prepares a statement on its fifth use on a pooled connection)
is counted apart by the proxy: it happens once per connection, not per operation.
memory_search is counted once the index is current (the first search after a remember also
indexes the new text). Its round trips: the documents mirror's pull, the index's staleness
check (generation and fingerprint in one read), the query terms' document frequencies, the
keyword ranking (which brings the chunks and their texts along when the candidates are few),
and for a hybrid search the vector top-k (the vector count is kept per index generation; without
pgvector the in-process matrix's change counter instead) and the best candidates' line vectors
(with the chunks the ranking did not bring, in one pipeline).
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from clawkeep import Engine
from tests.helpers.pg_wire import WireCounter

GROUP = {"sender": "bench", "channel": "bench", "chat_type": "group", "group": "g1"}
# issue 30's budgets, lowered where the store does better (a regression fails): a turn is the
# lock with its session read, the write transaction (the entry's INSERT not waited for: its seq and a
# duplicate come with the COMMIT) and the unlock; issue 30 allowed 6 / 4 / 7
BUDGET = {
    "user turn": 3,
    "assistant append": 3,
    "turn with a message id": 5,
    "sessions_search": 3,
    "hybrid memory_search": 6,
    "keyword memory_search": 4,
    "remember": 8,
    "first call after reopening": 8,
}


@pytest.fixture
def proxied(pgvector_url, tmp_path):
    yield from _proxied(pgvector_url, tmp_path)


@pytest.fixture(params=["pgvector_url", "pg_url"], ids=["pgvector", "stock"])
def each_server(request, tmp_path):
    """The pgvector bundle, then Debian's PostgreSQL without pgvector."""
    yield from _proxied(request.getfixturevalue(request.param), tmp_path)


def _proxied(url, tmp_path):
    prefix = "rt" + uuid.uuid4().hex[:10]
    with WireCounter(url) as proxy:
        yield proxy, {"storage": {"url": proxy.url, "schema": prefix}}, tmp_path / "home"
    with psycopg.connect(url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
                                    (prefix, prefix + "\\_%")).fetchall():
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def _count(proxy: WireCounter, operation) -> int:
    proxy.reset()
    result = operation()
    assert result is not None
    return proxy.trips


def test_each_operation_stays_within_its_round_trip_budget(each_server):
    proxy, config, home = each_server
    home.mkdir()
    counts = {}
    with Engine.open(home=home, config=config) as eng:
        eng.message("warm up the store", **GROUP)  # creates the schemas and the session
        eng.memory_remember("The build server is called hopper.")  # and the memory index
        eng.memory_search("build server")
        counts["user turn"] = _count(proxy, lambda: eng.message("the deploy broke on friday", **GROUP))
        counts["assistant append"] = _count(proxy, lambda: eng.message("I will look at it", role="assistant",
                                                                       **GROUP))
        counts["turn with a message id"] = _count(proxy, lambda: eng.message("with an id", message_id="m-1",
                                                                             **GROUP))
        counts["sessions_search"] = _count(proxy, lambda: eng.sessions_search("deploy friday"))
        counts["remember"] = _count(proxy, lambda: eng.memory_remember(
            "The staging database lives on host db7 since March."))
        eng.memory_search("staging")  # the first search after a remember indexes the new text
        counts["hybrid memory_search"] = _count(proxy, lambda: eng.memory_search("staging database host"))
        counts["keyword memory_search"] = _count(proxy, lambda: eng.memory_search("staging database host",
                                                                                  mode="keyword"))
        found = eng.sessions_search("deploy friday")
        assert found.hits and "deploy" in found.hits[0].snippet.lower()
    with Engine.open(home=home, config=config) as eng:  # a new pool: the schema is checked again
        counts["first call after reopening"] = _count(proxy, lambda: eng.message("after reopening", **GROUP))
    print(counts)  # shown with -s, and in the report of a failure
    over = {op: (n, BUDGET[op]) for op, n in counts.items() if n > BUDGET[op]}
    assert not over, f"round trips over budget (count, budget): {over}; all counts: {counts}"
    assert counts["user turn"] >= 2  # the proxy saw the traffic: a lock and a write at the least


def test_the_counter_counts_one_round_trip_per_request(pgvector_url):
    with WireCounter(pgvector_url) as proxy, psycopg.connect(proxy.url, autocommit=True) as conn:
        proxy.reset()
        conn.execute("SELECT 1").fetchall()  # no parameters: a simple Query
        conn.execute("SELECT %s::int", (2,)).fetchall()  # extended protocol: one Sync
        with conn.pipeline():  # a pipeline: BEGIN, two statements and COMMIT wait once
            conn.execute("BEGIN")
            conn.execute("SELECT %s::int", (3,))
            conn.execute("SELECT %s::int", (4,))
            conn.execute("COMMIT")
        assert proxy.trips == 3


def test_status_names_the_backend_and_the_server_version(proxied, pgvector_url):
    proxy, config, home = proxied
    home.mkdir()
    with Engine.open(home=home, config=config) as eng:
        eng.message("hello", **GROUP)
        status = eng.status().model_dump(by_alias=True)
        eng.memory_remember("The build server is called hopper.")
        memory = eng.memory_status().model_dump(by_alias=True)
    with psycopg.connect(pgvector_url) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    assert (status["storage"], status["storageVersion"], status["pgvector"]) == \
        ("postgres", f"PostgreSQL {version}", vector)
    assert (memory["storage"], memory["storageVersion"]) == ("postgres", f"PostgreSQL {version}")


def test_status_on_the_embedded_backend_names_sqlite_and_its_version(tmp_path):
    import sqlite3

    with Engine.open(home=tmp_path / "home") as eng:
        eng.message("hello")
        eng.memory_remember("The build server is called hopper.")
        status, memory = eng.status(), eng.memory_status()
        if eng.config.storage.url is None:  # not under --engine-backend postgres
            expected = ("sqlite", f"SQLite {sqlite3.sqlite_version}")
            assert (status.storage, status.storage_version, status.pgvector) == (*expected, None)
            assert (memory.storage, memory.storage_version) == expected
        else:
            assert status.storage == memory.storage == "postgres"
