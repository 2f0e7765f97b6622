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


def sessions_timeline(rt: Runtime, ref: str, caller: Caller = Caller()) -> dict[str, Any]:
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
    out: dict[str, Any] = {"sessionKey": session.key, "sessionId": session.session_id, "intervals": intervals,
                           "omittedIntervals": omitted}
    if session.meta.get("forkedFromSessionId"):
        out["forkedFromSessionId"] = session.meta["forkedFromSessionId"]
    archived = [{"sessionId": s.session_id, "archivedAt": to_iso(s.archived_at), "messageCount": s.message_count}
                for s in service.predecessors(store, session)]
    if archived:
        out["archivedTranscripts"] = archived
    return out


def _interval(store: AgentStore, session: SessionRecord, number: int, after: int, before: int | None,
              opened_by: EntryRecord | None, closed_by: EntryRecord | None,
              compactions: list[EntryRecord]) -> dict[str, Any]:
    count = store.count_entries(session.session_id, after_seq=after, before_seq=before, types=("message",),
                                exclude_roles=tuple(TOOL_ROLES), block_types=SHOWN_BLOCKS)
    first = _shown(store.iter_entries(session.session_id, after_seq=after, before_seq=before, types=("message",),
                                      limit=PROBE)) if count else None
    last = _shown(store.iter_entries(session.session_id, after_seq=after, before_seq=before, types=("message",),
                                     newest_first=True, limit=PROBE)) if count else None
    started = opened_by.timestamp if opened_by is not None else session.created_at
    out: dict[str, Any] = {
        "index": number, "open": closed_by is None, "startedAt": to_iso(started),
        "endedAt": to_iso(closed_by.timestamp) if closed_by else None,
        "closedBy": closed_by.meta.get("reason") if closed_by else None,
        "boundaryId": closed_by.entry_id if closed_by else None,
        "messageCount": count,
        "firstMessageId": first.entry_id if first else None, "lastMessageId": last.entry_id if last else None,
        "firstMessageAt": to_iso(first.timestamp) if first else None,
        "lastMessageAt": to_iso(last.timestamp) if last else None,
        "preview": _preview(first) if first else None,
        "compactions": [_compaction(c) for c in compactions],
    }
    return out


def _shown(entries: Any) -> EntryRecord | None:
    """The first entry sessions_history would show (not a tool message, some text or image)."""
    return next((e for e in entries if e.role not in TOOL_ROLES and has_block(e.content, SHOWN_BLOCKS)), None)


def _preview(entry: EntryRecord) -> str:
    text = " ".join(transcript.plain_text(entry.content).split())
    return redacted_preview(text, PREVIEW_CHARS)


def _compaction(entry: EntryRecord) -> dict[str, Any]:
    meta = entry.meta
    summary = redact_secrets(str(meta.get("summary") or ""))[0]
    return {"id": entry.entry_id, "at": to_iso(entry.timestamp), "reason": meta.get("reason"),
            "compactedMessages": int(meta.get("compactedMessages") or 0),
            "tokensBefore": meta.get("tokensBefore"), "tokensAfter": meta.get("tokensAfter"),
            "firstKeptMessageId": meta.get("firstKeptEntryId"), "summarizer": meta.get("summarizer"),
            "summary": summary[:SUMMARY_CHARS], "summaryTruncated": len(summary) > SUMMARY_CHARS}
