"""The memory index's keyword ranking from posting lists kept between searches (bm25.py): the
same rows, scores and order as FTS5's own bm25, before and after commits by this and another
connection, for English and CJK tokens, repeated tokens and several alternatives per term."""

import random
import sqlite3

import pytest

from clawkeep.storage import ChunkRecord, FileRecord, TextQuery
from clawkeep.storage.query import TextTerm
from clawkeep.storage.sqlite import bm25
from clawkeep.storage.sqlite.fts import match_expression
from clawkeep.storage.sqlite.memory import SqliteMemoryStore
from clawkeep.text.analyzer import analyze_document

WORDS = ["kayak", "rental", "pier", "boiler", "service", "sprint", "roadmap", "piano", "coach",
         "搬家", "方案", "预算", "上海", "出差"]
RANKED = ("SELECT rowid, bm25(chunks_fts), tokens FROM chunks_fts WHERE chunks_fts MATCH ? "
          "ORDER BY 2, 1 LIMIT ?")


def add_file(store, rng, name, lines=6):
    chunks = []
    for i in range(lines):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        chunks.append(ChunkRecord(name, "memory", i + 1, i + 1, text, f"{name}-{i}", tokens=analyze_document(text)))
    store.replace_file(FileRecord(name, "memory", name, 1.0, 1), chunks, None, None)


def fts5_ranking(path, query, limit):
    with sqlite3.connect(path) as conn:
        return conn.execute(RANKED, (match_expression(query), limit)).fetchall()


def queries():
    one = [TextQuery.words(w) for w in ("kayak", "piano", "方案")]
    many = [TextQuery.words("kayak", "rental"), TextQuery.words("搬家", "方案", "kayak"),
            TextQuery.words("coach", "coach"),  # a repeated token is two phrases in FTS5's sum
            TextQuery.words("nothing", "matches", "this")]
    alternatives = [TextQuery((TextTerm((("pier",), ("boiler",))), TextTerm((("预算",),))))]
    # phrases of several tokens, as a Chinese query's run of bigrams or an identifier gives them:
    # adjacent in some rows, repeated within a row, or never adjacent at all
    phrases = [TextQuery((TextTerm((("搬家", "方案"),)), TextTerm((("方案",),)))),
               TextQuery((TextTerm((("kayak", "rental", "pier"),)), TextTerm((("coach", "coach"),)))),
               TextQuery((TextTerm((("piano", "nothing"),)),))]
    return one + many + alternatives + phrases


def seeded_store(tmp_path, seed, files):
    path = str(tmp_path / "memory.sqlite")
    store = SqliteMemoryStore(path)
    rng = random.Random(seed)
    with store.transaction():
        for f in range(files):
            add_file(store, rng, f"memory/n{f}.md")
    return path, store, rng


@pytest.mark.parametrize("in_python_up_to", [0, 10**9])  # numpy's sums, the loop's sums
def test_rankings_from_memory_equal_fts5_bit_for_bit_across_commits(tmp_path, monkeypatch, in_python_up_to):
    monkeypatch.setattr(bm25, "SMALL_POSTINGS", in_python_up_to)
    path, store, rng = seeded_store(tmp_path, 11, 300)

    def compare():
        for query in queries():
            for limit in (1, 7, 40, 5000):
                assert store.keyword_search(query, sources=["memory"], limit=limit) == fts5_ranking(path, query, limit)

    compare()
    cache = store._committed_read("bm25", lambda: None)
    assert cache is not None and cache._ids is not None and cache._postings  # the memory path answered
    assert {("搬家", "方案"), ("kayak", "rental", "pier"), ("piano", "nothing")} <= set(cache._postings)  # phrases too
    add_file(store, rng, "memory/n5.md", lines=9)  # this connection replaces a file: new state
    store.remove_file("memory/n7.md")
    compare()
    other = SqliteMemoryStore(path)  # another connection (another process) commits
    add_file(other, rng, "memory/late.md", lines=20)
    other.close()
    compare()
    store.close()


def test_a_token_fts5_reads_differently_is_ranked_by_fts5(tmp_path):
    """A stemming tokenizer indexes "running" as "run": the literal term has no postings, so
    the count guard refuses to rank it from memory (FTS5 must)."""
    conn = sqlite3.connect(tmp_path / "x.sqlite")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(tokens, tokenize = 'porter unicode61')")
    conn.executemany("INSERT INTO t(tokens) VALUES (?)", [("running fast",), ("she runs",), ("slow walk",)])
    conn.execute("CREATE VIRTUAL TABLE temp.ti USING fts5vocab(main, t, instance)")
    cache = bm25.Bm25Cache("t", "temp.ti")

    def rows(sql, params=()):
        return conn.execute(sql, params).fetchall()

    assert cache.top(rows, [("running",)], 5) is None
    assert cache.top(rows, [("running",)], 5) is None  # remembered, not read again
    assert cache.top(rows, [("running", "fast")], 5) is None  # a phrase with such a token too
    ranked = cache.top(rows, [("walk",)], 5)
    assert ranked == conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH 'walk' ORDER BY 2, 1").fetchall()


def test_only_plain_tokens_without_prefixes_are_ranked_from_memory():
    assert bm25.phrases(TextQuery.words("kayak", "方案")) == [("kayak",), ("方案",)]
    assert bm25.phrases(TextQuery((TextTerm((("inv", "2024"),)),))) == [("inv", "2024")]  # a phrase
    assert bm25.phrases(TextQuery((TextTerm((("kay",),), True),))) is None  # a prefix
    assert bm25.phrases(TextQuery.words("café")) is None  # FTS5 folds the diacritic
    assert bm25.phrases(TextQuery((TextTerm((("kayak", "Rental"),)),))) is None  # FTS5 folds the case


def test_common_terms_loaded_ahead_give_the_same_rankings_and_stop_when_the_index_moves(tmp_path):
    import threading

    path, store, rng = seeded_store(tmp_path, 5, 200)
    first = TextQuery.words("pier")
    store.keyword_search(first, sources=["memory"], limit=5)  # FTS5 answers the first search after a commit
    store.keyword_search(first, sources=["memory"], limit=5)  # the second loads the sizes (and starts a load ahead)
    cache = store._committed_read("bm25", lambda: None)
    assert cache.generation is not None
    finish_loads_ahead()
    cache.warm(store._snapshot, threading.Event(), min_rows=50)  # run here, to its end
    common = {(analyze_document(w),) for w in WORDS if w.isascii()} - {("pier",)}
    assert common <= set(cache._postings)  # every word is in far more than 50 of 1,200 rows
    for query in queries():
        for limit in (1, 7, 5000):
            assert store.keyword_search(query, sources=["memory"], limit=limit) == fts5_ranking(path, query, limit)

    # a commit by another connection after the sizes were read: the load ahead reads nothing
    add_file(store, rng, "memory/fresh.md")
    store.keyword_search(first, sources=["memory"], limit=5)
    store.keyword_search(first, sources=["memory"], limit=5)
    cache = store._committed_read("bm25", lambda: None)
    finish_loads_ahead()  # the background load this search started
    other = SqliteMemoryStore(path)
    add_file(other, rng, "memory/other.md", lines=30)
    other.close()
    before = set(cache._postings)
    cache.warm(store._snapshot, threading.Event(), min_rows=50)
    assert set(cache._postings) == before
    for query in queries():
        assert store.keyword_search(query, sources=["memory"], limit=40) == fts5_ranking(path, query, 40)
    # a closed store: the load ahead ends quietly and opens nothing
    store.close()
    cache.warm(store._snapshot, threading.Event(), min_rows=1)
    assert store._reader is None


def finish_loads_ahead():
    import threading

    for thread in threading.enumerate():
        if thread.name == "clawkeep-bm25-warm":
            thread.join(30)


def test_the_load_ahead_starts_only_in_a_process_that_keeps_searching(tmp_path):
    _, store, _ = seeded_store(tmp_path, 3, 50)
    query = TextQuery.words("kayak")
    for _ in range(bm25.WARM_AFTER_SEARCHES - 1):  # a one-shot CLI: FTS5, then the sizes, nothing ahead
        store.keyword_search(query, sources=["memory"], limit=3)
    cache = store._committed_read("bm25", lambda: None)
    assert cache._ids is not None and cache._warm == "due"
    store.keyword_search(query, sources=["memory"], limit=3)
    assert cache._warm == "started"
    finish_loads_ahead()
    store.close()


def test_an_index_that_commits_often_is_loaded_ahead_once_not_after_every_commit(tmp_path):
    _, store, rng = seeded_store(tmp_path, 4, 50)
    query = TextQuery.words("kayak")
    started = []
    for round_ in range(3):
        if round_:
            add_file(store, rng, f"memory/late{round_}.md")  # a commit: a new index state, a new cache
        for _ in range(bm25.WARM_AFTER_SEARCHES):
            store.keyword_search(query, sources=["memory"], limit=3)
        started.append(store._committed_read("bm25", lambda: None)._warm)
        finish_loads_ahead()
    assert started == ["started", "skipped", "skipped"]  # the first state only, within WARM_EVERY_S
    store.close()
