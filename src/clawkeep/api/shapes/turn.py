"""Results of a message's turn and of Active Memory's recall."""

from __future__ import annotations

from typing import Any, Literal

from .base import Shape
from .memory import RememberResult


class RecallResult(Shape):
    status: Literal["ok", "none", "skipped", "timeout", "error"]
    lane: int | None = None
    past_question: bool
    summary: str | None = None
    elapsed_ms: int
    reason: str | None = None


class Classification(Shape):
    past_question: bool
    language: str


class MessageResult(Shape):
    """One inbound message through the turn (`message --json`, `POST /v1/messages`)."""

    session_key: str
    session_id: str
    message_id: str | None = None
    role: str
    client_message_id: str | None = None
    command: str | None = None
    duplicate: bool = False
    conflict: bool = False  # the client message id was used before for another text: nothing stored
    stored_text: str | None = None  # with conflict: the stored text (a redacted preview)
    reset: str | None = None
    status: dict[str, Any] | None = None
    reply: str | None = None
    active_memory: RecallResult | None = None
    mode: Literal["record"] | None = None
    note: str | None = None
    compaction: dict[str, Any] | None = None
    flush: dict[str, Any] | None = None
    verbose: str | None = None
    trace: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # [{"name", "isError"}] the tools the model ran
    remembered: RememberResult | None = None  # record mode: what "remember …" in chat wrote


class SystemEventResult(Shape):
    session_key: str
    session_id: str
    event_id: str
    pending_notices: int
