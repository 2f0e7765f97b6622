"""Transcript entries (S2): building them and reading the current interval.

A message's `content` is a list of blocks:
`{"type":"text","text"}`, `{"type":"thinking","thinking"}`,
`{"type":"toolCall","id","name","arguments"}`, `{"type":"toolResult","toolCallId","content","isError"}`,
`{"type":"image","mimeType","data"|"ref"}`. Only text blocks of user and assistant messages
are searchable (S5); tool results, reasoning and images never reach the index.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ..redact import redact_secrets
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..text.analyzer import analyze_document
from ..text.estimate import estimate_tokens
from .history_view import sanitize_text

ROLES = ("user", "assistant", "system", "tool")
SEARCHABLE_ROLES = ("user", "assistant")
INTER_SESSION = "inter_session"  # provenance kind of a message another session sent (sessions_send)


def inter_session_source(entry: EntryRecord) -> dict[str, Any] | None:
    """The provenance of a user entry another session sent, in OpenClaw's shape
    (`{"kind": "inter_session", "sourceSessionKey", "sourceTool"}`), else None. Such an entry is
    data routed by a tool, never the user's own words."""
    value = entry.meta.get("provenance") if entry.meta else None
    if isinstance(value, dict) and value.get("kind") == INTER_SESSION:
        return value
    if value == "inter-session":  # the bare marker of earlier records
        return {"kind": INTER_SESSION}
    return None


def speaker(entry: EntryRecord) -> str:
    """Who said a message, for text a model reads (flush, compaction): the role, or for another
    session's message a label that says it is not the user."""
    source = inter_session_source(entry)
    if source is None:
        return entry.role or "system"
    return f"another session ({source.get('sourceSessionKey') or 'the operator'}, not the user)"


def text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def plain_text(content: list[dict[str, Any]]) -> str:
    if type(content) is list and len(content) == 1 and type(content[0]) is dict:  # most messages: one block
        block = content[0]
        text = block.get("text", "")
        if block.get("type") == "text" and type(text) is str:
            return text.strip()
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text").strip()


def new_entry_id() -> str:
    return str(uuid.uuid4())


def index_text_for(entry: EntryRecord) -> str | None:
    """Analysed tokens for the search index, or None when the entry is not searchable.

    Credentials are redacted first (M7): the transcript keeps what was said, the index never
    holds a password, key, card or id number in clear, so searching for one finds nothing.
    Inline reasoning (`<think>…`), injected memories and leaked tool-call syntax are dropped as
    sessions_history drops them (S5: reasoning is not indexed, whatever its wrapping)."""
    if entry.type != "message" or entry.role not in SEARCHABLE_ROLES:
        return None
    text = searchable_text(entry.content)
    return analyze_document(redact_secrets(text)[0]) if text else None


def searchable_text(content: list[dict[str, Any]]) -> str:
    """A message's text as search and recall may read it: `plain_text` without inline reasoning,
    injected memories or leaked tool-call syntax (what sessions_history strips too)."""
    text = plain_text(content)
    if "<" in text or "[" in text:  # every sanitiser pattern starts with one of these
        text = sanitize_text(text)
    return text


def append(store: AgentStore, entry: EntryRecord) -> EntryRecord:
    """Write an entry and its index row together (same transaction)."""
    return store.append_entry(entry, index_text=index_text_for(entry))


def interval_bounds(store: AgentStore, session_id: str, around_seq: int | None = None) -> tuple[int, int | None]:
    """(after_seq, before_seq) of the interval holding `around_seq`, or the open interval.

    Two indexed lookups (entries by session, type, seq), whatever the transcript's length."""
    before = next(store.iter_entries(session_id, types=("reset",), before_seq=around_seq, newest_first=True,
                                     limit=1), None)
    if around_seq is None:
        return (before.seq if before else 0), None
    after = next(store.iter_entries(session_id, types=("reset",), after_seq=around_seq, limit=1), None)
    return (before.seq if before else 0), (after.seq if after else None)


def entry_size(entry: EntryRecord) -> tuple[int, int]:
    """(estimated tokens, JSON bytes) an entry adds to the active context."""
    raw = json.dumps(entry.content, ensure_ascii=False)
    return estimate_tokens(raw) + 4, len(raw.encode("utf-8"))


def add_active_size(session: SessionRecord, entry: EntryRecord) -> None:
    """Running size of the active context, so a turn need not re-read it to decide on a flush."""
    tokens, size = entry_size(entry)
    session.meta["activeTokens"] = session.meta.get("activeTokens", 0) + tokens
    session.meta["activeBytes"] = session.meta.get("activeBytes", 0) + size
