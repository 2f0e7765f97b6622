"""Token budgets scaled to the model's context window (C1, C2): one rule for the compaction
threshold, the kept tail, the summary and the memory flush, so every window from 4k up works
with the default settings.

The rule: each configured size is used as is when it fits the window, else capped at a share
of it — reserve (reserveTokensFloor) and kept tail (keepRecentTokens) at most a quarter, the
flush's softThresholdTokens at most a tenth; a compaction summary takes at most an eighth; the
bootstrap files (MEMORY.md, today's and yesterday's notes) together at most a quarter.
Compaction fires at window − reserve, the flush at that threshold − soft threshold, and after a
compaction the context (summary + kept tail) is at most 3/8 of the window plus the system
prompt, well below the point where the flush or compaction would fire again; with the bootstrap
files at their quarter that is 5/8, and after an overflow their quarter leaves the other quarter
of the half the rebuilt context aims at. At 128k and the
defaults nothing is capped (reserve 20000, keep 20000, soft 4000).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import CompactionConfig
from ..text.estimate import estimate_tokens

RESERVE_SHARE = 4  # reserve ≤ window / 4
KEEP_SHARE = 4  # kept tail ≤ window / 4
SUMMARY_SHARE = 8  # summary ≤ window / 8
SOFT_SHARE = 10  # flush soft threshold ≤ window / 10
BOOTSTRAP_SHARE = 4  # bootstrap files together ≤ window / 4
OVERFLOW_SHARE = 2  # after a provider's overflow error the rebuilt context aims at half the window
MIN_SUMMARY = 64  # below this a summary says nothing


@dataclass(frozen=True)
class Budget:
    window: int
    reserve: int  # kept free for the reply and the next message
    keep_recent: int  # recent context a compaction keeps verbatim
    summary: int  # most tokens a compaction summary may take
    flush_soft: int  # the flush runs this many tokens before the compaction threshold
    bootstrap: int  # most tokens the bootstrap files take together in the system prompt

    @classmethod
    def for_window(cls, window: int, settings: CompactionConfig) -> Budget:
        window = max(1, int(window))
        return cls(
            window=window,
            reserve=min(settings.reserve_tokens_floor, window // RESERVE_SHARE),
            keep_recent=min(settings.keep_recent_tokens, window // KEEP_SHARE),
            summary=max(1, window // SUMMARY_SHARE),
            flush_soft=min(settings.memory_flush.soft_threshold_tokens, window // SOFT_SHARE),
            bootstrap=max(1, window // BOOTSTRAP_SHARE),
        )

    @property
    def threshold(self) -> int:
        """Automatic compaction fires when the context reaches this many tokens."""
        return self.window - self.reserve

    @property
    def flush_at(self) -> int:
        return max(0, self.threshold - self.flush_soft)

    def for_overflow(self, overhead: int) -> tuple[int, int]:
        """(kept tail, summary) budgets after the provider refused the context as too long: our
        estimate was low, so the rebuilt context (overhead = system prompt, tool schemas) aims at
        half the window, and keeps at most half the usual tail."""
        room = max(0, self.window // OVERFLOW_SHARE - overhead)
        summary = max(min(MIN_SUMMARY, self.summary), min(self.summary, room // 3))
        keep = max(0, min(self.keep_recent // 2, room - summary))
        return keep, summary


def clip_text(text: str, max_tokens: int, marker: str = " […] ") -> str:
    """`text` cut to about `max_tokens`: head and tail kept, the middle marked."""
    size = estimate_tokens(text)
    if size <= max_tokens:
        return text
    if max_tokens <= estimate_tokens(marker):
        return ""
    chars = max(0, len(text) * max_tokens // size - len(marker))
    head = chars * 2 // 3
    tail = chars - head
    return text[:head] + marker + (text[-tail:] if tail else "")


def clip_lines(lines: Sequence[str], max_tokens: int, min_line: int = 16) -> list[str]:
    """Lines cut to fit `max_tokens` together (a model's input): short lines stay whole, the
    longest are cut first (head and tail kept); when even `min_line` tokens per line is too
    much, the oldest lines go."""
    lines = list(lines)
    sizes = [estimate_tokens(line) + 1 for line in lines]
    if sum(sizes) <= max_tokens:
        return lines
    while lines and sum(min(s, min_line) for s in sizes) > max_tokens:
        lines.pop(0)
        sizes.pop(0)
    lo, hi = 0, max(sizes, default=0)
    while lo < hi:  # the largest per-line cap whose total fits
        mid = (lo + hi + 1) // 2
        if sum(min(s, mid) for s in sizes) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return [line if size <= lo else clip_text(line, max(1, lo - 1)) for line, size in zip(lines, sizes, strict=True)]


def context_overhead(system_parts: Iterable[str], tool_schemas: Iterable[dict[str, Any]] = ()) -> int:
    """Tokens a model call spends besides the history: system prompt parts and tool schemas."""
    return sum(estimate_tokens(part) for part in system_parts) + sum(
        estimate_tokens(json.dumps(schema, ensure_ascii=False)) for schema in tool_schemas)
