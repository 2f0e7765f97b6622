"""The stdio transport's input, checked line by line before the MCP SDK sees it.

The SDK's stdio transport drops a line it cannot validate without answering, so a client that
sent `{`, `[]`, `{}`, a request whose `params` is not an object, or text holding a lone surrogate
(`\\ud800`, which is not Unicode) waited until its own timeout. Here every such line gets its
JSON-RPC error answer at once — -32700 (not JSON / not UTF-8), -32600 (not a request object,
or a line over MAX_LINE_BYTES), -32602 (a request whose params do not fit) — with the request's
id, or null when there is none to give back. A line that is a valid message reaches the SDK
exactly as it came (same text); blank lines are skipped.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, BinaryIO

import anyio
import mcp.types as types
from mcp.shared.message import SessionMessage

from ..validation import SURROGATE_ESCAPE, has_lone_surrogate

MAX_LINE_BYTES = 16 * 1024 * 1024  # one message; a tool's arguments are bounded far below this
Reply = Callable[[SessionMessage], Awaitable[None]]


def problem_of(raw: bytes) -> tuple[Any, int, str] | None:
    """(id to answer with, JSON-RPC error code, message) for a line that is not a valid message;
    None when the SDK can take it as it is."""
    try:
        text = raw.decode("utf-8")
        value = json.loads(text)
    except UnicodeDecodeError as exc:
        return None, types.PARSE_ERROR, f"Parse error: the line is not UTF-8 text (byte {exc.start})"
    except ValueError as exc:
        return None, types.PARSE_ERROR, f"Parse error: not JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, types.PARSE_ERROR, "Parse error: JSON nested too deeply"
    if isinstance(value, list):
        return None, types.INVALID_REQUEST, ("Invalid Request: JSON-RPC batches (arrays) are not supported; send "
                                             "one message object per line")
    if not isinstance(value, dict):
        return None, types.INVALID_REQUEST, "Invalid Request: a message must be a JSON object"
    request_id = _request_id(value)
    if "id" in value and request_id is None:  # else the SDK takes it for a notification and never answers
        return None, types.INVALID_REQUEST, ("Invalid Request: id must be a string or an integer, not "
                                             f"{_json_type(value['id'])}")
    if SURROGATE_ESCAPE.search(raw) and has_lone_surrogate(value):
        code = types.INVALID_PARAMS if "method" in value else types.INVALID_REQUEST
        return request_id, code, ("Invalid params: the message holds a lone surrogate escape (such as \\ud800), "
                                  "which is not Unicode text; send valid UTF-8 strings")
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)  # exactly what the SDK will run
    except Exception as exc:  # noqa: BLE001 - whatever the SDK refuses is answered, never dropped
        return request_id, *_invalid(value, exc)
    return None


def _request_id(value: dict[str, Any]) -> Any:
    """The id to answer with: the request's own when it is a JSON-RPC id (string or integer)."""
    ident = value.get("id")
    if isinstance(ident, str) and not has_lone_surrogate(ident):
        return ident
    return ident if isinstance(ident, int) and not isinstance(ident, bool) else None


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", type(None): "null", float: "a number with a fraction", dict: "an object",
             list: "an array", str: "a string that is not Unicode text"}
    return names.get(type(value), type(value).__name__)


def _invalid(value: dict[str, Any], exc: Exception) -> tuple[int, str]:
    """-32602 when only the params are wrong (a request object otherwise), else -32600."""
    envelope_ok = value.get("jsonrpc") == "2.0" and isinstance(value.get("method"), str)
    if envelope_ok and "params" in value and not isinstance(value["params"], dict):
        shown = type(value["params"]).__name__
        return types.INVALID_PARAMS, f"Invalid params: params must be a JSON object, not {shown}"
    detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}"
                       for e in getattr(exc, "errors", lambda: [])()[:3]) or type(exc).__name__
    return types.INVALID_REQUEST, ("Invalid Request: not a JSON-RPC 2.0 message (a request needs jsonrpc \"2.0\", "
                                   f"an id and a method; params, when given, an object): {detail}")[:500]


class CheckedLines:
    """The lines of `source` for the SDK's stdio transport (`async for line in …`): valid
    messages pass unchanged; any other line is answered through `reply` (set by `answer_with`
    once the transport's write stream exists) and not passed on."""

    def __init__(self, source: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES):
        self._source = source
        self._max = max_line_bytes
        self._reply: Reply | None = None
        self._ready = anyio.Event()

    def answer_with(self, reply: Reply) -> None:
        self._reply = reply
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while raw := await self._readline(self._max + 1):
            if len(raw) > self._max and not raw.endswith(b"\n"):
                await self._skip_to_line_end()
                await self._answer(None, types.INVALID_REQUEST,
                                   f"Invalid Request: a message may be at most {self._max} bytes")
                continue
            if not raw.strip():
                continue
            problem = problem_of(raw)
            if problem is None:
                yield raw.decode("utf-8")
            else:
                await self._answer(*problem)

    async def _readline(self, limit: int) -> bytes:
        return await anyio.to_thread.run_sync(self._source.readline, limit)

    async def _skip_to_line_end(self) -> None:
        while (rest := await self._readline(self._max)) and not rest.endswith(b"\n"):
            pass

    async def _answer(self, request_id: Any, code: int, message: str) -> None:
        print(f"clawkeep mcp: answered a malformed line with {code} (id {request_id!r}): {message}",
              file=sys.stderr, flush=True)
        await self._ready.wait()
        assert self._reply is not None
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
        try:
            await self._reply(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server is shutting down: nobody left to answer


class ClaimedStdin:
    """fd 0 read through a private duplicate while serving; fd 0 itself points at the null
    device, so nothing else in the process (or a child) reads the wire. Restored on exit."""

    _private: int | None = None

    def __enter__(self) -> BinaryIO:
        try:
            self._private = os.dup(0)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
        except OSError:  # no usable fd 0 to divert: read the stream in place
            return sys.stdin.buffer
        return os.fdopen(self._private, "rb", closefd=False)

    def __exit__(self, *_: object) -> None:
        if self._private is not None:
            os.dup2(self._private, 0)
