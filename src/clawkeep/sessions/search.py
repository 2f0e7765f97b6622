"""sessions_search (S5): full-text search over user and assistant text of visible sessions.

The query text is analysed into terms (a typed `TextQuery`, never raw FTS syntax); candidates
come from the store already restricted to the caller's visible sessions (filter before the
limit), then are re-ranked as dialogue (`dialogue_rank`: the replies to matching messages,
the speaker the question names, the days the matches cluster on, the dates the question
names) and cut to `limit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..redact import redact_secrets
from ..runtime import Runtime
from ..storage import AgentStore, SearchRow, TextQuery
from ..text.query import SearchQuery, parse_query
from ..text.snippet import snippet
from ..timeutil import to_iso
from . import transcript
from .dialogue_rank import dialogue_rank
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
    if all(term.exact for term in parsed.terms):
        selected = parsed  # identifiers and quoted phrases are always kept: no df lookup needed
    else:
        selected = parsed.select(lambda tokens: _summed_df(stores, tokens),
                                 sum(store.indexed_documents() for store in stores))
    found: list[tuple[AgentStore, SearchRow]] = []
    wanted = TextQuery.of(selected.terms)
    for store in stores:
        found += [(store, row) for row in store.search(wanted, session_ids=scope.session_ids, limit=CANDIDATES)]
    ranked = dialogue_rank(found, selected, text)
    return {"hits": [_hit(row, selected) for row in ranked[:limit]]}


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
