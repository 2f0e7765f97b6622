"""The client's sans-IO core: requests built from the operation registry, answers parsed into the
api shapes or the `clawkeep` error the gateway reported. No I/O here: the sync and async clients
(`clawkeep.client`) only send what this builds and hand back what they received, so both behave
the same by construction.

An `Engine` method's arguments map onto an operation's argument fields through its HTTP binding
(`api.operations.Http`: positional names and the keywords Engine spells otherwise); the binding
then says which field goes in the path, the query string or the JSON body.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .. import errors
from ..api.operations import OPERATIONS, Operation
from ..api.wording import check_arguments

SESSION_HEADER = "X-Clawkeep-Session"
MAX_RETRIES = 3  # a 503 with Retry-After, or a GET whose connection failed
MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is not waited for: the error is raised instead
CONNECT_BACKOFF_S = 0.2


# The gateway's error codes (`{"error": {"code"}}`) as the exception classes the engine raises.
ERROR_CLASSES: dict[str, type[errors.ClawkeepError]] = {
    "invalid_input": errors.InputError, "not_found": errors.NotFoundError, "conflict": errors.ConflictError,
    "duplicate": errors.DuplicateError, "storage": errors.StorageError, "corrupt": errors.StorageError,
    "unauthorized": errors.UnauthorizedError, "forbidden": errors.ForbiddenError, "too_large": errors.InputError,
    "method_not_allowed": errors.InputError, "shutting_down": errors.UnavailableError,
}


class ArgumentsNotServed(errors.InputError):
    """An argument the operation's HTTP route does not take (e.g. Engine's `at=` clock control)."""


@dataclass
class Call:
    """One operation call as HTTP: what to send, and how to read the answer."""

    op: Operation
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = False

    @property
    def idempotent(self) -> bool:
        return self.method == "GET"


@dataclass(frozen=True)
class StreamEvent:
    """One server-sent event of a streamed message, typed as `Engine.message_stream`'s TurnEvent:
    `token` (data: the text), `discard` (None), `tool_call` ({"id", "name", "isError"}), `result`
    (a MessageResult) or `error` (the `clawkeep` exception that ended the turn)."""

    kind: str
    data: Any = None


def operation(name: str) -> Operation:
    op = OPERATIONS.get(name)
    if op is None or op.http is None:
        routed = ", ".join(n for n, o in OPERATIONS.items() if o.http is not None)
        raise errors.InputError(f"operation {name!r} is not served over HTTP; the client offers: {routed}")
    return op


def arguments(op: Operation, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """An Engine-style call (positional arguments, Engine's keyword names) as argument fields."""
    assert op.http is not None
    positional = op.http.positional
    if len(args) > len(positional):
        raise errors.InputError(f"{op.name} takes at most {len(positional)} positional arguments "
                                f"({', '.join(positional) or 'none'}), got {len(args)}")
    renamed = dict(op.http.engine_names)
    fields: dict[str, Any] = {}
    for name, value in zip(positional, args, strict=False):
        fields[name] = value
    for name, value in kwargs.items():
        target = renamed.get(name, name)
        if target not in op.args.model_fields:
            allowed = sorted({*(renamed.keys()), *(f for f in op.args.model_fields if f not in renamed.values())})
            raise ArgumentsNotServed(f"{op.name}: unknown argument {name!r}; allowed: {', '.join(allowed)}")
        if target in fields:
            raise errors.InputError(f"{op.name}: argument {name!r} given twice")
        fields[target] = value
    return fields


def build(op: Operation, fields: dict[str, Any], caller: str | None, *, stream: bool = False) -> Call:
    """The request for `op` with these argument fields, run as `caller` (None: the operator)."""
    http = op.http
    assert http is not None
    path = http.path
    for name in http.path_fields:
        value = fields.get(name)
        if value is None and op.name == "session_status":
            value = "current"  # the calling session (the engine's alias); as the operator a 4xx names it
        if not isinstance(value, str) or not value:
            raise errors.InputError(f"{op.name}: {name} must be a non-empty string, got {value!r}")
        path = path.replace("{" + name + "}", quote(value, safe=":@"))
    check_arguments(op, fields)  # the Engine's checks and words, before anything is sent
    params = {param: _query_value(fields[name]) for name, param in http.query_params(op.args).items()
              if fields.get(name) is not None}
    body = None
    if http.method in ("POST", "PUT"):
        body = {op.args.model_fields[name].alias or name: fields[name] for name in http.body_fields(op.args)
                if name in fields}
    headers = {"Accept": "text/event-stream" if stream else "application/json"}
    if http.method != "GET":
        headers["Content-Type"] = "application/json"  # the gateway refuses a state change without it
    if caller is not None:
        headers[SESSION_HEADER] = caller
    if stream:
        params["stream"] = "true"
    return Call(op, http.method, path, params, body, headers, stream)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        raise errors.InputError(f"a query number must be finite, got {value!r}")
    return str(value)


def encode(body: dict[str, Any] | None) -> bytes | None:
    return None if body is None else json.dumps(body, ensure_ascii=False).encode()


def result(call: Call, status: int, content: bytes, url: str) -> Any:
    """The typed result of a 2xx answer, or raise the error the gateway reported."""
    if status >= 400:
        data = _json_or_none(content)
        if call.op.name == "message" and status == 409 and _is_message_conflict(data):
            return _conflict_result(call, data["error"])  # Engine returns this, it does not raise
        raise error(status, data, url)
    data = _json_or_none(content)
    if data is None:
        raise errors.UnavailableError(f"{url} answered {status} with something that is not JSON; "
                                      "is it a clawkeep gateway?")
    http = call.op.http
    assert http is not None
    if http.many:
        return [call.op.result.model_validate(item) for item in data]
    return call.op.result.model_validate(data)


def _is_message_conflict(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("error"), dict) and data["error"].get("conflict") is True
            and isinstance(data["error"].get("result"), dict))


def _conflict_result(call: Call, detail: dict[str, Any]) -> Any:
    return call.op.result.model_validate(detail["result"])


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return None


def error(status: int, data: Any, url: str) -> errors.ClawkeepError:
    """The `clawkeep` exception for an error answer, with the gateway's own message."""
    detail = data.get("error") if isinstance(data, dict) else None
    if not isinstance(detail, dict):
        if status == 404:
            return errors.UnavailableError(f"{url} answered 404 without a clawkeep error: is the URL a clawkeep "
                                           "gateway (e.g. http://127.0.0.1:8787, without /v1)?")
        return errors.UnavailableError(f"{url} answered HTTP {status} without a clawkeep error body")
    code, message = str(detail.get("code", "")), str(detail.get("message", ""))
    if status == 404 and message.startswith("no route "):  # the gateway's catch-all: this URL is not its root
        return errors.UnavailableError(f"{url}: {message}; the client's URL is the gateway's root, "
                                       "e.g. http://127.0.0.1:8787 (or a gateway of another version)")
    cls = ERROR_CLASSES.get(code) or (errors.InputError if 400 <= status < 500 else errors.ClawkeepError)
    if cls is errors.UnauthorizedError:
        message = f"{url}: {message}; pass token=… to the client"
    exc = cls(message)
    exc.http_status = status  # type: ignore[misc] - the status the gateway answered
    return exc


def retry_delay(call: Call, attempt: int, status: int | None, retry_after: str | None) -> float | None:
    """Seconds to wait before trying `call` again, or None to give up. `status` None: the connection
    failed (only a GET is tried again: a write may have happened)."""
    if attempt >= MAX_RETRIES:
        return None
    if status is None:
        return CONNECT_BACKOFF_S * (2 ** attempt) if call.idempotent else None
    if status != 503 or retry_after is None:
        return None
    try:
        delay = float(retry_after)
    except ValueError:
        return None
    return delay if 0 <= delay <= MAX_RETRY_AFTER_S else None


class Tries:
    """The tries of one call, sans-IO: each client drives it with its own send and sleep.

        tries = Tries(call)
        for pause in tries:         # None before the first try, then each retry's delay (s)
            if pause is not None:
                sleep(pause)
            tries.last = send(...)  # the response, or the transport error the send raised
        tries.last                  # what to hand back (or raise)

    Iteration stops as soon as `retry_delay` says no further try is due."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.last: Any = None  # the latest try's response (status_code, headers) or exception

    def __iter__(self) -> Iterator[float | None]:
        yield None
        for attempt in itertools.count():
            if isinstance(self.last, BaseException):
                pause = retry_delay(self.call, attempt, None, None)
            else:
                pause = retry_delay(self.call, attempt, self.last.status_code, self.last.headers.get("retry-after"))
            if pause is None:
                return
            yield pause


class SSEParser:
    """Server-sent events from chunks of text, as `StreamEvent`s."""

    def __init__(self, call: Call, url: str):
        self.call, self.url = call, url
        self.buffer = ""

    def feed(self, text: str) -> list[StreamEvent]:
        self.buffer += text.replace("\r\n", "\n")
        events = []
        while "\n\n" in self.buffer:
            block, self.buffer = self.buffer.split("\n\n", 1)
            event = self._event(block)
            if event is not None:
                events.append(event)
        return events

    def _event(self, block: str) -> StreamEvent | None:
        kind, lines = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].lstrip(" "))
        if not lines:
            return None
        data = _json_or_none("\n".join(lines).encode())
        if kind == "token":
            return StreamEvent("token", data.get("text", "") if isinstance(data, dict) else "")
        if kind == "discard":
            return StreamEvent("discard")
        if kind == "result":
            return StreamEvent("result", self.call.op.result.model_validate(data))
        if kind == "error":
            return StreamEvent("error", error(500, data, self.url))
        return StreamEvent(kind, data)
