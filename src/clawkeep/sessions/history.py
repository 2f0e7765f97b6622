"""sessions_history (S6): one interval of a transcript, sanitised.

Without a messageId: the open interval after the latest reset boundary. With a messageId
inside a closed interval: exactly that interval, nothing after its boundary. A transcript that
truncateAfterCompaction archived (search still finds its messages) opens by its own session id
or by the key plus the id of a message in it. A forked
session's first interval continues from its parent's branch up to the fork point.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .. import api
from ..errors import NotFoundError
from ..routing.keys import is_session_id
from ..runtime import Runtime
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..timeutil import to_iso
from ..visibility import Caller
from . import service, transcript
from .history_view import TOOL_ROLES, build_history_view_newest_first

MAX_FORK_DEPTH = 8  # a fork of a fork of …: bounded so a cycle can never loop
PAGE_ENTRIES = 64  # history reads newest first, this many entries at a time, until 80 KB are full


def sessions_history(rt: Runtime, ref: str, caller: Caller = Caller(), *, message_id: str | None = None,
                     include_tools: bool = False) -> api.History:
    store, session = open_transcript(rt, ref, caller)
    around = None
    if message_id is not None:
        session, entry = _locate(store, session, message_id)
        if entry is None:
            raise NotFoundError(f"message {message_id!r} not found in session {ref!r}")
        around = entry.seq
    segments = interval_segments(rt, store, session, around)
    reader = _NewestFirst(segments)
    exclude = () if include_tools else tuple(TOOL_ROLES)
    blocks = ("text", "image", "toolCall", "toolResult") if include_tools else ("text", "image")
    view = build_history_view_newest_first((_as_message(e) for e in reader),
                                           lambda: reader.count_rest(exclude, blocks), include_tools)
    archived = {"archived": True} if session.archived_at is not None else {}
    return api.History(session_key=session.key, session_id=session.session_id, **archived, messages=view.messages,
                       truncated=view.truncated, dropped_messages=view.dropped_messages,
                       content_truncated=view.content_truncated, content_redacted=view.content_redacted,
                       bytes=view.bytes)


def open_transcript(rt: Runtime, ref: str, caller: Caller = Caller()) -> tuple[AgentStore, SessionRecord]:
    """A session by key or id the caller may see, or a transcript truncateAfterCompaction
    archived (readable by its own id)."""
    try:
        return service.find_session(rt, ref, caller)
    except NotFoundError:
        if not is_session_id((ref or "").strip()):
            raise
        return service.find_transcript(rt, ref.strip(), caller)


def _locate(store: AgentStore, session: SessionRecord, message_id: str) -> tuple[SessionRecord, EntryRecord | None]:
    """The transcript a message id (ours or the channel's) lies in: the session itself, or one
    of the transcripts truncateAfterCompaction archived behind the same key — search still
    returns hits from those, so their ids must open them."""
    entry = store.get_entry(message_id)
    if entry is not None and entry.session_id == session.session_id:
        return session, entry
    own = store.find_client_entry(session.session_id, message_id)  # the channel's own id
    if own is not None and own.session_id == session.session_id:
        return session, own
    if entry is not None:
        holder = store.get_session(entry.session_id)
        if holder is not None and holder.archived_at is not None and holder.key == session.key:
            return holder, entry
    for older in service.predecessors(store, session):
        found = store.find_client_entry(older.session_id, message_id)
        if found is not None and found.session_id == older.session_id:
            return older, found
    return session, None


@dataclass(frozen=True)
class Segment:
    """Entries of one session with after < seq < before (before None: to the end)."""

    store: AgentStore
    session_id: str
    after: int
    before: int | None


def interval_segments(rt: Runtime, store: AgentStore, session: SessionRecord, around_seq: int | None,
                      *, depth: int = 0) -> list[Segment]:
    """Where an interval's messages are, newest first: the session's own range, then, for a fork's
    first interval, its parent's branch up to the fork point (and so on up the forks)."""
    after, before = transcript.interval_bounds(store, session.session_id, around_seq)
    segments = [Segment(store, session.session_id, after, before)]
    parent_id = session.meta.get("forkedFromSessionId")
    if after == 0 and parent_id and depth < MAX_FORK_DEPTH:
        parent = store.get_session(parent_id) or rt.store(session.agent_id).get_session(parent_id)
        if parent is not None:
            parent_store = store if store.get_session(parent_id) else rt.store(session.agent_id)
            fork_seq = session.meta.get("forkedFromSeq") or 0
            # +1: a fork taken right after a reset inherits the (empty) new interval, not the closed one
            for seg in interval_segments(rt, parent_store, parent, fork_seq + 1, depth=depth + 1):
                cap = fork_seq + 1 if seg.before is None else min(seg.before, fork_seq + 1)
                segments.append(Segment(seg.store, seg.session_id, seg.after, cap))
    return segments


def interval_messages(rt: Runtime, store: AgentStore, session: SessionRecord, around_seq: int | None
                      ) -> list[EntryRecord]:
    """Every message of the interval, oldest first (reads it whole: for small intervals only)."""
    out: list[EntryRecord] = []
    for seg in reversed(interval_segments(rt, store, session, around_seq)):
        out += seg.store.iter_entries(seg.session_id, after_seq=seg.after, before_seq=seg.before, types=("message",))
    return out


class _NewestFirst:
    """The interval's messages newest first, read in pages of PAGE_ENTRIES; `count_rest` counts
    what was not read yet without reading it."""

    def __init__(self, segments: list[Segment]):
        self.segments = segments
        self.index = 0  # the segment being read
        self.cursor: int | None = None  # seq of the last entry handed out in that segment

    def __iter__(self) -> Iterator[EntryRecord]:
        for index, seg in enumerate(self.segments):
            self.index = index
            self.cursor = seg.before
            while True:
                page = list(seg.store.iter_entries(seg.session_id, after_seq=seg.after, before_seq=self.cursor,
                                                   types=("message",), newest_first=True, limit=PAGE_ENTRIES))
                for entry in page:
                    self.cursor = entry.seq
                    yield entry
                if len(page) < PAGE_ENTRIES:
                    break

    def count_rest(self, exclude_roles: tuple[str, ...], block_types: tuple[str, ...]) -> int:
        """Shown messages older than the last one handed out (the view calls this when it stops)."""
        total = 0
        for number, seg in enumerate(self.segments[self.index:]):
            total += seg.store.count_entries(seg.session_id, after_seq=seg.after,
                                             before_seq=self.cursor if number == 0 else seg.before,
                                             types=("message",), exclude_roles=exclude_roles, block_types=block_types)
        return total


def _as_message(entry: EntryRecord) -> dict[str, Any]:
    out = {"messageId": entry.entry_id, "role": entry.role or "system", "timestamp": to_iso(entry.timestamp),
           "content": entry.content}
    if entry.client_id:
        out["clientMessageId"] = entry.client_id
    source = transcript.inter_session_source(entry)
    if source is not None:
        out["provenance"] = source
    return out
