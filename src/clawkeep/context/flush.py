"""Pre-compaction memory flush (C2): before old turns are summarised, keep what is durable.

Trigger: the context reaches (compaction threshold − softThresholdTokens) or the active
transcript exceeds forceFlushTranscriptBytes (2 MiB); once per compaction cycle. It writes
only to today's `memory/YYYY-MM-DD.md`, append-only: MEMORY.md, DREAMS.md and the other
bootstrap files are read-only here. Skipped for incognito, heartbeat and other synthetic
sessions, coding/CLI-runtime sessions and read-only workspaces.

With a model: a silent turn asks it for durable notes (or NO_REPLY). Without one: a
rule-based extractor keeps dates, places, numbers, named entities, stated preferences,
decisions and commitments; every note passes the write filters (M7).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..errors import ClawkeepError
from ..memory import items
from ..memory.timeparse import event_day
from ..memory.workspace import daily_note
from ..models.reasoning import strip_reasoning
from ..patterns import lazy
from ..redact import redact_secrets
from ..routing.keys import SYNTHETIC_KINDS
from ..sessions import transcript
from ..storage import EntryRecord, SessionRecord
from ..validation import control_character
from .budget import clip_lines

NO_REPLY = "NO_REPLY"
MAX_NOTES = 20
# ASCII punctuation ends a sentence only before whitespace: "PostgreSQL 16.2", "14.30", "v2.1" stay whole
_SENTENCES = lazy(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")
_SIGNALS = [
    (
        "preference",
        lazy(
            r"\b(i|we) (prefer|like|love|hate|dislike|always|never|usually)\b|我(喜欢|偏好|讨厌|不喜欢|习惯)"
            r"|が好き|좋아해",
            re.IGNORECASE,
        ),
    ),
    (
        "decision",
        lazy(
            r"\b(we|i) (decided|agreed|chose|picked|settled on|will go with)\b|决定|定了|选了|決めた|결정",
            re.IGNORECASE,
        ),
    ),
    (
        "commitment",
        lazy(
            r"\b(i will|i'll|we will|we'll|i promise|i need to|i have to|remind me|deadline|due)\b"
            r"|我(会|要|得|需要)|记得|提醒|截止|までに|할게",
            re.IGNORECASE,
        ),
    ),
    (
        "fact",
        lazy(
            r"\b(my|our) [a-z ]{2,30} (is|are|was)\b|\bi (live|work|am|moved|flew|fly|go|went)\b"
            r"|我(住|在|是|叫|去|到)|私は|저는",
            re.IGNORECASE,
        ),
    ),
]
_NUMBER = lazy(r"\d")
_CAPITALISED = lazy(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*")


@dataclass
class FlushResult:
    ran: bool
    reason: str
    path: str | None = None
    notes: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (note, the write filter's reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "reason": self.reason,
            "path": self.path,
            "notes": self.notes,
            "refused": len(self.refused),
        }


def flush_due(
    *,
    context_tokens: int,
    threshold_tokens: int,
    soft_threshold: int,
    transcript_bytes: int,
    force_bytes: int,
    session: SessionRecord,
    compaction_due: bool = False,
) -> bool:
    """Once per compaction cycle, at (threshold − soft threshold) tokens or `force_bytes` of
    transcript — and always before a compaction of this cycle (`compaction_due`, whatever
    triggered it: tokens, maxActiveTranscriptBytes, a provider's overflow), so the flush sees the
    messages before they are summarised, never only the ones after."""
    if session.meta.get("memoryFlushCompactionCount") == session.meta.get("compactionCount", 0):
        return False  # once per compaction cycle
    by_tokens = context_tokens >= max(0, threshold_tokens - soft_threshold)
    by_bytes = bool(force_bytes) and transcript_bytes >= force_bytes
    return by_tokens or by_bytes or compaction_due


def skip_reason(session: SessionRecord, workspace: Path, access: str = "rw") -> str | None:
    if session.meta.get("incognito"):
        return "incognito session"
    if session.kind in SYNTHETIC_KINDS:
        return f"{session.kind} session"
    if session.kind == "coding":
        return "CLI runtime session"
    if access != "rw" or (workspace.exists() and not os.access(workspace, os.W_OK)):
        return "read-only workspace"
    return None


def extract_notes(messages: Sequence[EntryRecord], today: date) -> list[str]:
    """Rule-based: sentences of the user that carry a durable signal."""
    notes: list[str] = []
    for entry in messages:
        if entry.role != "user" or transcript.inter_session_source(entry) is not None:
            continue  # another session's message is not the user's words
        for sentence in _SENTENCES.split(transcript.plain_text(entry.content)):
            sentence = " ".join(sentence.split())
            if len(sentence) < 6 or sentence.startswith("/"):
                continue
            if _is_signal(sentence, today):
                notes.append(sentence)
    return list(dict.fromkeys(notes))[-MAX_NOTES:]


def _is_signal(sentence: str, today: date) -> bool:
    if any(pattern.search(sentence) for _, pattern in _SIGNALS):
        return True
    if event_day(sentence, today) is not None:
        return True  # dates
    return bool(_NUMBER.search(sentence) and _CAPITALISED.search(sentence))  # numbers with named entities


def model_notes(model: Any, messages: Sequence[EntryRecord], day: str,
                max_input_tokens: int | None = None) -> list[str]:
    """The model's notes; the conversation it is sent is cut to `max_input_tokens` (default half
    its window, longest messages first) so a flush never overflows a small window."""
    prompt = (
        f"Pre-compaction memory flush. Write durable memories from the conversation below as short "
        f"bullet lines for memory/{day}.md (append-only). Only facts, preferences, decisions and "
        f"commitments worth keeping; no secrets. MEMORY.md and other files are read-only. "
        f"Reply {NO_REPLY} if there is nothing to store."
    )
    window = getattr(model, "context_window", None)
    limit = max_input_tokens or (window // 2 if isinstance(window, int) and window > 0 else None)
    lines = [f"{transcript.speaker(e)}: {transcript.plain_text(e.content)}"
             for e in messages if e.role in ("user", "assistant")]
    body = "\n".join(clip_lines(lines, limit) if limit else lines)
    text = strip_reasoning(model.complete([{"role": "user", "content": body}], system=prompt).text)
    if not text or text.upper().startswith(NO_REPLY):
        return []
    return [line.lstrip("-*• ").strip() for line in text.splitlines() if line.strip().lstrip("-*• ").strip()]


def flush(
    workspace: Path,
    session: SessionRecord,
    messages: Sequence[EntryRecord],
    *,
    today: date,
    model: Any | None = None,
    allow_secrets: bool = False,
    access: str = "rw",
) -> FlushResult:
    reason = skip_reason(session, workspace, access)
    if reason:
        return FlushResult(False, f"skipped: {reason}")
    notes: list[str] = []
    source = "rules"
    if model is not None:
        try:
            notes = model_notes(model, messages, today.isoformat())
            source = "model"
        except ClawkeepError:
            notes = extract_notes(messages, today)  # a failing model must not lose the flush
    else:
        notes = extract_notes(messages, today)
    kept, refused = [], []
    for note in notes:
        if bad := control_character(note):  # as `memory remember` refuses it: never a NUL in a memory file
            refused.append((note, f"it contains the control character {bad}"))
        elif reason := items.filter_reason(note, allow_secrets=allow_secrets):
            refused.append((note, reason))
        else:  # an allowed secret is written redacted (M7), never in clear
            kept.append(redact_secrets(note)[0] if allow_secrets else note)
    if not kept:
        return FlushResult(True, f"nothing durable ({source})", refused=refused)
    rel = daily_note(workspace, today.isoformat()).relative_to(workspace).as_posix()
    existing = {i.text for i in items.all_items(workspace) if i.path == rel}
    for note in kept:
        if note in existing:
            continue
        attrs = {"id": items.new_item_id(), "at": today.isoformat(), "from": "flush", "session": session.key}
        expiry = items.is_time_bound(note, today)  # future plans only: a dated past event is durable
        if expiry is not None:
            attrs["expires"] = expiry.isoformat()
        items.append_item(workspace, rel, note, attrs, heading=f"# {today.isoformat()}")
    return FlushResult(True, f"flushed ({source})", rel, kept, refused)
