"""Every failure as `{"error": {"code", "message"}}` with the status §P lists, and bodies
that are too large refused before they are read whole."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..api.operations import Operation
from ..api.wording import engine_message, route_operation
from ..errors import ClawkeepError

log = logging.getLogger("clawkeep.gateway")


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


# What a numeric query parameter allows, for a message that says so whatever broke (pydantic
# names one bound at a time, and for `nan` only the bound it happened to fail)
ALLOWED = {"minScore": "must be a number between 0 and 1"}

# The engine's checks name the CLI flag; over HTTP the same input is this JSON field / query parameter.
FLAG_NAMES = {"--at": "at", "--from": "from", "--active": "active", "--lines": "lines", "--limit": "limit",
              "--min-score": "minScore"}


def http_message(exc: ClawkeepError) -> str:
    text = str(exc)
    flag, space, rest = text.partition(" ")
    return f"{FLAG_NAMES[flag]}{space}{rest}" if flag in FLAG_NAMES and space else text


def describe_validation(errors: list[Any], op: Operation | None = None) -> str:
    """Pydantic's errors as one sentence naming each input, what was wrong and what is allowed.
    With the operation the request is for, a field the Engine checks is worded as the Engine
    words it (`wording.py`), once per field."""
    parts: list[str] = []
    worded: set[str] = set()
    for e in errors[:8]:
        loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path", "header")]
        if op is not None and loc and (same := engine_message(op, e)) is not None:
            if loc[0] not in worded:
                worded.add(loc[0])
                parts.append(same)
            continue
        if loc and loc[0] in worded:
            continue  # the union's other member (at: text or integer): the field is worded already
        where = ".".join(loc)
        message = e.get("msg", "invalid")
        if e.get("type") == "extra_forbidden":
            message = "is not a known field"
        elif e.get("type") == "value_error":
            message = message.removeprefix("Value error, ")  # our own validators' messages read whole
        elif e.get("type") == "json_invalid":
            where, message = "body", f"is not valid JSON ({e.get('ctx', {}).get('error', 'parse error')})"
        elif e.get("type") == "bool_type":
            message = "must be true or false (a JSON boolean, not a string or number)"
        elif loc and loc[-1] in ALLOWED:
            message = f"{ALLOWED[loc[-1]]}, got {e.get('input')!r}"
        parts.append(f"{where or 'request'}: {message}")
    more = f" (and {len(errors) - 8} more)" if len(errors) > 8 else ""
    return "; ".join(parts) + more


def install(app: FastAPI) -> None:
    @app.exception_handler(ClawkeepError)
    async def engine_error(request: Request, exc: ClawkeepError) -> JSONResponse:
        if exc.http_status >= 500:
            log.warning("request failed: %s %s: %s", request.method, request.url.path, exc)
        return error_response(exc.http_status, exc.code, http_message(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        route = request.scope.get("route")
        op = route_operation(request.method, getattr(route, "path", None))
        return error_response(422, "invalid_input", describe_validation(list(exc.errors()), op))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
                 413: "too_large"}
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        unreadable = _unreadable_body(exc)
        if unreadable is not None:
            return error_response(422, "invalid_input", f"body: {unreadable}")
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.method} {request.url.path}; see /openapi.json for the routes"
        return error_response(exc.status_code, codes.get(exc.status_code, "http_error"), message,
                              headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "internal", f"internal error ({type(exc).__name__}); the gateway log has details")


def _unreadable_body(exc: StarletteHTTPException) -> str | None:
    """FastAPI answers a body it could not decode with a bare 400 "There was an error parsing
    the body" (the cause chained): say which problem, as a 422 like malformed JSON."""
    if exc.status_code != 400:
        return None
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        bad = cause.object[cause.start:cause.start + 1]
        shown = f"byte 0x{bad.hex()}" if isinstance(bad, bytes) else "a character"
        return f"is not UTF-8 ({shown} at offset {cause.start}); send JSON encoded as UTF-8"
    if isinstance(cause, RecursionError):
        return "is nested too deeply to read; send JSON with objects and lists nested at most a few hundred deep"
    if cause is not None:
        return f"could not be read as JSON ({type(cause).__name__}); send a UTF-8 JSON object"
    return None


class BodyLimit:
    """ASGI middleware: a request body over `max_bytes` is answered 413 — at once when its
    Content-Length says so, or as soon as a streamed body passes the limit (the route's body
    reader then raises the 413, which FastAPI passes through)."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    def _message(self) -> str:
        return (f"request body is larger than {self.max_bytes} bytes (gateway.maxBodyBytes); "
                "send less, e.g. a shorter message")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            response = error_response(413, "too_large", self._message(), headers={"Connection": "close"})
            return await response(scope, receive, send)
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise StarletteHTTPException(413, self._message())
            return message

        await self.app(scope, counted, send)
