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
    words: dict[str, int] = {}
    hits: list[tuple[int, int, int]] = []
    for i, term in enumerate(query.terms):
        if has_cjk(term.surface):
            for frag in CJK_RUN.findall(term.surface):
                hits.extend((s, s + len(frag), i) for s in _find_all(norm, frag))
        for form in term.forms:
            words.update((tok, i) for tok in form if not has_cjk(tok))
    # Stem each distinct word once, and only the words that start like a query token (Snowball
    # never changes a word's first letter; other tokens are their own stem); then find where the
    # words that stem to a query token occur.
    distinct: set[str] = set()
    if words:
        distinct = set(norm.translate(_ASCII_GAPS).split() if norm.isascii() else _WORD.findall(norm))
    initials = {tok[:1] for tok in words}
    for word in distinct:
        if word[:1] in initials and (i := words.get(stem(word))) is not None:
            hits.extend((s, s + len(word), i) for s in _find_all(norm, word) if _whole_word(norm, s, s + len(word)))
    hits.sort()
    del hits[_MAX_HITS:]  # the window search is quadratic in hits
    return [(origin[s], origin[e - 1] + 1, i) for s, e, i in hits]


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
