"""Markdown → overlapping chunks (M2).

Tokens are estimated, not tokenised: every CJK ideograph, kana or Hangul syllable counts as
one token and every other character as a quarter token (≈ 4 characters per English token).
A chunk holds at most `chunk_tokens` (default 400) and starts with trailing lines of the
previous chunk covering at least `overlap_tokens` (default 80). Lines longer than a chunk
are sliced. Lines of different classes (active, superseded or time-bound facts, or facts of
different sessions) never share a chunk, so a down-weighted fact cannot drag its neighbours
down with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from ..text.estimate import _CJK, estimate_tokens, weighted_length  # noqa: F401 - re-exported


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    klass: Hashable = None

    @property
    def hash(self) -> str:
        return text_hash(self.text)


def _slice_line(line: str, budget: int) -> list[str]:
    """Cut an over-long line into pieces of at most `budget` weighted characters."""
    pieces, current, size = [], [], 0
    for char in line:
        cost = 4 if _CJK.match(char) else 1
        if current and size + cost > budget:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(char)
        size += cost
    if current:
        pieces.append("".join(current))
    return pieces


def chunk_lines(lines: Sequence[str], *, chunk_tokens: int = 400, overlap_tokens: int = 80,
                classes: Sequence[Hashable] | None = None) -> list[Chunk]:
    budget = max(32, chunk_tokens * 4)
    overlap = max(0, overlap_tokens * 4)
    units: list[tuple[int, str, Hashable]] = []  # (line number, text, class)
    for number, line in enumerate(lines, start=1):
        weight = classes[number - 1] if classes else None
        if weighted_length(line) > budget:
            units += [(number, piece, weight) for piece in _slice_line(line, budget)]
        else:
            units.append((number, line, weight))
    chunks: list[Chunk] = []
    current: list[tuple[int, str, Hashable]] = []
    size = 0

    def emit() -> None:
        if any(text.strip() for _, text, _ in current):
            chunks.append(Chunk(current[0][0], current[-1][0], "\n".join(t for _, t, _ in current), current[0][2]))

    for unit in units:
        cost = weighted_length(unit[1]) + 1
        if current and (size + cost > budget or unit[2] != current[0][2]):
            emit()
            carried = _carry_over(current, overlap) if unit[2] == current[0][2] else []
            current, size = carried, sum(weighted_length(t) + 1 for _, t, _ in carried)
        current.append(unit)
        size += cost
    if current:
        emit()
    return chunks


def _carry_over(lines: list[tuple[int, str, Hashable]], overlap: int) -> list[tuple[int, str, Hashable]]:
    """Trailing lines covering at least `overlap` weighted characters, never the whole chunk."""
    kept: list[tuple[int, str, Hashable]] = []
    size = 0
    for unit in reversed(lines[1:]):
        if size >= overlap:
            break
        kept.insert(0, unit)
        size += weighted_length(unit[1]) + 1
    return kept if size >= overlap or kept else []
