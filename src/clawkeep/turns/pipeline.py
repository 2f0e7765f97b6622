"""One inbound message, start to finish, in the order it happens:

    start (validate, the Turn) → route → (re-delivery?) → lock the session → session (open or
    roll over) → slash command, or: recall (Active Memory) → transcript (record the message) →
    reply (context, flush and compaction, model and tools, the reply recorded) → hooks → result

The turn's state is one explicit object, `turn.Turn`, made by `start_turn` and passed to every
step; each step is a function of its own (here, in `record`, `reply`, `commands`) so it can be
called and tested alone with a turn. `handle_message` returns the result; `stream_message`
yields the same turn as events (reply tokens as they arrive, then the result) for streaming
surfaces. docs/architecture.md draws the steps.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Iterator

from ..api import RecallResult
from ..config.active_memory import active_memory_config
from ..errors import ClawkeepError, InputError
from ..events import TurnCompleted
from ..routing.keys import parse_key
from ..routing.router import Inbound, Route, route
from ..runtime import Runtime
from ..sessions import service
from ..storage import EntryRecord, SessionRecord
from . import commands, record, reply
from .messages import MessageRequest, MessageResult, TurnEvent, check_text
from .turn import EventSink, Turn

_MESSAGE_ID = re.compile(r"^[^\s\x00-\x1f]{1,200}$")


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
    check_text(request.text, "message text", rt.config.session.max_message_chars)
    if request.message_id is not None and not _MESSAGE_ID.match(request.message_id):
        raise InputError(f"message id {request.message_id!r} is invalid; use 1-200 characters without spaces")


def start_turn(rt: Runtime, request: MessageRequest, *, on_event: EventSink | None = None,
               within: Turn | None = None) -> Turn:
    """Step 0: the request checked, and the turn object every later step receives: the
    message's time, the caller's credential limit (`rt.limit`) and, for a turn another turn waits
    for (`within`: a sessions_send with a timeout), the chain of locks held above it."""
    validate_request(rt, request)
    at = request.at if request.at is not None else rt.now()
    return Turn.start(request, at, limit=rt.limit, within=within, on_event=on_event)


def route_step(rt: Runtime, turn: Turn) -> Route:
    """Route: the inbound message's session key and the conversation that numbers its client
    message ids; delivering into a named session requires it to exist."""
    routed = route(turn.request.inbound, rt.agent_id, rt.config.session)
    if turn.request.inbound.session:
        service.find_session(rt, routed.key)
    turn.route = routed
    return routed


def session_step(rt: Runtime, turn: Turn) -> SessionRecord:
    """Session: open the routed session, or roll a stale one over (a `SessionReset`, which the
    session-memory hook answers). Runs under the session's turn lock."""
    assert turn.route is not None, "route_step runs first"
    turn.session, turn.reset = service.open_session(rt, turn.route, turn.at, interactive=turn.interactive)
    return turn.session


def recall_step(rt: Runtime, turn: Turn) -> RecallResult:
    """Recall: Active Memory for the message, before it is stored (so it cannot recall the
    question itself); its memory searches are the turn's (one index check)."""
    assert turn.session is not None, "session_step runs first"
    turn.recalled = reply.recall_before(rt, turn.session, turn.text, reply.session_model(rt, turn.session), turn=turn)
    return turn.recalled


def record_step(rt: Runtime, turn: Turn, *, interactive: bool | None = None) -> EntryRecord | None:
    """Transcript: the message stored with its session counters in one transaction (`interactive`,
    default the turn's: whether it extends the session's freshness). None when the same message
    arrived twice at once and the other delivery stored it."""
    assert turn.session is not None and turn.route is not None, "session_step runs first"
    request = turn.request
    turn.entry = record.record_message(
        rt, turn.session, request.role, turn.text, turn.at, request.message_id,
        turn.interactive if interactive is None else interactive, client_scope=turn.route.conversation,
        provenance=request.provenance)
    return turn.entry


def hooks_step(rt: Runtime, turn: Turn, outcome: reply.TurnOutcome, result: MessageResult) -> TurnCompleted:
    """Hooks: the finished turn published as `TurnCompleted` (the metrics, Dreaming's recorder
    and any `Engine.subscribe` handler hear it)."""
    assert turn.session is not None
    recalled = turn.recalled
    mode = "inter-session" if turn.inter_session else "record" if outcome.record_mode else "model"
    event = TurnCompleted(
        rt.now(), turn.session.agent_id, turn.session.key, result.message_id or "", mode,
        int((time.monotonic() - turn.started) * 1000), recall_status=recalled.status if recalled is not None else None,
        injected=recalled.summary if recalled is not None and recalled.status == "ok" else None,
        reply=outcome.reply, tool_calls=len(outcome.tool_calls or ()),
        compacted=bool(outcome.compaction and outcome.compaction.get("compacted")))
    rt.events.publish(event)
    return event


def handle_message(rt: Runtime, request: MessageRequest, *, on_event: EventSink | None = None,
                   within: Turn | None = None) -> MessageResult:
    """Run one inbound message through the turn and return what happened. `on_event` (optional)
    sees the reply's tokens as the model streams them; `within` is the turn waiting for this one
    (sessions_send), None for a message from outside."""
    turn = start_turn(rt, request, on_event=on_event, within=within)
    routed = route_step(rt, turn)
    # turns of one session never interleave
    with rt.store_for_key(routed.key).session_lock(routed.key):
        turn.hold(routed.key)
        return _locked_turn(rt, turn)


def _locked_turn(rt: Runtime, turn: Turn) -> MessageResult:
    request, routed = turn.request, turn.route
    assert routed is not None
    existing = record.already_recorded(rt, routed, request.message_id, request.text)
    if existing is not None:
        return existing
    # another session's message (turn.inter_session) is answered, but it is not the user's
    found = commands.parse_command(request.text) if request.role == "user" and not turn.inter_session else None
    turn.interactive = routed.origin == "chat" and request.role == "user" and not turn.inter_session
    session = session_step(rt, turn)
    if found is not None:
        return _run_command(rt, turn, found)
    if turn.interactive and not request.record_only:
        recall_step(rt, turn)
    entry = record_step(rt, turn)
    if entry is None:  # the same message arrived twice at once: the other delivery recorded it
        return record.already_recorded(rt, routed, request.message_id, request.text)  # type: ignore[return-value]
    result = MessageResult(session.key, session.session_id, entry.entry_id, request.role, reset=turn.reset,
                           client_message_id=request.message_id)
    if turn.interactive or turn.inter_session:
        _reply(rt, turn, result)
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

    # the caller's credential limit goes along in `rt` (a limited runtime), as with a non-streamed turn
    threading.Thread(target=work, name="clawkeep-turn", daemon=True).start()
    while True:
        event = events.get()
        yield event
        if event.kind in ("result", "error"):
            return


def _reply(rt: Runtime, turn: Turn, result: MessageResult) -> None:
    """Reply (context → model and tools → the reply recorded: `reply.after_user_message`), then hooks."""
    session = turn.session
    assert session is not None
    outcome = reply.after_user_message(rt, turn)
    result.session_id = session.session_id  # a successor transcript after truncateAfterCompaction
    result.reply = outcome.reply
    result.compaction, result.flush = outcome.compaction, outcome.flush
    result.tool_calls = outcome.tool_calls or None
    result.remembered = outcome.remembered
    if outcome.record_mode:
        result.mode = "record"
        result.note = "recorded only (recordOnly): no reply was asked for" if turn.record_only \
            else reply.RECORD_MODE_NOTE
    recalled = turn.recalled
    if recalled is not None:
        result.active_memory = recalled.to_json()
        if session.meta.get("verbose") == "on":
            query_mode = active_memory_config(rt.config).config.query_mode
            result.verbose = (f"Active Memory: {recalled.status}, {recalled.elapsed_ms} ms, query mode "
                              f"{query_mode}, summary {len(recalled.summary or '')} chars")
        if session.meta.get("trace") == "on" and recalled.summary:
            result.trace = f"Active Memory recalled: {recalled.summary}"
    hooks_step(rt, turn, outcome, result)


def _run_command(rt: Runtime, turn: Turn, found: tuple[commands.SlashCommand, str]) -> MessageResult:
    command, rest = found
    assert command.run is not None and turn.session is not None
    request, session = turn.request, turn.session
    outcome = command.run(commands.CommandCall(rt, session, rest, turn.at, is_operator(request.inbound)))
    result = MessageResult(session.key, session.session_id, None, "user", command=outcome.label,
                           status=outcome.status, reset=outcome.reset)
    if outcome.first_message:  # "/new tell me a joke": the rest is the first message of the new interval,
        turn.text = outcome.first_message  # answered like any message
        turn.record_only = False
        if turn.interactive:
            recall_step(rt, turn)
        entry = record_step(rt, turn, interactive=True)
        result.message_id = entry.entry_id if entry else None
        result.client_message_id = request.message_id
        if entry is not None and turn.interactive:
            _reply(rt, turn, result)
    return result
