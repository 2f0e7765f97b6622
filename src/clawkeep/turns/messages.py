"""What a turn takes and gives: the request, the result, and the events a streaming caller sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..routing.router import Inbound


def check_text(text: str, what: str, limit: int) -> None:
    """Text stored in a transcript (a message, a sent message, a system event): not blank, at
    most `limit` characters (session.maxMessageChars). `what` names it in the error."""
    if not text or not text.strip():
        raise InputError(f"{what} is empty")
    if len(text) > limit:
        raise InputError(f"{what} is {len(text)} characters long; at most {limit} are allowed "
                         "(session.maxMessageChars)")


@dataclass
class MessageRequest:
    text: str
    inbound: Inbound = field(default_factory=Inbound)
    role: str = "user"
    message_id: str | None = None
    at: int | None = None
    # Set for a message another session sent (sessions_send): OpenClaw's provenance shape,
    # {"kind": "inter_session", "sourceSessionKey", "sourceTool"}; such a message is data for
    # the receiver's model, never a user's words or a slash command.
    provenance: dict[str, Any] | None = None
    # Record without answering: another system (OpenClaw, through the plugin) already answered.
    record_only: bool = False


@dataclass
class MessageResult:
    session_key: str
    session_id: str
    message_id: str | None
    role: str
    command: str | None = None
    duplicate: bool = False
    conflict: bool = False  # the client message id was used before for another text: nothing stored
    stored_text: str | None = None  # with conflict: the text stored under that id (a redacted preview)
    reset: str | None = None  # automatic or manual reset that this message caused
    status: dict[str, Any] | None = None
    reply: str | None = None
    active_memory: dict[str, Any] | None = None
    mode: str | None = None  # "record" when no model is configured
    note: str | None = None
    compaction: dict[str, Any] | None = None
    flush: dict[str, Any] | None = None
    verbose: str | None = None
    trace: str | None = None
    client_message_id: str | None = None  # the channel's own id, when it gave one
    tool_calls: list[dict[str, Any]] | None = None  # the tools the model ran this turn, in order
    remembered: dict[str, Any] | None = None  # record mode: what a "remember …" in chat wrote

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionKey": self.session_key, "sessionId": self.session_id,
                               "messageId": self.message_id, "role": self.role}
        if self.client_message_id is not None:
            out["clientMessageId"] = self.client_message_id
        if self.command:
            out["command"] = self.command
        if self.duplicate:
            out["duplicate"] = True
        if self.conflict:
            out.update(conflict=True, storedText=self.stored_text)
        if self.reset:
            out["reset"] = self.reset
        if self.status is not None:
            out["status"] = self.status
        optional = {"reply": self.reply, "activeMemory": self.active_memory, "mode": self.mode, "note": self.note,
                    "compaction": self.compaction, "flush": self.flush, "verbose": self.verbose, "trace": self.trace,
                    "toolCalls": self.tool_calls, "remembered": self.remembered}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


@dataclass(frozen=True)
class TurnEvent:
    """One step of a turn as it happens: `token` (a visible reply delta; reasoning is never
    streamed), `discard` (drop what was shown of the current model call: it turned out to be
    reasoning), `tool_call` (a tool the model ran: {"id", "name", "isError"}), `result` (the
    final MessageResult) or `error` (a ClawkeepError that ended the turn)."""

    kind: str
    data: Any = None
