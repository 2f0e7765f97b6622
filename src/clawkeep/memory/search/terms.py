"""The query's terms for memory_search: which words the keyword search ORs, which ones measure
coverage, which ones pick lines — weighted by idf over the index (one df lookup per search)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from ...text.query import MIN_DF_DOCUMENTS, SearchQuery, parse_query
from ..index import MemoryIndex

KEYWORD_TERMS = 8  # rarest query terms OR-ed into the keyword search ...
COMMON_RATIO = 0.5  # ... each found in at most this share of the chunks
WINDOW_TERMS = 16  # query terms that weigh each line of a result (see windows.py) ...
WINDOW_COMMON_RATIO = 0.75  # ... each found in at most this share of the chunks
# Below this many chunks no term counts as common (text.query.MIN_DF_DOCUMENTS says why): in an
# index of 20 chunks, a key word in 11 of them ("下周" in a small install's notes) was dropped from
# the search and recall found nothing. A chunk holds a dozen turns, so 50 chunks ≈ 600 turns.
SMALL_INDEX = MIN_DF_DOCUMENTS
POSTINGS_BUDGET = 20_000  # postings an OR search may read (FTS5 reads them all): ~15 ms here
_COUNTS: dict[tuple[str, int], int] = {}
_COUNTS_LOCK = threading.Lock()


@dataclass
class Terms:
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
    small: bool = False  # fewer than SMALL_INDEX chunks: chunk counts say nothing about a word

    @classmethod
    def of(cls, index: MemoryIndex, text: str, generation: int | None = None) -> Terms | None:
        """`generation`: the index's, when the caller has read it (`MemoryIndex.checked_generation`)."""
        parsed = parse_query(text)
        if parsed is None:
            return None
        tokens = sorted({tok for t in parsed.terms if not t.prefix for form in t.forms for tok in form})
        counts = index.store.document_frequency(tokens) if tokens else {}

        def df(wanted: Any) -> dict[str, int]:
            return {tok: counts.get(tok, 0) for tok in wanted}

        total = chunk_count(index, generation)
        small = total < SMALL_INDEX
        search = _within_budget(parsed.select(df, total, max_terms=KEYWORD_TERMS,
                                              common_ratio=1.0 if small else COMMON_RATIO), counts)
        lines = parsed.select(df, total, max_terms=WINDOW_TERMS, common_ratio=1.0 if small else WINDOW_COMMON_RATIO)
        missing = tuple(t for t in parsed.terms if not t.prefix
                        and sum(min(counts.get(tok, 0) for tok in form) for form in t.forms) == 0)
        absent = math.log(1.0 + (max(total, 1) + 0.5) / 0.5)
        return cls(search, _with(search, missing, absent), _with(lines, missing, absent), small)


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



def chunk_count(index: MemoryIndex, generation: int | None = None) -> int:
    """Chunks in the index, counted once per index generation (a count scans the table)."""
    key = (getattr(index.store, "path", ""), index.store.generation() if generation is None else generation)
    with _COUNTS_LOCK:
        count = _COUNTS.get(key)
    if count is None:
        count = index.store.chunk_count()
        with _COUNTS_LOCK:
            for stale in [k for k in _COUNTS if k[0] == key[0]]:
                del _COUNTS[stale]
            _COUNTS[key] = count
    return count

