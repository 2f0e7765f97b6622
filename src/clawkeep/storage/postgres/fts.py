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

A table with a generation (a sequence every write to it moves, after writing its rows) keeps, per
store, the matches of the phrases it ranked (`PostingCache`: each row's id, phrase count and
length), read in the ranking's own statement once the table stayed unchanged a while. While
the cache holds every phrase of a query (and no caller scope narrows it), the ranking is exact
bm25 over all matches, computed in memory before the one statement that checks the cache is
still current (the generation, which every instance moves right after each commit writing the
table) and reads the page's rows by id. A stale cache is dropped and the statement above ranks.
With a `GenerationWatch` (storage.searchFreshness "notify", notify.py) that statement is skipped
while the cache is at the generation last announced and holds the page's rows (kept from the
statements that read them at that generation): no round trip.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...deferred import deferred_import
from ..query import TextQuery, TextTerm
from .notify import GenerationWatch

np = deferred_import("numpy")  # deferred: only the match cache ranks with it; a cold search never does

MAX_POSITION = 16383  # tsvector positions stop here
MAX_TOKENS = 60_000  # a tsvector is at most 1 MB: a longer document is indexed by its first tokens
K1, B = 1.2, 0.75  # FTS5's bm25 constants (the SQLite backend ranks with them)
CANDIDATES_PER_PHRASE = 300  # newest matches read per phrase: a phrase in fewer rows gives all of them
# A phrase's document frequency is reused this long (an idf at most this stale): counting it reads
# every matching row's heap tuple, the one cost of a ranking that grows with the number of matches.
DF_FRESH_S = 60.0
# A cut phrase's newest matches are read through the id index (newest first, each row's tsvector
# tested) when df² > SCAN_FACTOR · CANDIDATES_PER_PHRASE · N, that is when testing the ≈ cut · N / df
# newest rows costs less than visiting all df matches the GIN index lists; else through GIN.
SCAN_FACTOR = 2.5
STATS_FRESH_S = 300.0  # row count and average row length are read again after this long
FEW_CANDIDATES = 50  # up to this many expected candidates, a search reads their rows with them
MAX_KEPT_DFS = 100_000  # remembered document frequencies per store (≈100 bytes each)
AVERAGE_SAMPLE = 2_000  # newest rows whose token counts give the average row length
MAX_CACHED_MATCHES = 3_000_000  # (row, count, length) triples a store's PostingCache holds (16 bytes each)
MAX_CACHED_PHRASE = 400_000  # a phrase matching more rows is never cached (ranked by the statement)
CACHE_MAX_AGE_S = 120.0  # a cache is read again after this long, however quiet the table
# Matches are read for the cache only once the table went unchanged this long, or over this many
# statements (as this process saw it): a store written more often keeps the statement ranking,
# rather than reading matches the next write makes stale; at most MAX_LOAD_MATCHES a statement
# (by counts read before).
STEADY_S, STEADY_STATEMENTS = 3.0, 8
MAX_LOAD_MATCHES = 150_000
DENSE_SPAN = 16  # matches of several phrases are summed in an array by id when ids span at most this × them
ROWS_WITH_PAGE = 30  # a ranking from the cache reads the rows (entries) of its first this many
UNKNOWN_LOADS = 2  # phrases of a statement whose matches are read without their count known
MAX_ROW_CHARS = 64_000_000  # characters of rows a PostingCache keeps (`GenerationWatch`: read without a round trip)


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

    @property
    def padded(self) -> str:
        return " " + "  ".join(self.tokens) + " "

    @property
    def searchable_as_text(self) -> bool:
        """True when counting `padded` in the space-padded token string gives the phrase's
        frequency: no prefix, and no occurrence can overlap the next (no repeated first token)."""
        return not self.prefix and self.tokens[0] not in self.tokens[1:]


def query_phrases(query: TextQuery) -> list[Phrase]:
    """One phrase per alternative of each term, repeats kept (FTS5 ranks each as its own)."""
    return [Phrase(tuple(p), t.prefix) for t in query.terms for p in t.phrases if p]


def occurrences(tokens: list[str], wanted: Phrase) -> int:
    """How often `wanted` occurs in the token stream (FTS5's phrase frequency)."""
    first, span = wanted.tokens[0], len(wanted.tokens)
    if span == 1:
        return sum(1 for tok in tokens if tok.startswith(first)) if wanted.prefix else tokens.count(first)
    head, last = list(wanted.tokens[:-1]), wanted.tokens[-1]
    found, at = 0, -1
    while True:
        try:
            at = tokens.index(first, at + 1)
        except ValueError:
            return found
        if at + span <= len(tokens) and tokens[at:at + span - 1] == head:
            end = tokens[at + span - 1]
            found += end.startswith(last) if wanted.prefix else end == last


def idf(total: int, hits: int) -> float:
    """FTS5's idf (at least 1e-6). N may be older than a df (kept for minutes): never below it."""
    total = max(total, hits)
    value = math.log((total - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


@dataclass
class Ranked:
    rows: list[tuple[int, float, str]]  # (id, score, tokens), best first, ties by id
    exact: bool  # no row left out by the candidate cut could have reached these
    extra: dict[int, tuple[Any, ...]] | None = None  # `with_rows`' columns by id, when they came along


@dataclass
class PostingCache:
    """The matches of phrases at one state of a table: per tsquery literal (row ids ascending,
    phrase counts, row lengths), valid while the table's generation is `generation` (and for
    at most CACHE_MAX_AGE_S)."""

    generation: int
    total: int  # N at that state
    postings: dict[str, tuple[Any, Any, Any]]
    size: int = 0
    born: float = 0.0
    checked: float = 0.0  # when a statement last found it current
    # rows read by id at this state (`_rank_from_cache`'s statement, or the store's own reads):
    # id -> (tokens, `with_rows`' columns or None), or None when the row is gone
    rows: dict[int, tuple[str, tuple[Any, ...] | None] | None] = field(default_factory=dict)
    row_chars: int = 0
    scopes: list[tuple[Any, ...]] = field(default_factory=list)  # scope parameters found to leave no row out
    parts: dict[str, tuple[float, Any]] = field(default_factory=dict)  # literal -> (average, bm25 parts)

    def parts_of(self, literal: str, average: float) -> Any:
        """Each match's bm25 part for the phrase `literal` at this state (N, its df) and
        `average`, as `score_row` computes it; kept for the next query holding the phrase."""
        known = self.parts.get(literal)
        if known is not None and known[0] == average:
            return known[1]
        _ids, tf, length = self.postings[literal]
        weight = idf(self.total, len(_ids))
        part = weight * ((tf * (K1 + 1)) / (tf + K1 * (1 - B + B * length / average)))
        self.parts[literal] = (average, part)
        return part

    def keep_row(self, rid: int, tokens: str | None, extra: tuple[Any, ...] | None) -> None:
        """Keep a row read at this state (its extra columns kept once read), within MAX_ROW_CHARS."""
        known = self.rows.get(rid)
        if tokens is None:
            self.rows[rid] = None
            return
        if known is not None and (extra is None or known[1] is not None):
            return
        chars = len(tokens) + sum(len(v) for v in extra or () if isinstance(v, str))
        if self.row_chars + chars > MAX_ROW_CHARS:
            return
        self.row_chars += chars
        self.rows[rid] = (tokens, extra if extra is not None else (known[1] if known else None))

    def current(self, generation: int, own_writes: bool) -> bool:
        return generation == self.generation and not own_writes and time.monotonic() - self.born < CACHE_MAX_AGE_S

    def add(self, literal: str, posting: tuple[Any, Any, Any]) -> bool:
        if self.size + len(posting[0]) > MAX_CACHED_MATCHES:
            return False
        self.postings[literal] = posting
        self.size += len(posting[0])
        return True


class Ranker:
    """bm25 over a page's candidates for one table (columns id, tsv, tokens) of one store.

    `rows(sql, params)` runs a read; `total_sql` gives N (cheap: read each time). The average
    row length and recently counted document frequencies are kept per store instance, and with
    a `generation_sql` (the table's write generation) the matches of the phrases searched."""

    def __init__(self, table: str, rows: Callable[[str, Sequence[Any]], list[Any]], total_sql: str, *,
                 total_kept: bool = False, generation_sql: str | None = None,
                 scope_sql: str | None = None, watch: GenerationWatch | None = None) -> None:
        """`total_kept`: N as read with the average (every STATS_FRESH_S), for a `total_sql`
        too slow to run with every search (a count). `scope_sql`: a condition, on a `where`'s
        parameters, true when that `where` leaves out no row of the table; with it a ranking so
        scoped may come from the cache (checked in the statement that checks the cache)."""
        self.table, self._rows, self._total_sql, self._total_kept = table, rows, total_sql, total_kept
        self._lock = threading.Lock()
        self._df: dict[str, tuple[float, int]] = {}  # tsquery -> (when counted, rows holding it)
        self._average: tuple[float, float] | None = None  # (when read, tokens per row)
        self._last_total = 0  # N when the average was read
        self._generation_sql = generation_sql
        self._scope_sql = scope_sql
        self._scope_out: tuple[int, tuple[Any, ...]] | None = None  # (generation, params) a scope narrowed at
        self._cache: PostingCache | None = None
        self._seen: int | None = None  # the generation the last statement read
        self._steady = False  # the generation stayed the same long enough: matches are worth reading
        self._since = 0.0  # when this process first read the current generation
        self._statements = 0  # statements that read it since
        self._seen_at = 0.0  # when the last statement's reading of it was done
        # the generation announced by NOTIFY: a cache at it answers without a round trip
        self.watch = watch

    # --- the posting cache ---------------------------------------------------------------
    def _state_sql(self) -> str:
        """Two columns: the generation, and whether this transaction wrote (its own rows, not
        yet committed, are visible to it alone: never kept, never ranked from the cache)."""
        return f"({self._generation_sql}), pg_current_xact_id_if_assigned() IS NOT NULL"

    def _cached(self) -> PostingCache | None:
        with self._lock:
            return self._cache

    def _observe(self, generation: Any, own_writes: bool, total: int | None,
                 loaded: dict[str, tuple[Any, Any, Any]] | None = None, started: float = 0.0) -> PostingCache | None:
        """Check the cache against the generation a statement read (dropped when it moved) and
        keep what that statement `loaded`: into the cache when current, else into a new one
        when the statement before read the same generation. The generation moves right after
        each writing commit, so a write it counts was committed before it was read: a number
        read before this statement began (the previous statement's) counts only writes this
        statement's snapshot sees, and each write it does not count moves it (see sessions.py).
        `started`: when the statement was sent; the previous read must have been done by then (another
        thread's statement may end later than one it began before), and matches are added to a
        cache only by a statement sent after the cache began."""
        generation = int(generation)
        with self._lock:
            previous, self._seen = self._seen, generation
            now = time.monotonic()
            before, self._seen_at = self._seen_at, now
            if previous != generation:
                self._since, self._statements = now, 0
            self._statements += 1
            self._steady = previous == generation and (now - self._since >= STEADY_S or
                                                       self._statements > STEADY_STATEMENTS)
            cache = self._cache
            if cache is not None and not cache.current(generation, own_writes):
                cache = self._cache = None
            if cache is None and previous == generation and before < started and not own_writes and total is not None:
                cache = self._cache = PostingCache(generation, total, {}, born=started)
            if cache is not None:
                cache.checked = now
            if cache is not None and loaded and cache.born <= started:
                for literal, posting in loaded.items():
                    if len(posting[0]) > MAX_CACHED_PHRASE:
                        continue  # cut at the limit: not all of them
                    if literal not in cache.postings and not cache.add(literal, posting):
                        break
            return cache

    def _announced(self, cache: PostingCache) -> bool:
        """The cache is at the newest generation announced: current without asking the server."""
        known = self.watch.known() if self.watch is not None else None
        return known is not None and cache.current(known, False)

    def keep_rows(self, rows: dict[int, tuple[str, tuple[Any, ...]] | None]) -> None:
        """Rows a caller read by id (id -> (tokens, `with_rows`' columns), None: gone), for the
        current cache: rows change only by writes that move the generation, which drop it."""
        cache = self._cached()
        if cache is None:
            return
        with self._lock:
            for rid, row in rows.items():
                cache.keep_row(rid, None if row is None else row[0], None if row is None else row[1])

    def _loadable(self, phrases: list[Phrase], cache: PostingCache | None) -> list[Phrase]:
        """The phrases whose matches this statement should read for the cache: each one's count
        known (read in the last DF_FRESH_S), together at most MAX_LOAD_MATCHES."""
        if self._generation_sql is None or not all(p.searchable_as_text for p in phrases):
            return []
        with self._lock:
            if not self._steady:
                return []  # the table is being written: matches read now would not be kept
        room = MAX_CACHED_MATCHES - (cache.size if cache is not None else 0)  # nothing is evicted
        wanted, budget, unknown = [], min(MAX_LOAD_MATCHES, room), 0
        for p in dict.fromkeys(phrases):
            if cache is not None and p.tsquery in cache.postings:
                continue
            df = self._fresh_df(p.tsquery)
            if df is None and unknown < UNKNOWN_LOADS and room >= MAX_LOAD_MATCHES:  # up to MAX_CACHED_PHRASE + 1
                wanted.append(p)
                unknown += 1
            elif df is not None and df <= min(budget, MAX_CACHED_PHRASE):
                wanted.append(p)
                budget -= df
        return wanted

    @staticmethod
    def _posting_sql(table: str) -> str:
        """One phrase's matches as one flat bigint array (id, count, length)* by id; `%s` twice:
        the tsquery and the phrase padded as `Phrase.padded`, counted in the row's tokens padded
        the same way (as `score_row` counts)."""
        return (f"(SELECT coalesce(array_agg(v ORDER BY p.id, k), '{{}}') FROM (SELECT m.id, "
                f"(length(t.p) - length(replace(t.p, %s, ''))) / length(%s) AS tf, "
                f"length(m.tokens) - length(replace(m.tokens, ' ', '')) + 1 AS len FROM {table} m, "
                f"LATERAL (SELECT ' ' || replace(m.tokens, ' ', '  ') || ' ' AS p) t "
                f"WHERE m.tsv @@ %s::tsquery LIMIT {MAX_CACHED_PHRASE + 1}) p, "
                f"LATERAL unnest(ARRAY[p.id, p.tf, p.len]) WITH ORDINALITY u(v, k))")

    @staticmethod
    def _posting(flat: list[int]) -> tuple[Any, Any, Any]:
        table = np.asarray(flat, dtype=np.int64).reshape(-1, 3)
        # counts and lengths as int32: numpy turns them into the same doubles score_row computes with
        return (np.ascontiguousarray(table[:, 0]), table[:, 1].astype(np.int32), table[:, 2].astype(np.int32))

    def _cached_rank(self, cache: PostingCache, phrases: list[Phrase], limit: int,
                     average: float, dense_span: int = DENSE_SPAN) -> list[tuple[int, float]]:
        """(id, score) of the best `limit` rows over every match, best first, ties by id: the
        same operations on the same doubles as `score_row`, phrase by phrase (`dense_span` 0:
        never the array sum)."""
        postings = [cache.postings[p.tsquery] for p in phrases]
        if not any(len(ids) for ids, _tf, _len in postings):
            return []
        parts = [cache.parts_of(p.tsquery, average) for p in phrases]
        summed = None
        if len({p.tsquery for p in phrases}) == 1:
            unique = postings[0][0]
            where = [None] * len(postings)
        elif (dense := self._dense_rank(postings, parts, dense_span)) is not None:
            (unique, summed), postings, parts, where = dense, [], [], []
        else:
            unique = np.unique(np.concatenate([ids for ids, _tf, _len in postings]))
            where = [np.searchsorted(unique, ids) for ids, _tf, _len in postings]
        for (ids, _tf, _length), part, at in zip(postings, parts, where, strict=True):
            if not len(ids):
                continue
            if at is None:  # one phrase (maybe repeated): its rows are all the rows
                summed = part if summed is None else summed + part
            else:
                if summed is None:
                    summed = np.zeros(len(unique))
                summed[at] += part  # ids are unique within a phrase's posting
        assert summed is not None
        scores = -summed
        if len(unique) > limit:  # only the best `limit` (and ties at the edge) are sorted
            edge = np.partition(scores, limit - 1)[limit - 1]
            keep = scores <= edge
            unique, scores = unique[keep], scores[keep]
        order = np.lexsort((unique, scores))[:limit]
        return [(int(d), float(s)) for d, s in zip(unique[order], scores[order], strict=True)]

    @staticmethod
    def _dense_rank(postings: list[tuple[Any, Any, Any]], parts: list[Any], dense_span: int) -> tuple[Any, Any] | None:
        """(matching ids ascending, their summed parts) by adding every phrase's parts into an
        array indexed by id from the lowest (in phrase order: the same doubles as adding them one
        phrase after another), when the ids span at most `dense_span` times the matches; else None."""
        ids = [p[0] for p in postings if len(p[0])]
        count = sum(len(i) for i in ids)
        low = min(int(i[0]) for i in ids)  # postings are by id
        span = max(int(i[-1]) for i in ids) + 1 - low
        if span > dense_span * count:
            return None
        flat = np.concatenate(ids) - low
        summed = np.bincount(flat, weights=np.concatenate(parts), minlength=span)
        if all(len(part) == 0 or part.min() > 0 for part in parts):  # every match adds a positive part
            unique = np.flatnonzero(summed)
        else:  # a part of 0 (a phrase counted 0 times in a matching row): matched rows by count
            unique = np.flatnonzero(np.bincount(flat, minlength=span))
        return unique + low, summed[unique]

    def _rank_from_cache(self, cache: PostingCache, phrases: list[Phrase], limit: int, average: float,
                         with_rows: tuple[str, str] | None, scope: tuple[Any, ...] | None = None) -> Ranked | None:
        """The ranking from the cache, its rows read by id in the statement that checks the
        cache is current; None (the cache dropped) when it was not, or when the `scope` (the
        parameters of `scope_sql`) turned out to leave rows out (then kept: the statement ranks)."""
        top = self._cached_rank(cache, phrases, limit, average)
        if self._announced(cache) and (kept := self._rank_from_kept(cache, top, with_rows, scope)) is not None:
            return kept
        ids = [rid for rid, _score in top]
        state = self._state_sql() + (f", ({self._scope_sql})" if scope is not None else "")
        lead = list(scope or ())
        if with_rows is None:
            found = self._rows(f"SELECT {state}, r.* FROM (SELECT 1) o LEFT JOIN (SELECT i.id, i.tokens "
                               f"FROM unnest(%s::bigint[]) c(id) JOIN {self.table} i ON i.id = c.id) r ON TRUE",
                               (*lead, ids))
        else:  # every candidate's tokens, the rows of the first ROWS_WITH_PAGE (a page rarely reaches past them)
            named = [f"{c.strip()} AS x{k}" for k, c in enumerate(with_rows[0].split(","))]
            found = self._rows(
                f"SELECT {state}, r.* FROM (SELECT 1) o LEFT JOIN (SELECT t.id, t.tokens, "
                f"{', '.join(f'x.x{k}' for k in range(len(named)))} FROM unnest(%s::bigint[]) c(id) "
                f"JOIN {self.table} t ON t.id = c.id LEFT JOIN (SELECT i.id AS rid, {', '.join(named)} "
                f"FROM unnest(%s::bigint[]) c2(id) JOIN {self.table} i ON i.id = c2.id {with_rows[1]}) x "
                "ON x.rid = t.id) r ON TRUE",
                (*lead, ids, ids[:ROWS_WITH_PAGE]))
        if self._observe(found[0][0], found[0][1], None) is not cache:
            return None
        if scope is not None:
            if not found[0][2]:
                with self._lock:
                    self._scope_out = (cache.generation, scope)
                return None
            found = [(r[0], r[1], *r[3:]) for r in found]
        tokens = {int(r[2]): r[3] for r in found if r[2] is not None}
        page = [(rid, score, tokens[rid]) for rid, score in top if rid in tokens]  # (deleted since: left out)
        rows = {int(r[2]): tuple(r[4:]) for r in found if r[2] is not None and len(r) > 4 and r[4] is not None}
        self._keep_read(cache, ids, tokens, rows if with_rows is not None else {}, scope)
        return Ranked(page, True, rows if with_rows is not None else None)

    def _keep_read(self, cache: PostingCache, ids: list[int], tokens: dict[int, str],
                   rows: dict[int, tuple[Any, ...]], scope: tuple[Any, ...] | None) -> None:
        """What the statement that found `cache` current read, kept in it (answers without a
        round trip while the generation announced stays)."""
        if self.watch is None:
            return
        with self._lock:
            for rid in ids:
                cache.keep_row(rid, tokens.get(rid), rows.get(rid))
            if scope is not None and scope not in cache.scopes and len(cache.scopes) < 16:
                cache.scopes.append(scope)

    def _rank_from_kept(self, cache: PostingCache, top: list[tuple[int, float]],
                        with_rows: tuple[str, str] | None, scope: tuple[Any, ...] | None) -> Ranked | None:
        """The ranking with the rows the cache kept, when it holds every one needed (the tokens
        of all, `with_rows`' columns of the first ROWS_WITH_PAGE) and the scope was found to
        leave no row out; else None."""
        with self._lock:
            if scope is not None and scope not in cache.scopes:
                return None
            page, extra = [], {}
            for k, (rid, score) in enumerate(top):
                if rid not in cache.rows:
                    return None
                row = cache.rows[rid]
                if row is None:
                    continue  # deleted before this state
                if with_rows is not None and row[1] is None and k < ROWS_WITH_PAGE:
                    return None
                page.append((rid, score, row[0]))
                if row[1] is not None:
                    extra[rid] = row[1]
        return Ranked(page, True, extra if with_rows is not None else None)

    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        """Rows holding each token (one GIN count each, one statement); kept DF_FRESH_S for the
        ranking that usually follows (sessions_search selects terms by df, then ranks)."""
        unique = list(dict.fromkeys(t for t in tokens if t))
        if not unique:
            return {}
        sql, params = df_query(self.table, unique)
        if self._generation_sql is None:
            counts = [int(c) for c in self._rows(sql, params)[0]]
            self._remember(dict(zip(params, counts, strict=True)))
            return dict(zip(unique, counts, strict=True))
        cache = self._cached()
        held = [t for t in unique if cache is not None and lexeme(t) in cache.postings]
        if len(held) == len(unique) and cache is not None and (time.monotonic() - cache.checked < DF_FRESH_S
                                                               or self._announced(cache)):
            # as fresh as a remembered count (the ranking that follows checks the cache itself)
            return {t: len(cache.postings[lexeme(t)][0]) for t in unique}
        # the others' matches are read for the cache (their number is the count), or counted
        phrases = {t: Phrase((t,), False) for t in unique if t not in held}
        load = [p.tokens[0] for p in self._loadable(list(phrases.values()), cache)]
        counted = [t for t in phrases if t not in load]
        parts = [self._state_sql(), f"({self._total_sql})" if not self._total_kept else "NULL"]
        values: list[Any] = []
        for t in load:
            parts.append(self._posting_sql(self.table))
            values += [phrases[t].padded, phrases[t].padded, phrases[t].tsquery]
        count_sql = f"(SELECT count(*) FROM {self.table} WHERE tsv @@ %s::tsquery)"
        if held:  # counted only when the cache turns out stale
            parts.append(f"CASE WHEN ({self._generation_sql}) = %s AND pg_current_xact_id_if_assigned() IS NULL "
                         f"THEN NULL ELSE ARRAY[{', '.join([count_sql] * len(held))}] END")
            values += [cache.generation if cache is not None else -1, *(lexeme(t) for t in held)]
        parts += [count_sql] * len(counted)
        values += [lexeme(t) for t in counted]
        started = time.monotonic()
        row = self._rows("SELECT " + ", ".join(parts), values)[0]
        at = 3 + len(load)
        loaded = {phrases[t].tsquery: self._posting(flat) for t, flat in zip(load, row[3:at], strict=True)}
        now = self._observe(row[0], row[1], None if row[2] is None else int(row[2]), loaded, started)
        result = {t: len(loaded[phrases[t].tsquery][0]) for t in load}
        over = [t for t, n in result.items() if n > MAX_CACHED_PHRASE]  # cut at the limit: counted
        if over:
            result.update(zip(over, (int(c) for c in self._rows(*df_query(self.table, over))[0]), strict=True))
        if held:
            # NULL: the generation was the cache's (then its counts are exact, even when it was
            # dropped for its age, CACHE_MAX_AGE_S)
            if (now is not None and now is cache or row[at] is None) and cache is not None:
                result.update({t: len(cache.postings[lexeme(t)][0]) for t in held})
            else:
                result.update({t: int(c) for t, c in zip(held, row[at], strict=True)})
            at += 1
        result.update({t: int(c) for t, c in zip(counted, row[at:], strict=True)})
        self._remember({lexeme(t): n for t, n in result.items()})
        return {t: result[t] for t in unique}

    def _remember(self, counts: dict[str, int]) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._df) > MAX_KEPT_DFS:  # bounded: dropped wholesale, counted again when asked
                self._df.clear()
            for literal, count in counts.items():
                self._df[literal] = (now, count)

    def _fresh_df(self, literal: str) -> int | None:
        with self._lock:
            known = self._df.get(literal)
            if known is None or time.monotonic() - known[0] > DF_FRESH_S:
                return None
            return known[1]

    def _kept_average(self) -> float | None:
        """Tokens per row as last read, or None once older than STATS_FRESH_S."""
        with self._lock:
            if self._average is not None and time.monotonic() - self._average[0] < STATS_FRESH_S:
                return self._average[1]
            return None

    def _stats_sql(self) -> str:
        """The average row length (of the newest AVERAGE_SAMPLE rows: tokens are separated by
        single spaces, so a row's length is its spaces plus one) and N, as two columns."""
        return (f"(SELECT avg(length(tokens) - length(replace(tokens, ' ', '')) + 1) FROM (SELECT tokens FROM "
                f"{self.table} ORDER BY id DESC LIMIT {AVERAGE_SAMPLE}) s), ({self._total_sql})")

    def _keep_stats(self, average: Any, total: Any) -> float:
        with self._lock:
            self._average, self._last_total = (time.monotonic(), float(average or 1.0)), int(total or 0)
            return self._average[1]

    # --- ranking -----------------------------------------------------------------------
    def rank(self, query: TextQuery, limit: int, where: str = "", where_params: Sequence[Any] = (),
             with_rows: tuple[str, str] | None = None, *, narrow: bool = True) -> Ranked:
        """The best `limit` rows matching `query` and `where` (a condition on alias `m`). A
        `narrow` one (a scope: few of the rows) never takes the id-index path, which would test
        the rows out of scope too; a broad one (memory sources) may.

        `with_rows` = (columns, joins on alias `i`): read with the candidates when they are
        expected to be few (at most FEW_CANDIDATES), saving the statement that would fetch them."""
        phrases = query_phrases(query)
        if not phrases or limit <= 0:
            return Ranked([], True)
        average = self._kept_average()  # None: read again, in the ranking's statement
        scope = tuple(where_params) if where and self._scope_sql is not None else None
        cacheable = not where or scope is not None
        cache = self._cached() if cacheable else None
        if cache is not None and scope is not None and self._scope_out == (cache.generation, scope):
            cache = None  # this scope leaves rows out of the cache's state: the statement ranks
        if cache is not None and average is not None and all(p.tsquery in cache.postings for p in phrases):
            ranked = self._rank_from_cache(cache, phrases, limit, average, with_rows, scope)
            if ranked is not None:
                return ranked
            cache = self._cached()  # kept when only the scope narrowed
        load = self._loadable(phrases, cache) if cacheable else []
        literals = list(dict.fromkeys(p.tsquery for p in phrases))
        known = {literal: self._fresh_df(literal) for literal in literals}
        expected = sum(CANDIDATES_PER_PHRASE if df is None else min(df, CANDIDATES_PER_PHRASE) for df in known.values())
        extra = with_rows if with_rows is not None and expected <= max(FEW_CANDIDATES, limit) else None
        sql, params = self._candidates_sql(known, where if narrow or not where else "", where_params, extra,
                                           broad_where=where if where and not narrow else "",
                                           stats=average is None, load=load)
        started = time.monotonic()
        found = self._rows(sql, params)
        if self._generation_sql is not None:  # the state, then the loaded matches, lead each row
            first = found[0]
            found = [r[2 + len(load):] for r in found]
            loaded = {p.tsquery: self._posting(flat) for p, flat in zip(load, first[2:2 + len(load)], strict=True)}
            self._observe(first[0], first[1], int(found[0][0]) if not self._total_kept else self._last_total or None,
                          loaded, started)
        if average is None:
            average = self._keep_stats(found[0][2], found[0][3])
        total = int(found[0][0]) if not self._total_kept else max(self._last_total, 1)
        counted = [int(c) for c in found[0][1]]
        unknown = [literal for literal, df in known.items() if df is None]
        self._remember(dict(zip(unknown, counted, strict=True)))
        dfs = {**{k: int(v) for k, v in known.items() if v is not None}, **dict(zip(unknown, counted, strict=True))}
        candidates = [(int(r[4]), r[5]) for r in found if r[4] is not None]
        weights = [idf(total, dfs[p.tsquery]) for p in phrases]
        scored = sorted((score_row(tokens, phrases, weights, average), rid, tokens) for rid, tokens in candidates)
        page = [(rid, score, tokens) for score, rid, tokens in scored[:limit]]
        # a row outside the candidates holds only phrases that were cut (more matches than read)
        ceiling = -sum(w * (K1 + 1) for p, w in zip(phrases, weights, strict=True)
                       if dfs[p.tsquery] > CANDIDATES_PER_PHRASE)
        exact = ceiling == 0 or (len(page) == limit and page[-1][1] < ceiling)
        return Ranked(page, exact, {int(r[4]): tuple(r[6:]) for r in found if r[4] is not None} if extra else None)

    def _candidates_sql(self, known: dict[str, int | None], where: str, where_params: Sequence[Any],
                        extra: tuple[str, str] | None = None, broad_where: str = "",
                        stats: bool = False, load: Sequence[Phrase] = ()) -> tuple[str, list[Any]]:
        """One statement: N, the document frequency of each phrase not `known` (bare GIN
        counts), and per phrase its matches (all when at most CANDIDATES_PER_PHRASE, else the
        newest that many) with their tokens. With a generation, led by the table's state and
        (in the first row only) every match of each phrase to `load`."""
        total = self._last_total  # as last read (0 before the first: the GIN path then)
        counts, picks, count_params, pick_params = [], [], [], []
        for literal, df in known.items():
            if df is None:
                counts.append(f"(SELECT count(*) FROM {self.table} WHERE tsv @@ %s::tsquery)")
                count_params.append(literal)
            select = f"(SELECT m.id FROM {self.table} m WHERE m.tsv @@ %s::tsquery{where}{broad_where}"
            if df is not None and df <= CANDIDATES_PER_PHRASE:  # (a remembered df may have grown: all rows still)
                picks.append(select + ")")
            elif df is not None and total and not where and df * df > SCAN_FACTOR * CANDIDATES_PER_PHRASE * total:
                picks.append(select + f" ORDER BY m.id DESC LIMIT {CANDIDATES_PER_PHRASE})")
            else:  # `+ 0`: the id index cannot give this order, so the planner goes through GIN
                picks.append(select + f" ORDER BY m.id + 0 DESC LIMIT {CANDIDATES_PER_PHRASE})")
            pick_params += [literal, *where_params]
        if self._total_kept:
            total_sql = f"SELECT {int(self._last_total)}"
        else:
            total_sql = self._total_sql
        head = f"SELECT n.total, ARRAY[{', '.join(counts)}]::bigint[], {self._stats_sql() if stats else 'NULL, NULL'}"
        lead, lead_params = "", []
        if self._generation_sql is not None:
            lead = f"SELECT {self._state_sql()}, " + "".join(
                f"CASE WHEN row_number() OVER () = 1 THEN {self._posting_sql(self.table)} END, " for _ in load)
            head = head.replace("SELECT ", lead, 1)
            lead_params = [value for p in load for value in (p.padded, p.padded, p.tsquery)]
        found = f"SELECT DISTINCT id FROM ({' UNION ALL '.join(picks)}) u"
        columns, joins = (", " + extra[0], " " + extra[1]) if extra else ("", "")
        return (f"{head}, r.* FROM ({total_sql}) AS n(total) LEFT JOIN (SELECT i.id, i.tokens{columns} "
                f"FROM ({found}) c JOIN {self.table} i ON i.id = c.id{joins}) r ON TRUE"), \
            [*lead_params, *count_params, *pick_params]


def score_row(tokens: str, phrases: list[Phrase], weights: list[float], average: float) -> float:
    """FTS5's bm25 of one row (lower is better)."""
    if all(p.searchable_as_text for p in phrases):  # counted in the string, never split (long chunks)
        padded = " " + tokens.replace(" ", "  ") + " "  # doubled: neighbouring occurrences share no space
        norm = K1 * (1 - B + B * (tokens.count(" ") + 1) / average)
        counts = [padded.count(p.padded) for p in phrases]
    else:
        words = tokens.split()
        norm = K1 * (1 - B + B * len(words) / average)
        counts = [occurrences(words, p) for p in phrases]
    score = 0.0
    for tf, weight in zip(counts, weights, strict=True):
        if tf:
            score += weight * ((tf * (K1 + 1)) / (tf + norm))
    return -score


def df_query(table: str, tokens: Sequence[str]) -> tuple[str, list[str]]:
    """SQL for the number of rows holding each token (one GIN count each, in one statement)."""
    counts = ", ".join(f"(SELECT count(*) FROM {table} WHERE tsv @@ %s::tsquery)" for _ in tokens)
    return f"SELECT {counts}", [lexeme(t) for t in tokens]
