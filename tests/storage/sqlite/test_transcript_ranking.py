"""The transcript index's ranking from posting lists kept between searches (bm25.SizesWithPostings
in SqliteAgentStore): the same rows, scores, order and tokens as FTS5's own `ORDER BY bm25, rowid`,
for English words, Chinese bigram phrases and identifiers, before and after commits by this
connection and by another one; scoped searches and a thread's own transaction go to FTS5."""

import random
import sqlite3

import pytest

from clawkeep.storage import TextQuery
from clawkeep.storage.sqlite.fts import match_expression
from clawkeep.storage.sqlite.sessions import SqliteAgentStore
from clawkeep.text.query import parse_query
from tests.storage.records import append_text, session

WORDS = ["kayak", "rental", "pier", "boiler", "service", "sprint", "roadmap", "piano", "coach", "booking",
         "搬家", "方案", "预算", "上海", "出差", "装修"]
IDENTIFIERS = ["INV-2024-00042", "ORD-0031337", "PNR-ZX81QK"]
QUERIES = ["kayak", "kayak rental", "piano coach booking", "coach coach", "nothing matches this", "搬家方案",
           "上海出差", "装修预算", "INV-2024-00042", "发票 INV-2024-00042", "ORD-0031337 kayak", "roadmap sprint 方案"]
RANKED = ("SELECT top.rowid, top.score, f.c0 FROM (SELECT rowid, bm25(entries_fts) AS score FROM entries_fts "
          "WHERE entries_fts MATCH ? ORDER BY score, rowid LIMIT ?) top JOIN entries_fts_content f ON f.id = top.rowid "
          "ORDER BY top.score, top.rowid")


def text_of(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 14))]
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words) + 1), rng.choice(IDENTIFIERS))
    return " ".join(words)


def add_messages(store: SqliteAgentStore, rng: random.Random, count: int) -> list[str]:
    record = session()
    store.insert_session(record)
    with store.transaction():
        for _ in range(count):
            append_text(store, record.session_id, text_of(rng))
    return [record.session_id]


def fts5_ranking(path: str, query: TextQuery, limit: int) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(RANKED, (match_expression(query), limit)).fetchall()


def queries() -> list[TextQuery]:
    return [TextQuery.of(parse_query(text).terms) for text in QUERIES]


def assert_same_as_fts5(store: SqliteAgentStore, path: str) -> None:
    for query in queries():
        for limit in (1, 7, 100, 5000):
            expected = fts5_ranking(path, query, limit)
            matches = store.rank_matches(query, session_ids=None, limit=limit)
            assert [(m.seq, m.score, m.tokens) for m in matches] == expected  # scores bit for bit
            rows = store.search(query, session_ids=None, limit=limit)
            assert [(r.entry.seq, r.score, r.tokens) for r in rows] == expected


@pytest.fixture
def seeded(tmp_path):
    path = str(tmp_path / "agent.sqlite")
    store = SqliteAgentStore(path, "main")
    rng = random.Random(15)
    for _ in range(4):
        add_messages(store, rng, 150)
    yield path, store, rng
    store.close()


@pytest.mark.parametrize("in_python_up_to", [0, 10**9])  # numpy's sums, the loop's sums
def test_rankings_from_memory_equal_fts5_bit_for_bit_across_commits(seeded, monkeypatch, in_python_up_to):
    from clawkeep.storage.sqlite import bm25

    monkeypatch.setattr(bm25, "SMALL_POSTINGS", in_python_up_to)
    path, store, rng = seeded
    assert_same_as_fts5(store, path)
    cache = store._ranking[1]
    assert cache._postings  # the memory path answered
    # a Chinese query's run of bigrams and an identifier's parts are phrases ranked from memory too
    assert {("搬家", "家方", "方案"), ("inv", "2024", "00042"), ("inv202400042",)} <= set(cache._postings)

    doomed = add_messages(store, rng, 40)  # this connection commits to the index: a new state
    assert_same_as_fts5(store, path)
    assert store._ranking[1] is not cache
    store.delete_session(doomed[0])  # rows leave the index
    assert_same_as_fts5(store, path)

    other = SqliteAgentStore(path, "main")  # another connection (another process) commits
    add_messages(other, rng, 60)
    other.close()
    assert_same_as_fts5(store, path)


def test_commits_that_leave_the_index_alone_keep_its_ranking(seeded):
    path, store, _ = seeded
    assert_same_as_fts5(store, path)
    cache = store._ranking[1]
    record = store.list_sessions()[0]
    record.label = "renamed"
    store.update_session(record)  # a session row, not the index
    store.add_counters({"searches": 1})
    assert_same_as_fts5(store, path)
    assert store._ranking[1] is cache


def test_the_first_search_of_a_state_is_ranked_by_fts5(seeded):
    """A one-shot CLI process never reads posting lists: FTS5 answers the first search."""
    path, store, _ = seeded
    query = queries()[1]
    assert [m.seq for m in store.rank_matches(query, session_ids=None, limit=5)] == [
        r[0] for r in fts5_ranking(path, query, 5)]
    assert not store._ranking[1]._postings


def test_scoped_searches_and_a_threads_own_transaction_go_to_fts5(seeded):
    path, store, rng = seeded
    assert_same_as_fts5(store, path)
    cache = store._ranking[1]
    before = dict(cache._postings)
    scope = [store.list_sessions()[0].session_id]
    query = TextQuery.of(parse_query("kayak").terms)
    scoped = store.search(query, session_ids=scope, limit=50)
    assert scoped and {r.entry.session_id for r in scoped} == set(scope)
    assert dict(cache._postings).keys() == before.keys()
    with store.transaction():  # rows appended here are visible to this thread's searches at once
        entry = append_text(store, scope[0], "kayak kayak kayak")
        found = store.rank_matches(query, session_ids=None, limit=5000)
        assert entry.seq in {m.seq for m in found}
    assert_same_as_fts5(store, path)


def test_an_in_memory_store_ranks_from_memory_too(tmp_path):
    store = SqliteAgentStore(":memory:", "main")
    rng = random.Random(3)
    add_messages(store, rng, 200)
    for query in queries():
        first = store.rank_matches(query, session_ids=None, limit=20)
        again = store.rank_matches(query, session_ids=None, limit=20)
        assert [(m.seq, m.score, m.tokens) for m in again] == [(m.seq, m.score, m.tokens) for m in first]
    assert store._ranking[1]._postings
    store.close()


def test_kept_tokens_start_over_past_their_bound_and_stay_those_of_the_index(seeded, monkeypatch):
    from clawkeep.storage.sqlite import sessions

    path, store, rng = seeded
    monkeypatch.setattr(sessions, "MAX_KEPT_TOKENS", 30)
    assert_same_as_fts5(store, path)
    kept = store._ranking[2]
    assert 0 < len(kept) < 600  # started over: fewer than the 600 rows the searches read
    add_messages(store, rng, 10)  # a new state of the index: its rows' tokens are read again
    assert_same_as_fts5(store, path)
    assert store._ranking[2] is not kept


def test_past_the_budget_fts5_ranks_what_is_not_kept_and_nothing_is_evicted(seeded, monkeypatch):
    from clawkeep.storage.sqlite import bm25

    path, store, _ = seeded
    monkeypatch.setattr(bm25, "MAX_CACHED_POSTINGS", 300)  # fewer rows than the common words hold together
    assert_same_as_fts5(store, path)
    cache = store._ranking[1]
    kept = dict(cache._postings)
    assert kept and cache._cached >= 300
    assert_same_as_fts5(store, path)
    assert cache._postings.keys() == kept.keys()  # none evicted
    assert all(cache._postings[phrase] is posting for phrase, posting in kept.items())  # none read again
