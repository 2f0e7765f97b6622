"""Results of the session tools: listings, histories, timelines, sends, resets, cleanup."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Shape


class MessagePreview(Shape):
    message_id: str
    role: str | None = None
    text: str
    timestamp: str | None = None


class SessionInfo(Shape):
    """A row of `sessions list`, and what create/fork return."""

    key: str
    session_id: str
    agent_id: str
    kind: str
    chat_type: str | None = None
    channel: str | None = None
    label: str | None = None
    session_started_at: str | None = None
    last_interaction_at: str | None = None
    updated_at: str | None = None
    message_count: int
    title: str | None = None
    preview: str | None = None
    recent_messages: list[MessagePreview] | None = None
    incognito: bool = False  # kept in memory only (listed only when true)
    created: bool | None = None  # `sessions create --key`: whether this call made the session


class Usage(Shape):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class SessionStatus(SessionInfo):
    model: str | None = None
    origin: str | None = None
    parent_session_id: str | None = None
    current: bool = False
    reset_count: int = 0
    compaction_count: int = 0
    pending_notices: int = 0
    next_reset_at: str | None = None
    usage: Usage | None = None


class HistoryMessage(Shape):
    message_id: str | None = None
    role: str | None = None
    text: str
    timestamp: str | None = None
    client_message_id: str | None = None
    # a message another session sent (sessions_send): {"kind": "inter_session", "sourceSessionKey", "sourceTool"}
    provenance: dict[str, Any] | None = None


class History(Shape):
    session_key: str
    session_id: str
    messages: list[HistoryMessage]
    truncated: bool
    dropped_messages: int
    content_truncated: bool
    content_redacted: bool
    bytes: int


class CompactionMark(Shape):
    """A compaction inside an interval: the messages before `firstKeptMessageId` were summarised."""

    id: str
    at: str | None = None
    reason: str | None = None
    compacted_messages: int
    tokens_before: int | None = None
    tokens_after: int | None = None
    first_kept_message_id: str | None = None
    summarizer: str | None = None
    summary: str
    summary_truncated: bool = False


class Interval(Shape):
    """One interval of a transcript: from a reset boundary (or the start) to the next (or now)."""

    index: int
    open: bool
    started_at: str | None = None
    ended_at: str | None = None
    closed_by: str | None = None  # the closing reset's reason: manual | daily | idle
    boundary_id: str | None = None
    message_count: int
    first_message_id: str | None = None  # sessions_history messageId=… re-opens the interval
    last_message_id: str | None = None
    first_message_at: str | None = None
    last_message_at: str | None = None
    preview: str | None = None
    compactions: list[CompactionMark]


class ArchivedTranscript(Shape):
    session_id: str
    archived_at: str | None = None
    message_count: int


class Timeline(Shape):
    """sessions_timeline: the intervals of a session, oldest first (the open one last)."""

    session_key: str
    session_id: str
    intervals: list[Interval]
    omitted_intervals: int = 0
    forked_from_session_id: str | None = None
    archived_transcripts: list[ArchivedTranscript] | None = None


class SendResult(Shape):
    """sessions_send: what became of a message delivered into another session. `accepted`: sent
    without waiting; `ok`: the target replied (`reply`); `timeout`: no reply in time (the target
    still answers, into its own history); `no_reply`: its turn ended without visible text (or
    record mode: `mode`, `note`); `error`: its turn failed (`error`)."""

    session_key: str
    status: Literal["accepted", "ok", "timeout", "no_reply", "error"]
    message_id: str | None = None  # the message's id in the target's transcript
    reply: str | None = None
    error: str | None = None
    mode: Literal["record"] | None = None
    note: str | None = None
    ping_pong_turns: int | None = None  # at most this many alternating turns follow in the background


class ResetResult(Shape):
    session_key: str
    session_id: str
    boundary_id: str
    memory_file: str | None = None


class CleanupReport(Shape):
    applied: bool
    mode: str
    sessions: int  # rows before cleanup (what the plan was made from)
    remaining: int | None = None  # rows after it
    stale: list[Any] = Field(default_factory=list)
    over_cap: list[Any] = Field(default_factory=list)
    wrong_dm_scope: list[Any] = Field(default_factory=list)
    archives: list[Any] = Field(default_factory=list)
    refused: list[Any] = Field(default_factory=list)  # victims whose stored ids cannot name an archive file: kept
