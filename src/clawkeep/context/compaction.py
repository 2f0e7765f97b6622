"""Compaction (C1): older turns of the current interval become one summary entry.

The transcript keeps everything: a compaction appends a `compaction` entry (summary, first
kept entry, token counts) in one transaction, and context assembly then reads the summary
plus the entries from the first kept one on. This module only computes: `compact` returns the
entry to append (`CompactionResult.entry`) and `successor` the successor transcript; the
session layer writes them (`sessions.compactions`). Recent turns (`keepRecentTokens`) stay verbatim
and a split never separates a tool call from its result.

Summarisers are pluggable and tried in order: the configured model (compaction.model, else
the session's chain), then the built-in extractive summary, which needs no model and keeps
every opaque identifier, the open tasks and the last user intent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ClawkeepError, InputError
from ..memory.chunking import estimate_tokens, weighted_length
from ..models.reasoning import strip_reasoning
from ..routing.keys import new_session_id
from ..sessions import transcript
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..timeutil import to_iso
from .budget import Budget, clip_lines, context_overhead  # noqa: F401 - Budget, context_overhead: for the turn

_IDENTIFIER = re.compile(
    r"https?://[^\s<>\"')\]]+"  # URLs
    # Every run-like alternative starts only where its run starts (a lookbehind on its own
    # characters): tried at every position, a long run without spaces (CJK, base64) was
    # rescanned from each character — minutes for a 100,000-character message.
    r"|(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.-]+"  # e-mail addresses
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # UUIDs
    r"|(?<![\w/])(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+"  # absolute and ./ paths
    r"|(?<![\w./-])[\w.-]+(?:/[\w.-]+)+\.[A-Za-z0-9]{1,8}\b"  # relative paths with an extension
    r"|(?<![\w./-])(?=[\w./-]*\d)[A-Za-z][\w.-]*(?:/[\w.-]+)+"  # branches, refs: feat/quokka-77 (a digit: not and/or)
    r"|\b\d{5,}\b"  # long numbers: order ids, SHAs
    r"|\b[A-Za-z]+[-_][A-Za-z0-9]*\d[A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*\b"  # INV-2024-0042, user_id42
    r"|\b(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{6,}\b"  # A1B2C3, git SHAs
    r"|\bv?\d+\.\d+(?:\.\d+)+(?:[-+][A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)?\b"  # versions 2.3.1, v3.1.4-rc2, 1.2.3+build.5
    r"|#\d{2,}\b",  # issue refs
    re.IGNORECASE,
)
# Commitments and to-dos only: "should"/"please" are too common in chat to mark a task.
_TASK = re.compile(
    r"\b(todo|to-do|action item|need to|needs to|have to|i'll|i will|we'll|we will|remind me|"
    r"don't forget|do not forget|follow up|next step|pending|deadline|due by)\b"
    r"|待办|记得|别忘了|下一步|提醒我|要做|截止",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|agreed|chose|settled on|going with|will go with|approved)\b|决定|定了|選んだ|決めた|결정",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
MAX_TASKS = 30
MAX_DECISIONS = 20
MAX_KEY_LINES = 16


def extract_identifiers(text: str) -> list[str]:
    return list(dict.fromkeys(m.group(0).rstrip(".,;:") for m in _IDENTIFIER.finditer(text)))


def all_text(entry: EntryRecord) -> str:
    """Text, tool-call arguments and tool results: identifiers hide in all of them."""
    parts = []
    for block in entry.content:
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "toolCall":
            parts.append(f"{block.get('name', '')} {json.dumps(block.get('arguments', {}), ensure_ascii=False)}")
        elif kind == "toolResult":
            parts.append(str(block.get("content", "")))
    return "\n".join(parts)


def _sentences(texts: list[tuple[EntryRecord, str]], pattern: re.Pattern[str], limit: int) -> list[str]:
    """Matching sentences, the user's first (they state the tasks), newest last."""
    found = {"user": [], "assistant": []}
    for entry, text in texts:
        found[entry.role] += [s.strip() for s in _SENTENCE.split(text) if s.strip() and pattern.search(s)]
    user = list(dict.fromkeys(found["user"]))[-limit:]
    return user + list(dict.fromkeys(found["assistant"]))[-(limit - len(user)) :] if len(user) < limit else user


class Summarizer(Protocol):
    name: str

    def summarize(
        self, messages: Sequence[EntryRecord], *, instructions: str | None, policy: str, custom_rule: str | None
    ) -> str: ...


def _line(entry: EntryRecord) -> str:
    return f"{transcript.speaker(entry)}: {' '.join(transcript.plain_text(entry.content).split())}"


@dataclass
class ExtractiveSummarizer:
    """No model: keep identifiers, open tasks, the last user intent and the key lines.

    With `max_tokens` the summary fits that budget: the header, the requested focus and the
    last user intent first, then identifiers, open tasks, decisions and key lines (the newest of
    each kind first); what does not fit is counted in a closing "(+N … left out)" line."""

    name: str = "extractive"
    max_tokens: int | None = None

    def summarize(
        self, messages: Sequence[EntryRecord], *, instructions: str | None, policy: str, custom_rule: str | None
    ) -> str:
        texts = [(e, transcript.plain_text(e.content)) for e in messages if e.role in ("user", "assistant")]
        identifiers = extract_identifiers("\n".join(all_text(e) for e in messages))
        tasks = _sentences(texts, _TASK, MAX_TASKS)
        decisions = _sentences(texts, _DECISION, MAX_DECISIONS)
        key_lines = [_line(e) for e, t in texts if extract_identifiers(t) or re.search(r"\d", t)]
        last_user = next((t for e, t in reversed(texts)
                          if e.role == "user" and transcript.inter_session_source(e) is None), "")
        span = f"{to_iso(messages[0].timestamp)} – {to_iso(messages[-1].timestamp)}" if messages else ""
        header = f"Summary of {len(messages)} earlier messages ({span}), extracted without a model."
        sections = {
            "key": [line[:300] for line in key_lines[-MAX_KEY_LINES:]],
            "decisions": [d[:300] for d in decisions],
            "tasks": [t[:300] for t in tasks],
            "ids": identifiers if policy != "off" else [],
        }
        intent = " ".join(last_user.split())[:500]
        full = _render_extractive(header, instructions, sections, intent, {})
        if self.max_tokens is None or estimate_tokens(full) <= self.max_tokens:
            return full
        return _fit_extractive(header, instructions, sections, intent, self.max_tokens)


_TITLES = {"key": "Key lines:\n", "decisions": "Decisions:\n", "tasks": "Open tasks and commitments:\n"}
_IDS_TITLE = "Identifiers (verbatim): "
_MORE = {"tasks": "tasks", "decisions": "decisions", "key": "key lines", "ids": "identifiers"}
_MORE_ROOM = len("\n\n(+99 tasks, 99 decisions, 99 key lines, 99999 identifiers left out for length)")


def _render_extractive(header: str, instructions: str | None, sections: dict[str, list[str]], intent: str,
                       omitted: dict[str, int]) -> str:
    parts = [header]
    if instructions:
        parts.append(f"Focus requested: {instructions}")
    for kind in ("key", "decisions", "tasks"):
        if sections[kind]:
            parts.append(_TITLES[kind] + "\n".join(f"- {line}" for line in sections[kind]))
    if sections["ids"]:
        parts.append(_IDS_TITLE + ", ".join(sections["ids"]))
    if intent:
        parts.append(f"Last user intent: {intent}")
    if any(omitted.values()):
        more = ", ".join(f"{n} {_MORE[kind]}" for kind, n in omitted.items() if n)
        parts.append(f"(+{more} left out for length)")
    return "\n\n".join(parts)


def _within(text: str, room: int) -> str:
    """The longest prefix of `text` whose weighted length (quarter-tokens) is at most `room`."""
    if weighted_length(text) <= room:
        return text
    used = 0
    for index, char in enumerate(text):
        used += weighted_length(char)
        if used > room:
            return text[:index]
    return text


def _fit_extractive(header: str, instructions: str | None, sections: dict[str, list[str]], intent: str,
                    budget: int) -> str:
    """Greedy fill in priority order, in quarter-tokens (estimates add up exactly); rendered in
    the usual order."""
    room = budget * 4 - 3 - _MORE_ROOM - weighted_length(header)
    if instructions:
        instructions = _within(instructions, room - len("\n\nFocus requested: ")) or None
        room -= weighted_length(f"\n\nFocus requested: {instructions}") if instructions else 0
    if intent:
        intent = _within(intent, room - len("\n\nLast user intent: "))
        room -= weighted_length(f"\n\nLast user intent: {intent}") if intent else 0
    chosen: dict[str, list[str]] = {}
    omitted: dict[str, int] = {}
    for kind in ("ids", "tasks", "decisions", "key"):
        items = sections[kind]
        order = range(len(items)) if kind == "ids" else range(len(items) - 1, -1, -1)  # ids: first seen first
        picked: list[int] = []
        for index in order:
            if kind == "ids":
                cost = weighted_length(items[index]) + (2 if picked else 2 + len(_IDS_TITLE))
            else:
                cost = weighted_length(items[index]) + 3 + (0 if picked else 2 + len(_TITLES[kind]))
            if cost <= room:  # else a shorter one further on may still fit
                room -= cost
                picked.append(index)
        chosen[kind] = [items[i] for i in sorted(picked)]
        omitted[kind] = len(items) - len(picked)
    return _render_extractive(header, instructions, chosen, intent, omitted)


@dataclass
class ModelSummarizer:
    """The model writes the summary. `max_summary_tokens` is asked for (compact() enforces it);
    `max_input_tokens` cuts the conversation it is sent, longest messages first, so a pasted
    50k-token text never overflows a small window (default: half the model's window)."""

    model: Any  # a ChatModel
    name: str = "model"
    max_summary_tokens: int | None = None
    max_input_tokens: int | None = None

    def summarize(
        self, messages: Sequence[EntryRecord], *, instructions: str | None, policy: str, custom_rule: str | None
    ) -> str:
        rules = [
            "Summarise the conversation so the assistant can continue it without the full text.",
            "Keep decisions, facts about the user, open tasks and the user's latest intent.",
        ]
        if policy == "strict":
            rules.append("Copy every identifier (ids, codes, URLs, paths, versions, numbers) exactly as written.")
        elif policy == "custom" and custom_rule:
            rules.append(custom_rule)
        if self.max_summary_tokens:
            rules.append(f"Keep the summary under {max(1, self.max_summary_tokens * 3 // 4)} words.")
        if instructions:
            rules.append(f"Additional instructions: {instructions}")
        window = getattr(self.model, "context_window", None)
        limit = self.max_input_tokens or (window // 2 if isinstance(window, int) and window > 0 else None)
        lines = [_line(e) for e in messages if e.role in ("user", "assistant")]
        body = "\n".join(clip_lines(lines, limit) if limit else lines)
        result = self.model.complete([{"role": "user", "content": body}], system="\n".join(rules))
        summary = strip_reasoning(result.text)  # reasoning is never stored (nor re-sent every call)
        if not summary:
            raise ClawkeepError("the compaction model returned an empty summary")
        return summary


@dataclass
class CompactionResult:
    compacted: bool
    reason: str
    summary: str | None = None
    summarizer: str | None = None
    compacted_messages: int = 0
    kept_messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    session_id: str | None = None  # the successor's id with truncateAfterCompaction
    errors: list[str] = field(default_factory=list)
    notice: str | None = None  # shown to the user when compaction.notifyUser is on
    flush: dict[str, Any] | None = None  # the memory flush that ran just before (the overflow path)
    entry: EntryRecord | None = None  # the `compaction` entry to append (sessions.compactions writes it)
    active_bytes: int = 0  # the session's active transcript size once it is written

    def to_json(self) -> dict[str, Any]:
        return {
            "compacted": self.compacted,
            "reason": self.reason,
            "summarizer": self.summarizer,
            "compactedMessages": self.compacted_messages,
            "keptMessages": self.kept_messages,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "sessionId": self.session_id,
            "errors": self.errors,
            **({"notice": self.notice} if self.notice else {}),
            **({"flush": self.flush} if self.flush else {}),
        }


def message_tokens(entry: EntryRecord) -> int:
    return (
        estimate_tokens(transcript.plain_text(entry.content))
        + sum(
            estimate_tokens(str(b.get("content", b.get("arguments", ""))))
            for b in entry.content
            if b.get("type") in ("toolResult", "toolCall")
        )
        + 4
    )


def active_messages(store: AgentStore, session: SessionRecord) -> tuple[list[EntryRecord], EntryRecord | None]:
    """Messages the model sees now (after the boundary and the latest compaction), and that compaction.

    Indexed lookups: the latest boundary, the latest compaction after it, then only the
    messages from the first kept one on — a long, compacted interval is never re-read whole."""
    after, _ = transcript.interval_bounds(store, session.session_id)
    latest = next(
        store.iter_entries(session.session_id, after_seq=after, types=("compaction",), newest_first=True, limit=1), None
    )
    start = after
    if latest is not None:
        start = max(after, min(latest.meta.get("firstKeptSeq", latest.seq), latest.seq) - 1)
    return list(store.iter_entries(session.session_id, after_seq=start, types=("message",))), latest


def split_point(messages: Sequence[EntryRecord], keep_recent_tokens: int) -> int:
    """Index of the first kept message; never between a tool call and its result."""
    kept, index = 0, len(messages)
    while index > 0 and kept + message_tokens(messages[index - 1]) <= keep_recent_tokens:
        index -= 1
        kept += message_tokens(messages[index])
    while 0 < index < len(messages) and messages[index].role == "tool":
        index -= 1  # keep the assistant tool call together with its result
    return index


def compact(
    store: AgentStore,
    session: SessionRecord,
    summarizers: Sequence[Summarizer],
    *,
    at: int,
    keep_recent_tokens: int,
    summary_tokens: int | None = None,
    keep_pending_turn: bool = False,
    policy: str = "strict",
    custom_rule: str | None = None,
    instructions: str | None = None,
    reason: str = "manual",
) -> CompactionResult:
    """Summarise the active messages older than the kept tail (`keep_recent_tokens`): what to
    write, computed. Nothing is stored here: a compacted result carries the `compaction` entry,
    which `sessions.compactions.record_compaction` appends with the session's counters.

    A compaction never grows the context: the summary must be smaller than what it replaces
    (and at most `summary_tokens`); a summary over that budget is replaced by the extractive
    one written to fit, and when even that cannot gain anything nothing is written ("not
    compacted: nothing to gain"). `keep_pending_turn` keeps the latest user message and what
    follows it verbatim whatever its size (the overflow path retries that turn). A previous
    summary over `summary_tokens` is summarised again even when no message is old enough."""
    messages, previous = active_messages(store, session)
    prior_tokens = estimate_tokens(previous.meta.get("summary", "")) if previous else 0
    tokens_before = sum(message_tokens(m) for m in messages) + prior_tokens
    cut = split_point(messages, keep_recent_tokens)
    if keep_pending_turn:
        pending = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), len(messages))
        cut = min(cut, pending)
    oversized_prior = previous is not None and summary_tokens is not None and prior_tokens > summary_tokens
    if cut == 0 and not oversized_prior:
        return CompactionResult(
            False,
            "nothing old enough to compact",
            tokens_before=tokens_before,
            tokens_after=tokens_before,
            kept_messages=len(messages),
        )
    older = messages[:cut]
    kept = messages[cut:]
    kept_tokens = sum(message_tokens(m) for m in kept)
    limit = tokens_before - kept_tokens - 1  # strictly smaller than what it replaces
    if summary_tokens is not None:
        limit = min(limit, summary_tokens)
    source = [*([_as_summary_entry(previous)] if previous else []), *older]
    summary, used, errors = _summarize(source, summarizers, instructions, policy, custom_rule, limit)
    if policy == "strict" and used != "extractive":  # the extractive summary lists them itself
        summary = _ensure_identifiers(summary, source, limit)
    if estimate_tokens(summary) > limit and used != "extractive":
        errors.append(f"{used}: a summary of {estimate_tokens(summary)} tokens is over the budget of {limit}")
        summary, used = ExtractiveSummarizer(max_tokens=limit).summarize(
            source, instructions=instructions, policy=policy, custom_rule=custom_rule), "extractive"
    if estimate_tokens(summary) > limit:
        return CompactionResult(
            False,
            "not compacted: nothing to gain",
            tokens_before=tokens_before,
            tokens_after=tokens_before,
            kept_messages=len(messages),
            errors=errors,
        )
    tokens_after = estimate_tokens(summary) + kept_tokens
    entry = EntryRecord(
        transcript.new_entry_id(),
        session.session_id,
        "compaction",
        at,
        meta={
            "summary": summary,
            "firstKeptEntryId": kept[0].entry_id if kept else None,
            "firstKeptSeq": kept[0].seq if kept else 2**62,
            "tokensBefore": tokens_before,
            "tokensAfter": tokens_after,
            "compactedMessages": len(older),
            "summarizer": used,
            "instructions": instructions,
            "reason": reason,
        },
    )
    active_bytes = sum(transcript.entry_size(m)[1] for m in kept) + len(summary.encode("utf-8"))
    return CompactionResult(
        True, reason, summary, used, len(older), len(kept), tokens_before, tokens_after, session.session_id, errors,
        entry=entry, active_bytes=active_bytes,
    )


def _as_summary_entry(previous: EntryRecord) -> EntryRecord:
    text = f"(earlier summary) {previous.meta.get('summary', '')}"
    return EntryRecord(
        previous.entry_id,
        previous.session_id,
        "message",
        previous.timestamp,
        role="assistant",
        content=transcript.text_blocks(text),
        seq=previous.seq,
    )


def _summarize(
    messages: list[EntryRecord],
    summarizers: Sequence[Summarizer],
    instructions: str | None,
    policy: str,
    custom_rule: str | None,
    limit: int | None = None,
) -> tuple[str, str, list[str]]:
    errors = []
    for summarizer in [*summarizers, ExtractiveSummarizer(max_tokens=limit)]:
        try:
            return (
                summarizer.summarize(messages, instructions=instructions, policy=policy, custom_rule=custom_rule),
                summarizer.name,
                errors,
            )
        except ClawkeepError as exc:  # a failing provider falls back to the next one
            errors.append(f"{summarizer.name}: {exc}")
    raise AssertionError("the extractive summarizer cannot fail")


def _ensure_identifiers(summary: str, messages: Sequence[EntryRecord], limit: int | None = None) -> str:
    """identifierPolicy strict: any identifier the summary dropped is appended verbatim — as
    many as fit `limit` when the summary itself does, the rest counted."""
    wanted = extract_identifiers("\n".join(all_text(m) for m in messages))
    missing = [i for i in wanted if i not in summary]
    if not missing:
        return summary
    full = summary + "\n\nIdentifiers (verbatim): " + ", ".join(missing)
    if limit is None or estimate_tokens(full) <= limit or estimate_tokens(summary) > limit:
        return full
    room = limit * 4 - 3 - weighted_length(summary) - _MORE_ROOM - len("\n\n" + _IDS_TITLE)
    kept: list[str] = []
    for ident in missing:
        cost = weighted_length(ident) + 2
        if cost <= room:
            room -= cost
            kept.append(ident)
    ids = "\n\nIdentifiers (verbatim): " + ", ".join(kept) if kept else ""
    return f"{summary}{ids}\n\n(+{len(missing) - len(kept)} identifiers left out for length)"


@dataclass
class Successor:
    """truncateAfterCompaction's new transcript, computed: the `session` row, its first
    `entries` (header and the compaction), and `copies` of the kept messages (not re-indexed:
    the originals stay searchable). `sessions.compactions.start_successor` writes it."""

    session: SessionRecord
    entries: list[EntryRecord]
    copies: list[EntryRecord]


def successor(store: AgentStore, session: SessionRecord, *, at: int) -> Successor:
    """truncateAfterCompaction: a new transcript for the same key starting from the latest
    compaction (summary + kept messages); the old one is archived when it is written, never deleted."""
    messages, latest = active_messages(store, session)
    if latest is None:
        raise InputError("truncateAfterCompaction needs a compaction first")
    record = SessionRecord(
        **{
            **session.__dict__,
            "session_id": new_session_id(),
            "version": 0,
            "created_at": at,
            "updated_at": at,
            "message_count": len(messages),
            "meta": {**session.meta, "predecessorSessionId": session.session_id},
        }
    )
    entries = [
        EntryRecord(transcript.new_entry_id(), record.session_id, "session", at,
                    meta={"key": record.key, "predecessorSessionId": session.session_id}),
        EntryRecord(transcript.new_entry_id(), record.session_id, "compaction", at,
                    meta={**latest.meta, "firstKeptSeq": 0, "copiedFrom": latest.entry_id}),
    ]
    copies = [
        EntryRecord(f"{message.entry_id}~{record.session_id[:8]}", record.session_id, "message", message.timestamp,
                    role=message.role, content=message.content, meta={**message.meta, "copiedFrom": message.entry_id})
        for message in messages
    ]
    return Successor(record, entries, copies)
