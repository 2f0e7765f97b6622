"""The PostgreSQL memory index's keyword ranking from the in-memory match cache (fts.PostingCache,
validated by the index generation): the same ranking as the statement's, a sources scope that
leaves chunks out never ranked from it, and another instance's writes always seen."""

from __future__ import annotations

import time
from pathlib import Path

from clawkeep.config import StorageConfig
from clawkeep.storage import ChunkRecord, FileRecord, TextQuery, open_memory_index
from clawkeep.storage.postgres.fts import STEADY_S
from clawkeep.text.analyzer import analyze_lines, parse_query

WORDS = ["harbor", "lantern", "copper", "meadow", "violet", "granite", "ember", "willow"]


def q(text):
    parsed = parse_query(text)
    assert parsed is not None
    return TextQuery.of(parsed.terms)


def write(store, path, source, texts):
    chunks = [ChunkRecord(path, source, i + 1, i + 1, text, f"h{path}{i}", tokens=analyze_lines(text))
              for i, text in enumerate(texts)]
    store.replace_file(FileRecord(path, source, f"h{path}", 1.0, 1), chunks, None, None)
    return [c.id for c in chunks]


def ranked(store, text, sources=("memory",), limit=10):
    return [(cid, round(score, 9)) for cid, score, _tokens in
            store.keyword_search(q(text), sources=list(sources), limit=limit)]


def open_store(pg_url, prefix, freshness="strict"):
    """strict: every search checks the generation ("notify": see test_search_notify.py)."""
    return open_memory_index(Path("x/main/memory.sqlite"),
                             StorageConfig(url=pg_url, schema=prefix, searchFreshness=freshness))


def test_cached_ranking_is_the_statements_and_a_narrowing_scope_is_not_cached(pg_url, prefix):
    store = open_store(pg_url, prefix)
    try:
        for f in range(4):
            write(store, f"memory/f{f}.md", "memory",
                  [" ".join(WORDS[(i * k + f) % len(WORDS)] for k in range(1, 2 + i % 5)) + " filler" * (i % 7)
                   for i in range(40)])
        queries = ["harbor", "lantern copper", "meadow violet granite", "ember willow harbor lantern"]
        first = {text: ranked(store, text) for text in queries}  # the statement ranks
        time.sleep(STEADY_S)
        second = {text: ranked(store, text) for text in queries}  # matches kept
        cache = store._ranker()._cache
        assert cache is not None and len(cache.postings) >= 4
        third = {text: ranked(store, text) for text in queries}  # from the cache
        assert first == second == third
        assert all(len(first[text]) == 10 for text in queries)

        # a sessions chunk outside the scope ["memory"]: never ranked from the cache
        (other,) = write(store, "sessions/s.jsonl", "sessions", ["harbor harbor harbor"])
        statement = ranked(store, "harbor")
        time.sleep(STEADY_S)
        for _ in range(3):
            assert ranked(store, "harbor") == statement
            assert other not in [cid for cid, _s in ranked(store, "harbor")]
        assert ranked(store, "harbor", sources=("memory", "sessions"))[0][0] == other
    finally:
        store.close()


def test_another_instances_writes_are_seen(pg_url, prefix):
    writer, reader = open_store(pg_url, prefix), open_store(pg_url, prefix)
    try:
        (old,) = write(writer, "memory/a.md", "memory", ["the harbor lantern is lit"])
        assert [c for c, _s in ranked(reader, "harbor lantern")] == [old]
        time.sleep(STEADY_S)
        for _ in range(3):
            assert [c for c, _s in ranked(reader, "harbor lantern")] == [old]
        assert reader._ranker()._cache is not None
        (new,) = write(writer, "memory/b.md", "memory", ["harbor lantern harbor lantern"])
        assert [c for c, _s in ranked(reader, "harbor lantern")] == [new, old]
        writer.remove_file("memory/b.md")
        assert [c for c, _s in ranked(reader, "harbor lantern")] == [old]
    finally:
        writer.close()
        reader.close()


def test_the_dense_sum_is_the_phrase_by_phrase_sum():
    """Matches of several phrases summed in an array by id give the same doubles, hence the
    same page, as adding them phrase by phrase over the unique ids."""
    import numpy as np

    from clawkeep.storage.postgres import fts

    rng = np.random.default_rng(7)
    for _ in range(100):
        postings, phrases = {}, []
        for j in range(int(rng.integers(2, 6))):
            ids = np.unique(rng.integers(1, 5000, int(rng.integers(0, 3000)))).astype(np.int64)
            postings[fts.lexeme(f"t{j}")] = (ids, rng.integers(0, 5, len(ids)).astype(np.int32),
                                             rng.integers(1, 400, len(ids)).astype(np.int32))
            phrases.append(fts.Phrase((f"t{j}",), False))
        phrases += phrases[:int(rng.integers(0, 2))]  # a repeated phrase counts twice
        cache = fts.PostingCache(1, 6000, postings)
        ranker = fts.Ranker("t", lambda sql, params: [], "")
        dense = ranker._cached_rank(cache, phrases, 30, 57.3)
        assert ranker._cached_rank(cache, phrases, 30, 57.3, dense_span=0) == dense
