"""Token estimates without a tokenizer: a CJK character counts as one token, any other
character as a quarter (used for chunk sizes and context budgets alike)."""

from __future__ import annotations

from ..patterns import lazy

_CJK = lazy(
    "[\u2e80-\u9fff\ua000-\ua4ff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)


def weighted_length(text: str) -> int:
    """Length in quarter-tokens: CJK characters count 4, everything else 1."""
    return len(text) if text.isascii() else len(text) + 3 * len(_CJK.findall(text))


def estimate_tokens(text: str) -> int:
    return (weighted_length(text) + 3) // 4
