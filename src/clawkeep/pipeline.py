"""The turn pipeline: inbound message → route → session → command → transcript.

Each step is a function of its own so it can be called and tested alone. Later stages
(recall, context assembly, model, post-turn hooks) plug in after `record_message`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import commands, turn
from .errors import ConflictError, DuplicateError, InputError
from .redact import redact_secrets
from .routing.keys import parse_key
from .routing.router import Inbound, Route, route
from .runtime import Runtime
from .sessions import service, transcript
from .sessions.visibility import Caller
from .storage import EntryRecord, SessionRecord

RESET_COMMANDS = ("/new", "/reset")
STATUS_COMMANDS = ("/status",)
TURN_COMMANDS = ("/compact", "/active-memory", "/verbose", "/trace")
# Commands of subsystems this version does not run yet: refused, never stored as chat.
PENDING_COMMANDS = ("/dreaming",)
ALL_COMMANDS = ", ".join((*RESET_COMMANDS, *STATUS_COMMANDS, *TURN_COMMANDS))
_MESSAGE_ID = re.compile(r"^[^\s\x00-\x1f]{1,200}$")


@dataclass
class MessageRequest:
    text: str
    inbound: Inbound = field(default_factory=Inbound)
    role: str = "user"
    message_id: str | None = None
    at: int | None = None


@dataclass
class MessageResult:
    session_key: str
    session_id: str
    message_id: str | None
    role: str
    command: str | None = None
    duplicate: bool = False
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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionKey": self.session_key, "sessionId": self.session_id,
                               "messageId": self.message_id, "role": self.role}
        if self.client_message_id is not None:
            out["clientMessageId"] = self.client_message_id
        if self.command:
            out["command"] = self.command
        if self.duplicate:
            out["duplicate"] = True
        if self.reset:
            out["reset"] = self.reset
        if self.status is not None:
            out["status"] = self.status
        optional = {"reply": self.reply, "activeMemory": self.active_memory, "mode": self.mode, "note": self.note,
                    "compaction": self.compaction, "flush": self.flush, "verbose": self.verbose, "trace": self.trace}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


def parse_command(text: str) -> tuple[str, str] | None:
    """('/reset', rest) for a slash command this engine executes, else None."""
    head, _, rest = text.strip().partition(" ")
    name = head.lower()
    if name in PENDING_COMMANDS:
        raise InputError(f"{name} is not available in this version; available commands: {ALL_COMMANDS}")
    if name in RESET_COMMANDS or name in STATUS_COMMANDS or name in TURN_COMMANDS:
        return name, rest.strip()
    return None


def is_operator(inbound: Inbound) -> bool:
    """The person who runs this engine: the CLI/API's own identity (channel `cli`, sender
    `owner`, a direct chat) or a dashboard thread they opened. Chat participants never are."""
    if inbound.session:
        return parse_key(inbound.session).kind == "dashboard"
    return (inbound.channel or "").strip().lower() == "cli" and inbound.sender == "owner" and \
        inbound.chat_type == "direct" and not inbound.group


def validate_request(rt: Runtime, request: MessageRequest) -> None:
    if request.role not in ("user", "assistant"):
        raise InputError(f"role {request.role!r} is not allowed; allowed values: user, assistant")
    if not request.text or not request.text.strip():
        raise InputError("message text is empty")
    limit = rt.config.session.max_message_chars
    if len(request.text) > limit:
        raise InputError(
            f"message is {len(request.text)} characters long; at most {limit} are allowed (session.maxMessageChars)"
        )
    if request.message_id is not None and not _MESSAGE_ID.match(request.message_id):
        raise InputError(f"message id {request.message_id!r} is invalid; use 1-200 characters without spaces")


def handle_message(rt: Runtime, request: MessageRequest) -> MessageResult:
    """Run one inbound message through the pipeline and return what happened."""
    validate_request(rt, request)
    at = request.at if request.at is not None else rt.now()
    routed = route(request.inbound, rt.agent_id, rt.config.session)
    if request.inbound.session:
        service.find_session(rt, routed.key)  # delivering into a session requires it to exist
    existing = _already_recorded(rt, routed, request.message_id)
    if existing is not None:
        return existing
    command = parse_command(request.text) if request.role == "user" else None
    interactive = routed.origin == "chat" and request.role == "user"
    session, auto_reset = service.open_session(rt, routed, at, interactive=interactive)
    if command is not None:
        return _run_command(rt, session, command, request, at, auto_reset, routed.conversation)
    recalled = turn.before_user_message(rt, session, request.text, turn.chat_model(rt)) if interactive else None
    entry = record_message(rt, session, request.role, request.text, at, request.message_id, interactive,
                           client_scope=routed.conversation)
    if entry is None:
        return _already_recorded(rt, routed, request.message_id)  # type: ignore[return-value]
    result = MessageResult(session.key, session.session_id, entry.entry_id, request.role, reset=auto_reset,
                           client_message_id=request.message_id)
    if request.role == "user" and routed.origin == "chat":
        _finish_turn(rt, session, request.text, recalled, at, result)
    return result


def _finish_turn(rt: Runtime, session: SessionRecord, text: str, recalled: Any, at: int,
                 result: MessageResult) -> None:
    outcome = turn.after_user_message(rt, session, text, recalled, at)
    result.session_id = session.session_id  # a successor transcript after truncateAfterCompaction
    result.reply = outcome.reply
    result.compaction, result.flush = outcome.compaction, outcome.flush
    if outcome.record_mode:
        result.mode, result.note = "record", turn.RECORD_MODE_NOTE
    if recalled is not None:
        result.active_memory = recalled.to_json()
        if session.meta.get("verbose") == "on":
            result.verbose = (f"Active Memory: {recalled.status}, {recalled.elapsed_ms} ms, query mode "
                              f"{recalled.query_mode}, summary {len(recalled.summary or '')} chars")
        if session.meta.get("trace") == "on" and recalled.summary:
            result.trace = f"Active Memory recalled: {recalled.summary}"


def _already_recorded(rt: Runtime, routed: Route, message_id: str | None) -> MessageResult | None:
    """A re-delivery of a message this conversation already sent (ids are per conversation: the
    same number from another chat is another message)."""
    if message_id is None:
        return None
    store = rt.store_for_key(routed.key)
    entry = store.get_entry_by_client_id(routed.conversation, message_id)
    if entry is None:
        return None
    session = store.get_session(entry.session_id)
    key = session.key if session else routed.key
    return MessageResult(key, entry.session_id, entry.entry_id, entry.role or "user", duplicate=True,
                         client_message_id=message_id)


def _run_command(rt: Runtime, session: SessionRecord, command: tuple[str, str], request: MessageRequest,
                 at: int, auto_reset: str | None, conversation: str) -> MessageResult:
    name, rest = command
    if name in TURN_COMMANDS:
        label, details = commands.run_turn_command(rt, session, name, rest, at,
                                                   operator=is_operator(request.inbound))
        return MessageResult(session.key, session.session_id, None, "user", command=label, status=details)
    if name in STATUS_COMMANDS:
        status = service.session_status(rt, session.key)
        return MessageResult(session.key, session.session_id, None, "user", command="status", status=status)
    store = rt.store_for_key(session.key)
    service.append_reset(rt, store, session, at, reason="manual")
    result = MessageResult(session.key, session.session_id, None, "user", command="reset", reset="manual")
    if rest:  # "/new tell me a joke": the rest is the first message of the new interval
        entry = record_message(rt, session, "user", rest, at, request.message_id, True,
                               client_scope=conversation)
        result.message_id = entry.entry_id if entry else None
        result.client_message_id = request.message_id
    return result


def record_message(rt: Runtime, session: SessionRecord, role: str, text: str, at: int,
                   message_id: str | None, interactive: bool, *, client_scope: str | None = None) -> EntryRecord | None:
    """Append a message and update the session row in one transaction; None if the conversation
    (`client_scope`) already delivered this client message id."""
    store = rt.store_for_key(session.key)
    entry = EntryRecord(transcript.new_entry_id(), session.session_id, "message", at,
                        role=role, content=transcript.text_blocks(text), client_id=message_id,
                        client_scope=(client_scope or session.key) if message_id else None)
    try:
        with store.transaction():
            transcript.append(store, entry)
            fresh = _apply_message(SessionRecord(**{**session.__dict__, "meta": dict(session.meta)}),
                                   entry, role, text, at, interactive)
            try:
                store.update_session(fresh)  # optimistic: our copy is usually current
            except ConflictError:  # another process wrote the row since we read it
                fresh = _apply_message(store.get_session(session.session_id) or session, entry, role, text, at,
                                       interactive)
                store.update_session(fresh)
    except DuplicateError:
        return None
    session.__dict__.update(fresh.__dict__)
    return entry


def _apply_message(fresh: SessionRecord, entry: EntryRecord, role: str, text: str, at: int,
                   interactive: bool) -> SessionRecord:
    fresh.message_count += 1
    fresh.updated_at = max(fresh.updated_at, at)
    transcript.add_active_size(fresh, entry)
    if interactive:
        fresh.last_interaction_at = max(fresh.last_interaction_at or 0, at)
    if "title" not in fresh.meta and role == "user":
        fresh.meta["title"] = redact_secrets(text.strip().splitlines()[0][:80])[0]
    return fresh


def record_system_event(rt: Runtime, ref: str, text: str, *, at: int | None = None, queue: bool = True,
                        caller: Caller = Caller()) -> dict[str, Any]:
    """A heartbeat/cron/exec notice: written to the transcript, never extends freshness (S3).

    Queued notices wait for the next turn; a reset drops the ones still queued.
    """
    if not text.strip():
        raise InputError("system event text is empty")
    limit = rt.config.session.max_message_chars
    if len(text) > limit:
        raise InputError(f"system event text is {len(text)} characters long; at most {limit} are allowed "
                         "(session.maxMessageChars, the same limit as messages)")
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
    return {"sessionKey": fresh.key, "sessionId": fresh.session_id, "eventId": entry.entry_id,
            "pendingNotices": len(fresh.meta.get("pendingNotices", []))}
