"""Writing a turn's entries: the message with its session counters in one transaction,
idempotent re-delivery by the conversation's own message id, and system events."""

from __future__ import annotations

import hashlib
from typing import Any

from .. import api
from ..errors import ConflictError, DuplicateError
from ..events import MessageRecorded
from ..redact import redact_secrets, redacted_preview
from ..routing.router import Route
from ..runtime import Runtime
from ..sessions import service, transcript
from ..storage import EntryRecord, SessionRecord
from ..visibility import Caller
from .messages import MessageResult, check_text

CONFLICT_PREVIEW_CHARS = 200  # how much of the stored text a conflict quotes (secrets redacted)


def already_recorded(rt: Runtime, routed: Route, message_id: str | None, text: str) -> MessageResult | None:
    """A re-delivery of a message this conversation already sent (ids are per conversation: the
    same number from another chat is another message): a duplicate when the text is the same, a
    conflict (nothing stored, the stored text quoted) when the id now carries another text."""
    if message_id is None:
        return None
    store = rt.store_for_key(routed.key)
    entry = store.get_entry_by_client_id(routed.conversation, message_id)
    if entry is None:
        return None
    session = store.get_session(entry.session_id)
    key = session.key if session else routed.key
    stored = transcript.plain_text(entry.content)
    if _same_message(stored, text):
        return MessageResult(key, entry.session_id, entry.entry_id, entry.role or "user", duplicate=True,
                             client_message_id=message_id)
    shown = redacted_preview(stored, CONFLICT_PREVIEW_CHARS)
    return MessageResult(key, entry.session_id, entry.entry_id, entry.role or "user", conflict=True,
                         client_message_id=message_id, stored_text=shown,
                         note=f"message id {message_id!r} was already used in this conversation for another text; "
                              f"the stored text is {shown!r} and the new text was not stored (send it with a new "
                              "message id)")


def _same_message(stored: str, text: str) -> bool:
    """The stored text is this message's (for `/new rest`, the rest is what was stored)."""
    given = text.strip()
    return stored == given or (given.startswith("/") and stored == given.partition(" ")[2].strip())


def record_message(rt: Runtime, session: SessionRecord, role: str, text: str, at: int,
                   message_id: str | None, interactive: bool, *, client_scope: str | None = None,
                   provenance: dict[str, Any] | None = None) -> EntryRecord | None:
    """Append a message and update the session row in one transaction; None if the conversation
    (`client_scope`) already delivered this client message id. `provenance` marks a message
    another session sent (sessions_send)."""
    store = rt.store_for_key(session.key)
    scope = (client_scope or session.key) if message_id else None
    entry = EntryRecord(_entry_id(store, message_id, scope), session.session_id, "message", at,
                        role=role, content=transcript.text_blocks(text), client_id=message_id, client_scope=scope,
                        meta={"provenance": provenance} if provenance else {})
    index_text = transcript.index_text_for(entry)  # analysed before the write lock: writers overlap here
    current = session
    for attempt in range(2):
        try:
            with store.transaction():
                store.append_entry(entry, index_text=index_text, at_commit=True)  # seq read after the commit
                fresh = _apply_message(SessionRecord(**{**current.__dict__, "meta": dict(current.meta)}),
                                       entry, role, text, at, interactive)
                try:
                    store.update_session(fresh)  # optimistic: our copy is usually current
                except ConflictError:  # another process wrote the row since we read it
                    fresh = _apply_message(store.get_session(session.session_id) or session, entry, role, text, at,
                                           interactive)
                    store.update_session(fresh)
            break
        except DuplicateError:
            return None
        except ConflictError:
            # a store that checks the update when the transaction commits (PostgreSQL) rolled
            # the whole write back: once more from the row as it is now
            if attempt:
                raise
            current = store.get_session(session.session_id) or session
    session.__dict__.update(fresh.__dict__)
    rt.events.publish(MessageRecorded(at, session.agent_id, session.key, session.session_id, entry.entry_id, role))
    return entry


def _entry_id(store: Any, message_id: str | None, scope: str | None) -> str:
    """The channel's own id is the message id (SPEC §P) unless another conversation of this
    agent already used it; then a stable per-conversation variant (`1001#3fa2b7c1`), so the
    answer never points at — or reveals — the other conversation's message."""
    if message_id is None:
        return transcript.new_entry_id()
    if store.get_entry(message_id) is None:
        return message_id
    variant = f"{message_id}#{hashlib.sha1(str(scope).encode()).hexdigest()[:8]}"
    return variant if store.get_entry(variant) is None else transcript.new_entry_id()


def _apply_message(fresh: SessionRecord, entry: EntryRecord, role: str, text: str, at: int,
                   interactive: bool) -> SessionRecord:
    fresh.message_count += 1
    fresh.updated_at = max(fresh.updated_at, at)
    transcript.add_active_size(fresh, entry)
    if interactive:
        fresh.last_interaction_at = max(fresh.last_interaction_at or 0, at)
    if "title" not in fresh.meta and role == "user" and transcript.inter_session_source(entry) is None:
        fresh.meta["title"] = redact_secrets(text.strip().splitlines()[0][:80])[0]
    return fresh


def record_system_event(rt: Runtime, ref: str, text: str, *, at: int | None = None, queue: bool = True,
                        caller: Caller = Caller()) -> api.SystemEventResult:
    """A heartbeat/cron/exec notice: written to the transcript, never extends freshness (S3).

    Queued notices wait for the next turn; a reset drops the ones still queued.
    """
    check_text(text, "system event text", rt.config.session.max_message_chars)
    store, session = service.find_session(rt, ref, caller)
    at = at if at is not None else rt.now()
    entry = EntryRecord(transcript.new_entry_id(), session.session_id, "system_event", at,
                        role="system", content=transcript.text_blocks(text), meta={"queued": queue})
    with store.transaction():
        transcript.append(store, entry)
        fresh = store.get_session(session.session_id) or session
        fresh.updated_at = max(fresh.updated_at, at)
        if queue:
            fresh.meta.setdefault("pendingNotices", []).append(entry.entry_id)
        store.update_session(fresh)
    return api.SystemEventResult(session_key=fresh.key, session_id=fresh.session_id, event_id=entry.entry_id,
                                 pending_notices=len(fresh.meta.get("pendingNotices", [])))
