"""sessions_timeline: a session's intervals with their boundaries and compactions, newest last.

What a history page needs to draw dividers without reading the transcript: each interval (the
open one last) with its start, the reset that closed it (reason, time, boundary id), how many
messages `sessions_history` would show of it, the first and last of them (`messageId` re-opens
a closed interval through `sessions_history`), a preview of its first line, and the
compactions inside it (where the kept messages start, the summary). A few indexed lookups per
interval, whatever the transcript's length; at most MAX_INTERVALS intervals (the newest).
"""

from __future__ import annotations

from typing import Any

from .. import api
from ..redact import redact_secrets, redacted_preview
from ..runtime import Runtime
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..storage.base import has_block
from ..timeutil import to_iso
from ..visibility import Caller
from . import history, service, transcript
from .history_view import TOOL_ROLES

MAX_INTERVALS = 500
PREVIEW_CHARS = 120
SUMMARY_CHARS = 4000
SHOWN_BLOCKS = ("text", "image")  # what sessions_history shows without tools
PROBE = 8  # entries read from an interval's edge to find its first/last shown message


def sessions_timeline(rt: Runtime, ref: str, caller: Caller = Caller()) -> api.Timeline:
    store, session = history.open_transcript(rt, ref, caller)
    resets = list(store.iter_entries(session.session_id, types=("reset",)))
    compactions = list(store.iter_entries(session.session_id, types=("compaction",)))
    edges: list[int | None] = [0, *(r.seq for r in resets), None]
    spans = list(zip(edges, edges[1:], strict=False))
    omitted = max(0, len(spans) - MAX_INTERVALS)
    intervals = []
    for number in range(omitted, len(spans)):
        after, before = spans[number]
        opened_by = resets[number - 1] if number > 0 else None
        closed_by = resets[number] if number < len(resets) else None
        inside = [c for c in compactions if c.seq > (after or 0) and (before is None or c.seq < before)]
        intervals.append(_interval(store, session, number, after or 0, before, opened_by, closed_by, inside))
    out: dict[str, Any] = {}
    if session.meta.get("forkedFromSessionId"):
        out["forked_from_session_id"] = session.meta["forkedFromSessionId"]
    archived = [api.ArchivedTranscript(session_id=s.session_id, archived_at=to_iso(s.archived_at),
                                       message_count=s.message_count)
                for s in service.predecessors(store, session)]
    if archived:
        out["archived_transcripts"] = archived
    return api.Timeline(session_key=session.key, session_id=session.session_id, intervals=intervals,
                        omitted_intervals=omitted, **out)


def _interval(store: AgentStore, session: SessionRecord, number: int, after: int, before: int | None,
              opened_by: EntryRecord | None, closed_by: EntryRecord | None,
              compactions: list[EntryRecord]) -> api.Interval:
    count = store.count_entries(session.session_id, after_seq=after, before_seq=before, types=("message",),
                                exclude_roles=tuple(TOOL_ROLES), block_types=SHOWN_BLOCKS)
    first = _shown(store.iter_entries(session.session_id, after_seq=after, before_seq=before, types=("message",),
                                      limit=PROBE)) if count else None
    last = _shown(store.iter_entries(session.session_id, after_seq=after, before_seq=before, types=("message",),
                                     newest_first=True, limit=PROBE)) if count else None
    started = opened_by.timestamp if opened_by is not None else session.created_at
    return api.Interval(
        index=number, open=closed_by is None, started_at=to_iso(started),
        ended_at=to_iso(closed_by.timestamp) if closed_by else None,
        closed_by=closed_by.meta.get("reason") if closed_by else None,
        boundary_id=closed_by.entry_id if closed_by else None,
        message_count=count,
        first_message_id=first.entry_id if first else None, last_message_id=last.entry_id if last else None,
        first_message_at=to_iso(first.timestamp) if first else None,
        last_message_at=to_iso(last.timestamp) if last else None,
        preview=_preview(first) if first else None,
        compactions=[_compaction(c) for c in compactions],
    )


def _shown(entries: Any) -> EntryRecord | None:
    """The first entry sessions_history would show (not a tool message, some text or image)."""
    return next((e for e in entries if e.role not in TOOL_ROLES and has_block(e.content, SHOWN_BLOCKS)), None)


def _preview(entry: EntryRecord) -> str:
    text = " ".join(transcript.plain_text(entry.content).split())
    return redacted_preview(text, PREVIEW_CHARS)


def _compaction(entry: EntryRecord) -> api.CompactionMark:
    meta = entry.meta
    summary = redact_secrets(str(meta.get("summary") or ""))[0]
    return api.CompactionMark(
        id=entry.entry_id, at=to_iso(entry.timestamp), reason=meta.get("reason"),
        compacted_messages=int(meta.get("compactedMessages") or 0),
        tokens_before=meta.get("tokensBefore"), tokens_after=meta.get("tokensAfter"),
        first_kept_message_id=meta.get("firstKeptEntryId"), summarizer=meta.get("summarizer"),
        summary=summary[:SUMMARY_CHARS], summary_truncated=len(summary) > SUMMARY_CHARS)
