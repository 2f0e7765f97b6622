"""sessions_search reads less than it re-ranks (`best_rows`): the answer must be exactly the
first `limit` of `rerank` over each store's best CANDIDATES rows, whatever the query, the limit
and the ties. Two real SQLite stores, a small vocabulary (many matches, many equal scores)."""

import random

import pytest

from clawkeep.sessions import transcript
from clawkeep.sessions.search import CANDIDATES, best_rows
from clawkeep.storage import EntryRecord, SessionRecord, TextQuery, open_agent_store_file
from clawkeep.text.query import parse_query, rerank, rerank_best, rerank_score, rerank_scores

WORDS = ("deploy server billing refund invoice tonight friday camping trip hiking dog book "
         "上海 出差 护照 会议 INV-2024-0042 ORD-77 v2.3").split()


def _store(path, agent, rng, sessions=4, messages=260):
    store = open_agent_store_file(path, agent)
    for s in range(sessions):
        store.insert_session(SessionRecord(session_id=f"{agent}-s{s}", key=f"agent:{agent}:s{s}", agent_id=agent,
                                           kind="direct", session_started_at=1, updated_at=1, created_at=1))
    for i in range(messages):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.choice((1, 2, 3, 5, 8))))
        if i % 7 == 0:
            text = "deploy server"  # identical rows: equal scores
        transcript.append(store, EntryRecord(f"{agent}-m{i}", f"{agent}-s{i % sessions}", "message", 1_000 + i,
                                             role="user", content=transcript.text_blocks(text)))
    return store


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    rng = random.Random(7)
    root = tmp_path_factory.mktemp("shortcuts")
    opened = [_store(root / "a.sqlite", "a", rng), _store(root / "b.sqlite", "b", rng, messages=120)]
    yield opened
    for store in opened:
        store.close()


def _reference(stores, query, session_ids, limit):
    rows = []
    for store in stores:
        rows += store.search(TextQuery.of(query.terms), session_ids=session_ids, limit=CANDIDATES)
    return rerank(rows, query, tokens=lambda r: r.tokens, rank=lambda r: r.score)[:limit]


def _queries():
    rng = random.Random(11)
    out = ["deploy", "deploy server", '"deploy server"', "INV-2024-0042 refund", "上海 出差", "上", "nosuchword",
           "nosuchword deploy"]
    for _ in range(60):
        words = rng.sample(WORDS, rng.randint(1, 4))
        if rng.random() < 0.2:
            words[0] = f'"{words[0]} {rng.choice(WORDS)}"'
        out.append(" ".join(words))
    return out


@pytest.mark.parametrize("text", _queries())
def test_best_rows_are_the_full_reranking_cut(stores, text):
    parsed = parse_query(text)
    assert parsed is not None
    # unweighted, and weighted by document frequency with common terms dropped (as the service does)
    weighted = parsed.select(stores[0].document_frequency, stores[0].indexed_documents())
    for query, limit in [(q, n) for q in (parsed, weighted) for n in (1, 3, 10, 25)]:
        for subset, session_ids in (([stores[0]], None), (stores, None), (stores, ["a-s1", "a-s2", "b-s0"])):
            got = [(r.entry.entry_id, r.session_key) for r in best_rows(subset, query, session_ids, limit)]
            want = [(r.entry.entry_id, r.session_key) for r in _reference(subset, query, session_ids, limit)]
            assert got == want, (text, limit, session_ids)


def test_rerank_orders_by_rerank_score_exactly():
    """`rerank` scores every candidate in one loop (`rerank_scores`): the floats must be those of
    `rerank_score` one row at a time, and the order theirs, highest first, ties in input order."""
    rng = random.Random(3)
    for text in _queries():
        parsed = parse_query(text)
        assert parsed is not None
        for query in (parsed, parsed.select(lambda toks: {t: rng.randint(0, 50) for t in toks}, 400)):
            docs = [" ".join(rng.choice(("deploy", "server", "inv 2024 0042", "上海", "出差", "x", "book\ndog"))
                             for _ in range(rng.randint(0, 6))) for _ in range(40)]
            ranks = [-rng.choice((1.0, 2.5, 2.5, 3.25, 7.0)) for _ in docs]
            best = rerank_best(ranks)
            singly = [rerank_score(d, r, query, best) for d, r in zip(docs, ranks, strict=True)]
            assert rerank_scores(docs, ranks, query, best) == singly
            order = sorted(range(len(docs)), key=lambda i: (-singly[i], i))
            assert rerank(list(range(len(docs))), query, tokens=docs.__getitem__, rank=ranks.__getitem__) == order
