"""The PostgreSQL ranking's in-memory cache of matches (storage/postgres/fts.py, PostingCache):
a search ranked from it gives the statement's exact ranking, and a write of another instance —
committed before the search, or still running when the cache was read and committed after — is
always seen."""

from __future__ import annotations

import time
import uuid

from clawkeep import Engine
from clawkeep.config import StorageConfig
from clawkeep.storage import TextQuery, open_agent_store
from clawkeep.storage.postgres.fts import STEADY_S
from clawkeep.text.analyzer import parse_query

from ..records import append_text, session

WORDS = ["harbor", "lantern", "copper", "meadow", "violet", "granite", "ember", "willow"]


def q(text):
    parsed = parse_query(text)
    assert parsed is not None
    return TextQuery.of(parsed.terms)


def ranked(store, text, limit=10):
    return [(r.entry.entry_id, r.score) for r in store.search(q(text), session_ids=None, limit=limit)]


def cached(store):
    return store._ranker()._cache


def test_the_cached_ranking_is_the_statements_ranking(pg_url, prefix):
    store = open_agent_store(None, "main", StorageConfig(url=pg_url, schema=prefix))
    try:
        store.insert_session(session("agent:main:c", session_id="sc"))
        with store.transaction():
            for i in range(120):  # rows of different lengths holding different mixes of the words
                words = [WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 5)]
                append_text(store, "sc", " ".join(words) + " filler" * (i % 7) + f" row {i}")
        queries = ["harbor", "lantern copper", "meadow violet granite", "ember willow harbor lantern", "row 17"]
        first = {text: ranked(store, text) for text in queries}  # the statement ranks (and reads the generation)
        time.sleep(STEADY_S)  # matches are read once the table stayed unchanged this long
        second = {text: ranked(store, text) for text in queries}  # the statement ranks, matches kept
        assert cached(store) is not None and len(cached(store).postings) >= 5
        third = {text: ranked(store, text) for text in queries}  # ranked from the cache
        assert first == second == third
        assert all(len(first[text]) == 10 for text in queries[:4])
        assert store.rank_matches(q("lantern copper"), session_ids=None, limit=3)[0].tokens
    finally:
        store.close()


def test_another_instances_writes_are_seen(pg_url, prefix):
    # strict: every search checks the generation (with "notify" a write may be seen a notification later:
    # test_search_notify.py)
    config = StorageConfig(url=pg_url, schema=prefix, searchFreshness="strict")
    writer, reader = open_agent_store(None, "main", config), open_agent_store(None, "main", config)
    try:
        writer.insert_session(session("agent:main:a", session_id="sa"))
        writer.insert_session(session("agent:main:b", session_id="sb"))
        old = append_text(writer, "sa", "the harbor lantern is lit").entry_id
        assert [e for e, _s in ranked(reader, "harbor lantern")] == [old]
        time.sleep(STEADY_S)
        for _ in range(3):
            assert [e for e, _s in ranked(reader, "harbor lantern")] == [old]
        assert cached(reader) is not None and len(cached(reader).postings) == 2
        new = append_text(writer, "sb", "harbor lantern harbor lantern").entry_id  # committed before the search
        assert [e for e, _s in ranked(reader, "harbor lantern")] == [new, old]
        assert [e for e, _s in ranked(reader, "harbor lantern")] == [new, old]
        with writer.transaction():
            writer.delete_session("sb")
        assert [e for e, _s in ranked(reader, "harbor lantern")] == [old]
        assert reader.document_frequency(["harbor"]) == {"harbor": 1}

        # a write still running while the reader reads (and keeps) the matches, committed after
        reader_steps = []
        with writer.transaction():
            late = append_text(writer, "sa", "a harbor lantern seen late").entry_id
            reader_steps.append([e for e, _s in ranked(reader, "harbor lantern")])
            time.sleep(STEADY_S)
            for _ in range(3):  # the reader reads the matches, then ranks from them: the write is not committed
                reader_steps.append([e for e, _s in ranked(reader, "harbor lantern")])
            assert cached(reader) is not None and len(cached(reader).postings) == 2
            # the writer's own uncommitted row is searchable in its transaction (never from a cache)
            assert [e for e, _s in ranked(writer, "harbor lantern")] == [old, late]
        assert reader_steps == [[old]] * 4
        assert [e for e, _s in ranked(reader, "harbor lantern")] == [old, late]
        assert reader.document_frequency(["lantern"]) == {"lantern": 2}
    finally:
        writer.close()
        reader.close()


def test_two_engines_on_one_database(pgvector_url, tmp_path):
    """A message recorded by one engine is found by another's sessions_search right after, also
    once the searching engine has ranked the same words from its cache (strict freshness)."""
    schema = "se" + uuid.uuid4().hex[:8]
    config = {"storage": {"url": pgvector_url, "schema": schema, "searchFreshness": "strict"}}
    group = {"sender": "u1", "channel": "chat", "chat_type": "group", "group": "g1"}
    a, b = Engine.open(home=tmp_path / "a", config=config), Engine.open(home=tmp_path / "b", config=config)
    try:
        a.message("the copper kettle is on the meadow stove", **group)
        assert len(b.sessions_search("copper kettle").hits) == 1
        time.sleep(STEADY_S)
        for _ in range(3):
            assert len(b.sessions_search("copper kettle").hits) == 1
        a.message("copper kettle copper kettle again", **group)
        hits = b.sessions_search("copper kettle").hits
        assert len(hits) == 2 and "again" in hits[0].snippet
        assert len(b.sessions_search("kettle").hits) == 2
    finally:
        a.close()
        b.close()
        import psycopg

        with psycopg.connect(pgvector_url, autocommit=True) as conn:
            for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                        (schema + "%",)).fetchall():
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')
