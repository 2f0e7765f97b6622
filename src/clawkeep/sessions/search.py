"""sessions_search (S5): full-text search over user and assistant text of visible sessions.

The query text is analysed into terms (a typed `TextQuery`, never raw FTS syntax); candidates
come from the store already restricted to the caller's visible sessions (filter before the
limit), then are re-ranked and cut to `limit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..redact import redact_secrets
from ..runtime import Runtime
from ..storage import AgentStore, SearchRow, TextQuery
from ..text.query import SearchQuery, holds_every_term, parse_query, rerank
from ..text.snippet import snippet
from ..timeutil import to_iso
from . import transcript
from ..visibility import Caller

MAX_QUERY_CHARS = 4096
DEFAULT_LIMIT = 10
MAX_LIMIT = 25
CANDIDATES = 100  # re-ranked per store before the final cut


def validate_query(query: str, limit: int | None) -> tuple[str, int]:
    text = (query or "").strip()
    if not text:
        raise InputError("search query is empty; give at least one word")
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(f"search query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    if limit is None:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit {limit} is out of range; allowed 1-{MAX_LIMIT}")
    return text, limit


def sessions_search(rt: Runtime, query: str, caller: Caller = Caller(), *, limit: int | None = None) -> dict[str, Any]:
    text, limit = validate_query(query, limit)
    scope = rt.scope(caller)
    parsed = parse_query(text)
    if parsed is None:  # only stop words or punctuation: nothing to look for
        return {"hits": []}
    stores = rt.stores_in(scope)
    # One term selection over all searched stores, so scores stay comparable between them.
    if len(parsed.terms) == 1 or all(term.exact for term in parsed.terms):
        # Identifiers and quoted phrases are always kept, and so is a lone term; its idf weight
        # would only scale a coverage of 0 or 1 into the same 0 or 1: no df lookup needed.
        selected = parsed
    else:
        selected = parsed.select(lambda tokens: _summed_df(stores, tokens),
                                 sum(store.indexed_documents() for store in stores))
    rows = _candidates(stores, selected, scope.session_ids, limit)
    ranked = rerank(rows, selected, tokens=lambda r: r.tokens, rank=lambda r: r.score)
    return {"hits": [_hit(row, selected) for row in ranked[:limit]]}


def _candidates(stores: list[AgentStore], query: SearchQuery, session_ids: frozenset[str] | None,
                limit: int) -> list[SearchRow]:
    """Each store's best CANDIDATES rows for re-ranking, or only its best `limit` when that
    provably gives the same answer.

    Re-ranking adds to a row's bm25 share a boost that is largest for rows holding every term.
    When a store's first `limit` rows all hold every term, no row after them can overtake one
    of them (its bm25 share is no higher, its boost no larger, and ties keep store order), so
    the other candidates would be fetched, decoded and scored for nothing. With one term that
    is every row; with several it is rare, so those go straight to CANDIDATES.
    """
    wanted = TextQuery.of(query.terms)
    rows: list[SearchRow] = []
    for store in stores:
        if len(query.terms) == 1 and limit < CANDIDATES:
            first = store.search(wanted, session_ids=session_ids, limit=limit)
            # (a positive best score would turn the bm25 share around: never seen, but then no shortcut)
            if not (first and first[0].score > 0) and all(holds_every_term(row.tokens, query) for row in first):
                rows += first
                continue
        rows += store.search(wanted, session_ids=session_ids, limit=CANDIDATES)
    return rows


def _summed_df(stores: list[AgentStore], tokens: Sequence[str]) -> dict[str, int]:
    total: dict[str, int] = {}
    for store in stores:
        for token, count in store.document_frequency(tokens).items():
            total[token] = total.get(token, 0) + count
    return total


def _hit(row: SearchRow, query: SearchQuery) -> dict[str, Any]:
    text = transcript.plain_text(row.entry.content)
    excerpt, _ = redact_secrets(snippet(text, query))
    hit = {"sessionKey": row.session_key, "sessionId": row.entry.session_id, "messageId": row.entry.entry_id,
           "role": row.entry.role, "timestamp": to_iso(row.entry.timestamp), "snippet": excerpt}
    if row.entry.client_id:
        hit["clientMessageId"] = row.entry.client_id
    return hit
