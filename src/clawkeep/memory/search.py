"""memory_search (M3): keyword and vector paths merged with weights, answered with windows.

Defaults (one place: `MemorySearchConfig`): vectorWeight 0.7, textWeight 0.3, candidates =
maxResults × candidateMultiplier (≤ 200). The keyword path never AND-joins a question: it
ORs the informative terms and scores each chunk by its bm25 share and by how much of the
question it covers (coverage is what a natural-language question needs; words no chunk
contains count against it, so one shared word of a question in another language is weak
evidence). When one path is unavailable the other runs alone with full weight. A chunk is
kept when its merged score reaches minScore, or when either path alone would return it (any
keyword coverage, or vector similarity ≥ minScore). Superseded facts are weighted ×0.3 and
expired ones ×0.5. Temporal decay and MMR are options, off by default; decay never pushes a
strong match out of the results.

Results are windows of lines, not whole chunks (see "windows" below): the lines that match
the question and the turns that answer it, each line returned once, transcript windows
dated. Measured on LoCoMo (bench/memory_locomo.py): recall within 1,800 / 4,000 characters
0.548 / 0.659 with whole-chunk snippets, 0.706 / 0.803 with windows.
"""

from __future__ import annotations

import math
import os
import re
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..errors import ClawkeepError, InputError
from ..storage import TextQuery, VectorFilter
from ..text.analyzer import analyze_document
from ..text.query import SearchQuery, parse_query, score_boost
from ..text.snippet import snippet
from ..text.tokens import fold, normalise
from . import items
from .index import MemoryIndex
from .sessions_source import DATE_LINE

MAX_QUERY_CHARS = 4096
MAX_LIMIT = 50  # results per memory_search (--limit 1-50)
MAX_CANDIDATES = 200
STRONG_SHARE = 0.8  # under decay, a match within 80% of the best relevance always stays
KEYWORD_TERMS = 8  # rarest query terms OR-ed into the keyword search ...
COMMON_RATIO = 0.5  # ... each found in at most this share of the chunks
WINDOW_TERMS = 16  # query terms that weigh each line of a result (see "windows" below) ...
WINDOW_COMMON_RATIO = 0.75  # ... each found in at most this share of the chunks
SMALL_INDEX = 8  # below this many chunks no term counts as common
POSTINGS_BUDGET = 20_000  # postings an OR search may read (FTS5 reads them all): ~15 ms here
SHARE_WEIGHT = 0.5  # keyword score = this × bm25 share + the rest × coverage
_WORD = re.compile(r"\w+")
_COUNTS: dict[tuple[str, int], int] = {}
_FINGERPRINTS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()
_POOL: list[Any] = []  # [(pid, executor)]: a forked child starts its own threads


def _pool() -> ThreadPoolExecutor:
    with _CACHE_LOCK:
        if not _POOL or _POOL[0][0] != os.getpid():
            _POOL[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="clawkeep-memory"))]
        return _POOL[0][1]


@dataclass
class MemoryHit:
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str  # "memory" | "sessions"
    citation: str | None = None
    vector_score: float | None = None
    text_score: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = {"path": self.path, "startLine": self.start_line, "endLine": self.end_line,
               "score": round(self.score, 4), "snippet": self.snippet, "source": self.citation,
               "origin": self.source}
        if self.meta.get("sessionKey"):
            out["sessionKey"] = self.meta["sessionKey"]
            out["messageIds"] = self.meta.get("messageIds", [])
        return out


@dataclass
class _Candidate:
    chunk_id: int
    vector: float | None = None
    text: float | None = None
    coverage: float = 0.0

    def merged(self, wv: float, wt: float) -> float:
        return wv * (self.vector or 0.0) + wt * (self.text or 0.0)


def validate(query: str) -> str:
    text = (query or "").strip()
    if not text:
        raise InputError("memory search query is empty; give at least one word")
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(f"memory search query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    return text


def memory_search(index: MemoryIndex, query: str, *, limit: int | None = None, mode: str = "hybrid",
                  sources: list[str] | None = None, today: date | None = None,
                  citations: str = "auto") -> list[MemoryHit]:
    """`mode`: hybrid (default), keyword, or vector."""
    if mode not in ("hybrid", "keyword", "vector"):
        raise InputError(f"search mode {mode!r} is not allowed; allowed values: hybrid, keyword, vector")
    text = validate(query)
    settings = index.settings.query
    limit = settings.max_results if limit is None else limit
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit {limit} is out of range; allowed 1-{MAX_LIMIT}")
    sources = sources or list(index.settings.sources)
    pool = min(MAX_CANDIDATES, max(limit, limit * settings.hybrid.candidate_multiplier))
    candidates: dict[int, _Candidate] = {}
    # the vector path (query embedding + matrix product, both outside the GIL) runs beside the
    # keyword path (SQLite FTS5, also outside the GIL)
    vectors = (_pool().submit(_vector, index, text, sources, pool)
               if mode in ("hybrid", "vector") and index.provider is not None else None)
    terms = _Terms.of(index, text)
    keyword_ok = False
    if mode in ("hybrid", "keyword") and terms is not None:
        keyword_ok = _keyword(index, terms, sources, pool, candidates)
    similar = vectors.result() if vectors is not None else None
    vector_ok = similar is not None
    for cid, sim in similar or ():
        candidates.setdefault(cid, _Candidate(cid)).vector = sim
    wv, wt = _weights(settings.hybrid.vector_weight, settings.hybrid.text_weight, vector_ok, keyword_ok)
    chunks = index.store.chunks(candidates)
    today = today or date.today()
    scored = []
    for cid, cand in candidates.items():
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        base = cand.merged(wv, wt) * chunk.weight
        if chunk.meta.get("expires") and chunk.meta["expires"] < today.isoformat():
            base *= items.EXPIRED_WEIGHT
        # a chunk either path would return on its own stays: keyword hits with any coverage,
        # vector hits as similar as minScore (a cross-language match has no keyword support)
        keep = (base >= settings.min_score or (cand.text is not None and cand.coverage > 0)
                or (cand.vector or 0.0) * chunk.weight >= settings.min_score)
        if keep:
            scored.append((base, cand, chunk))
    scored.sort(key=lambda row: row[0], reverse=True)
    reorder = mode != "vector"
    if settings.hybrid.temporal_decay.enabled:
        scored = _decay(scored, settings.hybrid.temporal_decay.half_life_days, today, limit)
        reorder = False  # the decay's order stands
    if settings.hybrid.mmr.enabled:
        scored = _mmr(scored, settings.hybrid.mmr.lambda_, limit)
        reorder = False
    # also in vector mode, the query's words pick the lines of each result
    return _hits(scored, terms.lines if terms else None, limit, settings.snippet_max_chars, citations, reorder)


def _weights(wv: float, wt: float, vector_ok: bool, keyword_ok: bool) -> tuple[float, float]:
    if vector_ok and keyword_ok:
        total = (wv + wt) or 1.0
        return wv / total, wt / total
    return (1.0, 0.0) if vector_ok else (0.0, 1.0)


@dataclass
class _Terms:
    """The query's terms, weighted by idf over the index (one df lookup per search).

    `search`: the rarest KEYWORD_TERMS terms found in at most COMMON_RATIO of the chunks (a
    chunk holds a dozen turns, so a word in a quarter of them is still telling), OR-ed into
    the keyword search. `cover`: those plus the query's words that no chunk contains, at the
    idf of a word in no chunk — coverage is a share of the whole question, so one shared word
    of a question asked in another language covers little of it. `lines`: up to WINDOW_TERMS
    terms found in at most WINDOW_COMMON_RATIO of the chunks (picking a line inside a chunk
    needs the fairly common words too), plus the missing words, to weigh each line. In an
    index of fewer than SMALL_INDEX chunks such shares mean nothing, so no term is dropped.
    """

    search: SearchQuery
    cover: SearchQuery
    lines: SearchQuery

    @classmethod
    def of(cls, index: MemoryIndex, text: str) -> _Terms | None:
        parsed = parse_query(text)
        if parsed is None:
            return None
        tokens = sorted({tok for t in parsed.terms if not t.prefix for form in t.forms for tok in form})
        counts = index.store.document_frequency(tokens) if tokens else {}

        def df(wanted: Any) -> dict[str, int]:
            return {tok: counts.get(tok, 0) for tok in wanted}

        total = _chunk_count(index)
        small = total < SMALL_INDEX
        search = _within_budget(parsed.select(df, total, max_terms=KEYWORD_TERMS,
                                              common_ratio=1.0 if small else COMMON_RATIO), counts)
        lines = parsed.select(df, total, max_terms=WINDOW_TERMS, common_ratio=1.0 if small else WINDOW_COMMON_RATIO)
        missing = tuple(t for t in parsed.terms if not t.prefix
                        and sum(min(counts.get(tok, 0) for tok in form) for form in t.forms) == 0)
        absent = math.log(1.0 + (max(total, 1) + 0.5) / 0.5)
        return cls(search, _with(search, missing, absent), _with(lines, missing, absent))


def _term_df(term: Any, counts: dict[str, int]) -> int:
    return sum(min(counts.get(tok, 0) for tok in form) for form in term.forms) if not term.prefix else 0


def _within_budget(query: SearchQuery, counts: dict[str, int]) -> SearchQuery:
    """Drop the commonest search terms while their postings exceed POSTINGS_BUDGET (FTS5 reads
    every posting of an OR query); the rarest term always stays. Never binds below ~10k chunks."""
    terms, weights = list(query.terms), list(query.weights or (1.0,) * len(query.terms))
    while len(terms) > 1 and sum(_term_df(t, counts) for t in terms) > POSTINGS_BUDGET:
        drop = max(range(len(terms)), key=lambda i: (not terms[i].exact, _term_df(terms[i], counts)))
        if terms[drop].exact:
            break
        del terms[drop], weights[drop]
    return query if len(terms) == len(query.terms) else SearchQuery(tuple(terms), tuple(weights))


def _with(query: SearchQuery, extra: tuple[Any, ...], weight: float) -> SearchQuery:
    extra = tuple(t for t in extra if t not in query.terms)
    if not extra:
        return query
    weights = tuple(query.weights or (1.0,) * len(query.terms))
    return SearchQuery(query.terms + extra, weights + (weight,) * len(extra))


def _keyword(index: MemoryIndex, terms: _Terms, sources: list[str], pool: int,
             candidates: dict[int, _Candidate]) -> bool:
    rows = index.store.keyword_search(TextQuery.of(terms.search.terms), sources=sources, limit=pool)
    if not rows:
        return True
    best = max(-rank for _, rank, _ in rows) or 1.0
    # bm25 share: relative to the best hit, as far as the index can match the query at all
    weights = terms.cover.weights or (1.0,) * len(terms.cover.terms)
    reach = sum(weights[: len(terms.search.terms)]) / (sum(weights) or 1.0)
    for cid, rank, tokens in rows:
        coverage, exact = score_boost(tokens, terms.cover)
        share = max(0.0, -rank) / best * reach
        # bm25 share rewards rare words, coverage rewards answering the whole question
        cand = candidates.setdefault(cid, _Candidate(cid))
        cand.coverage = coverage
        cand.text = min(1.0, SHARE_WEIGHT * share + (1 - SHARE_WEIGHT) * coverage + 0.1 * exact)
    return True


def _vector(index: MemoryIndex, text: str, sources: list[str], pool: int) -> list[tuple[int, float]] | None:
    """(chunk id, cosine similarity ≥ 0) of the `pool` nearest chunks; None when unavailable."""
    try:
        flt = vector_filter(index, sources)
        if not index.store.vector_count(flt):
            return None
        query = index.provider.embed_query(text)
    except ClawkeepError:
        return None  # provider down: the keyword path answers alone
    return [(cid, max(0.0, sim)) for cid, sim in index.store.vector_search(query, pool, flt)]


def _vector_key(index: MemoryIndex) -> str:
    """The provider's fingerprint, computed once per provider (it reads package metadata)."""
    provider = index.provider
    if provider is None:
        return ""
    try:
        key = _FINGERPRINTS.get(provider)
        if key is None:
            key = _FINGERPRINTS[provider] = index.vector_key() or ""
        return key
    except TypeError:  # not weak-referenceable
        return index.vector_key() or ""


def vector_filter(index: MemoryIndex, sources: list[str]) -> VectorFilter:
    """The stored vectors a search of `sources` considers: those of the current provider."""
    return VectorFilter(_vector_key(index), tuple(sources))


def _chunk_count(index: MemoryIndex) -> int:
    """Chunks in the index, counted once per index generation (a count scans the table)."""
    key = (getattr(index.store, "path", ""), index.store.generation())
    with _CACHE_LOCK:
        count = _COUNTS.get(key)
    if count is None:
        count = index.store.chunk_count()
        with _CACHE_LOCK:
            for stale in [k for k in _COUNTS if k[0] == key[0]]:
                del _COUNTS[stale]
            _COUNTS[key] = count
    return count


def _decay(scored: list, half_life: float, today: date, limit: int) -> list:
    """Newer first among comparable matches; matches near the best relevance are kept anyway."""
    if not scored:
        return scored
    best = scored[0][0]

    def decayed(row: tuple) -> float:
        day = row[2].day
        if not day:
            return row[0]  # evergreen (MEMORY.md, undated notes) never decays
        age = max(0.0, (today - date.fromisoformat(day)).days)
        return row[0] * math.exp(-math.log(2) / half_life * age)

    ranked = sorted(scored, key=decayed, reverse=True)
    strong = [row for row in scored if row[0] >= STRONG_SHARE * best]
    top = ranked[:limit]
    for row in strong:
        if row not in top:
            top = [*top[: limit - 1], row] if len(top) >= limit else [*top, row]
    ordered = [row for row in ranked if row in top] + [row for row in ranked if row not in top]
    return ordered


def _mmr(scored: list, lam: float, limit: int) -> list:
    """Maximal marginal relevance with Jaccard similarity over word sets."""
    words = {id(row): set(_WORD.findall(row[2].text.lower())) for row in scored}
    chosen: list = []
    rest = list(scored)
    while rest and len(chosen) < limit:
        def value(row: tuple) -> float:
            if not chosen:
                return row[0]
            overlap = max(_jaccard(words[id(row)], words[id(c)]) for c in chosen)
            return lam * row[0] - (1 - lam) * overlap

        pick = max(rest, key=value)
        chosen.append(pick)
        rest.remove(pick)
    return chosen + rest


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0




# --- windows: return the lines that answer, not the whole chunk ------------------------------
# A chunk holds ~400 tokens (a dozen chat turns) while an agent injecting memory has a character
# budget (Active Memory: 1,800), so results are windows of lines, not whole chunks. Every line
# of the best chunks gets a score: its chunk's score, plus LINE_COVERAGE × the share of the
# query's terms the line holds (idf-weighted), plus LINE_CONTEXT × the coverage of one of the
# two lines before it (in a chat the answer follows the question; never across a transcript
# date line, which starts another conversation). The best lines, in score order, either extend
# an earlier window of the same chunk they touch (while it fits in snippetMaxChars) or open a
# new window; windows come out in the order they were opened. A line is returned once: lines of
# overlapping chunks, and lines another file repeats verbatim (a session excerpt note copying a
# transcript), go to the better-ranked chunk. Transcript windows start with their date line
# (`[2023-05-08 13:56 UTC]`, or the chunk's day), so an agent can tell when something was said.
# Vector mode, temporal decay and MMR keep their chunk order; words then only pick the lines.
LINE_COVERAGE = 0.75
LINE_CONTEXT = 0.3
LINE_POOL = 30  # best lines placed into windows (at least `limit`)
CHUNK_POOL = 2  # lines come from the best max(limit × this, limit + 10) chunks
GAP = ELLIPSIS = "\u2026"
_BULLET = re.compile(r"^[\s>*+-]+")


@dataclass
class _Lines:
    """A chunk's text lines, their line numbers (None when a long line was sliced), which
    query terms each holds, their coverage, and for transcripts the date label that applies
    to each line."""

    text: list[str]
    numbers: list[int] | None
    terms: list[frozenset[int]]
    labels: list[str | None]
    breaks: set[int]  # date lines: never returned as content, never crossed by context
    covs: list[float] = field(default_factory=list)


def _line_key(line: str) -> str:
    """Identity of a line's text across files: case, spacing and list markers ignored."""
    return _BULLET.sub("", " ".join(line.split()).casefold())


class _Shown:
    """Lines already claimed: by position within a file (overlapping chunks), and by text
    across files (a session excerpt note repeating a transcript line)."""

    def __init__(self) -> None:
        self.positions: set[tuple[str, int]] = set()
        self.texts: dict[str, set[str]] = {}  # line text -> paths it was claimed from

    def claim(self, path: str, number: int | None, line: str) -> bool:
        """True if the line is new (and now claimed), False if it was returned already."""
        key = _line_key(line)
        paths = self.texts.get(key)
        if (number is not None and (path, number) in self.positions) or (
                paths and (number is None or any(p != path for p in paths))):
            return False
        if number is not None:
            self.positions.add((path, number))
        self.texts.setdefault(key, set()).add(path)
        return True


def _present(padded: str, term: Any) -> bool:
    for form in term.forms:
        if " " + " ".join(form) + ("" if term.prefix else " ") in padded:
            return True
    return False


_CONNECTORS = re.compile(r"[-_./:@'\u2019]")


def _needles(query: SearchQuery) -> tuple[str, ...]:
    """Substrings a line must contain to hold any query term (a cheap test before analysis).

    A stem's letters may differ from the word's near its end (happi/happy, die/dying), so a
    word stem gives its first min(4, len - 1) letters, or its first letter when it has three
    or fewer; numbers and CJK fragments give themselves.
    """
    out: set[str] = set()
    for term in query.terms:
        for form in term.forms:
            for token in form:
                if token.isascii() and token.isalpha():
                    keep = 1 if len(token) <= 3 else min(4, len(token) - 1)
                else:
                    keep = len(token)
                out.add(token[:keep])
    return tuple(out)


def _may_hold(line: str, needles: tuple[str, ...]) -> bool:
    plain = normalise(line).casefold()
    if not plain.isascii():
        plain = f"{plain} {fold(plain)}"
    squeezed = _CONNECTORS.sub("", plain)  # Wi-Fi is also indexed as wifi
    return any(n in plain or n in squeezed for n in needles)


def _chunk_lines(chunk: Any, query: SearchQuery | None) -> _Lines:
    lines = chunk.text.split("\n")
    numbers = (list(range(chunk.start_line, chunk.end_line + 1))
               if len(lines) == chunk.end_line - chunk.start_line + 1 else None)
    labels: list[str | None] = [None] * len(lines)
    breaks: set[int] = set()
    if chunk.source == "sessions":
        label = f"[{chunk.day}]" if chunk.day else None
        for i, line in enumerate(lines):
            if DATE_LINE.match(line):
                breaks.add(i)
                label = line
            labels[i] = label
    terms: list[frozenset[int]] = []
    needles = _needles(query) if query is not None else ()
    for i, line in enumerate(lines):
        if i in breaks or query is None or not line.strip() or not _may_hold(line, needles):
            terms.append(frozenset())
            continue
        padded = f" {analyze_document(line)} "
        terms.append(frozenset(t for t, term in enumerate(query.terms) if _present(padded, term)))
    weights = list(query.weights or (1.0,) * len(query.terms)) if query is not None else []
    total = sum(weights) or 1.0
    covs = [sum(weights[t] for t in held) / total for held in terms]
    return _Lines(lines, numbers, terms, labels, breaks, covs)


def _line_scores(lines: _Lines) -> list[float]:
    """Own coverage plus context from one of the two lines before (not across a date line)."""
    out = []
    for i, cov in enumerate(lines.covs):
        context = 0.0
        for back in (1, 2):
            j = i - back
            if j < 0 or j in lines.breaks:
                break
            context = max(context, lines.covs[j])
        out.append(LINE_COVERAGE * cov + LINE_CONTEXT * context)
    return out


@dataclass
class _Window:
    score: float
    row: int  # index into the chunk rows
    lines: list[int]


def _render(lines: _Lines, picked: list[int], query: SearchQuery | None, max_chars: int) -> str:
    parts: list[str] = []
    label = None
    for n, i in enumerate(picked):
        if n and any(j not in lines.breaks for j in range(picked[n - 1] + 1, i)):
            parts.append(GAP)
        if lines.labels[i] and lines.labels[i] != label:
            label = lines.labels[i]
            parts.append(label)
        parts.append(lines.text[i])
    text = "\n".join(parts)
    if len(text) > max_chars:  # one line longer than the window: cut around the query's words
        text = snippet(text, query, max_chars) if query is not None else text[:max_chars - 1] + ELLIPSIS
    return text


def _rendered_size(lines: _Lines, picked: list[int]) -> int:
    labels = {lines.labels[i] for i in picked if lines.labels[i]}
    gaps = sum(1 for n in range(1, len(picked)) if picked[n] != picked[n - 1] + 1)
    return sum(len(lines.text[i]) + 1 for i in picked) + sum(len(x) + 1 for x in labels) + 2 * gaps - 1


def _hits(scored: list, query: SearchQuery | None, limit: int, max_chars: int, citations: str,
          reorder: bool) -> list[MemoryHit]:
    rows = scored[: max(limit * CHUNK_POOL, limit + 10)]
    chunk_lines = [_chunk_lines(chunk, query) for _, _, chunk in rows]
    shown = _Shown()
    candidates: list[tuple[float, int, int]] = []  # (score, row, line)
    for r, ((score, _, chunk), lines) in enumerate(zip(rows, chunk_lines, strict=True)):
        own = _line_scores(lines)
        # without reordering, the chunk order stands and words only rank lines within a chunk
        base = score if reorder else float(len(rows) - r)
        numbers = lines.numbers or [None] * len(lines.text)
        matched = any(x > 0 for i, x in enumerate(own) if i not in lines.breaks and lines.text[i].strip())
        for i, line in enumerate(lines.text):
            if i in lines.breaks or not line.strip() or (matched and own[i] <= 0):
                continue  # a chunk with matching lines offers those (and their answers) only
            if not shown.claim(chunk.path, numbers[i], line):
                continue
            candidates.append((base + (own[i] if reorder else 1e-3 * own[i]), r, i))
    candidates.sort(key=lambda c: -c[0])
    windows: list[_Window] = []
    for score, r, i in candidates[: max(LINE_POOL, limit)]:
        lines = chunk_lines[r]
        touching = next((w for w in windows if w.row == r and w.lines[0] - 1 <= i <= w.lines[-1] + 1), None)
        if touching is not None:
            grown = sorted([*touching.lines, i])
            if _rendered_size(lines, grown) <= max_chars:
                touching.lines = grown
                continue
        windows.append(_Window(score, r, [i]))
    norm = 1.0 + LINE_COVERAGE + LINE_CONTEXT
    out = []
    for w in windows[:limit]:
        score, cand, chunk = rows[w.row]
        shown_score = w.score / norm if reorder else score
        out.append(_hit(shown_score, cand, chunk, chunk_lines[w.row], w.lines, query, max_chars, citations))
    return out


def _hit(score: float, cand: _Candidate, chunk: Any, lines: _Lines, picked: list[int], query: SearchQuery | None,
         max_chars: int, citations: str) -> MemoryHit:
    start, end = chunk.start_line, chunk.end_line
    meta = dict(chunk.meta)
    ids = meta.get("messageIds")
    if lines.numbers is not None:
        start, end = lines.numbers[picked[0]], lines.numbers[picked[-1]]
        if isinstance(ids, list) and len(ids) == len(lines.text):
            ids = [ids[i] for i in picked]
    if isinstance(ids, list):
        meta["messageIds"] = [i for i in ids if i]  # date lines have no message
    excerpt = _render(lines, picked, query, max_chars)
    citation = None if citations == "off" else f"Source: {chunk.path}#L{start}-L{end}"
    return MemoryHit(chunk.id, chunk.path, start, end, score, excerpt, chunk.source,
                     citation, cand.vector, cand.text, meta)
