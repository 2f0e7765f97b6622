"""One inbound message, start to finish, in the order it happens:

    validate → route → (re-delivery?) → lock the session → freshness (open or roll over)
    → slash command, or: Active Memory → record the message → reply (context, flush and
    compaction, the model) → record the reply → result

Each step is a function of its own (here, in `record`, `reply`, `commands`) so it can be
called and tested alone. `handle_message` returns the result; `stream_message` yields the
same turn as events (reply tokens as they arrive, then the result) for streaming surfaces.
"""

from __future__ import annotations

import contextvars
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..config.active_memory import active_memory_config
from ..errors import ClawkeepError, InputError
from ..events import TurnCompleted
from ..memory import service as memory
from ..routing.keys import parse_key
from ..routing.router import Inbound, Route, route
from ..runtime import Runtime
from ..sessions import service
from ..storage import SessionRecord
from . import commands, record, reply
from .messages import MessageRequest, MessageResult, TurnEvent

EventSink = Callable[[TurnEvent], None]
_MESSAGE_ID = re.compile(r"^[^\s\x00-\x1f]{1,200}$")
_TURNS_HELD: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("clawkeep_turns_held", default=())


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


def handle_message(rt: Runtime, request: MessageRequest, *, on_event: EventSink | None = None) -> MessageResult:
    """Run one inbound message through the turn and return what happened. `on_event` (optional)
    sees the reply's tokens as the model streams them."""
    validate_request(rt, request)
    started = time.monotonic()
    at = request.at if request.at is not None else rt.now()
    routed = route(request.inbound, rt.agent_id, rt.config.session)
    if request.inbound.session:
        service.find_session(rt, routed.key)  # delivering into a session requires it to exist
    # turns of one session never interleave; the memory index is checked for edits once a turn
    with rt.store_for_key(routed.key).session_lock(routed.key), memory.one_check_per_turn():
        held = _TURNS_HELD.set((*_TURNS_HELD.get(), routed.key))
        try:
            return _locked_turn(rt, request, routed, at, on_event, started)
        finally:
            _TURNS_HELD.reset(held)


def turns_held() -> tuple[str, ...]:
    """Keys of the sessions whose turns are running up this call chain, holding their locks
    (a tool call inside a turn, a delivery that turn waits for): a sessions_send into one of
    them would wait for itself."""
    return _TURNS_HELD.get()


def _locked_turn(rt: Runtime, request: MessageRequest, routed: Route, at: int,
                 on_event: EventSink | None, started: float) -> MessageResult:
    existing = record.already_recorded(rt, routed, request.message_id, request.text)
    if existing is not None:
        return existing
    inter_session = request.provenance is not None  # another session's message: answered, but not the user's
    found = commands.parse_command(request.text) if request.role == "user" and not inter_session else None
    interactive = routed.origin == "chat" and request.role == "user" and not inter_session
    session, auto_reset = service.open_session(rt, routed, at, interactive=interactive)
    if found is not None:
        return _run_command(rt, session, found, request, at, routed.conversation,
                            interactive, on_event, started)
    model = reply.session_model(rt, session)
    recalled = reply.recall_before(rt, session, request.text, model) if interactive and not request.record_only \
        else None
    entry = record.record_message(rt, session, request.role, request.text, at, request.message_id, interactive,
                                  client_scope=routed.conversation, provenance=request.provenance)
    if entry is None:  # the same message arrived twice at once: the other delivery recorded it
        return record.already_recorded(rt, routed, request.message_id, request.text)  # type: ignore[return-value]
    result = MessageResult(session.key, session.session_id, entry.entry_id, request.role, reset=auto_reset,
                           client_message_id=request.message_id)
    if interactive or inter_session:
        _reply(rt, session, request.text, recalled, at, result, on_event, started, inter_session=inter_session,
               record_only=request.record_only)
    return result


def stream_message(rt: Runtime, request: MessageRequest) -> Iterator[TurnEvent]:
    """The same turn as `handle_message`, as events: `token`s while the model answers, then
    `result` (or `error` with the ClawkeepError that ended it). The turn runs in a worker
    thread, so a slow consumer never holds the model's connection."""
    events: queue.Queue[TurnEvent] = queue.Queue()

    def work() -> None:
        try:
            events.put(TurnEvent("result", handle_message(rt, request, on_event=events.put)))
        except ClawkeepError as exc:
            events.put(TurnEvent("error", exc))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, who re-raises
            events.put(TurnEvent("error", exc))

    # the caller's context goes along (as with a non-streamed turn): a sandboxed credential's limit
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name="clawkeep-turn", daemon=True).start()
    while True:
        event = events.get()
        yield event
        if event.kind in ("result", "error"):
            return


def _reply(rt: Runtime, session: SessionRecord, text: str, recalled: Any, at: int, result: MessageResult,
           on_event: EventSink | None, started: float, *, inter_session: bool = False,
           record_only: bool = False) -> None:
    outcome = reply.after_user_message(rt, session, text, recalled, at, on_event=on_event,
                                       inter_session=inter_session, record_only=record_only)
    result.session_id = session.session_id  # a successor transcript after truncateAfterCompaction
    result.reply = outcome.reply
    result.compaction, result.flush = outcome.compaction, outcome.flush
    result.tool_calls = outcome.tool_calls or None
    result.remembered = outcome.remembered
    if outcome.record_mode:
        result.mode = "record"
        result.note = "recorded only (recordOnly): no reply was asked for" if record_only else reply.RECORD_MODE_NOTE
    if recalled is not None:
        result.active_memory = recalled.to_json()
        if session.meta.get("verbose") == "on":
            query_mode = active_memory_config(rt.config).config.query_mode
            result.verbose = (f"Active Memory: {recalled.status}, {recalled.elapsed_ms} ms, query mode "
                              f"{query_mode}, summary {len(recalled.summary or '')} chars")
        if session.meta.get("trace") == "on" and recalled.summary:
            result.trace = f"Active Memory recalled: {recalled.summary}"
    mode = "inter-session" if inter_session else "record" if outcome.record_mode else "model"
    rt.events.publish(TurnCompleted(
        rt.now(), session.agent_id, session.key, result.message_id or "", mode,
        int((time.monotonic() - started) * 1000), recall_status=recalled.status if recalled is not None else None,
        injected=recalled.summary if recalled is not None and recalled.status == "ok" else None,
        reply=outcome.reply, tool_calls=len(outcome.tool_calls or ()),
        compacted=bool(outcome.compaction and outcome.compaction.get("compacted"))))


def _run_command(rt: Runtime, session: SessionRecord, found: tuple[commands.SlashCommand, str],
                 request: MessageRequest, at: int, conversation: str, interactive: bool,
                 on_event: EventSink | None, started: float) -> MessageResult:
    command, rest = found
    assert command.run is not None
    outcome = command.run(commands.CommandCall(rt, session, rest, at, is_operator(request.inbound)))
    result = MessageResult(session.key, session.session_id, None, "user", command=outcome.label,
                           status=outcome.status, reset=outcome.reset)
    if outcome.first_message:  # "/new tell me a joke": the rest is the first message of the new interval,
        first = outcome.first_message  # answered like any message
        recalled = reply.recall_before(rt, session, first, reply.session_model(rt, session)) if interactive else None
        entry = record.record_message(rt, session, "user", first, at, request.message_id, True,
                                      client_scope=conversation)
        result.message_id = entry.entry_id if entry else None
        result.client_message_id = request.message_id
        if entry is not None and interactive:
            _reply(rt, session, first, recalled, at, result, on_event, started)
    return result
