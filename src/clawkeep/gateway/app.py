"""The HTTP API (SPEC §P, G1): every route is a thin skin over one operation of
`clawkeep.api.OPERATIONS`, run as the caller the request names, in a worker thread.

    app = Gateway(engine, config.gateway).app()     # served by `clawkeep gateway` (server.py)

Arguments are the operations' typed models (so OpenAPI at /openapi.json is generated from the
same models as the CLI's JSON and the MCP tool schemas); results are their `to_json()`; errors
are `{"error": {"code", "message"}}` (errors.py). `X-Clawkeep-Session` names the calling session
for visibility (like `--as`); without it the caller is the credential's own (docs/security.md):
the operator for the gateway token, the session of a session or peer token. A name may only
narrow a token's scope. A hidden session answers exactly like a missing one (404).
"""

from __future__ import annotations

import hmac
import logging
import re
import time
import uuid
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, BeforeValidator, ValidationError

from .. import api, credentials
from .. import validation as check
from ..api import operations as ops
from ..config.gateway import GatewayConfig
from ..engine import Engine
from ..errors import ClawkeepError
from ..visibility import set_limit
from . import browser, control_ui, errors, metrics, stream
from .background import Background
from .calls import InFlight

log = logging.getLogger("clawkeep.gateway")
OPERATOR = credentials.Grant("operator")
NO_TOKEN_RECHECK_S = 1.0  # how stale "no stored token exists" may be (Gateway._tokens_exist)
# The credential of the request being served: set by the auth dependency, read by the route's
# caller and operator-only checks (the dependencies and the route run in one task context).
_grant: ContextVar[credentials.Grant] = ContextVar("clawkeep_grant", default=OPERATOR)


async def _calling_session(request: Request, named: Annotated[str | None, Header(
        alias="X-Clawkeep-Session", description="The calling session (visibility); may only narrow a token's "
                                                "scope.")] = None) -> str | None:
    """The session the request runs as: the credential's own, or the one named within it."""
    gateway: Gateway = request.app.state.gateway
    return _grant.get().caller(gateway.engine.runtime, named)


Caller = Annotated[str | None, Depends(_calling_session)]


def _whole_number(value: Any) -> Any:
    """A query integer is written in digits: pydantic's lax parsing also took `1.0` (while `true`
    was a 422), and the API's integers are real integers (docs/input-limits.md)."""
    if isinstance(value, str) and not re.fullmatch(r"[+-]?[0-9]+", value):
        raise ValueError(f"must be a whole number written in digits (e.g. 5), got {check.shown(value)}")
    return value


Whole = BeforeValidator(_whole_number)


class SendBody(BaseModel):
    """POST /v1/sessions/{key}/send: the sessions_send arguments without the key (it is in the path)."""

    model_config = ops.Args.model_config
    message: str
    timeout_seconds: int | None = None  # bounds and default: the sessions_send arguments


class EditBody(BaseModel):
    model_config = ops.Args.model_config
    text: str
    base_text: str | None = ops.MemoryEditArgs.model_fields["base_text"]


def _json(result: Any) -> Any:
    if isinstance(result, list):
        return [item.to_json() if hasattr(item, "to_json") else item for item in result]
    return result.to_json() if hasattr(result, "to_json") else result


def _respond(result: Any) -> JSONResponse:
    """The result's JSON as the response. Answering with a response object skips FastAPI's
    re-encoding of a returned value (it walks every field again: ≈0.3 ms a turn, measured)."""
    return JSONResponse(_json(result))


def _message_response(result: Any) -> JSONResponse:
    """A message's result; a client message id reused for another text is a 409 conflict in the
    error shape, the stored text quoted in the message and given as `storedText`, the whole
    MessageResult as `result` (the Python client returns it, as Engine does)."""
    data = _json(result)
    if not data.get("conflict"):
        return JSONResponse(data)
    body = errors.error_body("conflict", data["note"])
    body["error"].update(conflict=True, storedText=data["storedText"], messageId=data["messageId"],
                         sessionKey=data["sessionKey"], result=data)  # result: what Engine.message returns
    return JSONResponse(body, status_code=409)


def _doc(shape: type[BaseModel], many: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI: the result model and the error shape (routes return JSON built by the model)."""
    content = {"application/json": {"schema": {"type": "array", "items": shape.model_json_schema(by_alias=True)}
                                    if many else shape.model_json_schema(by_alias=True)}}
    return {200: {"description": "OK", "content": content}, 404: {"description": "Not found or hidden"},
            422: {"description": "Invalid input"}}


class Gateway:
    def __init__(self, engine: Engine, settings: GatewayConfig | None = None, *, background: bool = True):
        self.engine = engine
        self.settings = settings or engine.config.gateway
        self.inflight = InFlight(self.settings.threads)
        self.metrics = metrics.GatewayMetrics(engine)
        self.background = Background(engine, self.settings, self.inflight) if background else None
        self.started = time.time()
        self._any_token, self._no_token_until = False, 0.0  # see _tokens_exist

    # --- running operations ---------------------------------------------------------
    async def op(self, name: str, caller: str | None = None, **arguments: Any) -> JSONResponse:
        """Run operation `name` with its typed arguments as `caller`; the result's JSON response."""
        return _respond(await self.run_op(name, caller, **arguments))

    async def run_op(self, name: str, caller: str | None = None, **arguments: Any) -> Any:
        """Run operation `name` with its typed arguments as `caller`; the result."""
        operation = ops.OPERATIONS[name]
        try:
            args = arguments.pop("args", None) or operation.args.model_validate(
                {k: v for k, v in arguments.items() if v is not None})
        except ValidationError as exc:
            raise _Invalid(errors.describe_validation(exc.errors(), operation)) from None
        return await self.inflight.run(operation.run, self.engine, args, caller)

    async def call(self, work: Any, *args: Any) -> JSONResponse:
        return _respond(await self.inflight.run(work, *args))

    def operator_only(self, caller: str | None, what: str) -> None:
        grant = _grant.get()
        if not grant.is_operator:
            raise _Forbidden(f"{what} is for the operator: token {grant.name!r} is scoped to {grant.kind} "
                             f"{grant.target}")
        if caller is not None:
            raise _Forbidden(f"{what} is for the operator: send the request without X-Clawkeep-Session")

    def agent_operator_only(self, caller: str | None, what: str) -> None:
        """For the operator, or a token of the agent this gateway serves acting as that agent (no
        calling session): the agent's own memory index (the OpenClaw plugin's `openclaw memory`)."""
        grant = _grant.get()
        if grant.kind == "agent" and grant.target == self.engine.runtime.agent_id and caller is None:
            return
        self.operator_only(caller, what)

    def own_agent_only(self, what: str) -> None:
        """Memory, new threads and routed messages belong to the agent this gateway serves: an
        agent token of another agent may not use them."""
        grant = _grant.get()
        if grant.kind == "agent" and grant.target != self.engine.runtime.agent_id:
            raise _Forbidden(f"{what}: token {grant.name!r} is for agent {grant.target!r}, this gateway serves "
                             f"agent {self.engine.runtime.agent_id!r}")

    # --- the app --------------------------------------------------------------------
    def app(self) -> FastAPI:
        @asynccontextmanager
        async def lifespan(_: FastAPI):
            if self.background is not None:
                self.background.start()
            log.info("gateway ready", extra={"event": "ready"})
            try:
                yield
            finally:
                await self.shutdown()

        # No /docs or /redoc: FastAPI builds them from scripts on cdn.jsdelivr.net (blank offline,
        # and a third party in the page); /openapi.json is the same description, served from here.
        app = FastAPI(title="clawkeep gateway", version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
                      description="Sessions and memory for AI agents (SPEC §P). Errors: "
                                  '{"error": {"code", "message"}}; X-Clawkeep-Session names the caller.')
        errors.install(app)
        app.add_middleware(errors.BodyLimit, max_bytes=self.settings.max_body_bytes)
        app.add_middleware(browser.BrowserGuard, settings=self.settings)  # Host, cross-site: before any route
        app.add_middleware(_Observe, gateway=self)
        app.state.gateway = self
        guarded = [Depends(self._authorised), Depends(_known_query)]
        _token_routes(app, self, guarded)  # before `_routes`, whose last route catches every other /v1 path
        _routes(app, self, guarded)
        control_ui.install(app)
        return app

    async def shutdown(self) -> None:
        """Refuse new work, give in-flight turns `shutdownGraceSeconds`, stop the background
        work, flush the metrics, close the engine."""
        from anyio import to_thread  # noqa: PLC0415

        left = await to_thread.run_sync(self.inflight.close, self.settings.shutdown_grace_seconds)
        if self.background is not None:
            await to_thread.run_sync(self.background.stop)
        if left:
            log.warning("shutdown with %d calls still running; each commits whole or not at all", left)
            return  # their threads still use the engine: the process exit closes it
        await to_thread.run_sync(self.engine.close)
        log.info("gateway stopped", extra={"event": "stopped"})

    async def _authorised(self, request: Request) -> None:
        """Who is asking: the gateway token (operator), a stored token (its scope), or nobody —
        the operator only on a gateway with neither (a tokenless loopback gateway). Stored tokens
        are read from the store on every request, so a revocation anywhere counts at once."""
        grant = await self._credential(request.headers.get("authorization", ""))
        _grant.set(grant)
        set_limit(grant.limit())

    async def _credential(self, header: str) -> credentials.Grant:
        from anyio import to_thread  # noqa: PLC0415

        token = self.settings.auth.token
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and value:
            if token is not None and hmac.compare_digest(value.encode("utf-8", "surrogatepass"), token.encode()):
                return OPERATOR
            try:
                grant = await to_thread.run_sync(credentials.authenticate, self.engine.runtime, value)
            except credentials.CredentialRefused as exc:
                raise _Unauthorised(str(exc)) from None
            if grant is not None:
                return grant
        if token is None and not await self._tokens_exist():
            return OPERATOR  # no credential exists anywhere: today's open loopback gateway
        raise _Unauthorised()

    async def _tokens_exist(self) -> bool:
        """Whether any stored token exists. Tokens are never deleted, so once one does it stays
        true. Until then the store is asked at most every NO_TOKEN_RECHECK_S: a first token made by
        another process (`clawkeep tokens create`) closes this open gateway within that time, one
        made through it at once; a tokenless gateway pays no store read per request (measured:
        +16% p50 on a cheap route with one)."""
        if self._any_token or time.monotonic() < self._no_token_until:
            return self._any_token
        from anyio import to_thread  # noqa: PLC0415

        self._any_token = await to_thread.run_sync(credentials.required, self.engine.runtime)
        self._no_token_until = time.monotonic() + NO_TOKEN_RECHECK_S
        return self._any_token

    def token_created(self) -> None:
        self._any_token = True

    def observe_request(self, method: str, template: str, status: int, elapsed: float, request_id: str,
                        session_key: str | None) -> None:
        self.metrics.observe_request(method, template, status, elapsed)
        log.info("request", extra={"event": "request", "method": method, "route": template, "status": status,
                                   "elapsedMs": round(elapsed * 1000, 2), "requestId": request_id,
                                   "sessionKey": session_key})


async def _known_query(request: Request) -> None:
    """A query parameter the route does not take is refused (422), as an unknown body key is:
    a misspelt `limt=5` must not quietly give the default. The catch-all route answers 404 itself."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if not request.query_params or dependant is None or not getattr(route, "include_in_schema", True):
        return
    known: set[str] = set()
    pending = [dependant]
    while pending:  # the route's own query parameters and those of its dependencies
        current = pending.pop()
        known.update(param.alias for param in current.query_params)
        pending.extend(current.dependencies)
    unknown = [name for name in request.query_params if name not in known]
    if unknown:
        allowed = ", ".join(sorted(known)) if known else "none"
        raise _Invalid(f"{unknown[0]}: is not a query parameter of {request.method} {route.path}; allowed: {allowed}")


class _Observe:
    """ASGI middleware: request id (X-Request-Id, echoed or minted), timing, a structured log line
    and the request metrics. Plain ASGI rather than an "http" middleware function, which runs
    every request through an extra task and memory streams (measured: most of the HTTP cost)."""

    def __init__(self, app: Any, gateway: Gateway):
        self.app, self.gateway = app, gateway

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        headers = dict(scope.get("headers") or [])
        request_id = (headers.get(b"x-request-id") or b"").decode("latin-1") or uuid.uuid4().hex[:12]
        status = 500

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                message = {**message, "headers": [*kept, (b"x-request-id", request_id.encode("latin-1"))]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            session = headers.get(b"x-clawkeep-session")
            self.gateway.observe_request(scope["method"], getattr(route, "path", "unmatched"), status,
                                         time.perf_counter() - started, request_id,
                                         session.decode("latin-1") if session else None)


class _Unauthorised(ClawkeepError):
    code = "unauthorized"
    http_status = 401

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "missing or wrong token: send `Authorization: Bearer <token>` (the "
                         "gateway's token, or one from `clawkeep tokens create`)")


class _Invalid(ClawkeepError):
    code = "invalid_input"
    http_status = 422


class _Forbidden(ClawkeepError):
    code = "forbidden"
    http_status = 403


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("clawkeep")
    except PackageNotFoundError:
        return "0"


def _routes(app: FastAPI, gw: Gateway, guarded: list[Any]) -> None:  # noqa: C901 - one route table
    """Every §P route. Each body is one operation call; the signatures are the documentation."""

    # --- messages ---------------------------------------------------------------------
    @app.post("/v1/messages", dependencies=guarded, tags=["messages"], responses=_doc(api.MessageResult))
    async def post_message(body: ops.MessageArgs, caller: Caller = None,
                           stream_reply: Annotated[bool, Query(alias="stream")] = False) -> Any:
        """One inbound message through the whole turn; `?stream=true` answers with server-sent
        events: `token` (visible reply text), `discard`, `tool_call`, then `result` or `error`."""
        body = await _granted_message(gw, body, caller)
        if _grant.get().kind == "peer" and body.session is None:
            caller = None  # routed as the token's peer, into the session routing gives it
        else:
            body = ops.scoped_message(body, caller)  # a calling session never routes by channel and sender
        if not stream_reply:  # the operation checks the target is visible
            return _message_response(await gw.run_op("message", caller, args=body))
        if caller is not None:  # the stream runs the turn directly: check here (hidden = missing)
            await gw.run_op("session_status", caller, session_key=body.session)
        return await stream.turn_response(gw.engine, gw.inflight, body.model_dump())

    # --- sessions ---------------------------------------------------------------------
    @app.get("/v1/sessions", dependencies=guarded, tags=["sessions"], responses=_doc(api.SessionInfo, many=True))
    async def list_sessions(caller: Caller = None, kind: str | None = None, label: str | None = None,
                            agent_id: Annotated[str | None, Query(alias="agentId")] = None,
                            active: Annotated[int | None, Whole, Query(
                                ge=1, le=check.MAX_INT, description="Active in the last N minutes")] = None,
                            search: str | None = None, preview: bool = False,
                            recent: Annotated[int, Whole, Query(alias="recentMessages", ge=0, le=20)] = 0) -> Any:
        return await gw.op("sessions_list", caller, kind=kind, label=label, agent_id=agent_id, active_minutes=active,
                           search=search, preview=preview, recent_messages=recent)

    @app.post("/v1/sessions", dependencies=guarded, tags=["sessions"], responses=_doc(api.SessionInfo))
    async def create_session(body: ops.SessionsCreateArgs, caller: Caller = None) -> Any:
        """A new dashboard thread (`incognito`: kept in memory only, never written to disk); with
        `coding: NAME` the coding session agent:<id>:coding:NAME (409 when it exists); with `key`, the
        session of that key, created if missing (`created` says whether this call made it)."""
        gw.own_agent_only("creating a thread")
        if _grant.get().kind in ("session", "peer"):
            raise _Forbidden(f"creating a thread: token {_grant.get().name!r} runs as its one session; new "
                             "dashboard threads are made by the operator or an agent token")
        if caller is not None:
            await gw.run_op("session_status", caller)  # a missing calling session is a 404, as on every route
        return await gw.op("sessions_create", caller, args=body)

    @app.get("/v1/sessions/{key:path}/history", dependencies=guarded, tags=["sessions"],
             responses=_doc(api.History))
    async def session_history(key: str, caller: Caller = None,
                              message_id: Annotated[str | None, Query(alias="messageId")] = None,
                              include_tools: Annotated[bool, Query(alias="includeTools")] = False) -> Any:
        return await gw.op("sessions_history", caller, session_key=key, message_id=message_id,
                           include_tools=include_tools)

    @app.get("/v1/sessions/{key:path}/timeline", dependencies=guarded, tags=["sessions"],
             responses=_doc(api.Timeline))
    async def session_timeline(key: str, caller: Caller = None) -> Any:
        """The session's intervals (reset boundaries) and compactions; open a closed interval
        with `…/history?messageId=<its firstMessageId>`."""
        return await gw.op("sessions_timeline", caller, session_key=key)

    @app.post("/v1/sessions/{key:path}/reset", dependencies=guarded, tags=["sessions"], responses=_doc(api.ResetResult))
    async def reset_session(key: str, caller: Caller = None, body: ops.NoArgs | None = None) -> Any:
        """No body (or `{}`): any key in one is refused rather than ignored."""
        return await gw.op("sessions_reset", caller, session_key=key)

    @app.post("/v1/sessions/{key:path}/fork", dependencies=guarded, tags=["sessions"], responses=_doc(api.SessionInfo))
    async def fork_session(key: str, caller: Caller = None, body: ops.NoArgs | None = None) -> Any:
        """No body (or `{}`): any key in one is refused rather than ignored."""
        return await gw.op("sessions_fork", caller, session_key=key)

    if "sessions_send" in ops.OPERATIONS:
        @app.post("/v1/sessions/{key:path}/send", dependencies=guarded, tags=["sessions"])
        async def send_to_session(key: str, body: SendBody, caller: Caller = None) -> Any:
            """sessions_send (S7): deliver into another session, marked as inter-session data;
            `timeoutSeconds: 0` returns at once, otherwise waits for the reply."""
            return await gw.op("sessions_send", caller, session_key=key, **body.model_dump(exclude_none=True))

    @app.get("/v1/sessions/{key:path}", dependencies=guarded, tags=["sessions"], responses=_doc(api.SessionStatus))
    async def session_status(key: str, caller: Caller = None) -> Any:
        return await gw.op("session_status", caller, session_key=key)

    @app.get("/v1/search", dependencies=guarded, tags=["sessions"], responses=_doc(api.SearchResult))
    async def search_sessions(q: Annotated[str, Query(max_length=4096, description="What to look for")],
                              caller: Caller = None,
                              limit: Annotated[int | None, Whole, Query(ge=1, le=25)] = None) -> Any:
        return await gw.op("sessions_search", caller, query=q, limit=limit)

    # --- memory -----------------------------------------------------------------------
    @app.get("/v1/memory/search", dependencies=guarded, tags=["memory"], responses=_doc(api.MemorySearchResult))
    async def search_memory(q: Annotated[str, Query(max_length=4096)], caller: Caller = None,
                            limit: Annotated[int | None, Whole, Query(ge=1, le=50)] = None,
                            mode: Annotated[str, Query(pattern="^(hybrid|keyword|vector)$")] = "hybrid",
                            min_score: Annotated[float | None, Query(alias="minScore", ge=0, le=1,
                                                                     allow_inf_nan=False)] = None,
                            corpus: Annotated[str, Query(pattern="^(all|memory|sessions)$")] = "all") -> Any:
        gw.own_agent_only("memory")
        return await gw.op("memory_search", caller, query=q, max_results=limit, mode=mode, min_score=min_score,
                           corpus=corpus)

    @app.get("/v1/memory/file", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryFile))
    async def memory_file(path: Annotated[str, Query(max_length=1024)], caller: Caller = None,
                          from_line: Annotated[int | None, Whole, Query(alias="from", ge=1, le=check.MAX_INT)] = None,
                          lines: Annotated[int | None, Whole, Query(ge=1, le=check.MAX_GET_LINES)] = None) -> Any:
        gw.own_agent_only("memory")
        return await gw.op("memory_get", caller, path=path, **{"from": from_line}, lines=lines)

    @app.post("/v1/memory/remember", dependencies=guarded, tags=["memory"], responses=_doc(api.RememberResult))
    async def remember(body: ops.MemoryRememberArgs, caller: Caller = None) -> Any:
        gw.own_agent_only("memory")
        return await gw.op("memory_remember", caller, args=body)

    @app.post("/v1/memory/edit", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryChange))
    async def correct(body: ops.MemoryCorrectArgs, caller: Caller = None) -> Any:
        """memory_edit: correct a line (the old one kept as superseded); a session only its own lines."""
        return await gw.op("memory_edit", caller, args=body)

    @app.post("/v1/memory/forget", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryChange))
    async def forget(body: ops.MemoryForgetArgs, caller: Caller = None) -> Any:
        """memory_forget: retire a line (kept, marked forgotten); a session only its own lines."""
        return await gw.op("memory_forget", caller, args=body)

    @app.post("/v1/memory/undo", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryChange))
    async def undo_correction(body: ops.MemoryUndoArgs, caller: Caller = None) -> Any:
        """memory_undo: undo a memory_edit or memory_forget by the `undo` id it answered with."""
        return await gw.op("memory_undo", caller, args=body)

    @app.get("/v1/memory/items", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryItem, many=True))
    async def memory_items(caller: Caller = None, status: Annotated[
            str | None, Query(pattern="^(active|superseded|expired|forgotten)$")] = None) -> Any:
        gw.operator_only(caller, "listing every memory item")
        return await gw.call(lambda: gw.engine.memory_items(status=status))

    @app.get("/v1/memory/refusals", dependencies=guarded, tags=["memory"], responses=_doc(api.Refusal, many=True))
    async def memory_refusals(caller: Caller = None, days: Annotated[int, Whole, Query(ge=1, le=30)] = 7) -> Any:
        """What the write filters refused in the last `days` days, newest first (excerpts redacted)."""
        gw.operator_only(caller, "reading the refusal log")
        return await gw.op("memory_refusals", None, days=days)

    @app.put("/v1/memory/items/{item_id}", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryItem))
    async def edit_item(item_id: str, body: EditBody, caller: Caller = None) -> Any:
        gw.operator_only(caller, "editing memory")
        return await gw.op("memory_item_edit", None, item_id=item_id, text=body.text, base_text=body.base_text)

    @app.delete("/v1/memory/items/{item_id}", dependencies=guarded, tags=["memory"], responses=_doc(api.DeleteResult))
    async def delete_item(item_id: str, caller: Caller = None) -> Any:
        gw.operator_only(caller, "deleting memory")
        return await gw.op("memory_delete", None, item_id=item_id)

    @app.post("/v1/memory/index", dependencies=guarded, tags=["memory"], responses=_doc(api.IndexReport))
    async def memory_index(body: ops.MemoryIndexArgs | None = None, caller: Caller = None) -> Any:
        """Bring the memory index up to date now (`force`: rebuild it); the gateway also indexes by itself."""
        gw.agent_operator_only(caller, "indexing memory")
        return await gw.op("memory_index", None, args=body or ops.MemoryIndexArgs())

    # --- key/value store files (memory/store/: the LangGraph store) ---------------------
    @app.get("/v1/memory/store", dependencies=guarded, tags=["memory"], responses=_doc(api.StoreFile, many=True))
    async def store_files(caller: Caller = None,
                          prefix: Annotated[str, Query(max_length=1024)] = "memory/store") -> Any:
        gw.own_agent_only("the key/value store")
        return await gw.op("memory_store_files", caller, prefix=prefix)

    @app.get("/v1/memory/store/file", dependencies=guarded, tags=["memory"], responses=_doc(api.StoreFile))
    async def store_read(path: Annotated[str, Query(max_length=1024)], caller: Caller = None) -> Any:
        gw.own_agent_only("the key/value store")
        return await gw.op("memory_store_read", caller, path=path)

    @app.put("/v1/memory/store/file", dependencies=guarded, tags=["memory"], responses=_doc(api.StoreFile))
    async def store_write(body: ops.StoreWriteArgs, caller: Caller = None) -> Any:
        """Replace a store file whole (empty text deletes it); 409 when it changed since `baseSha256`."""
        gw.own_agent_only("the key/value store")
        return await gw.op("memory_store_write", caller, args=body)

    @app.get("/v1/memory/status", dependencies=guarded, tags=["memory"], responses=_doc(api.MemoryStatus))
    async def memory_status(deep: bool = False, caller: Caller = None) -> Any:
        gw.agent_operator_only(caller, "the memory index status")
        return await gw.call(lambda: gw.engine.memory_status(deep=deep))

    # --- dreaming (the Control UI's Dreams tab) ---------------------------------------
    @app.get("/v1/dreaming", dependencies=guarded, tags=["dreaming"], responses=_doc(api.DreamingStatus))
    async def dreaming_status(caller: Caller = None) -> Any:
        """Dreaming's schedule, next run, last sweep, lock holder and counts."""
        gw.operator_only(caller, "Dreaming's state")
        return await gw.op("dreaming_status")

    @app.put("/v1/dreaming", dependencies=guarded, tags=["dreaming"], responses=_doc(api.DreamingToggle))
    async def dreaming_enable(body: ops.DreamingEnableArgs, caller: Caller = None) -> Any:
        """Switch Dreaming on or off (written to the overrides file beside the config file)."""
        gw.operator_only(caller, "switching Dreaming on or off")
        return await gw.op("dreaming_enable", args=body)

    @app.post("/v1/dreaming/sweep", dependencies=guarded, tags=["dreaming"], responses=_doc(api.SweepReport))
    async def dreaming_sweep(body: ops.DreamArgs | None = None, caller: Caller = None) -> Any:
        """A sweep now (no body: every phase); `"status": "locked"` (with the holder) when another runs."""
        gw.operator_only(caller, "running a Dreaming sweep")
        return await gw.op("dream", args=body or ops.DreamArgs())

    @app.get("/v1/dreaming/review", dependencies=guarded, tags=["dreaming"], responses=_doc(api.DreamsReview))
    async def dreaming_review(caller: Caller = None, limit: Annotated[int, Whole, Query(ge=1, le=200)] = 20) -> Any:
        """DREAMS.md's phase blocks, the Dream Diary and the promotion runs, newest first."""
        gw.own_agent_only("memory")
        return await gw.op("dreaming_review", caller, limit=limit)

    @app.post("/v1/dreaming/undo", dependencies=guarded, tags=["dreaming"], responses=_doc(api.UndoReport))
    async def dreaming_undo(body: ops.PromoteUndoArgs | None = None, caller: Caller = None) -> Any:
        """Undo a promotion run or one promoted item (`target`; no body or none: the last run)."""
        gw.operator_only(caller, "undoing a promotion")
        return await gw.op("memory_promote_undo", args=body or ops.PromoteUndoArgs())

    # --- recall, status, metrics ------------------------------------------------------
    @app.post("/v1/recall", dependencies=guarded, tags=["recall"], responses=_doc(api.RecallResult))
    async def recall(body: ops.RecallArgs, caller: Caller = None) -> Any:
        if caller is not None or not _grant.get().is_operator:  # hidden (also beyond an agent token) = missing
            await gw.run_op("session_status", caller, session_key=body.session)
        return await gw.op("recall", caller, args=body)

    @app.get("/v1/status", dependencies=guarded, tags=["status"], responses=_doc(api.EngineStatus))
    async def status() -> Any:
        grant = _grant.get()
        if not grant.is_operator:  # a scoped token learns what the UI needs, no engine-wide figures
            config = gw.engine.config
            return {"agentId": gw.engine.runtime.agent_id, "chatModel": config.agents.defaults.model.primary,
                    "credential": {"name": grant.name, "scope": f"{grant.kind}:{grant.target}",
                                   "sandboxed": grant.sandboxed}}
        data = _json(await gw.run_op("status"))
        data["gateway"] = {"uptimeSeconds": round(time.time() - gw.started, 1), "inFlight": gw.inflight.count,
                           "background": gw.background.report() if gw.background is not None else None}
        return data

    @app.get("/v1/metrics", dependencies=guarded, tags=["status"], response_class=PlainTextResponse)
    async def prometheus() -> Response:
        """Prometheus text: request counts and latencies, turn latency, and the G5 memory metrics."""
        gw.operator_only(None, "the metrics")
        body, content_type = await gw.inflight.run(gw.metrics.exposition)
        return Response(body, media_type=content_type)

    @app.get("/v1/health", tags=["status"])
    async def health() -> Any:
        """Open without the token (load balancers and the UI's start-up probe): it tells only that
        the gateway answers and how many calls are in flight, nothing about sessions or memory."""
        return {"ok": True, "inFlight": gw.inflight.count}

    @app.api_route("/v1/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"], include_in_schema=False,
                   dependencies=guarded)
    async def unknown(rest: str, request: Request) -> Any:
        raise _NoRoute(f"no route {request.method} /v1/{rest}; see /openapi.json for the routes")


class _NoRoute(ClawkeepError):
    code = "not_found"
    http_status = 404


async def _granted_message(gw: Gateway, body: ops.MessageArgs, caller: str | None) -> ops.MessageArgs:
    """A message as the credential may send it. A peer token's message without `session` is
    routed as that peer (routing fields refused: they come from the token); an agent token
    delivers into a session of its agent, or routes only on the agent this gateway serves."""
    grant = _grant.get()
    if grant.kind == "peer" and body.session is None:
        ops.scoped_message(body, grant.target)  # refuses routing fields
        channel, _, sender = grant.target.partition(":")
        return body.model_copy(update={"channel": channel, "sender": sender, "chat_type": "direct", "account": None})
    if grant.kind == "agent" and caller is None:
        if body.session is not None:  # visible within the agent, or missing (404)
            await gw.run_op("session_status", None, session_key=body.session)
        else:
            gw.own_agent_only("routing a message")
    return body


class TokenBody(BaseModel):
    """POST /v1/tokens: the `clawkeep tokens create` arguments."""

    model_config = ops.Args.model_config
    name: str
    scope: str
    expires: str | None = None
    sandboxed: bool = False


def _token_routes(app: FastAPI, gw: Gateway, guarded: list[Any]) -> None:
    """Operator-only: create, list and revoke caller credentials (the secret is shown once)."""

    @app.post("/v1/tokens", dependencies=guarded, tags=["tokens"], status_code=201)
    async def create_token(body: TokenBody, caller: Caller = None) -> Any:
        """A new token; the answer's `token` is its secret, never shown again."""
        gw.operator_only(caller, "creating tokens")
        created = await gw.call(lambda: gw.engine.tokens_create(body.name, body.scope, expires=body.expires,
                                                                 sandboxed=body.sandboxed))
        gw.token_created()  # from now on a credential is required here
        created.status_code = 201
        return created

    @app.get("/v1/tokens", dependencies=guarded, tags=["tokens"])
    async def list_tokens(caller: Caller = None) -> Any:
        """Every token: name, scope, state and times (never the secret)."""
        gw.operator_only(caller, "listing tokens")
        return await gw.call(gw.engine.tokens_list)

    @app.delete("/v1/tokens/{name}", dependencies=guarded, tags=["tokens"])
    async def revoke_token(name: str, caller: Caller = None) -> Any:
        """Revoke a token: refused by every gateway on this home or database from its next request."""
        gw.operator_only(caller, "revoking tokens")
        return await gw.call(lambda: gw.engine.tokens_revoke(name))
