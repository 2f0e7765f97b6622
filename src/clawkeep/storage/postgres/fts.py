"""Full-text search on PostgreSQL with exactly SQLite's analysis.

clawkeep.text analyses a document into space-separated tokens (lowercased, stemmed, CJK as
overlapping bigrams); SQLite stores them in a `unicode61` FTS5 table. Here the same tokens become
a tsvector built token by token (each keeps its position, so phrases match as in FTS5), never
through a PostgreSQL parser or dictionary: what is indexed is exactly what SQLite indexes.

A `TextQuery` renders as a tsquery: a phrase is `a <-> b <-> c`, a prefix phrase ends in `:*`,
terms are OR-ed. Lexemes are always quoted, so user text never becomes tsquery syntax.

Ranking (lower is better) is FTS5's bm25, the SQLite backend's formula, bounded by the page
asked for rather than by the number of matches (`Ranker`): one statement reads, per query
phrase, its newest CANDIDATES_PER_PHRASE matches (a GIN lookup and a top-N by id, no row's
rank computed) with their analysed tokens, and each phrase's document frequency; Python then
scores these candidates by

    score(row) = -Σ_phrase idf · tf·(k1+1) / (tf + k1·(1 − b + b·|row| / avg|row|)),
    idf = ln((N − n + 0.5) / (n + 0.5)), at least 1e-6;  k1 = 1.2, b = 0.75

counting tf and |row| in the tokens. A phrase in at most CANDIDATES_PER_PHRASE rows gives all
of them, so the ranking is exact whenever the page's last score beats the most a row holding
only the query's commoner (cut) phrases could score; otherwise the newest of those rows stand
in for all of them (`Ranked.exact` says which).
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..query import TextQuery, TextTerm

MAX_POSITION = 16383  # tsvector positions stop here
MAX_TOKENS = 60_000  # a tsvector is at most 1 MB: a longer document is indexed by its first tokens
K1, B = 1.2, 0.75  # FTS5's bm25 constants (the SQLite backend ranks with them)
CANDIDATES_PER_PHRASE = 300  # newest matches read per phrase: a phrase in fewer rows gives all of them
DF_FRESH_S = 5.0  # a document frequency counted this recently (document_frequency) is not counted again
STATS_FRESH_S = 300.0  # row count and average row length are read again after this long
AVERAGE_SAMPLE = 2_000  # newest rows whose token counts give the average row length


def lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: str) -> str:
    """`'tok':1,4 'tok2':2 …` for the analysed text `tokens`."""
    positions: dict[str, list[str]] = {}
    for n, token in enumerate(tokens.split()[:MAX_TOKENS], start=1):
        at = positions.setdefault(token, [])
        if len(at) < 256:  # a lexeme keeps at most 256 positions
            at.append(str(min(n, MAX_POSITION)))
    return " ".join(f"{lexeme(tok)}:{','.join(at)}" for tok, at in positions.items())


def phrase(tokens: Sequence[str], prefix: bool) -> str:
    parts = [lexeme(t) for t in tokens]
    if prefix:
        parts[-1] += ":*"
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


def term_query(term: TextTerm) -> str:
    alts = [phrase(p, term.prefix) for p in term.phrases if p]
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def query_literal(query: TextQuery) -> str:
    return " | ".join(term_query(t) for t in query.terms)


@dataclass(frozen=True)
class Phrase:
    tokens: tuple[str, ...]
    prefix: bool

    @property
    def tsquery(self) -> str:
        return phrase(self.tokens, self.prefix)


def query_phrases(query: TextQuery) -> list[Phrase]:
    """One phrase per alternative of each term, repeats kept (FTS5 ranks each as its own)."""
    return [Phrase(tuple(p), t.prefix) for t in query.terms for p in t.phrases if p]


def occurrences(tokens: list[str], counts: Counter[str], wanted: Phrase) -> int:
    """How often `wanted` occurs in the token stream (FTS5's phrase frequency)."""
    whole = wanted.tokens[:-1] if wanted.prefix else wanted.tokens
    if any(tok not in counts for tok in whole):
        return 0
    if len(wanted.tokens) == 1:
        if not wanted.prefix:
            return counts[wanted.tokens[0]]
        return sum(n for tok, n in counts.items() if tok.startswith(wanted.tokens[0]))
    first, span, last = wanted.tokens[0], len(wanted.tokens), wanted.tokens[-1]
    found = 0
    for at, tok in enumerate(tokens[:len(tokens) - span + 1]):
        if tok != first or tuple(tokens[at:at + span - 1]) != wanted.tokens[:-1]:
            continue
        end = tokens[at + span - 1]
        found += end.startswith(last) if wanted.prefix else end == last
    return found


def idf(total: int, hits: int) -> float:
    value = math.log((total - hits + 0.5) / (hits + 0.5)) if total else 0.0
    return value if value > 0.0 else 1e-6


@dataclass
class Ranked:
    rows: list[tuple[int, float, str]]  # (id, score, tokens), best first, ties by id
    exact: bool  # no row left out by the candidate cut could have reached these


class Ranker:
    """bm25 over a page's candidates for one table (columns id, tsv, tokens) of one store.

    `rows(sql, params)` runs a read; `total_sql` gives N (cheap: read each time). The average
    row length and recently counted document frequencies are kept per store instance."""

    def __init__(self, table: str, rows: Callable[[str, Sequence[Any]], list[Any]], total_sql: str) -> None:
        self.table, self._rows, self._total_sql = table, rows, total_sql
        self._lock = threading.Lock()
        self._df: dict[str, tuple[float, int]] = {}  # tsquery -> (when counted, rows holding it)
        self._average: tuple[float, float] | None = None  # (when read, tokens per row)

    # --- document frequencies ----------------------------------------------------------
    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        """Rows holding each token (one GIN count each, one statement); kept DF_FRESH_S for the
        ranking that usually follows (sessions_search selects terms by df, then ranks)."""
        unique = list(dict.fromkeys(t for t in tokens if t))
        if not unique:
            return {}
        sql, params = df_query(self.table, unique)
        counts = [int(c) for c in self._rows(sql, params)[0]]
        now = time.monotonic()
        with self._lock:
            for literal, count in zip(params, counts, strict=True):
                self._df[literal] = (now, count)
        return dict(zip(unique, counts, strict=True))

    def _fresh_df(self, literal: str) -> int | None:
        with self._lock:
            known = self._df.get(literal)
            if known is None or time.monotonic() - known[0] > DF_FRESH_S:
                return None
            return known[1]

    def _average_length(self) -> float:
        with self._lock:
            if self._average is not None and time.monotonic() - self._average[0] < STATS_FRESH_S:
                return self._average[1]
        # tokens are separated by single spaces: a row's length is its spaces plus one
        found = self._rows(f"SELECT avg(length(tokens) - length(replace(tokens, ' ', '')) + 1) FROM "
                           f"(SELECT tokens FROM {self.table} ORDER BY id DESC LIMIT {AVERAGE_SAMPLE}) s", ())
        average = float(found[0][0] or 1.0)
        with self._lock:
            self._average = (time.monotonic(), average)
        return average

    # --- ranking -----------------------------------------------------------------------
    def rank(self, query: TextQuery, limit: int, where: str = "", where_params: Sequence[Any] = ()) -> Ranked:
        """The best `limit` rows matching `query` and `where` (a condition on alias `m`)."""
        phrases = query_phrases(query)
        if not phrases or limit <= 0:
            return Ranked([], True)
        average = self._average_length()
        sql, params, literals = self._candidates_sql(phrases, where, where_params)
        found = self._rows(sql, params)
        total, dfs = int(found[0][0]), [int(d) for d in found[0][1]]
        by_literal = dict(zip(literals, dfs, strict=True))
        candidates = [(int(r[2]), r[3]) for r in found if r[2] is not None]
        weights = [idf(total, by_literal[p.tsquery]) for p in phrases]
        scored = sorted((score_row(tokens, phrases, weights, average), rid, tokens) for rid, tokens in candidates)
        page = [(rid, score, tokens) for score, rid, tokens in scored[:limit]]
        # a row outside the candidates holds only phrases that were cut (more matches than read)
        ceiling = -sum(w * (K1 + 1) for p, w in zip(phrases, weights, strict=True)
                       if by_literal[p.tsquery] > CANDIDATES_PER_PHRASE)
        exact = ceiling == 0 or (len(page) == limit and page[-1][1] < ceiling)
        return Ranked(page, exact)

    def _candidates_sql(self, phrases: list[Phrase], where: str,
                        where_params: Sequence[Any]) -> tuple[str, list[Any], list[str]]:
        literals = list(dict.fromkeys(p.tsquery for p in phrases))
        counts, count_params = [], []
        for literal in literals:
            known = self._fresh_df(literal)
            if known is None:  # a bare GIN count: no row's tsvector is read
                counts.append(f"(SELECT count(*) FROM {self.table} WHERE tsv @@ %s::tsquery)")
                count_params.append(literal)
            else:
                counts.append(str(int(known)))
        picks, pick_params = [], []
        for literal in literals:
            picks.append(f"(SELECT id FROM {self.table} m WHERE m.tsv @@ %s::tsquery{where} "
                         f"ORDER BY m.id DESC LIMIT {CANDIDATES_PER_PHRASE})")
            pick_params += [literal, *where_params]
        sql = (f"WITH n AS MATERIALIZED (SELECT ({self._total_sql}) AS total, ARRAY[{', '.join(counts)}]::bigint[] "
               f"AS dfs), c AS (SELECT DISTINCT id FROM ({' UNION ALL '.join(picks)}) u) "
               f"SELECT n.total, n.dfs, r.id, r.tokens FROM n LEFT JOIN (SELECT i.id, i.tokens FROM c "
               f"JOIN {self.table} i ON i.id = c.id) r ON TRUE")
        return sql, [*count_params, *pick_params], literals


def score_row(tokens: str, phrases: list[Phrase], weights: list[float], average: float) -> float:
    """FTS5's bm25 of one row (lower is better)."""
    words = tokens.split()
    counts = Counter(words)
    norm = K1 * (1 - B + B * len(words) / average)
    score = 0.0
    for wanted, weight in zip(phrases, weights, strict=True):
        tf = occurrences(words, counts, wanted)
        if tf:
            score += weight * ((tf * (K1 + 1)) / (tf + norm))
    return -score


def df_query(table: str, tokens: Sequence[str]) -> tuple[str, list[str]]:
    """SQL for the number of rows holding each token (one GIN count each, in one statement)."""
    counts = ", ".join(f"(SELECT count(*) FROM {table} WHERE tsv @@ %s::tsquery)" for _ in tokens)
    return f"SELECT {counts}", [lexeme(t) for t in tokens]
