"""Typed full-text queries: what every backend receives instead of a query string.

Services parse user text (clawkeep.text) into analysed terms and hand the store a `TextQuery`;
each backend renders it into its own syntax (SQLite: an FTS5 MATCH expression, PostgreSQL: a
tsquery or trigram lookup), so no backend ever sees another backend's query language and no
user syntax reaches one.

Matching: a row matches when it holds at least one phrase of at least one term (an OR of all
phrases; terms group the alternative spellings of one query word so a renderer may keep them
together). A phrase matches when its tokens occur consecutively in the row's analysed token
stream; with `prefix`, the phrase's last token matches any token starting with it. Ranking is
bm25-like: lower scores are better, rarer tokens weigh more.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class _TermLike(Protocol):
    forms: tuple[tuple[str, ...], ...]
    prefix: bool


@dataclass(frozen=True)
class TextTerm:
    """One query word: alternative `phrases` (each a sequence of index tokens, OR-ed)."""

    phrases: tuple[tuple[str, ...], ...]
    prefix: bool = False  # the last token of each phrase is a prefix (a lone CJK character)


@dataclass(frozen=True)
class TextQuery:
    """Rows holding any phrase of any term (see the module doc)."""

    terms: tuple[TextTerm, ...]

    def __post_init__(self) -> None:
        if not self.terms:
            raise ValueError("a text query needs at least one term")

    @classmethod
    def of(cls, terms: Iterable[_TermLike]) -> TextQuery:
        """From analysed terms with `forms` and `prefix` (clawkeep.text's `Term`)."""
        return cls(tuple(TextTerm(tuple(tuple(form) for form in t.forms), bool(t.prefix)) for t in terms))

    @classmethod
    def words(cls, *tokens: str) -> TextQuery:
        """One single-token term per token (tests, simple callers)."""
        return cls(tuple(TextTerm(((tok,),)) for tok in tokens))

    def tokens(self) -> list[str]:
        """Every whole token of the query (prefix tokens excluded), for document-frequency lookups."""
        return sorted({tok for t in self.terms if not t.prefix for phrase in t.phrases for tok in phrase})
