"""Text analysis for search: CJK-aware tokens, query terms (never query syntax), snippets (S5)."""

from .analyzer import (
    SearchQuery,
    Term,
    analyze_document,
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
    "parse_query",
    "rerank",
    "score_boost",
    "snippet",
    "warm_up",
]
