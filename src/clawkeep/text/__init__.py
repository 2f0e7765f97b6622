"""Text analysis for search: CJK-aware tokens, safe FTS5 queries, snippets (S5)."""

from .analyzer import (
    SearchQuery,
    Term,
    analyze_document,
    build_match_query,
    fts5_doc_freq,
    parse_query,
    rerank,
    score_boost,
    snippet,
    warm_up,
)

__all__ = [
    "SearchQuery",
    "Term",
    "analyze_document",
    "build_match_query",
    "fts5_doc_freq",
    "parse_query",
    "rerank",
    "score_boost",
    "snippet",
    "warm_up",
]
