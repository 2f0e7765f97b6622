"""Short excerpts of the original text around the best match (works for CJK too)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .query import SearchQuery, parse_query
from .tokens import CJK_RUN, fold, has_cjk, normalise, stem

ELLIPSIS = "\u2026"
_WORD = re.compile(r"[^\W_]+")
# ASCII text: every character that is not a letter or digit becomes a space (its _WORD runs are
# then what str.split returns).
_ASCII_GAPS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
_BOUNDARY_SLACK = 16  # how far a cut may move to avoid splitting a word
_MAX_HITS = 400


def snippet(text: str, query: str | SearchQuery | None, width: int = 160) -> str:
    """About `width` characters of `text` around the densest cluster of query terms.

    Whitespace is collapsed; cut ends get an ellipsis. With no match the text's start is
    returned, so a hit always shows something.
    """
    flat = " ".join(text.split())  # whitespace runs collapsed to one space (str.split: no regex pass)
    if len(flat) <= width:
        return flat
    parsed = parse_query(query) if isinstance(query, str) else query
    hits = _hits(flat, parsed) if parsed else []
    start, end = _window(hits, len(flat), width)
    start, end = _snap(flat, start, end)
    body = flat[start:end].strip()
    return (ELLIPSIS if start > 0 else "") + body + (ELLIPSIS if end < len(flat) else "")


def _hits(text: str, query: SearchQuery) -> list[tuple[int, int, int]]:
    """(start, end, term number) of every query-term occurrence, in original offsets."""
    norm, origin = _normalised_with_offsets(text)
    fragments, words, initials = _plan(query)
    hits: list[tuple[int, int, int]] = []
    for i, frag in fragments:
        hits.extend((s, s + len(frag), i) for s in _find_all(norm, frag))
    if words:
        # The words that stem to a query token: every distinct word of the text is stemmed
        # once per process (`_stems`), so finding them is set arithmetic, not a loop.
        distinct = set(norm.translate(_ASCII_GAPS).split() if norm.isascii() else _WORD.findall(norm))
        # (Snowball never changes a word's first letter; other tokens are their own stem.)
        for word in _stems.matching(distinct, words):
            if word[:1] in initials:
                i = words[stem(word)]
                hits.extend((s, s + len(word), i) for s in _find_all(norm, word)
                            if _whole_word(norm, s, s + len(word)))
    hits.sort()
    del hits[_MAX_HITS:]  # the window search is quadratic in hits
    if isinstance(origin, range):  # offsets unchanged (origin[s] == s)
        return hits
    return [(origin[s], origin[e - 1] + 1, i) for s, e, i in hits]


def _plan(query: SearchQuery) -> tuple[tuple[tuple[int, str], ...], dict[str, int], frozenset[str]]:
    """What `_hits` looks for, once per query: (term number, CJK fragment) pairs, {word token:
    term number} (a later term's number wins, as it always did) and the tokens' first letters."""
    plan = query.__dict__.get("_snippet_plan")
    if plan is None:
        fragments: list[tuple[int, str]] = []
        words: dict[str, int] = {}
        for i, term in enumerate(query.terms):
            if has_cjk(term.surface):
                fragments.extend((i, frag) for frag in CJK_RUN.findall(term.surface))
            for form in term.forms:
                words.update((tok, i) for tok in form if not has_cjk(tok))
        plan = (tuple(fragments), words, frozenset(tok[:1] for tok in words))
        object.__setattr__(query, "_snippet_plan", plan)  # frozen dataclass: cached like its cached_property
    return plan


class _StemIndex:
    """Words seen by snippets, grouped by their stem: `matching` answers "which of these words
    stem to one of those tokens" with set operations, stemming only words never seen before.
    Starts over past MAX_WORDS (memory stays bounded; a word seen again is stemmed again). The
    state is one tuple swapped whole, so a thread that read it keeps a consistent pair."""

    MAX_WORDS = 200_000

    def __init__(self) -> None:
        self._state: tuple[set[str], dict[str, set[str]]] = (set(), {})

    def matching(self, distinct: set[str], tokens: dict[str, int]) -> set[str]:
        known, by_stem = self._state
        new = distinct - known
        if new:
            if len(known) + len(new) > self.MAX_WORDS:
                known, by_stem = self._state = (set(), {})
                new = distinct
            for word in new:
                by_stem.setdefault(stem(word), set()).add(word)
            known |= new
        found: set[str] = set()
        for tok in tokens:
            surfaces = by_stem.get(tok)
            if surfaces:
                found |= distinct & surfaces
        return found


_stems = _StemIndex()


def _whole_word(text: str, start: int, end: int) -> bool:
    """text[start:end] is a whole `_WORD` run: no letter or digit on either side ([^\\W_] is
    exactly str.isalnum)."""
    return (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum())


def _normalised_with_offsets(text: str) -> tuple[str, Sequence[int]]:
    """Per-character NFKC + fold, remembering each output character's source offset."""
    if text.isascii():  # NFKC changes no ASCII character and casefold maps each to one character
        return text.lower(), range(len(text))
    pieces = [_normalised_char(ch) for ch in text]
    norm = "".join(pieces)
    if len(norm) == len(text) and "" not in pieces:  # every character stayed one character
        return norm, range(len(text))
    origin: list[int] = []
    for pos, piece in enumerate(pieces):
        origin.extend([pos] * len(piece))
    return norm, origin


@lru_cache(maxsize=16384)
def _normalised_char(ch: str) -> str:
    """One character NFKC-normalised, then folded unless it is CJK (cached: chat reuses few
    thousand characters, and this was most of a snippet's cost)."""
    norm = normalise(ch)
    return norm if has_cjk(norm) else fold(norm)


def _find_all(haystack: str, needle: str) -> list[int]:
    found, pos = [], haystack.find(needle)
    while pos >= 0:
        found.append(pos)
        pos = haystack.find(needle, pos + 1)
    return found


def _window(hits: list[tuple[int, int, int]], length: int, width: int) -> tuple[int, int]:
    """The width-wide window holding the most distinct terms (then most hits), centred."""
    if not hits:
        return 0, width
    best, best_score = (hits[0][0], hits[0][1]), (0, 0)
    for a, (start, _, _) in enumerate(hits):
        inside = [h for h in hits[a:] if h[1] <= start + width]
        score = (len({h[2] for h in inside}), len(inside))
        if score > best_score:
            best, best_score = (start, max(h[1] for h in inside)), score
    pad = max(0, width - (best[1] - best[0])) // 2
    start = max(0, min(best[0] - pad, length - width))
    return start, min(length, start + width)


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """Move cuts to the nearest space so words are not split (CJK can be cut anywhere)."""
    if start > 0 and _in_word(text, start):
        space = text.find(" ", start, start + _BOUNDARY_SLACK)
        start = space + 1 if space >= 0 else start
    if end < len(text) and _in_word(text, end):
        space = text.rfind(" ", end - _BOUNDARY_SLACK, end)
        end = space if space > start else end
    return start, end


def _in_word(text: str, cut: int) -> bool:
    """True when a cut before text[cut] would split a non-CJK word."""
    left, right = text[cut - 1], text[cut]
    return left.isalnum() and right.isalnum() and not (has_cjk(left) or has_cjk(right))
