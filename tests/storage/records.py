"""Record builders shared by the storage tests."""

from __future__ import annotations

import itertools
from typing import Any

from clawkeep.storage import EntryRecord, SessionRecord
from clawkeep.text.analyzer import analyze_document

_ids = itertools.count(1)


def session(key: str | None = None, *, kind: str = "direct", agent_id: str = "main", updated_at: int = 1_000,
            **fields: Any) -> SessionRecord:
    n = next(_ids)
    return SessionRecord(session_id=fields.pop("session_id", f"s{n:05d}"), key=key or f"agent:{agent_id}:test:{n}",
                         agent_id=agent_id, kind=kind, session_started_at=updated_at, updated_at=updated_at,
                         created_at=updated_at, **fields)


def message(session_id: str, text: str, *, role: str = "user", at: int = 2_000, **fields: Any) -> EntryRecord:
    return EntryRecord(entry_id=fields.pop("entry_id", f"e{next(_ids):06d}"), session_id=session_id, type="message",
                       timestamp=at, role=role, content=[{"type": "text", "text": text}], **fields)


def append_text(store: Any, session_id: str, text: str, **fields: Any) -> EntryRecord:
    """Append a message indexed the way the transcript service indexes it."""
    return store.append_entry(message(session_id, text, **fields), index_text=analyze_document(text))
