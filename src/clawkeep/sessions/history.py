"""sessions_history (S6): one interval of a transcript, sanitised.

Without a messageId: the open interval after the latest reset boundary. With a messageId
inside a closed interval: exactly that interval, nothing after its boundary. A forked
session's first interval continues from its parent's branch up to the fork point.
"""

from __future__ import annotations

from typing import Any

from ..errors import NotFoundError
from ..runtime import Runtime
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..timeutil import to_iso
from . import service, transcript
from .history_view import build_history_view
from .visibility import Caller

MAX_FORK_DEPTH = 8  # a fork of a fork of …: bounded so a cycle can never loop


def sessions_history(rt: Runtime, ref: str, caller: Caller = Caller(), *, message_id: str | None = None,
                     include_tools: bool = False) -> dict[str, Any]:
    store, session = service.find_session(rt, ref, caller)
    around = None
    if message_id is not None:
        entry = store.get_entry(message_id)
        if entry is None or entry.session_id != session.session_id:
            entry = store.find_client_entry(session.session_id, message_id)  # the channel's own id
        if entry is None or entry.session_id != session.session_id:
            raise NotFoundError(f"message {message_id!r} not found in session {ref!r}")
        around = entry.seq
    entries = interval_messages(rt, store, session, around)
    view = build_history_view([_as_message(e) for e in entries], include_tools)
    return {"sessionKey": session.key, "sessionId": session.session_id, **view.to_json()}


def interval_messages(rt: Runtime, store: AgentStore, session: SessionRecord, around_seq: int | None,
                      *, depth: int = 0) -> list[EntryRecord]:
    after, before = transcript.interval_bounds(store, session.session_id, around_seq)
    own = list(store.iter_entries(session.session_id, after_seq=after, before_seq=before, types=("message",)))
    parent_id = session.meta.get("forkedFromSessionId")
    if after == 0 and parent_id and depth < MAX_FORK_DEPTH:
        parent = store.get_session(parent_id) or rt.store(session.agent_id).get_session(parent_id)
        if parent is not None:
            parent_store = store if store.get_session(parent_id) else rt.store(session.agent_id)
            fork_seq = session.meta.get("forkedFromSeq") or 0
            # +1: a fork taken right after a reset inherits the (empty) new interval, not the closed one
            inherited = interval_messages(rt, parent_store, parent, fork_seq + 1, depth=depth + 1)
            return [e for e in inherited if e.seq <= fork_seq] + own
    return own


def _as_message(entry: EntryRecord) -> dict[str, Any]:
    out = {"messageId": entry.entry_id, "role": entry.role or "system", "timestamp": to_iso(entry.timestamp),
           "content": entry.content}
    if entry.client_id:
        out["clientMessageId"] = entry.client_id
    return out
