"""sessions_send (S7): deliver a message into another session and, if asked, wait for its reply.

The message is a turn of the target session like any other (its lock, its model, its tools),
recorded as a user entry with inter-session provenance: the receiver's prompt shows it under an
`[Inter-session message] … isUser=false` header, and nothing treats it as the user's words
(no slash command, no Active Memory, no freshness, no memory flush, no session-memory excerpt).

`timeout_s == 0` returns at once (`accepted`); otherwise the caller waits up to that long for the
target's reply (`ok`, `timeout`, `no_reply`, `error`). Either way the delivery runs in the
runtime's background work, so a timed-out wait never cancels the target's turn. Once the target
has replied to a calling session, the two sessions alternate (the ping-pong) for at most
`session.agentToAgent.maxPingPongTurns` turns, also in the background, until one side answers
`REPLY_SKIP` or nothing.

No deadlock: the calling session's own turn (its tool loop) holds its lock while it waits, so a
send back into a session whose turn waits on this very call chain (`Turn.held`) is refused at
once, and a ping-pong step into the caller simply queues behind the caller's turn.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .. import api
from ..context.assembly import REPLY_SKIP
from ..errors import ClawkeepError, InputError
from ..routing.keys import is_session_id, parse_key
from ..routing.router import Inbound
from ..runtime import Runtime
from ..sessions import service
from ..sessions.transcript import INTER_SESSION
from ..storage import SessionRecord
from ..visibility import Caller
from .messages import MessageRequest, MessageResult, check_text
from .pipeline import handle_message
from .reply import session_model
from .turn import Turn

SOURCE_TOOL = "sessions_send"
THREAD_REFUSED = ("sessions_send cannot deliver into a thread session (a key ending in :thread:<id>); use the "
                  "parent channel's session key, so tool-routed messages stay out of the people's thread")
RECORD_NOTE = ("record mode: no model is configured, so the target cannot reply; the message is recorded in its "
               "transcript")


@dataclass
class _Delivery:
    """One message on its way into the target; `done` is set once the target's turn ended."""

    done: threading.Event = field(default_factory=threading.Event)
    result: MessageResult | None = None
    error: BaseException | None = None


def sessions_send(rt: Runtime, target_ref: str, text: str, *, timeout_s: int, caller: str | None,
                  turn: Turn | None = None) -> api.SendResult:
    """Deliver `text` into the session `target_ref` as the calling session `caller` (None: the
    operator) and report what became of it (the SendResult shape). `turn`: the turn whose tool
    call this is (None: a call from outside any turn)."""
    requester, target = _resolve(rt, target_ref, text, caller, turn)
    recording = session_model(rt, target) is None
    turns = rt.config.session.agent_to_agent.max_ping_pong_turns
    exchange = turns if requester is not None and not recording and turns > 0 else 0
    delivery = _Delivery()
    provenance = _provenance(requester.key if requester else None)
    # A caller that waits lends the delivery its turn (the chain of held locks, so a send back is
    # refused, not deadlocked); a fire-and-forget delivery waits for nobody, so it holds no chain.
    # Either way the delivery runs in `rt`, under the sender's credential limit: not waiting for
    # the reply must not widen what the target's turn (its tools) may see.
    within = turn if timeout_s > 0 else None

    def deliver() -> None:
        try:
            delivery.result = _deliver(rt, target.key, text, provenance, within)
        except BaseException as exc:  # noqa: BLE001 - reported to a waiting caller, and logged
            delivery.error = exc
            rt.log_warning(f"sessions_send into {target.key} failed: {type(exc).__name__}: {exc}")
        finally:
            delivery.done.set()
        answer = _answer(delivery.result)
        if exchange and answer is not None:
            _ping_pong(rt, requester.key, target.key, answer, exchange, within)  # type: ignore[union-attr]

    rt.background.start("sessions-send", deliver)
    out: dict[str, Any] = {"session_key": target.key}  # the SendResult fields every outcome has
    if exchange:
        out["ping_pong_turns"] = exchange
    if recording:
        out.update(mode="record", note=RECORD_NOTE)
    if timeout_s == 0:
        return api.SendResult(**out, status="accepted")
    if not delivery.done.wait(timeout_s):
        return api.SendResult(**out, status="timeout",
                              error=f"no reply from {target.key} within {timeout_s} s; the message is delivered in "
                                    "turn order and its reply will be in that session's history")
    return api.SendResult(**{**out, **_outcome(delivery)})


def _resolve(rt: Runtime, target_ref: str, text: str, caller: str | None,
             turn: Turn | None = None) -> tuple[SessionRecord | None, SessionRecord]:
    """(calling session or None, target), after every check: a hidden target is exactly as not
    found as a missing one."""
    check_text(text, "sessions_send message", rt.config.session.max_message_chars)
    if not is_session_id(target_ref.strip()) and parse_key(target_ref).kind == "thread":
        raise InputError(THREAD_REFUSED)
    requester = rt.caller_session(Caller(caller)) if caller else None
    if requester is not None and requester.meta.get("incognito"):
        raise InputError("an incognito thread cannot use sessions_send: its words would be stored in another session")
    _, target = service.find_session(rt, target_ref, Caller(caller))
    if target.kind == "thread":
        raise InputError(THREAD_REFUSED)
    if requester is not None and requester.session_id == target.session_id:
        raise InputError("sessions_send cannot deliver into the calling session itself; answer in your own reply")
    if turn is not None and target.key in turn.held:
        raise InputError(f"session {target.key} is waiting for this call to finish, so a message into it would wait "
                         "for itself; reply instead of sending")
    if target.agent_id != rt.agent_id:
        raise InputError(f"sessions_send delivers within agent {rt.agent_id!r}; session {target.key} belongs to agent "
                         f"{target.agent_id!r} (open the engine with --agent {target.agent_id})")
    return requester, target


def _provenance(source_key: str | None, step: tuple[int, int] | None = None) -> dict[str, Any]:
    """OpenClaw's provenance shape; `pingPong` says which turn of an exchange this is."""
    out: dict[str, Any] = {"kind": INTER_SESSION, "sourceTool": SOURCE_TOOL}
    if source_key:
        out["sourceSessionKey"] = source_key
    if step:
        out["pingPong"] = {"turn": step[0], "maxTurns": step[1]}
    return out


def _deliver(rt: Runtime, key: str, text: str, provenance: dict[str, Any], within: Turn | None = None
             ) -> MessageResult:
    """One turn of `key` answering another session's message (waits for that session's lock);
    `within` is the turn waiting for it."""
    return handle_message(rt, MessageRequest(text, Inbound(session=key), "user", provenance=provenance),
                          within=within)


def _answer(result: MessageResult | None) -> str | None:
    """The visible reply, or None for no reply (none generated, empty, or REPLY_SKIP)."""
    text = (result.reply or "").strip() if result is not None else ""
    return None if not text or is_skip(text) else text


def is_skip(text: str) -> bool:
    return text.strip().strip("\"'`.").strip() == REPLY_SKIP


def _outcome(delivery: _Delivery) -> dict[str, Any]:
    """The SendResult fields that say what became of a delivery that finished in time."""
    if delivery.error is not None:
        detail = str(delivery.error) if isinstance(delivery.error, ClawkeepError) else \
            f"internal error ({type(delivery.error).__name__})"
        return {"status": "error", "error": f"the target's turn failed: {detail}"}
    result = delivery.result
    assert result is not None
    out: dict[str, Any] = {"message_id": result.message_id}
    if result.mode == "record":
        return {**out, "status": "no_reply"}  # the note says why
    answer = _answer(result)
    if answer is None:
        return {**out, "status": "no_reply", "note": "the target's turn ended without a visible reply"}
    return {**out, "status": "ok", "reply": answer}


def _ping_pong(rt: Runtime, requester: str, target: str, latest: str, turns: int,
               within: Turn | None = None) -> None:
    """After the target's first reply: the requester answers it, then the target, … for at most
    `turns` turns; a side that answers nothing or REPLY_SKIP ends the exchange."""
    current, other = requester, target
    for turn in range(1, turns + 1):
        try:
            result = _deliver(rt, current, latest, _provenance(other, (turn, turns)), within)
        except ClawkeepError as exc:
            rt.log_warning(f"sessions_send exchange between {requester} and {target} stopped at turn {turn}: {exc}")
            return
        answer = _answer(result)
        if answer is None:
            return
        latest, current, other = answer, other, current

