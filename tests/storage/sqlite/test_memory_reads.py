"""SQLite memory index: the reads kept between searches (file records, document frequencies,
the sources held) and the keyword search's shortcut when every chunk qualifies: the same rows in
the same order as FTS5's own `ORDER BY rank`, ties included."""

import random
import sqlite3

from clawkeep.storage import ChunkRecord, FileRecord, TextQuery
from clawkeep.storage.sqlite.fts import match_expression
from clawkeep.storage.sqlite.memory import SPLIT_FROM_CHUNKS, SqliteMemoryStore
from clawkeep.text.analyzer import analyze_document

REFERENCE = ("SELECT f.rowid, f.rank, f.tokens FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
             "WHERE chunks_fts MATCH ? AND c.source IN ({}) ORDER BY f.rank LIMIT ?")


def fill(store, rng, files=40, source="memory"):
    words = ["kayak", "rental", "pier", "boiler", "service", "sprint", "roadmap", "piano", "coach"]
    for f in range(files):
        path = f"{'sessions/s' if source == 'sessions' else 'memory/n'}{f}"
        # short texts from few words: many chunks score exactly alike (ties in bm25)
        chunks = [ChunkRecord(path, source, i + 1, i + 1, text, f"h{f}-{i}", tokens=analyze_document(text))
                  for i in range(6) for text in [" ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))]]
        store.replace_file(FileRecord(path, source, f"hash{f}", 1.0, 1), chunks, None, None)


def reference(path, query, sources, limit):
    with sqlite3.connect(path) as conn:
        sql = REFERENCE.format(", ".join("?" for _ in sources))
        return conn.execute(sql, [match_expression(query), *sources, limit]).fetchall()


def test_the_shortcut_ranks_exactly_like_fts5_rank_ties_included(tmp_path):
    path = str(tmp_path / "memory.sqlite")
    store = SqliteMemoryStore(path)
    fill(store, random.Random(4))
    queries = [TextQuery.words(w) for w in ("kayak", "pier", "coach")] + [
        TextQuery.words("kayak", "rental"), TextQuery.words("servic", "sprint", "piano")]
    ties = 0
    for query in queries:
        for limit in (3, 10, 50, 500):
            got = store.keyword_search(query, sources=["memory", "sessions"], limit=limit)
            want = reference(path, query, ["memory", "sessions"], limit)
            assert got == want
            scores = [row[1] for row in got]
            ties += len(scores) != len(set(scores))
    assert ties  # the corpus does produce equal scores, so their order was compared too
    fill(store, random.Random(5), files=10, source="sessions")  # now the source filter must run
    for query in queries:
        assert (store.keyword_search(query, sources=["memory"], limit=20)
                == reference(path, query, ["memory"], 20))
        assert (store.keyword_search(query, sources=["memory", "sessions"], limit=20)
                == reference(path, query, ["memory", "sessions"], 20))
    store.close()


def test_reads_inside_a_transaction_are_not_kept(tmp_path):
    store = SqliteMemoryStore(str(tmp_path / "memory.sqlite"))
    store.replace_file(FileRecord("a.md", "memory", "x", 1.0, 1), [], None, None)
    try:
        with store.transaction():
            store.replace_file(FileRecord("b.md", "memory", "y", 1.0, 1), [], None, None)
            assert set(store.files()) == {"a.md", "b.md"}  # its own uncommitted write is visible
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert set(store.files()) == {"a.md"}  # the rolled-back record was not kept for later
    store.close()


def test_a_large_index_ranked_in_two_halves_at_once_ranks_exactly_like_fts5_rank(tmp_path):
    """From SPLIT_FROM_CHUNKS chunks on, the ranking runs as two halves of the chunk ids on two
    connections at once: merged, the same rows in the same order as one ranking, ties included."""
    path = str(tmp_path / "memory.sqlite")
    store = SqliteMemoryStore(path)
    rng = random.Random(6)
    with store.transaction():
        fill(store, rng, files=SPLIT_FROM_CHUNKS // 6 + 20)
    assert store.chunk_count() >= SPLIT_FROM_CHUNKS and store._split_id() is not None
    queries = [TextQuery.words("kayak"), TextQuery.words("kayak", "rental"),
               TextQuery.words("servic", "sprint", "piano"), TextQuery.words("roadmap", "coach", "pier", "boiler")]
    for query in queries:
        for limit in (1, 24, 96, 5000):
            assert store.keyword_search(query, sources=["memory"], limit=limit) == reference(
                path, query, ["memory"], limit)
    # inside a transaction the other connection cannot see the uncommitted rows: one ranking
    with store.transaction():
        text = "kayak kayak kayak kayak"
        store.replace_file(FileRecord("memory/new.md", "memory", "n", 1.0, 1),
                           [ChunkRecord("memory/new.md", "memory", 1, 1, text, "hn", tokens=analyze_document(text))],
                           None, None)
        best = store.keyword_search(TextQuery.words("kayak"), sources=["memory"], limit=1)
        assert store.chunks([best[0][0]])[best[0][0]].path == "memory/new.md"
    store.close()
