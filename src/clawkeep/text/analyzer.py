"""Text analysis for sessions_search (S5): analyse in Python, store plain tokens.

Design notes
------------
Index: analyse here, store a space-joined token string in a plain FTS5 column
(`tokenize = 'unicode61 remove_diacritics 2'`; PostgreSQL: to_tsvector('simple', tokens)).
Tokens are lowercase letters/digits only, so either tokenizer keeps each one whole.

- Words: NFKC, case/diacritic folding, Snowball English stems (deploying -> deploy).
  Identifiers emit their parts, then the joined form unless purely numeric:
  INV-2024-0042 -> inv 2024 0042 inv20240042; userId / user_id -> user id userid.
- CJK (Han, kana, Hangul): overlapping bigrams of each run plus its last character
  (上海出差 -> 上海 海出 出差 差). A fragment query is the phrase of its bigrams, so 上海
  never matches 海上 and a phrase cannot bridge punctuation or spaces; one character is
  the prefix query "上"*. The index needs no dictionary; jieba is loaded lazily and only
  to split long Chinese *query* runs into words (their bigram phrases are OR-ed).

Measured with bench/locomo_fts_proto.py (48 zh/ja/ko sentences, every 2-4 character
substring as a query, 99 hand-picked keywords, reversed pairs such as 海上):
  scheme          fragment recall zh/ja/ko   false hits   keywords    analyse docs/s
  bigram+tail     1.00 / 1.00 / 1.00         0            1.00        ~56k (warm cache)
  unigram         1.00 / 1.00 / 1.00         2 (bridges)  1.00        ~70k
  jieba words     0.41 / 0.79 / 1.00         2 (bridges)  0.96-1.00   ~5k (+1.5 s load)
  raw unicode61   0.00 / 0.00 / 0.26         0            0.00-0.25   (OpenClaw)
  50k synthetic zh docs: bigram 6.1 MB, bm25 top-10 p50 0.04 / 0.05 / 0.47 ms for
  2-char / 4-char / 1-char queries; unigram 3.4 MB but 0.12 / 0.22 / 0.36 ms.
  Chosen: bigram+tail (exact fragments, fast phrase lookups, no dictionary drift).
  English: ~8k messages/s cold (0.12 ms each), ~35k/s once the token cache is warm.

Queries (query.py): never raw FTS syntax; stop words dropped, OR of stems; with df from
fts5vocab the <= 6 rarest terms are kept (terms in > 25% of rows dropped); quoted
phrases and identifiers are always kept and get a rerank bonus. LoCoMo, 1,033 questions:
r@5 0.531 / r@10 0.610 (raw FTS5 OR: 0.435 / 0.514). Latency p50: 0.5 ms per
conversation (~600 rows); at 100k rows 15-30 ms vs 87-149 ms for the raw OR of all
words (shared 2-core machine, so ranges).
"""

from __future__ import annotations

from itertools import chain

from .query import (
    MAX_QUERY_CHARS,
    DocFreq,
    SearchQuery,
    Term,
    parse_query,
    rerank,
    score_boost,
    warm_up,
)
from .snippet import snippet
from .tokens import CHUNK, chunk_tokens, normalise

__all__ = [
    "MAX_QUERY_CHARS",
    "DocFreq",
    "SearchQuery",
    "Term",
    "analyze_document",
    "analyze_lines",
    "parse_query",
    "rerank",
    "score_boost",
    "snippet",
    "warm_up",
]


def analyze_document(text: str) -> str:
    """Space-separated index tokens for one message (store them in the FTS column)."""
    # iter_chunks' steps without its generator and match objects: a quarter of the time, per message
    return " ".join(chain.from_iterable(map(chunk_tokens, CHUNK.findall(normalise(text)))))


def analyze_lines(text: str) -> str:
    """`analyze_document` line by line, each line's tokens on a line of their own: the same
    tokens in the same order (no token spans a line break), so a full-text index stores them
    as they are, and a reader of the stored tokens knows which line holds which token without
    analysing the text again (memory_search's windows)."""
    return "\n".join(analyze_document(line) for line in text.split("\n"))
