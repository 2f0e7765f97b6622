"""S5 text analysis: CJK fragments, stemming, identifiers, safe queries, snippets.

Every search test runs the MATCH expression the SQLite store renders (storage/sqlite/fts.py)
against a real in-memory FTS5 table with the production tokenizer, so "valid query" means
"SQLite accepted it".
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawkeep.storage import TextQuery
from clawkeep.storage.sqlite.fts import match_expression, vocab_doc_freq
from clawkeep.text.analyzer import (
    SearchQuery,
    analyze_document,
    analyze_lines,
    parse_query,
    rerank,
    snippet,
)


def match_of(query: SearchQuery) -> str:
    """The FTS5 expression the SQLite store runs for these terms."""
    return match_expression(TextQuery.of(query.terms))


def build_match_query(query: str) -> str | None:
    parsed = parse_query(query)
    return match_of(parsed.select()) if parsed else None


def fts5_doc_freq(conn, vocab_table):
    return vocab_doc_freq(conn, vocab_table)


class Index:
    """A tiny FTS5 index built the way the storage layer builds it."""

    def __init__(self, *docs: str):
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE fts USING fts5(tokens, tokenize = 'unicode61 remove_diacritics 2')")
        self.conn.execute("CREATE VIRTUAL TABLE fts_v USING fts5vocab(fts, 'row')")
        self.docs = list(docs)
        self.conn.executemany(
            "INSERT INTO fts(rowid, tokens) VALUES (?, ?)", [(i, analyze_document(d)) for i, d in enumerate(docs)]
        )

    def run(self, match: str, limit: int = 50) -> list[tuple[int, str, float]]:
        sql = "SELECT rowid, tokens, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?"
        return self.conn.execute(sql, (match, limit)).fetchall()

    def find(self, query: str) -> list[str]:
        match = build_match_query(query)
        return [self.docs[r[0]] for r in self.run(match)] if match else []


ZH = "下周二我去上海出差，记得提醒我带护照"
JA_1, JA_2 = "来週東京に行きます", "明日の会議は十時から"
KO_1, KO_2 = "다음주에 서울에 가요", "내일 회의가 있어요"
FILLER = ["海上的风很大，渔船没有出海", "The weather is nice today", "京都の紅葉はきれいでした", "부산에 가요"]


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (ZH, "上海"),
        (ZH, "护照"),
        (ZH, "出差"),
        (ZH, "周二"),
        (ZH, "提醒"),
        (JA_1, "東京"),
        (JA_2, "会議"),
        (JA_2, "十時"),
        (KO_1, "서울"),
        (KO_2, "회의"),
        (KO_1, "서울에"),
        (ZH, "上海出差"),
    ],
)
def test_cjk_fragment_is_found_inside_unsegmented_text(doc, fragment):
    index = Index(doc, *FILLER)
    assert index.find(fragment)[:1] == [doc]


def test_shanghai_does_not_match_haishang_and_vice_versa():
    index = Index("我去上海出差", "海上的风很大")
    assert index.find("上海") == ["我去上海出差"]
    assert index.find("海上") == ["海上的风很大"]


@pytest.mark.parametrize("char", ["护", "照", "上"])
def test_single_cjk_character_query(char):
    index = Index(ZH, "The weather is nice", "今天天气很好")
    assert index.find(char) == [ZH]


def test_quoted_cjk_phrase_does_not_bridge_punctuation():
    index = Index("我去上海出差了", "我在上海，出差的事以后再说")
    assert index.find('"上海出差"') == ["我去上海出差了"]
    assert len(index.find("上海")) == 2


def test_long_chinese_question_is_segmented_not_required_verbatim():
    index = Index(ZH, "今天天气很好", "明天开会")
    assert index.find("我什么时候去上海出差？")[:1] == [ZH]


def test_japanese_and_korean_questions_find_their_messages():
    index = Index(JA_1, JA_2, KO_1, KO_2, *FILLER)
    assert index.find("明日の会議は何時からですか")[:1] == [JA_2]
    assert index.find("서울에 언제 가요?")[:1] == [KO_1]


def test_english_stemming_matches_other_word_forms():
    index = Index("We deployed the server yesterday", "The cat sat on the mat")
    assert index.find("deploying") == ["We deployed the server yesterday"]
    assert index.find("servers") == ["We deployed the server yesterday"]


def test_natural_question_is_or_joined_not_and_joined():
    index = Index("Caroline: I went to an LGBTQ support group yesterday", "Melanie: I painted a sunrise")
    assert index.find("When did Caroline go to the LGBTQ support meeting last year?")[:1] == [
        "Caroline: I went to an LGBTQ support group yesterday"
    ]


def test_diacritics_and_full_width_are_folded():
    index = Index("Rendez-vous au café", "ＡＢＣ株式会社", "plain text")
    assert index.find("cafe") == ["Rendez-vous au café"]
    assert index.find("CAFÉ") == ["Rendez-vous au café"]
    assert index.find("abc") == ["ＡＢＣ株式会社"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("INV-2024-0042", 0),
        ("inv20240042", 0),
        ("0042", 0),
        ("v2.3.1", 1),
        ("v231", 1),
        ("user_id", 2),
        ("userId", 2),
        ("userid", 2),
    ],
)
def test_identifiers_are_found_whole_and_by_parts(query, expected):
    docs = [
        "Invoice INV-2024-0042 is overdue",
        "bump the client to v2.3.1 today",
        "the user_id column is null",
        "Invoice INV-2024-0043 is paid",
        "version 2 and 3",
    ]
    assert Index(*docs).find(query)[:1] == [docs[expected]]


def test_identifier_does_not_match_a_sibling_identifier():
    index = Index("Invoice INV-2024-0043 is paid")
    assert index.find("INV-2024-0042") == []


def test_identifier_parts_are_searchable():
    index = Index("the user_id column is null", "nothing here")
    assert index.find("user") == ["the user_id column is null"]


SOUP = [
    '"',
    '""',
    '"""',
    '"unbalanced',
    "NEAR(",
    "NEAR(a b",
    'NEAR("a" "b", 3)',
    "a AND",
    "AND",
    "OR OR OR",
    "NOT x",
    "*",
    "a*",
    "*a",
    "col:x",
    "tokens:foo",
    "fts:bar",
    "^foo",
    "(((",
    ")",
    "())(",
    "{a b}:c",
    "-x",
    "+y",
    'a"b',
    "'",
    "\\",
    "\x00",
    "a\x00b",
    "🙂🙂",
    '上海"出差',
    "「会議",
    "NEAR/3",
    "a:b:c:d",
    "x" * 5000,
    "中" * 5000,
    "AND OR NOT NEAR",
    "%_%",
    "';DROP TABLE fts;--",
    "\u200b",
    "ｃｏｌ：ｘ",
    "＂上海＂",
]


@pytest.mark.parametrize("query", SOUP)
def test_operator_soup_gives_valid_query_or_none(query):
    index = Index("col x AND y", "上海出差", "a b c")
    match = build_match_query(query)
    assert match is None or isinstance(index.run(match), list)
    parsed = parse_query(query)
    if parsed is not None:  # the df-pruned form must be valid too
        pruned = parsed.select(fts5_doc_freq(index.conn, "fts_v"), total=3)
        assert isinstance(index.run(match_of(pruned)), list)


def test_operator_words_are_plain_text():
    index = Index("col:x is the setting", "something else")
    assert index.find("col:x") == ["col:x is the setting"]
    match = build_match_query("NEAR(deploy server)")
    assert set(match.split(" OR ")) == {'"near"', '"deploy"', '"server"'}


@pytest.mark.parametrize("query", ["", "   ", "???", "the and of", "What is it?", "我的", "!!!...", '""'])
def test_nothing_searchable_returns_none(query):
    assert build_match_query(query) is None


def test_quoted_phrase_keeps_stop_words_and_order():
    index = Index("deploy the server now", "the server will deploy", "server deploy")
    assert index.find('"deploy the server"') == ["deploy the server now"]


def test_exact_phrase_ranks_first_after_rerank():
    docs = ["server deploy server deploy server deploy", "please deploy the server tonight", "deploy deploy"]
    index = Index(*docs)
    query = parse_query('"deploy the server" deploy server').select(fts5_doc_freq(index.conn, "fts_v"), len(docs))
    ranked = rerank(index.run(match_of(query)), query, tokens=lambda r: r[1], rank=lambda r: r[2])
    assert docs[ranked[0][0]] == "please deploy the server tonight"


def test_rare_identifier_ranks_first_after_rerank():
    docs = [
        "the invoice payment is overdue, payment invoice overdue again",
        "reminder: INV-2024-0042 still open",
        "invoice INV-2024-0043 payment overdue",
    ]
    index = Index(*docs)
    query = parse_query("is invoice INV-2024-0042 payment overdue?").select(fts5_doc_freq(index.conn, "fts_v"), 3)
    ranked = rerank(index.run(match_of(query)), query, tokens=lambda r: r[1], rank=lambda r: r[2])
    assert docs[ranked[0][0]] == "reminder: INV-2024-0042 still open"


def test_snippet_finds_quoted_kana_phrase():
    text = "関係のない話がずっと続きます。" * 8 + "来週はガイドブックを買います。" + "関係のない話です。" * 8
    out = snippet(text, "「ガイドブック」", width=30)
    assert "ガイドブック" in out


def test_select_prunes_to_rarest_known_terms():
    docs = ["alpha common"] + ["common filler"] * 9 + ["beta gamma common"]
    index = Index(*docs)
    parsed = parse_query("alpha beta gamma common missingword")
    query = parsed.select(fts5_doc_freq(index.conn, "fts_v"), total=len(docs), max_terms=2)
    assert isinstance(query, SearchQuery) and len(query.terms) == 2
    assert all("missingword" not in match_of(SearchQuery((t,))) and "common" not in match_of(SearchQuery((t,)))
               for t in query.terms)
    assert query.weights is not None and len(query.weights) == 2


def test_select_keeps_something_when_all_terms_are_common():
    index = Index("common a", "common b")
    query = parse_query("common").select(fts5_doc_freq(index.conn, "fts_v"), total=2)
    assert match_of(query) == '"common"'


def test_document_tokens_are_plain_alphanumerics():
    tokens = analyze_document("Deploying INV-2024-0042 to café, 上海出差 & 서울에! e.g. naïve __init__ x²").split()
    assert tokens and all(t.isalnum() and t == t.lower() for t in tokens)
    assert "deploy" in tokens and "上海" in tokens and "inv20240042" in tokens


def test_english_only_use_does_not_load_jieba():
    code = (
        "import sys; from clawkeep.text.analyzer import analyze_document, parse_query, snippet;"
        "analyze_document('hello world'); parse_query('where is the deploy log?').select();"
        "snippet('x ' * 200 + 'deploy', 'deploy'); analyze_document('上海出差'); parse_query('上海').select();"
        "print('jieba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


LONG = (
    "Yesterday we talked about many unrelated things, like the weather and the garden. " * 3
    + "Then Alice said the Deployment of the billing server failed at 3am because of a full disk. "
    + "After that we went back to discussing holidays, travel plans and the weather again. " * 3
)


def test_snippet_centres_on_the_match_with_ellipses():
    out = snippet(LONG, "why did the deploy fail?", width=120)
    assert out.startswith("\u2026") and out.endswith("\u2026")
    assert "Deployment of the billing server failed" in out
    assert len(out) <= 122


def test_snippet_without_match_shows_the_start():
    out = snippet(LONG, "zebra", width=80)
    assert out.startswith("Yesterday we talked") and out.endswith("\u2026") and len(out) <= 81


def test_snippet_of_short_text_is_the_text():
    assert snippet("short   message\nhere", "message") == "short message here"


def test_snippet_finds_cjk_fragments():
    text = "今天的天气很好，我们去公园散步吧。" * 6 + ZH + "。后来我们又聊了很多别的事情。" * 6
    out = snippet(text, "上海", width=40)
    assert "上海" in out and out.startswith("\u2026") and out.endswith("\u2026")


def test_snippet_does_not_cut_latin_words():
    out = snippet(LONG, "billing", width=60)
    body = out.strip("\u2026")
    words = set(LONG.replace(".", " ").split())
    assert body.split()[0].strip(".,") in words and body.split()[-1].strip(".,") in words


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60), max_size=8))
@settings(max_examples=300, deadline=None)
def test_tokens_line_by_line_are_the_documents_tokens_with_the_line_breaks_kept(lines):
    """memory_search reads a hit's lines' tokens from the index instead of analysing again:
    that is only right if no token spans a line break (same tokens, same order)."""
    text = "\n".join(line.replace("\n", " ") for line in lines)
    stored = analyze_lines(text)
    assert stored.split() == analyze_document(text).split()
    assert len(stored.split("\n")) == len(text.split("\n"))
    assert all(line_tokens == analyze_document(line) for line_tokens, line in zip(
        stored.split("\n"), text.split("\n"), strict=True))


def test_tokens_line_by_line_for_cjk_identifiers_and_width_forms():
    text = "上海\n出差 INV-2024-\n0042 userId\nＡＢＣ１２３ wi-fi"
    assert analyze_lines(text).split("\n") == ["上海 海", "出差 差 inv 2024 inv2024", "0042 user id userid",
                                                "abc123 wi fi wifi"]


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_snippet_offsets_are_per_character_normalisation_ascii_fast_path_included(text):
    """Snippets cut the original text at offsets of its normalised form; ASCII takes a shortcut
    (a casefold of one character into one), which must give what the per-character rule gives."""
    from clawkeep.text.snippet import _normalised_with_offsets
    from clawkeep.text.tokens import fold, has_cjk, normalise

    out, origin = [], []
    for pos, ch in enumerate(text):
        norm = normalise(ch)
        norm = norm if has_cjk(norm) else fold(norm)
        out.append(norm)
        origin.extend([pos] * len(norm))
    norm, offsets = _normalised_with_offsets(text)
    assert (norm, list(offsets)) == ("".join(out), origin)
    ascii_only = "".join(ch for ch in text if ch.isascii())
    assert _normalised_with_offsets(ascii_only)[0] == ascii_only.casefold()


def test_snippet_stem_index_finds_every_word_that_stems_to_a_token():
    """The snippet's word index (stems of words seen before, grouped) answers as stemming each
    word would, also across a restart when it grows past its bound."""
    from clawkeep.text.snippet import _StemIndex
    from clawkeep.text.tokens import stem

    index = _StemIndex()
    index.MAX_WORDS = 12  # a restart every few calls
    texts = ["deploying the deployed deploy servers", "server serving served", "books booked booking bookish",
             "deploy", "unrelated words only here", "servers deploy books 2024 inv"]
    tokens = {"deploy": 0, "server": 1, "book": 2, "2024": 3}
    for _ in range(3):
        for text in texts:
            words = set(text.split())
            assert index.matching(words, tokens) == {w for w in words if stem(w) in tokens}


def test_scripts_and_the_main_one():
    from clawkeep.text.tokens import main_script, scripts

    assert scripts("The user drives a Prius") == {"latin"}
    assert scripts("ユーザーの車") == {"kana", "han"} and scripts("사용자의 차") == {"hangul"}
    assert scripts("2026-03-22 · 12:00") == frozenset() and main_script("2026-03-22") is None
    # a few Latin names in a Chinese sentence leave it Chinese; an English sentence stays English
    assert main_script("网关运行在书房里那台叫 atlas 的 Mac mini 上") == "han"
    assert main_script("The gateway runs on atlas, a Mac mini (书房)") == "latin"
