"""Scoring for memory_search: the keyword path (bm25 share + coverage), the vector path (cosine
similarity over the current provider's vectors), the weights that merge them, and the optional
temporal decay and MMR re-orderings."""

from __future__ import annotations

import math
import re
import threading
import weakref
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from ...deferred import deferred_import
from ...errors import ClawkeepError
from ...models.embeddings.base import ScaledQuery
from ...storage import TextQuery, VectorFilter
from ...text.query import score_boost
from ..index import MemoryIndex
from .terms import Terms

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: a keyword search never needs it

STRONG_SHARE = 0.8  # under decay, a match within 80% of the best relevance always stays
SHARE_WEIGHT = 0.5  # keyword score = this × bm25 share + the rest × coverage
_WORD = re.compile(r"\w+")
_FINGERPRINTS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_VECTOR_COUNTS: dict[tuple[str, str, tuple[str, ...]], tuple[int, int]] = {}  # (store, key, sources) -> (gen, n)
_VECTOR_COUNTS_LOCK = threading.Lock()


@dataclass
class Candidate:
    chunk_id: int
    vector: float | None = None
    text: float | None = None
    coverage: float = 0.0
    line: float = 0.0  # the best line vector's similarity (fact-level vectors)
    tokens: str | None = None  # the chunk's stored tokens, line by line (keyword matches only)

    def merged(self, wv: float, wt: float) -> float:
        return wv * (self.vector or 0.0) + wt * (self.text or 0.0)



def weights(wv: float, wt: float, vector_ok: bool, keyword_ok: bool) -> tuple[float, float]:
    if vector_ok and keyword_ok:
        total = (wv + wt) or 1.0
        return wv / total, wt / total
    return (1.0, 0.0) if vector_ok else (0.0, 1.0)



def keyword(index: MemoryIndex, terms: Terms, sources: list[str], pool: int,
             candidates: dict[int, Candidate], chunks: dict[int, Any] | None = None) -> bool:
    """`chunks`: where the store may leave the chunks it read with the ranking (see keyword_search)."""
    rows = index.store.keyword_search(TextQuery.of(terms.search.terms), sources=sources, limit=pool, rows=chunks)
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
        cand = candidates.setdefault(cid, Candidate(cid))
        cand.coverage = coverage
        cand.tokens = tokens
        cand.text = min(1.0, SHARE_WEIGHT * share + (1 - SHARE_WEIGHT) * coverage + 0.1 * exact)
    return True



def vector(index: MemoryIndex, text: str, sources: list[str], pool: int, generation: int | None = None
           ) -> tuple[list[tuple[int, float]], ScaledQuery] | None:
    """((chunk id, similarity ≥ 0) of the `pool` nearest chunks, the query); None when
    unavailable. Similarities are cosines on the reference scale (the provider's `similarity`:
    minScore and the ranking constants were set on the default model's cosines). `generation`:
    the index's as the search read it (a server's vector count is then kept per generation, not
    counted again by every search)."""
    try:
        flt = vector_filter(index, sources)
        total = _vector_count(index, flt, generation)
        if not total:
            return None
        query = _scaled_query(index.provider, text)
    except ClawkeepError:
        return None  # provider down: the keyword path answers alone
    found = index.store.vector_search(query.vector, pool, flt, total=total)
    return [(cid, max(0.0, query.score(sim))) for cid, sim in found], query


def _scaled_query(provider: Any, text: str) -> ScaledQuery:
    """The provider's query on the reference scale; one with only `embed_query` (the older,
    minimal contract) is taken to be on it already."""
    scaled = getattr(provider, "embed_scaled_query", None)
    return scaled(text) if scaled is not None else ScaledQuery(provider.embed_query(text))


def _vector_count(index: MemoryIndex, flt: VectorFilter, generation: int | None) -> int:
    """The filter's stored vectors; on a server, kept per index generation. A kept 0 is counted
    again (the vectors of a keyword-only sync arrive with the next embedding sync), so a kept
    count never hides vectors: at worst a count from a writer's commit ago picks the exact scan
    or HNSW one search later."""
    if generation is None or not index.store.remote:
        return index.store.vector_count(flt)
    key = (getattr(index.store, "path", ""), flt.vector_key, flt.sources)
    with _VECTOR_COUNTS_LOCK:
        kept = _VECTOR_COUNTS.get(key)
    if kept is not None and kept[0] == generation and kept[1]:
        return kept[1]
    count = index.store.vector_count(flt)
    with _VECTOR_COUNTS_LOCK:
        if len(_VECTOR_COUNTS) > 256:  # bounded: dropped wholesale, counted again when asked
            _VECTOR_COUNTS.clear()
        _VECTOR_COUNTS[key] = (generation, count)
    return count


def line_similarities(index: MemoryIndex, query: ScaledQuery, chunk_ids: list[int], sources: list[str],
                      read: dict[int, tuple[Any, Any]] | None = None
                      ) -> tuple[dict[int, dict[int, float]], dict[int, dict[int, float]]]:
    """({chunk id: {line offset: cosine similarity ≥ 0}}, the same for each line's window) from
    the stored line vectors. A line's window is the line and its neighbours before and after
    (adjacent lines with vectors: a date line between two turns has none, so a window never
    spans two conversations); its vector is their normalised sum, so its similarity is the sum
    of their similarities over the sum's length — no vector is made at query time, and all the
    chunks go through one set of matrix operations. Both on the reference scale (`vector`), the
    window's mapped from its cosine. `read`: line vectors already read (of these
    chunks and maybe others, which are left out), else they are read here."""
    if read is None:
        found = index.store.line_vectors(chunk_ids, vector_filter(index, sources))
    else:  # read with the candidates (`read_candidates`): these chunks' lines, in the store's order
        wanted = set(chunk_ids)
        found = {cid: lines for cid, lines in read.items() if cid in wanted}
    if not found:
        return {}, {}
    ids = list(found)
    lines = np.concatenate([found[cid][0] for cid in ids])
    matrix = np.concatenate([found[cid][1] for cid in ids])
    owner = np.repeat(np.arange(len(ids)), [len(found[cid][0]) for cid in ids])
    sims = matrix @ query.vector
    window = query.score(_window_similarities(lines, owner, matrix, sims))
    sims = query.score(sims)
    out: dict[int, dict[int, float]] = {}
    windows: dict[int, dict[int, float]] = {}
    start = 0
    for cid in ids:
        end = start + len(found[cid][0])
        offsets = lines[start:end].tolist()
        out[cid] = dict(zip(offsets, np.maximum(sims[start:end], 0.0).tolist(), strict=True))
        windows[cid] = dict(zip(offsets, np.maximum(window[start:end], 0.0).tolist(), strict=True))
        start = end
    return out, windows


def _window_similarities(lines: Any, owner: Any, matrix: Any, sims: Any) -> Any:
    """Each line's similarity to the query through its window's vector (see line_similarities);
    `owner` tells which chunk a line belongs to (neighbours are lines of one chunk)."""
    n = len(lines)
    adjacent = (np.diff(lines) == 1) & (np.diff(owner) == 0)  # line k and k+1 are neighbours
    pair = np.einsum("ij,ij->i", matrix[:-1], matrix[1:]) if n > 1 else np.zeros(0)
    before = np.concatenate([[False], adjacent])
    after = np.concatenate([adjacent, [False]])
    total = sims.astype(np.float64)
    sq = 1.0 + before.astype(np.float64) + after.astype(np.float64)
    total[before] += sims[:-1][adjacent]
    total[after] += sims[1:][adjacent]
    sq[before] += 2 * pair[adjacent]
    sq[after] += 2 * pair[adjacent]
    both = np.nonzero(before & after)[0]  # the line before and the line after: their own product
    if len(both):
        sq[both] += 2 * np.einsum("ij,ij->i", matrix[both - 1], matrix[both + 1])
    return total / np.sqrt(np.maximum(sq, 1e-9))


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



def decay(scored: list, half_life: float, today: date, limit: int) -> list:
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


def mmr(scored: list, lam: float, limit: int) -> list:
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
