"""FTS5 for the SQLite stores: a `TextQuery` rendered as a MATCH expression, and document
frequencies read from an `fts5vocab(<fts>, 'row')` table.

User syntax never reaches FTS5: every phrase is emitted as a double-quoted string of analysed
tokens (alphanumerics; quotes doubled anyway), so `"`, `NEAR(`, `AND`, `*`, `col:x`, `^` and
parentheses in the user's text are just text. A prefix phrase gets FTS5's `*` after the quote.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence

from ..query import TextQuery, TextTerm


def _quote(tokens: Sequence[str], prefix: bool) -> str:
    body = " ".join(tokens).replace('"', '""')  # tokens are alphanumeric; belt and braces
    return f'"{body}"' + ("*" if prefix else "")


def term_expression(term: TextTerm) -> str:
    alts = [_quote(phrase, term.prefix) for phrase in term.phrases]
    return alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")"


def match_expression(query: TextQuery) -> str:
    """The FTS5 MATCH expression of a query: its terms OR-ed (also valid for a `simple` index)."""
    return " OR ".join(term_expression(t) for t in query.terms)


def vocab_doc_freq(conn: sqlite3.Connection, vocab_table: str) -> Callable[[Sequence[str]], Mapping[str, int]]:
    """df lookup over an `fts5vocab(<fts>, 'row')` table (one indexed query per call); tokens
    in no row are absent from the answer."""

    def lookup(tokens: Sequence[str]) -> Mapping[str, int]:
        unique = list(dict.fromkeys(tokens))
        if not unique:
            return {}
        return dict(conn.execute(vocab_sql(vocab_table, len(unique)), unique).fetchall())

    return lookup


def vocab_sql(vocab_table: str, count: int) -> str:
    return f"SELECT term, doc FROM {vocab_table} WHERE term IN ({', '.join('?' for _ in range(count))})"
