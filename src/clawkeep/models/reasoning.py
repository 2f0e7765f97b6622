"""A model's reasoning (`<think>…</think>`, thinking, reasoning blocks), which is never returned,
stored or indexed: every caller of a chat model — the reply, the memory flush, the compaction
summary, Active Memory's recall — takes the text through `strip_reasoning`."""

from __future__ import annotations

import re

REASONING = re.compile(r"<(think|thinking|reasoning)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
UNCLOSED = re.compile(r"<(think|thinking|reasoning)\b[^>]*>.*\Z", re.IGNORECASE | re.DOTALL)
CLOSE_ONLY = re.compile(r"\A.*?</(think|thinking|reasoning)\s*>", re.IGNORECASE | re.DOTALL)


def strip_reasoning(text: str) -> str:
    """The reply without the model's reasoning: `<think>…</think>` (and thinking/reasoning) blocks,
    a block left open at the end, or the reasoning before a lone closing tag. Reasoning is never
    returned, stored or indexed."""
    cleaned = REASONING.sub("", text or "")
    cleaned = UNCLOSED.sub("", cleaned)
    if CLOSE_ONLY.match(cleaned):
        cleaned = CLOSE_ONLY.sub("", cleaned, count=1)
    return cleaned.strip()
