"""`POST /v1/messages?stream=true`: the turn as server-sent events.

    event: token       data: {"text": "…"}        visible reply text (reasoning is never streamed)
    event: discard     data: {}                   drop what this model call showed so far
    event: tool_call   data: {"id", "name", "isError"}
    event: result      data: <the MessageResult JSON, as without streaming>
    event: error       data: {"error": {"code", "message"}}

A request the turn refuses before anything happens (bad input, unknown session) is answered
with its 4xx JSON error instead of a stream; a failure after the message was stored (the model
provider down) is an `error` event. If the client goes away mid-stream the turn still
finishes in its thread (the message and the reply are stored) and the gateway waits for it on
shutdown.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from anyio import to_thread
from fastapi.responses import StreamingResponse

from ..engine import Engine
from ..errors import ClawkeepError
from .calls import InFlight
from .errors import error_body, error_response, http_message

if TYPE_CHECKING:  # the type only: the events come from Engine.message_stream
    from ..turns import TurnEvent

TERMINAL = ("result", "error")


def sse(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def event_bytes(event: TurnEvent) -> bytes:
    if event.kind == "token":
        return sse("token", {"text": event.data})
    if event.kind == "discard":
        return sse("discard", {})
    if event.kind == "result":
        return sse("result", event.data.to_json())
    if event.kind == "error":
        return sse("error", _error(event.data))
    return sse(event.kind, event.data)


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ClawkeepError):
        return error_body(exc.code, http_message(exc))
    return error_body("internal", f"internal error ({type(exc).__name__}); the gateway log has details")


async def turn_response(engine: Engine, inflight: InFlight, message: dict[str, Any]) -> Any:
    inflight.enter()  # left when the turn's last event has been produced, not when the client leaves
    try:
        events: Iterator[TurnEvent] = await to_thread.run_sync(
            lambda: iter(engine.message_stream(message.pop("text"), **message)), limiter=inflight.limiter)
        first = await to_thread.run_sync(next, events)
    except BaseException:
        inflight.leave()
        raise
    exc = first.data if first.kind == "error" else None
    if isinstance(exc, ClawkeepError) and exc.http_status < 500:  # refused before anything was stored
        inflight.leave()
        return error_response(exc.http_status, exc.code, http_message(exc))
    return StreamingResponse(_stream(first, events, inflight), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _stream(first: TurnEvent, events: Iterator[TurnEvent], inflight: InFlight) -> AsyncIterator[bytes]:
    event, finished = first, False
    try:
        while True:
            yield event_bytes(event)
            if event.kind in TERMINAL:
                finished = True
                return
            event = await to_thread.run_sync(next, events)
    finally:
        if finished:
            inflight.leave()
        else:  # the client left: let the turn finish, then count it out
            threading.Thread(target=_drain, args=(events, inflight), name="clawkeep-drain", daemon=True).start()


def _drain(events: Iterator[TurnEvent], inflight: InFlight) -> None:
    try:
        for event in events:
            if event.kind in TERMINAL:
                break
    finally:
        inflight.leave()
