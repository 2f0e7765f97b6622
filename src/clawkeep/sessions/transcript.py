"""Transcript entries (S2): building them and reading the current interval.

A message's `content` is a list of blocks:
`{"type":"text","text"}`, `{"type":"thinking","thinking"}`,
`{"type":"toolCall","id","name","arguments"}`, `{"type":"toolResult","toolCallId","content","isError"}`,
`{"type":"image","mimeType","data"|"ref"}`. Only text blocks of user and assistant messages
are searchable (S5); tool results, reasoning and images never reach the index.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..storage import AgentStore, EntryRecord
from ..text.analyzer import analyze_document

ROLES = ("user", "assistant", "system", "tool")
SEARCHABLE_ROLES = ("user", "assistant")


def text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def plain_text(content: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text").strip()


def new_entry_id() -> str:
    return str(uuid.uuid4())


def index_text_for(entry: EntryRecord) -> str | None:
    """Analysed tokens for the search index, or None when the entry is not searchable."""
    if entry.type != "message" or entry.role not in SEARCHABLE_ROLES:
        return None
    text = plain_text(entry.content)
    return analyze_document(text) if text else None


def append(store: AgentStore, entry: EntryRecord) -> EntryRecord:
    """Write an entry and its index row together (same transaction)."""
    return store.append_entry(entry, index_text=index_text_for(entry))


def interval_bounds(store: AgentStore, session_id: str, around_seq: int | None = None) -> tuple[int, int | None]:
    """(after_seq, before_seq) of the interval holding `around_seq`, or the open interval."""
    resets = [e.seq for e in store.iter_entries(session_id, types=("reset",))]
    if around_seq is None:
        return (resets[-1] if resets else 0), None
    start = max((s for s in resets if s < around_seq), default=0)
    end = min((s for s in resets if s > around_seq), default=None)
    return start, end
