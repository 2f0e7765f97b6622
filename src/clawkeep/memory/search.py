"""memory_search (M3): keyword and vector paths merged with weights.

Defaults (one place: `MemorySearchConfig`): vectorWeight 0.7, textWeight 0.3, candidates =
maxResults × candidateMultiplier (≤ 200). The keyword path never AND-joins a question: it
ORs the informative terms and scores each chunk by its bm25 share and by how many of the
query's terms it covers (coverage is what a natural-language question needs). When one
path is unavailable the other runs alone with full weight. Superseded facts are weighted
×0.3 and expired ones ×0.5. Temporal decay and MMR are options, off by default; decay never
pushes a strong match out of the results.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

from ..errors import ClawkeepError, InputError
from ..text.query import parse_query, score_boost
from ..text.snippet import snippet
from . import items
from .index import MemoryIndex

MAX_QUERY_CHARS = 4096
MAX_CANDIDATES = 200
STRONG_SHARE = 0.8  # under decay, a match within 80% of the best relevance always stays
_WORD = re.compile(r"\w+")
_VECTOR_CACHE: dict[tuple[str, str, int, tuple[str, ...]], tuple[np.ndarray, np.ndarray]] = {}


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
    limit = limit or settings.max_results
    if not 1 <= limit <= 50:
        raise InputError(f"limit {limit} is out of range; allowed 1-50")
    sources = sources or list(index.settings.sources)
    pool = min(MAX_CANDIDATES, max(limit, limit * settings.hybrid.candidate_multiplier))
    candidates: dict[int, _Candidate] = {}
    parsed = None
    if mode in ("hybrid", "keyword"):
        parsed = _keyword(index, text, sources, pool, candidates)
    vector_ok = False
    if mode in ("hybrid", "vector") and index.provider is not None:
        vector_ok = _vector(index, text, sources, pool, candidates)
    wv, wt = _weights(settings.hybrid.vector_weight, settings.hybrid.text_weight, vector_ok, parsed is not None)
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
        keep = base >= settings.min_score or (cand.text is not None and cand.coverage > 0)
        if keep:
            scored.append((base, cand, chunk))
    scored.sort(key=lambda row: row[0], reverse=True)
    if settings.hybrid.temporal_decay.enabled:
        scored = _decay(scored, settings.hybrid.temporal_decay.half_life_days, today, limit)
    if settings.hybrid.mmr.enabled:
        scored = _mmr(scored, settings.hybrid.mmr.lambda_, limit)
    return [_hit(score, cand, chunk, parsed, settings.snippet_max_chars, citations)
            for score, cand, chunk in scored[:limit]]


def _weights(wv: float, wt: float, vector_ok: bool, keyword_ok: bool) -> tuple[float, float]:
    if vector_ok and keyword_ok:
        total = (wv + wt) or 1.0
        return wv / total, wt / total
    return (1.0, 0.0) if vector_ok else (0.0, 1.0)


def _keyword(index: MemoryIndex, text: str, sources: list[str], pool: int,
             candidates: dict[int, _Candidate]) -> Any:
    parsed = parse_query(text)
    if parsed is None:
        return None
    selected = parsed.select(index.store.document_frequency, index.store.chunk_count())
    rows = index.store.keyword_search(selected.match(), sources=sources, limit=pool)
    if not rows:
        return selected
    best = max(-rank for _, rank, _ in rows) or 1.0
    for cid, rank, tokens in rows:
        coverage, exact = score_boost(tokens, selected)
        share = max(0.0, -rank) / best
        # bm25 share rewards rare words, coverage rewards answering the whole question
        cand = candidates.setdefault(cid, _Candidate(cid))
        cand.coverage = coverage
        cand.text = min(1.0, 0.5 * share + 0.5 * coverage + 0.1 * exact)
    return selected


def _vector(index: MemoryIndex, text: str, sources: list[str], pool: int, candidates: dict[int, _Candidate]) -> bool:
    try:
        ids, matrix = _vectors(index, sources)
        if not len(ids):
            return False
        query = index.provider.embed_query(text)
    except ClawkeepError:
        return False  # provider down: the keyword path answers alone
    sims = matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
    top = np.argpartition(-sims, min(pool, len(sims) - 1))[:pool] if len(sims) > pool else np.arange(len(sims))
    for i in top:
        cand = candidates.setdefault(int(ids[i]), _Candidate(int(ids[i])))
        cand.vector = float(max(0.0, sims[i]))
    return True


def _vectors(index: MemoryIndex, sources: list[str]) -> tuple[np.ndarray, np.ndarray]:
    key = index.vector_key() or ""
    cache_key = (getattr(index.store, "path", ""), key, index.store.generation(), tuple(sorted(sources)))
    if cache_key not in _VECTOR_CACHE:
        for stale in [k for k in _VECTOR_CACHE if k[:2] == cache_key[:2]]:
            del _VECTOR_CACHE[stale]
        _VECTOR_CACHE[cache_key] = index.store.vectors(key, sources)
    return _VECTOR_CACHE[cache_key]


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


def _hit(score: float, cand: _Candidate, chunk: Any, parsed: Any, max_chars: int, citations: str) -> MemoryHit:
    if len(chunk.text) <= max_chars:
        excerpt = chunk.text
    else:
        excerpt = snippet(chunk.text, parsed, max_chars) if parsed is not None else chunk.text[:max_chars] + "…"
    citation = None if citations == "off" else f"Source: {chunk.path}#L{chunk.start_line}-L{chunk.end_line}"
    return MemoryHit(chunk.id, chunk.path, chunk.start_line, chunk.end_line, score, excerpt, chunk.source,
                     citation, cand.vector, cand.text, chunk.meta)
