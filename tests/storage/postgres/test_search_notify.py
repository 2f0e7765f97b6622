"""storage.searchFreshness on PostgreSQL (storage/postgres/notify.py): with "notify" a repeated
search answers from the match and row cache without a round trip while no write was announced,
another instance's write is seen once its notification arrived, this process's own writes at
once, and a lost listener falls back to the checked search until it is back; "strict" checks
with every search. Both servers: the pgvector bundle and Debian's PostgreSQL without pgvector."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from clawkeep import Engine
from clawkeep.config import StorageConfig
from clawkeep.storage import open_agent_store, open_memory_index
from clawkeep.storage.postgres.fts import STEADY_S
from clawkeep.storage.postgres.notify import APPLICATION
from tests.helpers.pg_servers import scratch_schemas
from tests.helpers.pg_wire import WireCounter

from ..records import append_text, session
from .test_memory_search_cache import ranked as memory_ranked
from .test_memory_search_cache import write as memory_write
from .test_search_cache import ranked

GROUP = {"sender": "u1", "channel": "chat", "chat_type": "group", "group": "g1"}
NOTICE_S = 2.0  # how long a test waits for a notification (sub-millisecond on loopback)


@pytest.fixture(params=["pgvector_url", "pg_url"], ids=["pgvector", "stock"])
def server(request, monkeypatch):
    # the engines here name their server and schemas (a proxy, a prefix), whatever --engine-backend says
    monkeypatch.delenv("CLAWKEEP_STORAGE_URL", raising=False)
    monkeypatch.delenv("CLAWKEEP_STORAGE_SCHEMA", raising=False)
    yield from scratch_schemas(request.getfixturevalue(request.param), "nf")


def _until(check, seconds: float = NOTICE_S) -> bool:
    """Whether `check()` turned true within `seconds` (asked again every 10 ms)."""
    deadline = time.monotonic() + seconds
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _listeners(url: str, prefix: str) -> list[int]:
    """The server processes of the listeners of the stores under `prefix`."""
    with psycopg.connect(url, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name LIKE %s",
                                           (APPLICATION + prefix + "%",)).fetchall()]


def _engines(url, prefix, tmp_path, freshness):
    config = {"storage": {"url": url, "schema": prefix, "searchFreshness": freshness}}
    return Engine.open(home=tmp_path / "a", config=config), Engine.open(home=tmp_path / "b", config=config)


def _warm(eng, query: str, hits: int) -> None:
    """Searched until the table was steady and its matches are kept (fts.STEADY_S)."""
    assert len(eng.sessions_search(query).hits) == hits
    time.sleep(STEADY_S)
    for _ in range(3):
        assert len(eng.sessions_search(query).hits) == hits


def test_notify_another_engines_write_is_seen_once_announced(server, tmp_path):
    url, prefix = server
    a, b = _engines(url, prefix, tmp_path, "notify")
    try:
        a.message("the copper kettle is on the meadow stove", **GROUP)
        _warm(b, "copper kettle", 1)
        a.message("copper kettle copper kettle again", **GROUP)
        assert _until(lambda: len(b.sessions_search("copper kettle").hits) == 2)
        assert "again" in b.sessions_search("copper kettle").hits[0].snippet
        _warm(b, "kettle", 2)
        b.message("a kettle of b's own", **GROUP)  # this engine's own write: seen at once
        assert len(b.sessions_search("kettle").hits) == 3
    finally:
        a.close()
        b.close()
    assert not _listeners(url, prefix)  # closing a store ends its listener


def test_strict_sees_another_engines_write_at_once_and_listens_to_nothing(server, tmp_path):
    url, prefix = server
    a, b = _engines(url, prefix, tmp_path, "strict")
    try:
        a.message("the copper kettle is on the meadow stove", **GROUP)
        _warm(b, "copper kettle", 1)
        a.message("copper kettle copper kettle again", **GROUP)
        assert len(b.sessions_search("copper kettle").hits) == 2
        assert not _listeners(url, prefix)
    finally:
        a.close()
        b.close()


def test_a_repeated_search_makes_no_round_trip(server, tmp_path):
    url, prefix = server
    with WireCounter(url) as proxy:
        a, b = _engines(proxy.url, prefix, tmp_path, "notify")
        try:
            for k in range(40):
                a.message(f"the copper kettle number {k} is on the meadow stove", **GROUP)
            for query in ("kettle", "copper kettle", "where is the copper kettle?"):
                _warm(b, query, 10)

            def trips(query: str) -> int:
                proxy.reset()
                assert len(b.sessions_search(query).hits) == 10
                return proxy.trips

            assert _until(lambda: trips("kettle") == 0)  # once the listener is up
            assert trips("kettle") == 0
            assert trips("copper kettle") == 0
            # a question's ranking too; what remains is dialogue_rank's read of the neighbours (entries_near:
            # every appended entry changes it, not only indexed ones)
            proxy.log = []
            assert trips("where is the copper kettle?") == 1
            assert [line.split()[1:3] for line in proxy.log if line.startswith("P")] == [["SELECT", "s.k,"]]
            a.message("one more copper kettle", **GROUP)
            assert _until(lambda: trips("copper kettle") > 0)  # announced: checked again
        finally:
            a.close()
            b.close()


def test_a_lost_listener_falls_back_to_the_checked_search(server, tmp_path):
    url, prefix = server
    a, b = _engines(url, prefix, tmp_path, "notify")
    try:
        a.message("the copper kettle is on the meadow stove", **GROUP)
        _warm(b, "copper kettle", 1)
        assert _until(lambda: len(_listeners(url, prefix)) == 1)
        (lost,) = _listeners(url, prefix)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (lost,))
        assert _until(lambda: lost not in _listeners(url, prefix))
        # written while b's listener is gone (or before the new one read the generation): b's next
        # search checks with the server, or the new listener's first reading counts the write
        a.message("copper kettle copper kettle while b is deaf", **GROUP)
        assert len(b.sessions_search("copper kettle").hits) == 2
        assert _until(lambda: len(_listeners(url, prefix)) == 1)  # listening again
        _warm(b, "copper kettle", 2)
        a.message("copper kettle after the listener is back", **GROUP)
        assert _until(lambda: len(b.sessions_search("copper kettle").hits) == 3)
    finally:
        a.close()
        b.close()


def test_stores_on_one_database_with_notify(server):
    """The storage layer: deletions move the generation too (a deleted row is not answered from
    the kept rows), and memory_search's keyword ranking takes the same path."""
    url, prefix = server
    config = StorageConfig(url=url, schema=prefix)
    writer, reader = open_agent_store(None, "main", config), open_agent_store(None, "main", config)
    try:
        writer.insert_session(session("agent:main:a", session_id="sa"))
        writer.insert_session(session("agent:main:b", session_id="sb"))
        old = append_text(writer, "sa", "the harbor lantern is lit").entry_id
        new = append_text(writer, "sb", "harbor lantern harbor lantern").entry_id
        assert [e for e, _s in ranked(reader, "harbor lantern")] == [new, old]
        time.sleep(STEADY_S)
        for _ in range(3):
            assert [e for e, _s in ranked(reader, "harbor lantern")] == [new, old]
        with writer.transaction():
            writer.delete_session("sb")
        assert _until(lambda: [e for e, _s in ranked(reader, "harbor lantern")] == [old])
    finally:
        writer.close()
        reader.close()
    memory_config = StorageConfig(url=url, schema=prefix)
    mw = open_memory_index(Path("x/main/memory.sqlite"), memory_config)
    mr = open_memory_index(Path("x/main/memory.sqlite"), memory_config)
    try:
        (first,) = memory_write(mw, "memory/a.md", "memory", ["the harbor lantern is lit"])
        assert [c for c, _s in memory_ranked(mr, "harbor lantern")] == [first]
        time.sleep(STEADY_S)
        for _ in range(3):
            assert [c for c, _s in memory_ranked(mr, "harbor lantern")] == [first]
        (second,) = memory_write(mw, "memory/b.md", "memory", ["harbor lantern harbor lantern"])
        assert _until(lambda: [c for c, _s in memory_ranked(mr, "harbor lantern")] == [second, first])
        mw.remove_file("memory/b.md")
        assert _until(lambda: [c for c, _s in memory_ranked(mr, "harbor lantern")] == [first])
    finally:
        mw.close()
        mr.close()


def test_the_setting_is_checked():
    with pytest.raises(ValueError, match="searchFreshness"):
        StorageConfig(url="postgresql://x@localhost/db", searchFreshness="eventually")
    assert StorageConfig().search_freshness == "notify"
