"""Conformance: full-text search over transcripts with a typed TextQuery.

Texts are indexed with the production analyser (clawkeep.text) and queries built the way the
services build them, so CJK fragments inside unsegmented text must be found by every backend.
"""

import pytest

from clawkeep.storage import TextQuery, TextTerm
from clawkeep.text.analyzer import parse_query

from ..records import append_text, session


def q(text):
    parsed = parse_query(text)
    assert parsed is not None
    return TextQuery.of(parsed.terms)


@pytest.fixture
def corpus(store):
    a, b = session("agent:main:a", session_id="sa"), session("agent:main:b", session_id="sb")
    store.insert_session(a)
    store.insert_session(b)
    docs = {
        "zh": append_text(store, "sa", "下周二我去上海出差，记得提醒我带护照"),
        "sea": append_text(store, "sa", "海上的风很大，渔船没有出海"),
        "ja": append_text(store, "sb", "来週東京に行きます"),
        "ko": append_text(store, "sb", "다음주에 서울에 가요"),
        "deploy": append_text(store, "sb", "please deploy the server tonight", role="assistant"),
        "loose": append_text(store, "sa", "server deploy server deploy"),
        "ident": append_text(store, "sa", "reminder: INV-2024-0042 still open"),
    }
    return {k: v.entry_id for k, v in docs.items()}


def found(store, query, session_ids=None, limit=10):
    return [r.entry.entry_id for r in store.search(query, session_ids=session_ids, limit=limit)]


@pytest.mark.parametrize(("text", "doc"), [("上海", "zh"), ("护照", "zh"), ("出差", "zh"), ("東京", "ja"),
                                           ("서울", "ko"), ("INV-2024-0042", "ident"), ("海上", "sea")])
def test_words_identifiers_and_cjk_fragments(store, corpus, text, doc):
    assert found(store, q(text))[:1] == [corpus[doc]]


def test_shanghai_does_not_match_haishang(store, corpus):
    assert found(store, q("上海")) == [corpus["zh"]]
    assert found(store, q("海上")) == [corpus["sea"]]


def test_phrase_prefix_and_alternatives(store, corpus):
    assert found(store, q('"deploy the server"')) == [corpus["deploy"]]
    assert corpus["zh"] in found(store, TextQuery((TextTerm((("上",),), prefix=True),)))
    either = TextQuery((TextTerm((("nosuchword",), ("tonight",))),))
    assert found(store, either) == [corpus["deploy"]]


def test_operator_soup_is_plain_text(store, corpus):
    for text in ['NEAR(deploy server)', 'deploy AND "server', "col:x OR ^deploy*", "';DROP TABLE x;--"]:
        parsed = parse_query(text)
        if parsed is not None:
            assert isinstance(found(store, TextQuery.of(parsed.terms)), list)


def test_rows_carry_entry_session_key_score_and_tokens(store, corpus):
    rows = store.search(q("deploy server"), session_ids=None, limit=10)
    assert {r.entry.entry_id for r in rows} == {corpus["deploy"], corpus["loose"]}
    assert [r.score for r in rows] == sorted(r.score for r in rows)  # best (lowest) first
    by_id = {r.entry.entry_id: r for r in rows}
    assert by_id[corpus["deploy"]].session_key == "agent:main:b"
    assert by_id[corpus["deploy"]].entry.role == "assistant"
    assert "deploy" in by_id[corpus["deploy"]].tokens.split()


def test_visibility_filter_applies_before_the_limit(store, corpus):
    for i in range(30):  # many better matches in a session the caller cannot see
        append_text(store, "sb", f"deploy deploy deploy {i}")
    assert found(store, q("deploy"), session_ids=["sa"], limit=1) == [corpus["loose"]]
    assert found(store, q("deploy"), session_ids=[], limit=10) == []
    assert found(store, q("上海"), session_ids={"sb"}) == []
    assert len(found(store, q("deploy"), limit=5)) == 5


def test_document_frequency_and_indexed_documents(store, corpus):
    df = store.document_frequency(["deploy", "server", "missingword"])
    assert df == {"deploy": 2, "server": 2, "missingword": 0}
    assert store.document_frequency([]) == {}
    assert store.indexed_documents() >= len(corpus)


def test_entries_appended_without_index_text_are_not_searchable(store):
    s = session()
    store.insert_session(s)
    from ..records import message

    store.append_entry(message(s.session_id, "hidden walrus"))
    assert found(store, TextQuery.words("walrus")) == []


def test_ranking_alone_then_tokens_and_rows_match_search(store, corpus):
    for _ in range(3):  # ties: the same text several times
        append_text(store, "sb", "deploy the server")
    query = q("deploy server tonight")
    rows = store.search(query, session_ids=None, limit=10)
    matches = store.rank_matches(query, session_ids=None, limit=10)
    assert [(m.seq, m.score) for m in matches] == [(r.entry.seq, r.score) for r in rows]
    store.load_tokens(matches[:2])
    assert [m.tokens for m in matches[:2]] == [r.tokens for r in rows[:2]]
    store.load_tokens(matches)
    store.load_rows(matches[1:3])
    assert [m.row.entry for m in matches[1:3]] == [r.entry for r in rows[1:3]]
    assert [m.row.session_key for m in matches[1:3]] == [r.session_key for r in rows[1:3]]
    assert store.rank_matches(query, session_ids=[], limit=10) == []
    assert [m.seq for m in store.rank_matches(q("deploy"), session_ids=["sa"], limit=10)] == [
        r.entry.seq for r in store.search(q("deploy"), session_ids=["sa"], limit=10)]


def test_indexed_messages_is_an_exact_count(store, corpus):
    """status' `indexedMessages` (QA: it was max(rowid), an entry seq, not a count)."""
    assert store.indexed_messages() == len(corpus)
    with store.transaction():
        store.delete_session("sb")
    assert store.indexed_messages() == 4  # sa's four messages


# --- ranking bounded by the page (PostgreSQL ranks each phrase's newest matches, see fts.py) ---
COMMON_ROWS = 320  # more rows holding the common word than a backend may read of it per search


@pytest.fixture
def crowded(store):
    """A few old rows holding a rare word, then many newer rows holding only a common one."""
    s = session("agent:main:crowd", session_id="sc")
    store.insert_session(s)
    rare = [append_text(store, "sc", text).entry_id for text in (
        "the walrus report is due", "walrus walrus migration report", "report on the walrus colony size")]
    with store.transaction():
        for i in range(COMMON_ROWS):
            append_text(store, "sc", f"weekly report number {i} filed")
    return rare


def test_a_page_is_the_same_top_k_whatever_the_number_of_matches(store, crowded):
    query = q("walrus report")
    before = found(store, query, limit=3)
    assert set(before) == set(crowded)  # the rare word's rows first, however old
    with store.transaction():
        for i in range(COMMON_ROWS):  # as many newer matches again, holding only the common word
            append_text(store, "sc", f"monthly report draft {i}")
    assert found(store, query, limit=3) == before


def test_rows_holding_more_terms_rank_first_and_bm25_order_holds(store, crowded):
    rows = store.search(q("walrus report"), session_ids=None, limit=5)
    ids = [r.entry.entry_id for r in rows]
    assert ids[:3] == [crowded[1], crowded[0], crowded[2]]  # twice the rare word, then the shorter row
    assert [r.score for r in rows] == sorted(r.score for r in rows)
    assert rows[3].score > rows[2].score  # a common-word-only row scores worse than any rare-word row


def test_cjk_fragment_found_among_many_matches_of_its_parts(store):
    s = session("agent:main:cjk", session_id="sj")
    store.insert_session(s)
    target = append_text(store, "sj", "下周去上海出差，记得带护照").entry_id
    with store.transaction():
        for i in range(COMMON_ROWS):  # newer rows holding each of the fragment's characters, never the fragment
            append_text(store, "sj", f"出差报告第{i}份，海上天气")
    assert found(store, q("上海出差"), limit=1) == [target]
    assert found(store, q("上海"), limit=5) == [target]


def test_a_word_searched_before_it_existed_is_found_once_written(store, corpus):
    assert found(store, q("narwhal")) == []
    assert store.document_frequency(["narwhal"]) == {"narwhal": 0}
    row = append_text(store, "sa", "a narwhal was seen")
    assert found(store, q("narwhal")) == [row.entry_id]
