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

Every line of a chunk also has its own vector (a fact in MEMORY.md is one line, a chat turn is
one line): the lines of the best chunks are compared with the query, the best line lifts its
chunk (mean of chunk and line similarity), and each line's similarity helps pick it. A fact line
(a list item) is scored on its own, like a one-line chunk (windows.py), and the chunks of the
query's `limit` most similar lines stay below minScore.

Results are windows of lines, not whole chunks (see "windows" below): the lines that match
the question and the turns that answer it, each line returned once, transcript windows
dated. Measured on LoCoMo (bench/memory_locomo.py): recall within 1,800 / 4,000 characters
0.548 / 0.659 with whole-chunk snippets, 0.706 / 0.803 with windows.

Layout: `terms` (the query's idf-weighted terms), `rank` (keyword and vector scoring, weights,
decay, MMR), `windows` (the lines returned, MemoryHit), then the rerank stage shared with
sessions_search (`models/rerank_stage.py`; optional, off by default: a cross-encoder reorders the
first windows of a Latin-script query, docs/rerank.md);
`memory_search` here runs them in order.
"""

from __future__ import annotations

import heapq
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from typing import Any

from ...errors import InputError
from ...models.rerank_stage import applies as rerank_applies
from ...models.rerank_stage import rerank
from ...text.dialogue import asks_for_several, named_periods, query_words, yearless_days
from ...text.tokens import scripts
from ...validation import MAX_MEMORY_SEARCH
from .. import items
from ..index import MemoryIndex
from .rank import Candidate, decay, keyword, line_similarities, mmr, vector, vector_filter, weights
from .terms import Terms
from .windows import MemoryHit, hits, window_rows

__all__ = ["MAX_CANDIDATES", "MAX_LIMIT", "MAX_QUERY_CHARS", "MemoryHit", "memory_search", "validate", "vector_filter"]

MAX_QUERY_CHARS = 4096
MAX_LIMIT = MAX_MEMORY_SEARCH  # results per memory_search (--limit 1-50)
MAX_CANDIDATES = 200
WINDOW_SHARE = 0.7
TEXTS_ALONG = 64  # on a server, up to this many candidates read with their texts (a default search: ≤ 48)
_POOL: list[Any] = []  # [(pid, executor)]: a forked child starts its own threads
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] != os.getpid():
            _POOL[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="clawkeep-memory"))]
        return _POOL[0][1]


def validate(query: str) -> str:
    text = (query or "").strip()
    if not text:
        raise InputError("memory search query is empty; give at least one word")
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(f"memory search query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    return text



def _read_candidates(index: MemoryIndex, candidates: dict[int, Candidate], carried: dict[int, Any],
                     query_vec: Any, w: tuple[float, float], pool: int, sources: list[str]
                     ) -> tuple[dict[int, Any], dict[int, Any] | None]:
    """The candidates' chunks (those the keyword ranking brought along are not read again) and,
    with a query vector, the line vectors of the `pool` best by merged score, read together (one
    round trip on a server). A server also sends the texts of a few candidates with them, not
    after (the texts of those that get windows would be another round trip). The lines are
    those `_line_evidence` needs unless some candidates turn out gone or invisible."""
    missing = [cid for cid in candidates if cid not in carried]
    line_ids = ([c.chunk_id for c in sorted(candidates.values(), key=lambda c: c.merged(*w), reverse=True)[:pool]]
                if query_vec is not None else [])
    chunks, lines = index.store.read_candidates(
        missing, text=index.store.remote and len(missing) <= TEXTS_ALONG, line_ids=line_ids,
        flt=vector_filter(index, sources) if line_ids else None)
    chunks.update((cid, chunk) for cid, chunk in carried.items() if cid in candidates)
    return chunks, (lines if line_ids else None)


def _line_evidence(index: MemoryIndex, query_vec: Any, candidates: dict[int, Candidate], chunks: dict[int, Any],
                   w: tuple[float, float], pool: int, sources: list[str], read: dict[int, Any] | None = None
                   ) -> tuple[dict[int, dict[int, float]], dict[int, dict[int, float]]]:
    """Fact-level vectors: the lines of the best `pool` chunks against the query. A chunk's vector
    evidence becomes the mean of its own and its best line's similarity (LoCoMo dev r@4000c 0.823;
    the best line alone 0.735; the chunk alone 0.822 but blind to one fact among many in a file),
    and either alone as similar as minScore keeps it. Returns the line similarities relative to
    the query's background, and as they are (cosine). `read`: line vectors read with the
    candidates (`_read_candidates`), used when they cover the chunks ranked here."""
    ranked = sorted((c for c in candidates.values() if c.chunk_id in chunks),
                    key=lambda c: c.merged(*w), reverse=True)[:pool]
    ids = [c.chunk_id for c in ranked]
    line_sims, window_sims = line_similarities(index, query_vec, ids, sources,
                                               read if read is not None and read.keys() >= set(ids) else None)
    for cid, sims in line_sims.items():
        cand = candidates[cid]
        cand.line = max(sims.values(), default=0.0)
        cand.vector = ((cand.vector or 0.0) + cand.line) / 2
    blended = {cid: {i: (1 - WINDOW_SHARE) * v + WINDOW_SHARE * window_sims[cid].get(i, v) for i, v in sims.items()}
               for cid, sims in line_sims.items()}
    return _relative(line_sims), line_sims, blended


def _read_texts(index: MemoryIndex, rows: list) -> None:
    """Fill in the text of these (score, candidate, chunk) rows' chunks, read without it."""
    texts = index.store.chunk_texts(chunk.id for _, _, chunk in rows if not chunk.text)
    for _, _, chunk in rows:
        chunk.text = texts.get(chunk.id, chunk.text)


def _nearest_lines_floor(line_sims: dict[int, dict[int, float]], count: int) -> float:
    """The similarity of the query's `count`-th most similar line (0.0 without line vectors): the
    chunks of these lines are what the vector path over lines would answer with, so they stay
    whatever minScore says. A cross-language match sits below minScore with this model (a Chinese
    question and its English fact: cosine ≈ 0.3), and keeping only the single best line lost the
    right line whenever another fact was a little more similar (fact set 0.67 → 0.71 alone, 0.85
    with fact lines scored on their own, see windows.py)."""
    best = heapq.nlargest(count, (v for sims in line_sims.values() for v in sims.values()))
    return best[-1] if best else 0.0


def _relative(line_sims: dict[int, dict[int, float]]) -> dict[int, dict[int, float]]:
    """Line similarities relative to this query's background: 0 at the median line, 1 at the best."""
    values = sorted(v for sims in line_sims.values() for v in sims.values())
    if not values:
        return line_sims
    median, best = values[(len(values) - 1) // 2], values[-1]  # the lower median: of two lines, the weaker
    if best - median < 1e-6:
        return {}
    return {cid: {i: max(0.0, (v - median) / (best - median)) for i, v in sims.items()}
            for cid, sims in line_sims.items()}


def memory_search(index: MemoryIndex, query: str, *, limit: int | None = None, mode: str = "hybrid",
                  sources: list[str] | None = None, today: date | None = None,
                  citations: str = "auto", visible: Callable[[Any], bool] | None = None,
                  pool_for: int | None = None, hidden_messages: frozenset[str] = frozenset()) -> list[MemoryHit]:
    """`mode`: hybrid (default), keyword, or vector. `visible(chunk)`: the chunks the reader may
    see; the others are dropped as soon as they are read, before any scoring of lines or
    windows. `pool_for`: the number of results the candidate pool is sized for (default
    `limit`; more when some candidates may be invisible). `hidden_messages`: transcript
    message ids whose lines are never offered (the message being answered)."""
    generation = index.checked_generation()  # taken first: a check's generation serves one search at most
    if mode not in ("hybrid", "keyword", "vector"):
        raise InputError(f"search mode {mode!r} is not allowed; allowed values: hybrid, keyword, vector")
    text = validate(query)
    settings = index.settings.query
    limit = settings.max_results if limit is None else limit
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit {limit} is out of range; allowed 1-{MAX_LIMIT}")
    sources = sources or list(index.settings.sources)
    reach = max(limit, pool_for or limit)
    pool = min(MAX_CANDIDATES, max(reach, reach * settings.hybrid.candidate_multiplier))
    candidates: dict[int, Candidate] = {}
    # the vector path (query embedding + matrix product, both outside the GIL) runs beside the
    # keyword path (SQLite FTS5, also outside the GIL)
    if generation is None:  # else as the staleness check just read it: no read of its own
        generation = index.store.generation()
    vectors = (_pool().submit(vector, index, text, sources, pool, generation)
               if mode in ("hybrid", "vector") and index.provider is not None else None)
    terms = Terms.of(index, text, generation)
    keyword_ok = False
    carried: dict[int, Any] = {}  # chunks the keyword ranking read along (a server: few candidates)
    if mode in ("hybrid", "keyword") and terms is not None:
        keyword_ok = keyword(index, terms, sources, pool, candidates, carried)
    answer = vectors.result() if vectors is not None else None
    vector_ok = answer is not None
    similar, query_vec = answer if answer is not None else ((), None)
    for cid, sim in similar:
        candidates.setdefault(cid, Candidate(cid)).vector = sim
    wv, wt = weights(settings.hybrid.vector_weight, settings.hybrid.text_weight, vector_ok, keyword_ok)
    # texts only for the rows that get windows (read later), unless they came along
    chunks, lines_read = _read_candidates(index, candidates, carried, query_vec, (wv, wt), pool, sources)
    if visible is not None:
        chunks = {cid: chunk for cid, chunk in chunks.items() if visible(chunk)}
    line_sims, raw_line_sims, blended = (_line_evidence(index, query_vec, candidates, chunks, (wv, wt), pool, sources,
                                                        lines_read)
                                         if query_vec is not None else ({}, {}, {}))
    near_line = _nearest_lines_floor(raw_line_sims, limit)
    today = today or date.today()
    scored = []
    for cid, cand in candidates.items():
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        base = cand.merged(wv, wt) * status_weight(chunk, today)
        # a chunk either path would return on its own stays: keyword hits with any coverage,
        # vector hits as similar as minScore (a cross-language match has no keyword support), and
        # the chunks of the query's `limit` most similar lines, which the vector path would answer with
        keep = (base >= settings.min_score or (cand.text is not None and cand.coverage > 0)
                or max(cand.vector or 0.0, cand.line) * chunk.weight >= settings.min_score
                or (cand.line > 0 and cand.line >= near_line))
        if keep:
            scored.append((base, cand, chunk))
    scored.sort(key=lambda row: row[0], reverse=True)
    reorder = mode != "vector"
    if settings.hybrid.temporal_decay.enabled:
        scored = decay(scored, settings.hybrid.temporal_decay.half_life_days, today, limit)
        reorder = False  # the decay's order stands
    if settings.hybrid.mmr.enabled:
        _read_texts(index, scored)  # MMR compares the candidates' words
        scored = mmr(scored, settings.hybrid.mmr.lambda_, limit)
        reorder = False
    reranking = index.settings.rerank
    # the rerank stage reorders the first `candidates` windows: build that many, keep `limit`
    windows = (min(MAX_LIMIT, max(limit, reranking.candidates))
               if reranking.provider != "none" and rerank_applies(text) else limit)
    _read_texts(index, scored[:window_rows(windows)])
    # also in vector mode, the query's words pick the lines of each result
    found = hits(scored, terms.lines if terms else None, windows, settings.snippet_max_chars, citations, reorder,
                line_sims, small_index=terms is not None and terms.small,
                fact_sims=raw_line_sims, fusion=(wv, wt),
                query_words=query_words(text), raw_sims=blended,
                periods=named_periods(text) + yearless_days(text, today), query_scripts=scripts(text),
                several=asks_for_several(text), status=lambda chunk: status_weight(chunk, today),
                hidden_messages=hidden_messages)
    if reranking.provider != "none":
        found = rerank(text, found, lambda hit: hit.snippet, reranking,
                       lambda hit, value: hit.meta.__setitem__("rerankScore", value))[:limit]
    for hit in found:  # a plan whose day has passed says so (the reader must not take it as current)
        if hit.meta.get("expires") and hit.meta["expires"] < today.isoformat():
            hit.meta["expired"] = hit.meta["expires"]
    return found


def status_weight(chunk: Any, today: date) -> float:
    """What a chunk's items weigh in the ranking: superseded ×0.3, expired ×0.5 (M8). Lines of
    another state are chunked apart (index.py), so a chunk's weight is its every line's."""
    weight = chunk.weight
    if chunk.meta.get("expires") and chunk.meta["expires"] < today.isoformat():
        weight *= items.EXPIRED_WEIGHT
    return weight
