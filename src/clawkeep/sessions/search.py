"""sessions_search (S5): full-text search over user and assistant text of visible sessions.

The query text is analysed into terms (a typed `TextQuery`, never raw FTS syntax); candidates
come from the store already restricted to the caller's visible sessions (filter before the
limit), then are re-ranked as dialogue (`dialogue_rank`: the replies to matching messages,
the speaker the question names, the days the matches cluster on, the dates the question
names) and cut to `limit`. The optional rerank stage (`tools.sessions.search.rerank`, off by
default; the rule memory_search uses, models/rerank_stage.py) then reorders the first
`candidates` hits with a cross-encoder reading each hit's message text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .. import api
from ..errors import InputError
from ..models import rerank_stage
from ..redact import redact_secrets
from ..runtime import Runtime
from ..storage import AgentStore, SearchRow, TextMatch, TextQuery
from ..text.query import SearchQuery, holds_every_term, parse_query, rerank, rerank_best, rerank_ceiling, rerank_score
from ..text.snippet import snippet
from ..timeutil import to_iso
from ..validation import MAX_SESSIONS_SEARCH
from ..visibility import Caller
from . import transcript
from .dialogue_rank import dialogue_rank, is_question

MAX_QUERY_CHARS = 4096
DEFAULT_LIMIT = 10
MAX_LIMIT = MAX_SESSIONS_SEARCH
CANDIDATES = 100  # re-ranked per store before the final cut
# The rerank stage reads a hit's message text, whitespace folded, cut to maxTokens × this many
# characters (more than the tokenizer keeps of English text) so that a long message costs no more
# to tokenize or send than a short one.
CHARS_PER_TOKEN = 6


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


def sessions_search(rt: Runtime, query: str, caller: Caller = Caller(), *, limit: int | None = None
                    ) -> api.SearchResult:
    text, limit = validate_query(query, limit)
    scope = rt.scope(caller)
    parsed = parse_query(text)
    if parsed is None:  # only stop words or punctuation: nothing to look for
        return api.SearchResult(hits=[])
    stores = rt.stores_in(scope)
    # One term selection over all searched stores, so scores stay comparable between them.
    if len(parsed.terms) == 1 or all(term.exact for term in parsed.terms):
        # Identifiers and quoted phrases are always kept, and so is a lone term; its idf weight
        # would only scale a coverage of 0 or 1 into the same 0 or 1: no df lookup needed.
        selected = parsed
    else:
        selected = parsed.select(lambda tokens: _summed_df(stores, tokens),
                                 sum(store.indexed_documents() for store in stores))
    reranking = rt.config.tools.sessions.search.rerank
    reranked = reranking.provider != "none" and rerank_stage.applies(text)
    # the rerank stage reorders the first `candidates` hits: find that many, show `limit`
    rows = _ranked_rows(stores, selected, text, scope.session_ids, max(limit, reranking.candidates) if reranked
                        else limit)
    if not reranked:
        return api.SearchResult(hits=[_hit(row, selected) for row in rows])
    return api.SearchResult(hits=_reranked_hits(text, rows, selected, reranking)[:limit])


def _ranked_rows(stores: list[AgentStore], selected: SearchQuery, text: str, session_ids: frozenset[str] | None,
                 limit: int) -> list[SearchRow]:
    """The first `limit` rows in the search's own order."""
    if is_question(text, selected):  # a question is ranked as dialogue (dialogue_rank.py)
        found: list[tuple[AgentStore, SearchRow]] = []
        wanted = TextQuery.of(selected.terms)
        for store in stores:
            found += [(store, row) for row in store.search(wanted, session_ids=session_ids, limit=CANDIDATES)]
        return dialogue_rank(found, selected, text)[:limit]
    # a keyword lookup: ranked by its words alone, reading only what the answer needs
    return best_rows(stores, selected, session_ids, limit)


def _reranked_hits(text: str, rows: list[SearchRow], selected: SearchQuery, reranking: Any) -> list[api.SearchHit]:
    """`rows` through the rerank stage; a hit it scored carries `rerankScore`."""
    passages = {id(row): _passage(row, reranking.max_tokens * CHARS_PER_TOKEN) for row in rows[:reranking.candidates]}
    scored: dict[int, float] = {}
    rows = rerank_stage.rerank(text, rows, lambda row: passages.get(id(row), ""), reranking,
                               lambda row, value: scored.__setitem__(id(row), value))
    return [_hit(row, selected, scored.get(id(row))) for row in rows]


def _passage(row: SearchRow, max_chars: int) -> str:
    """What the cross-encoder reads of a hit: its message's text, whitespace folded, cut to
    `max_chars`, secrets redacted (a remote endpoint receives it)."""
    text = transcript.searchable_text(row.entry.content)[:max_chars * 2]
    return _redacted(" ".join(text.split())[:max_chars])


def best_rows(stores: list[AgentStore], query: SearchQuery, session_ids: frozenset[str] | None,
              limit: int) -> list[SearchRow]:
    """The first `limit` of `rerank` over each store's best CANDIDATES matches, reading only
    what that answer needs.

    Re-ranking adds to a row's bm25 share (its rank over the best rank: lower ranks give lower
    shares) a boost that is largest for rows holding every term. So rows past the first
    `limit` of a store can reach the answer only if that most boost lifts them over the
    `limit`-th best score found so far: when it cannot, their tokens are never read. One term:
    every row holds it, so the first `limit` rows are the answer (checked, one query fetches
    them whole). Several: the ranking is read for CANDIDATES rows; when the backend hands their
    tokens over with it (SQLite does) all of them are re-ranked in one loop (the reference
    answer; the bound would rarely spare any), otherwise the tokens of the first `limit` and,
    only if the bound says so, of the rest are read. Entries only for the rows shown.
    """
    wanted = TextQuery.of(query.terms)
    if len(query.terms) == 1:
        rows = _one_term_rows(stores, wanted, query, session_ids, limit)
        if rows is not None and len(stores) == 1:
            return rows  # already in re-ranked order: same boost for all, bm25 order, ties in store order
        if rows is not None:
            return rerank(rows, query, tokens=lambda r: r.tokens, rank=lambda r: r.score)[:limit]
    ranked = [(store, store.rank_matches(wanted, session_ids=session_ids, limit=CANDIDATES)) for store in stores]
    if not any(matches for _store, matches in ranked):
        return []
    every = [m for _s, matches in ranked for m in matches]
    if all(m.tokens is not None for m in every):  # tokens came with the ranking (SQLite does)
        # Re-ranking them all is the reference answer, and as cheap as the bound below.
        return _rows_in_order(_rerank_matches(every, query)[:limit], ranked)
    best = rerank_best(matches[0].score for _store, matches in ranked if matches)
    for store, matches in ranked:
        store.load_tokens(matches[:limit])
    top = _settled_top([m for _s, matches in ranked for m in matches[:limit]], ranked, query, best, limit)
    if top is None:
        for store, matches in ranked:
            store.load_tokens(matches)
        top = _rerank_matches(every, query)[:limit]
    return _rows_in_order(top, ranked)


def _one_term_rows(stores: list[AgentStore], wanted: TextQuery, query: SearchQuery,
                   session_ids: frozenset[str] | None, limit: int) -> list[SearchRow] | None:
    """Each store's first `limit` rows, when every one holds the term (else None: re-rank more)."""
    rows: list[SearchRow] = []
    for store in stores:
        first = store.search(wanted, session_ids=session_ids, limit=limit)
        # (a positive best score would turn the bm25 share around: never seen, but then no shortcut)
        if (first and first[0].score > 0) or not all(holds_every_term(row.tokens, query) for row in first):
            return None
        rows += first
    return rows


def _settled_top(loaded: list[TextMatch], ranked: list[tuple[AgentStore, list[TextMatch]]], query: SearchQuery,
                 best: float, limit: int) -> list[TextMatch] | None:
    """The first `limit` of the re-ranking of every match, from the `loaded` ones (each store's
    first `limit`, tokens read) when no unread match can reach them; else None."""
    unread = [matches[limit].score for _store, matches in ranked if len(matches) > limit]
    top = _rerank_matches(loaded, query)[:limit]
    if not unread:
        return top
    if best > 0 or len(top) < limit:
        return None
    # strictly above: an unread row scoring the same might come first in the full list's order
    if rerank_score(top[-1].tokens or "", top[-1].score, query, best) > max(rerank_ceiling(r, query, best)
                                                                           for r in unread):
        return top
    return None


def _rerank_matches(matches: list[TextMatch], query: SearchQuery) -> list[TextMatch]:
    return rerank(matches, query, tokens=lambda m: m.tokens or "", rank=lambda m: m.score)


def _rows_in_order(top: list[TextMatch], ranked: list[tuple[AgentStore, list[TextMatch]]]) -> list[SearchRow]:
    """The full rows of `top` (matches of several stores), in its order."""
    if len(ranked) == 1:
        ranked[0][0].load_rows(top)
    for store, matches in ranked if len(ranked) > 1 else ():
        mine = {id(m) for m in matches}
        store.load_rows([m for m in top if id(m) in mine])
    return [m.row for m in top if m.row is not None]


def _summed_df(stores: list[AgentStore], tokens: Sequence[str]) -> dict[str, int]:
    total: dict[str, int] = {}
    for store in stores:
        for token, count in store.document_frequency(tokens).items():
            total[token] = total.get(token, 0) + count
    return total


def _hit(row: SearchRow, query: SearchQuery, rerank_score: float | None = None) -> api.SearchHit:
    entry = row.entry  # decoded once (a property)
    return api.SearchHit(session_key=row.session_key, session_id=entry.session_id, message_id=entry.entry_id,
                         role=entry.role, timestamp=to_iso(entry.timestamp),
                         snippet=_redacted(snippet(transcript.searchable_text(entry.content), query)),
                         **({"client_message_id": entry.client_id} if entry.client_id else {}),
                         **({"rerank_score": round(rerank_score, 4)} if rerank_score is not None
                            and math.isfinite(rerank_score) else {}))


@lru_cache(maxsize=4096)
def _redacted(excerpt: str) -> str:
    """A snippet with its secrets redacted. `redact_secrets` is a pure function of the text, so
    an excerpt shown before (the same message found again) is not scanned again; the cache holds
    only the redacted output (snippets are about 160 characters: at most a few MiB)."""
    return redact_secrets(excerpt)[0]
