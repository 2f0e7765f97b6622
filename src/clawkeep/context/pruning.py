"""Context pruning (S9), in memory only: the transcript is never rewritten.

`cache-ttl` mode: once the provider's prompt cache has expired (the TTL since the last model
call), old tool results are soft-trimmed (head … tail) and, when the context is large,
hard-cleared to a placeholder. Conversation text is never touched; nothing before the first
user message and nothing in the last `keepLastAssistants` assistant turns is pruned.

The image replay view keeps the last 3 completed turns byte-identical and replaces older,
already-processed images and media references with fixed placeholders — image and media
blocks, and the text references user and tool messages carry (`[media attached: …]`,
`[Image: source: …]`, `media://…`); the current turn's attachments stay.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ..config import ContextPruningConfig, parse_duration

CLEARED = "[Old tool result content cleared]"
IMAGE_REMOVED = "[image data removed - already processed by model]"
MEDIA_REMOVED = "[media reference removed - already processed by model]"
Message = dict[str, Any]


def pruning_active(settings: ContextPruningConfig, provider: str | None) -> bool:
    if settings.mode is None:
        return provider == "anthropic"
    return settings.mode == "cache-ttl"


def _protected_indexes(messages: list[Message], keep_last_assistants: int) -> set[int]:
    protected: set[int] = set()
    first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), len(messages))
    protected.update(range(first_user))
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if keep_last_assistants and assistants:
        start = assistants[-keep_last_assistants] if len(assistants) >= keep_last_assistants else assistants[0]
        protected.update(range(start, len(messages)))
    return protected


def _tool_result_chars(message: Message) -> int:
    return sum(len(str(b.get("content", ""))) for b in message["content"] if b.get("type") == "toolResult")


def prune_tool_results(messages: list[Message], settings: ContextPruningConfig, *, now_ms: int,
                       last_model_call_ms: int | None, context_tokens: int, window_tokens: int) -> list[Message]:
    """Return a pruned copy; the input list and its messages are left untouched."""
    ttl_ms = parse_duration(settings.ttl).total_seconds() * 1000
    if last_model_call_ms is not None and now_ms - last_model_call_ms < ttl_ms:
        return messages  # the cache is still warm: pruning would only cost a cache miss
    if context_tokens < settings.soft_trim_ratio * window_tokens:
        return messages
    protected = _protected_indexes(messages, settings.keep_last_assistants)
    prunable = [i for i, m in enumerate(messages) if i not in protected and _tool_result_chars(m)]
    hard = (context_tokens >= settings.hard_clear_ratio * window_tokens
            and sum(_tool_result_chars(messages[i]) for i in prunable) >= settings.min_prunable_tool_chars)
    out = list(messages)
    for i in prunable:
        out[i] = _prune_message(messages[i], settings, hard)
    return out


def _prune_message(message: Message, settings: ContextPruningConfig, hard: bool) -> Message:
    pruned = copy.deepcopy(message)
    for block in pruned["content"]:
        if block.get("type") != "toolResult":
            continue
        text = str(block.get("content", ""))
        if hard:
            block["content"] = CLEARED
        elif len(text) > settings.soft_trim.max_chars:
            trim = settings.soft_trim
            block["content"] = f"{text[:trim.head_chars]}\n...\n{text[len(text) - trim.tail_chars:]}"
    return pruned


def image_replay_view(messages: list[Message], keep_turns: int = 3) -> list[Message]:
    """Older images and media references become placeholders; the last `keep_turns` completed
    turns and the current turn stay byte-identical (same objects). A media reference is a block
    (`image`, `media`) or, in user and tool messages, text that points at an attachment:
    `[media attached: …]`, `[Image: source: …]`, `media://…`."""
    user_starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not user_starts:
        return messages
    current = user_starts[-1]
    completed_turn_starts = user_starts[:-1] if messages[-1]["role"] == "user" else user_starts
    if messages[-1]["role"] != "user":
        current = len(messages)  # the last turn is complete: no attachments are "current"
    keep_from = completed_turn_starts[-keep_turns] if len(completed_turn_starts) >= keep_turns else 0
    keep_from = min(keep_from, current)
    out = list(messages)
    for i in range(keep_from):
        replayed = _replayed(messages[i])
        if replayed is not None:
            out[i] = replayed
    return out


# Text references to an attachment that a channel or the media pipeline writes into a message
# (OpenClaw's prompt-hydration markers): re-sent verbatim they cost tokens and can make a vision
# model fetch the file again on every turn.
_MEDIA_TEXT = re.compile(
    r"\[media attached(?:\s+\d+/\d+)?:[^\]\n]{1,2000}\]"  # [media attached: a.jpg (image/jpeg) | https://…], [… 2/3: …]
    r"|\[Image:\s*source:[^\]\n]{1,2000}\]"  # [Image: source: …]
    r"|\bmedia://[^\s\]]*[^\s\].,;:!?)'\"]",  # media://inbound/abc.png (not the sentence's punctuation)
    re.IGNORECASE)  # bounded inside the brackets: an unclosed "[media attached:" costs linear time
_TEXT_REFERENCE_ROLES = ("user", "tool", "toolResult")  # an assistant's own words are never rewritten


def _replayed(message: Message) -> Message | None:
    """The message with its media replaced by placeholders, or None when it holds none."""
    content = message["content"]
    text_refs = message["role"] in _TEXT_REFERENCE_ROLES
    if isinstance(content, str):
        text = _MEDIA_TEXT.sub(MEDIA_REMOVED, content) if text_refs else content
        return {**message, "content": text} if text != content else None
    blocks = [_placeholder(b, text_refs) for b in content]
    if all(new is old for new, old in zip(blocks, content, strict=True)):
        return None
    return {**message, "content": blocks}


def _is_media(block: dict[str, Any]) -> bool:
    return block.get("type") in ("image", "media")


def _placeholder(block: dict[str, Any], text_refs: bool = False) -> dict[str, Any]:
    if block.get("type") == "image" and "data" in block:
        return {"type": "text", "text": IMAGE_REMOVED}
    if _is_media(block):
        return {"type": "text", "text": MEDIA_REMOVED}
    if not text_refs:
        return block
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        text = _MEDIA_TEXT.sub(MEDIA_REMOVED, block["text"])
        return {**block, "text": text} if text != block["text"] else block
    if block.get("type") == "toolResult" and isinstance(block.get("content"), str):
        text = _MEDIA_TEXT.sub(MEDIA_REMOVED, block["content"])
        return {**block, "content": text} if text != block["content"] else block
    return block
