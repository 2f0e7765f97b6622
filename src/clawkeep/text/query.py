"""Turn any user text into analysed query terms (never query syntax).

User syntax is never passed through: the query is re-tokenised with the document analyser,
so `"`, `NEAR(`, `AND`, `*`, `col:x`, `^` and parentheses are just text. Terms are OR-ed (a
question's words rarely all occur in one message) after dropping stop words; with document
frequencies the rarest few are kept, which bounds latency and keeps the informative words.
Stores receive the selected terms as a typed `clawkeep.storage.TextQuery` (each backend
renders its own query language: SQLite's FTS5 MATCH lives in storage/sqlite/fts.py).
"""

from __future__ import annotations

import logging
import math
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, TypeVar

from ..patterns import lazy
from . import stopwords
from .tokens import (
    CHUNK,
    MAX_TOKEN,
    chunk_segments,
    chunk_tokens,
    cjk_bigrams,
    fold,
    has_cjk,
    iter_chunks,
    normalise,
    split_parts,
    stem,
    word_tokens,
)

MAX_QUERY_CHARS = 4096  # S5: longer queries are rejected by the caller; never scan more
MAX_TERMS = 6  # rarest terms kept when document frequencies are known (latency ~ postings read)
MAX_TERMS_NO_DF = 16  # without df we cannot tell common from rare, so keep more
COMMON_RATIO = 0.25  # terms in more than this share of rows add ~nothing to bm25 but cost time
# Below this many indexed rows no term is dropped as common (and the default MAX_TERMS cut is
# relaxed to MAX_TERMS_NO_DF). In a handful of rows a share is noise, not a measure of how common
# a word is: with 6 messages, a key word said in 4 of them ("下周") was dropped, leaving only a
# side word, and recall found nothing. Dropping common terms only saves latency (postings read),
# which is microseconds below a few thousand rows, and bm25's idf still weighs common terms down.
# At 50 rows a term must be in 13 or more of them (25%) before it can be dropped: enough for its
# share to say something.
MIN_DF_DOCUMENTS = 50
CJK_RUN_PHRASE_MAX = 8  # an unquoted CJK run up to this length is also tried as a whole phrase
COVERAGE_WEIGHT = 0.5  # re-ranking: a row holding every term gains this over its bm25 share
EXACT_WEIGHT = 1.0  # ... and this for each quoted phrase or identifier it holds

# Quoted phrases: ASCII, curly and CJK corner quotes (full-width ＂ becomes " under NFKC).
_QUOTED = re.compile(r'"([^"]*)"|\u201c([^\u201d]*)\u201d|\u300c([^\u300d]*)\u300d|\u300e([^\u300f]*)\u300f')
# Script pieces of a CJK run: Hangul, hiragana, katakana (with ー), everything else is Han.
_SCRIPT = lazy(
    r"[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff]+|[\u3040-\u309f]+"
    r"|[\u30a0-\u30ff\u31f0-\u31ff]+|[^\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff"
    r"\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff]+"
)

_NUMBER_WORD = re.compile(r"\d+[a-z]{0,2}")

DocFreq = Callable[[Sequence[str]], Mapping[str, int]]
T = TypeVar("T")


@dataclass(frozen=True)
class Term:
    """One OR-ed unit. `forms` are alternatives, each a phrase of index tokens.

    kind: "word" (stemmed English/other word), "ident" (compound or alphanumeric
    identifier), "cjk" (CJK fragment as a bigram phrase), "phrase" (user-quoted).
    `prefix`: the last token is a prefix (a single CJK character). `surface`: the
    normalised text the term came from (used by snippets to find CJK fragments).
    """

    forms: tuple[tuple[str, ...], ...]
    kind: str = "word"
    prefix: bool = False
    surface: str = ""

    @property
    def exact(self) -> bool:
        """Quoted phrases and identifiers: never pruned, boosted by `score_boost`."""
        return self.kind in ("phrase", "ident")


@dataclass(frozen=True)
class SearchQuery:
    """Parsed query: OR-ed `terms`; `weights` (idf per term) are set by `select()` with df."""

    terms: tuple[Term, ...]
    weights: tuple[float, ...] | None = None

    @property
    def phrases(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.kind == "phrase")

    @cached_property
    def needles(self) -> tuple[tuple[str, ...], ...]:
        """Per term, what `score_boost` looks for in a row's space-padded tokens (built once per
        query, not once per candidate row)."""
        return tuple(tuple(" " + " ".join(form) + ("" if t.prefix else " ") for form in t.forms) for t in self.terms)

    @cached_property
    def boost_plan(self) -> tuple[tuple[tuple[tuple[str, ...], float, bool], ...], float]:
        """((needles, weight, exact) per term, the weights' total) for `score_boost`."""
        weights = self.weights or (1.0,) * len(self.terms)
        plan = tuple(zip(self.needles, weights, (t.exact for t in self.terms), strict=True))
        return plan, sum(weights) or 1.0

    def select(
        self,
        df: DocFreq | None = None,
        total: int | None = None,
        max_terms: int | None = None,
        common_ratio: float = COMMON_RATIO,
    ) -> SearchQuery:
        """Keep the most informative terms.

        `df(tokens) -> {token: rows containing it}` (a store's `document_frequency`) and
        `total` (indexed rows) are optional; without df, quoted phrases and identifiers come
        first, then longer terms. Terms that cannot match (df 0) and terms in more than
        `common_ratio` of the rows are dropped unless nothing else would remain; lower it to
        trade a little recall for speed on very large indexes. Below MIN_DF_DOCUMENTS rows (or
        with `total` unknown) no term counts as common, and without an explicit `max_terms` up to
        MAX_TERMS_NO_DF terms are kept.
        """
        if df is None:
            ranked = sorted(self.terms, key=lambda t: (not t.exact, -len(t.surface)))
            return SearchQuery(tuple(ranked[: max(1, max_terms or MAX_TERMS_NO_DF)]))
        counts = df(sorted({tok for t in self.terms if not t.prefix for f in t.forms for tok in f}))
        freq = {t: _term_df(t, counts) for t in self.terms}
        kept = [t for t in self.terms if freq[t] != 0] or list(self.terms)
        limit = max(1, max_terms or MAX_TERMS)
        if total and total >= MIN_DF_DOCUMENTS:
            rare = [t for t in kept if t.exact or (freq[t] or 0) <= common_ratio * total]
            kept = rare or sorted(kept, key=lambda t: freq[t] or 0)[:1]
        elif max_terms is None:  # too few rows for a share to mean anything: drop nothing as common
            limit = MAX_TERMS_NO_DF
        # Unknown df (prefix terms) sorts last: a lone CJK character is rarely the key word.
        kept.sort(key=lambda t: (not t.exact, freq[t] is None, freq[t] or 0))
        kept = kept[:limit]
        n = max(total or 0, max((freq[t] or 0) for t in kept) * 2, 1)
        return SearchQuery(tuple(kept), tuple(_idf(freq[t], n) for t in kept))


def parse_query(text: str) -> SearchQuery | None:
    """Parse user text into terms; None when only stop words or punctuation remain."""
    text = normalise(text[:MAX_QUERY_CHARS])
    terms: list[Term] = []
    pos = 0
    for m in _QUOTED.finditer(text):
        _free_terms(text[pos : m.start()], terms)
        _phrase_term(m.group(m.lastindex or 0), terms)
        pos = m.end()
    _free_terms(text[pos:], terms)
    unique: dict[tuple, Term] = {}
    for term in terms:  # deploy / deploying / deployed are one term
        unique.setdefault((term.forms, term.prefix), term)
    return SearchQuery(tuple(unique.values())) if unique else None


def score_boost(doc_tokens: str, query: SearchQuery) -> tuple[float, float]:
    """(coverage, phrase hits) of one candidate, from its stored token string.

    coverage: idf-weighted share of the query's terms present (1.0 = all of them);
    phrase hits: how many quoted phrases and identifiers it contains. bm25 alone lets one
    repeated rare word beat a message that mentions every term.
    """
    plan, total = query.boost_plan
    covered, exact = _boost(f" {doc_tokens} ".replace("\n", " "), plan)  # tokens may be stored line by line
    return covered / total, float(exact)


def _boost(padded: str, plan: Any) -> tuple[float, int]:
    """(summed weight of the terms present, exact terms present) in a row's padded tokens."""
    covered, exact = 0, 0  # summed in term order from 0, as sum() would: the same float every time
    for needles, weight, is_exact in plan:
        for needle in needles:
            if needle in padded:
                covered += weight
                exact += is_exact
                break
    return covered, exact


def holds_every_term(doc_tokens: str, query: SearchQuery) -> bool:
    """True when a row's tokens hold every term of the query: the most `score_boost` gives."""
    padded = f" {doc_tokens} ".replace("\n", " ")  # tokens may be stored line by line (analyze_lines)
    for needles in query.needles:  # loops, not all(any(...)): no generator per row
        for needle in needles:
            if needle in padded:
                break
        else:
            return False
    return True


def rerank(
    rows: Sequence[T],
    query: SearchQuery,
    *,
    tokens: Callable[[T], str],
    rank: Callable[[T], float],
    coverage_weight: float = COVERAGE_WEIGHT,
    exact_weight: float = EXACT_WEIGHT,
) -> list[T]:
    """Reorder bm25 candidates (FTS5 `rank`: lower is better) by bm25 share plus boosts.

    Meant for the top ~50-100 rows of an OR query; quoted phrases and identifiers present
    in a row lift it above rows that only match loose words.
    """
    if not rows:
        return []
    ranks = [rank(r) for r in rows]
    keys = rerank_scores([tokens(r) for r in rows], ranks, query, rerank_best(ranks), coverage_weight, exact_weight)
    # sorted() is stable with reverse=True too: equal scores keep the candidates' order
    return [rows[i] for i in sorted(range(len(rows)), key=keys.__getitem__, reverse=True)]


def rerank_scores(docs: Sequence[str], ranks: Sequence[float], query: SearchQuery, best: float,
                  coverage_weight: float = COVERAGE_WEIGHT, exact_weight: float = EXACT_WEIGHT) -> list[float]:
    """`rerank_score` of every candidate (its tokens in `docs`, its bm25 rank in `ranks`), in
    one loop: the same operations in the same order, so the same floats."""
    plan, total = query.boost_plan
    out: list[float] = []
    append = out.append
    for doc, rank in zip(docs, ranks, strict=True):
        covered, exact = _boost(f" {doc} ".replace("\n", " "), plan)  # as score_boost
        append(rank / best + coverage_weight * (covered / total) + exact_weight * float(exact))
    return out


def rerank_best(ranks: Iterable[float]) -> float:
    """The bm25 rank `rerank` divides by: the best (lowest) of the candidates'."""
    return min(ranks) or -1.0


def rerank_score(doc_tokens: str, rank: float, query: SearchQuery, best: float,
                 coverage_weight: float = COVERAGE_WEIGHT, exact_weight: float = EXACT_WEIGHT) -> float:
    """What `rerank` sorts a candidate by (higher first)."""
    coverage, exact = score_boost(doc_tokens, query)
    return rank / best + coverage_weight * coverage + exact_weight * exact


def rerank_ceiling(rank: float, query: SearchQuery, best: float,
                   coverage_weight: float = COVERAGE_WEIGHT, exact_weight: float = EXACT_WEIGHT) -> float:
    """The most `rerank_score` can give a candidate of this bm25 rank: one holding every term
    (its coverage is at most 1.0 and its exact hits at most the exact terms, in floats too)."""
    return rank / best + coverage_weight * 1.0 + exact_weight * float(sum(1 for t in query.terms if t.exact))


def warm_up() -> None:
    """Load the Chinese segmenter now (about 1.5 s) instead of on the first Chinese query."""
    _jieba()


# --- parsing helpers -----------------------------------------------------------------


def _term_df(term: Term, counts: Mapping[str, int]) -> int | None:
    """Upper bound of the rows a term can match: min over a phrase, summed over alternatives."""
    if term.prefix:
        return None
    return sum(min(counts.get(tok, 0) for tok in form) for form in term.forms)


def _idf(n: int | None, total: int) -> float:
    n = total // 2 if n is None else n
    return math.log(1.0 + (total - n + 0.5) / (n + 0.5))


def _free_terms(text: str, out: list[Term]) -> None:
    for chunk in iter_chunks(text):
        if not has_cjk(chunk):
            _word_term(chunk, out)
            continue
        for is_cjk, seg in chunk_segments(chunk):
            if is_cjk:
                _cjk_terms(seg, out)
            else:
                for m in CHUNK.finditer(seg):
                    _word_term(m.group(), out)


def _word_term(chunk: str, out: list[Term]) -> None:
    term = _chunk_term(chunk)
    if term is not None:
        out.append(term)


@lru_cache(maxsize=16384)
def _chunk_term(chunk: str) -> Term | None:
    """The term of one non-CJK chunk (None: a stop word or nothing left). Cached like the
    document side's `chunk_tokens`: a pure function of the chunk, and Terms are frozen."""
    parts = split_parts(chunk)
    if len(parts) == 1:
        word = fold(parts[0])[:MAX_TOKEN]
        if word and word not in stopwords.ENGLISH:
            # v2, gpt4, a1b2 are identifiers; 3am, 1st, 90s are ordinary words.
            ident = any(c.isdigit() for c in word) and not _NUMBER_WORD.fullmatch(word)
            return Term(((stem(word),),), "ident" if ident else "word", surface=word)
        return None
    tokens, joined = word_tokens(chunk)
    if not tokens:
        return None
    forms = (tuple(tokens),) + (((joined,),) if joined else ())
    return Term(forms, "ident", surface=fold(chunk))


def _phrase_term(text: str, out: list[Term]) -> None:
    """A quoted phrase: the document token stream of the text, matched as one FTS5 phrase."""
    chunks = list(iter_chunks(text))
    if not chunks:
        return
    tokens = [tok for c in chunks for tok in chunk_tokens(c)]
    prefix = False
    is_cjk, last = list(chunk_segments(chunks[-1]))[-1]
    if is_cjk:
        # The document's run may continue after the quote: drop the tail unigram, or make
        # a lone final character a prefix.
        if len(last) > 1:
            tokens.pop()
        else:
            prefix = True
    out.append(Term((tuple(tokens),), "phrase", prefix, " ".join(chunks).casefold()))


def _cjk_terms(run: str, out: list[Term]) -> None:
    words = [run] if len(run) <= 2 else _segment(run)
    for word in words:
        # 我的 is two stop characters: dropped without loading the segmenter.
        if word not in stopwords.CJK and not all(ch in stopwords.CJK for ch in word):
            out.append(_cjk_term(word))
    if 2 < len(run) <= CJK_RUN_PHRASE_MAX and len(words) > 1:
        out.append(_cjk_term(run))  # whole-run phrase ranks exact fragments first


def _cjk_term(fragment: str) -> Term:
    if len(fragment) == 1:
        return Term(((fragment,),), "cjk", True, fragment)
    return Term((tuple(cjk_bigrams(fragment, tail=False)),), "cjk", surface=fragment)


def _segment(run: str) -> list[str]:
    """Split a long CJK query run into searchable words (the index side stays bigrams)."""
    words: list[str] = []
    for piece in _SCRIPT.findall(run):
        first = piece[0]
        if "\u3040" <= first <= "\u309f":
            if len(piece) > 2:  # short hiragana runs are particles (の, は, から)
                words.append(piece)
        elif "\uac00" <= first <= "\ud7ff" or "\u1100" <= first <= "\u11ff":
            words.append(_strip_particle(piece))
        elif "\u30a0" <= first <= "\u31ff" or len(piece) <= 2:
            words.append(piece)
        else:
            words.extend(han_words(piece))
    return words


def _strip_particle(word: str) -> str:
    for particle in stopwords.KOREAN_PARTICLES:
        if word.endswith(particle) and len(word) - len(particle) >= 2:
            return word[: -len(particle)]
    return word


def han_words(piece: str) -> list[str]:
    """jieba search-mode words when available, else overlapping bigrams."""
    jieba = _jieba()
    if jieba is None:
        return [piece[i : i + 2] for i in range(len(piece) - 1)]
    return [w for w in jieba.lcut_for_search(piece) if w.strip()]


_JIEBA_LOCK = threading.Lock()
_JIEBA: list = []  # [module] once loaded, [None] when unavailable


def _import_jieba() -> Any:
    """`import jieba` without the setuptools `pkg_resources` it tries first: jieba only uses
    it to open its own dictionary file and falls back to a plain `open` when it is missing.
    Importing pkg_resources scans every installed distribution (≈0.2 s here) and leaves ≈10k
    objects behind for every later garbage collection to walk."""
    hide = "pkg_resources" not in sys.modules  # else already paid for by someone else
    if hide:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # makes `import pkg_resources` fail
    try:
        import jieba  # deferred: English-only workloads never segment Chinese (see _jieba)
    finally:
        if hide and sys.modules.get("pkg_resources", False) is None:
            del sys.modules["pkg_resources"]
    return jieba


def _jieba():
    """Import and initialise jieba once, lazily: English-only workloads never pay for it."""
    with _JIEBA_LOCK:
        if not _JIEBA:
            try:
                jieba = _import_jieba()
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _JIEBA.append(jieba)
            except Exception:  # noqa: BLE001 - any failure means "segment without it"
                _JIEBA.append(None)
        return _JIEBA[0]
