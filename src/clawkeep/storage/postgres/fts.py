"""Full-text search on PostgreSQL with exactly SQLite's analysis.

clawkeep.text analyses a document into space-separated tokens (lowercased, stemmed, CJK as
overlapping bigrams); SQLite stores them in a `unicode61` FTS5 table. Here the same tokens become
a tsvector built token by token (each keeps its position, so phrases match as in FTS5), never
through a PostgreSQL parser or dictionary: what is indexed is exactly what SQLite indexes.

A `TextQuery` renders as a tsquery: a phrase is `a <-> b <-> c`, a prefix phrase ends in `:*`,
terms are OR-ed. Lexemes are always quoted, so user text never becomes tsquery syntax.

Ranking (lower is better, like FTS5's bm25): minus the sum over the query's terms of
idf(term) × ts_rank(document, term, normalised by length), with each term's document frequency
counted by the GIN index in the same statement.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..query import TextQuery, TextTerm

MAX_POSITION = 16383  # tsvector positions stop here
MAX_TOKENS = 60_000  # a tsvector is at most 1 MB: a longer document is indexed by its first tokens


def lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: str) -> str:
    """`'tok':1,4 'tok2':2 …` for the analysed text `tokens`."""
    positions: dict[str, list[str]] = {}
    for n, token in enumerate(tokens.split()[:MAX_TOKENS], start=1):
        at = positions.setdefault(token, [])
        if len(at) < 256:  # a lexeme keeps at most 256 positions
            at.append(str(min(n, MAX_POSITION)))
    return " ".join(f"{lexeme(tok)}:{','.join(at)}" for tok, at in positions.items())


def phrase(tokens: Sequence[str], prefix: bool) -> str:
    parts = [lexeme(t) for t in tokens]
    if prefix:
        parts[-1] += ":*"
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


def term_query(term: TextTerm) -> str:
    alts = [phrase(p, term.prefix) for p in term.phrases if p]
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def query_literal(query: TextQuery) -> str:
    return " | ".join(term_query(t) for t in query.terms)


def ranked_matches(table: str, query: TextQuery, where: str) -> tuple[str, list[str]]:
    """SQL for (id, score, tokens) of the rows of `table` (columns id, tsv, tokens) matching
    `query` and `where` (a condition on alias `m`, its parameters bound right after the query
    literal: `params[n_terms]`), best first — a `LIMIT %s` follows."""
    terms = [term_query(t) for t in query.terms]
    # each df is a bare GIN count (no row's tsvector is read, so nothing is detoasted)
    counts = ", ".join(f"(SELECT count(*) FROM {table} WHERE tsv @@ %s::tsquery) AS d{i}" for i in range(len(terms)))
    idf = " + ".join(f"ln(1 + (n.total - n.d{i} + 0.5) / (n.d{i} + 0.5)) * ts_rank(m.tsv, %s::tsquery, 1)"
                     for i in range(len(terms)))
    sql = (f"WITH n AS MATERIALIZED (SELECT {counts}, (SELECT coalesce(max(id), 0) FROM {table}) AS total), "
           f"m AS (SELECT id, tsv, tokens FROM {table} m WHERE m.tsv @@ %s::tsquery{where}) "
           f"SELECT m.id, -({idf}) AS score, m.tokens FROM m, n ORDER BY score, m.id")
    return sql, [*terms, query_literal(query), *terms]


def df_query(table: str, tokens: Sequence[str]) -> tuple[str, list[str]]:
    """SQL for the number of rows holding each token (one GIN count each, in one statement)."""
    counts = ", ".join(f"(SELECT count(*) FROM {table} WHERE tsv @@ %s::tsquery)" for _ in tokens)
    return f"SELECT {counts}", [lexeme(t) for t in tokens]
