"""The HTTP API (SPEC §P, G1): every route is a thin skin over one operation of
`clawkeep.api.OPERATIONS`, run as the caller the request names, in a worker thread. The routes
are generated from the operations' HTTP bindings (`_operation_routes`); only what is not an
operation is written here by hand: the tokens, the metrics, the health probe, the catch-all.

    app = Gateway(engine, config.gateway).app()     # served by `clawkeep gateway` (server.py)

Arguments are the operations' typed models (so OpenAPI at /openapi.json is generated from the
same models as the CLI's JSON and the MCP tool schemas); results are their `to_json()`; errors
are `{"error": {"code", "message"}}` (errors.py). `X-Clawkeep-Session` names the calling session
for visibility (like `--as`); without it the caller is the credential's own (docs/security.md):
the operator for the gateway token, the session of a session or peer token. A name may only
narrow a token's scope. A hidden session answers exactly like a missing one (404).
"""

from __future__ import annotations

import functools
import hmac
import inspect
import logging
import re
import time
import typing
import uuid
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any

import annotated_types
from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, BeforeValidator, Strict, ValidationError, create_model

from .. import credentials
from .. import validation as check
from ..api import operations as ops
from ..config.gateway import GatewayConfig
from ..engine import Engine
from ..errors import ClawkeepError
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


def _respond(result: Any) -> JSONResponse:
    """The result's JSON as the response. Answering with a response object skips FastAPI's
    re-encoding of a returned value (it walks every field again: ≈0.3 ms a turn, measured)."""
    return JSONResponse(ops.result_json(result))


def _message_response(result: Any) -> JSONResponse:
    """A message's result; a client message id reused for another text is a 409 conflict in the
    error shape, the stored text quoted in the message and given as `storedText`, the whole
    MessageResult as `result` (the Python client returns it, as Engine does)."""
    data = ops.result_json(result)
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
        self._engine = engine
        self.settings = settings or engine.config.gateway
        self.inflight = InFlight(self.settings.threads)
        self.metrics = metrics.GatewayMetrics(engine)
        self.background = Background(engine, self.settings, self.inflight) if background else None
        self.started = time.time()
        self._any_token, self._no_token_until = False, 0.0  # see _tokens_exist

    @property
    def engine(self) -> Engine:
        """The engine as this request's credential may use it: every scope it computes stays
        within the grant's limit (the grant `_authorised` checked; none outside a request)."""
        return self._engine.limited(_grant.get().limit())

    # --- running operations ---------------------------------------------------------
    async def op(self, name: str, caller: str | None = None, **arguments: Any) -> JSONResponse:
        """Run operation `name` with its typed arguments as `caller`; the result's JSON response."""
        return _respond(await self.run_op(name, caller, **arguments))

    async def run_op(self, name: str, caller: str | None = None, **arguments: Any) -> Any:
        """Run operation `name` with its typed arguments as `caller`; the result."""
        operation = ops.OPERATIONS[name]
        args = arguments.pop("args", None) or self.arguments(operation, arguments)
        return await self.inflight.run(operation.run, self.engine, args, caller)

    @staticmethod
    def arguments(operation: ops.Operation, fields: dict[str, Any]) -> ops.Args:
        """The operation's typed arguments from these fields (None: the default), or a 422."""
        try:
            return operation.args.model_validate({k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise _Invalid(errors.describe_validation(exc.errors())) from None

    async def call(self, work: Any, *args: Any) -> JSONResponse:
        return _respond(await self.inflight.run(work, *args))

    def check_access(self, http: ops.Http, caller: str | None) -> None:
        """The binding's rule of who may call the route (api.operations.Http); 403 otherwise."""
        if http.operator:
            (self.agent_operator_only if http.agent_token else self.operator_only)(caller, http.what)
        if http.own_agent:
            self.own_agent_only(http.what)

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
        _operation_routes(app, self, guarded)
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
        await to_thread.run_sync(self._engine.close)
        log.info("gateway stopped", extra={"event": "stopped"})

    async def _authorised(self, request: Request) -> None:
        """Who is asking: the gateway token (operator), a stored token (its scope), or nobody —
        the operator only on a gateway with neither (a tokenless loopback gateway). Stored tokens
        are read from the store on every request, so a revocation anywhere counts at once."""
        grant = await self._credential(request.headers.get("authorization", ""))
        _grant.set(grant)

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


# --- the operation routes: one per HTTP binding of api.operations --------------------------------
# A session key may hold "/": its path parameter takes the rest of the path, spelt `key` as the
# routes have always named it in the OpenAPI document.
_PATH_PARAMS = {"session_key": ("key", ":path")}


@dataclass(frozen=True)
class Policy:
    """What a route does beyond its binding (which already says who may call it: `Http.operator`,
    `agent_token`, `own_agent`) and running its operation as the caller. `answer(gw, args, caller)`
    answers instead (it runs the operation itself); `stream`: the route takes `?stream=true`, passed
    to `answer` as `streamed`; `calling_session` False: the route does not read X-Clawkeep-Session."""

    answer: Callable[..., Awaitable[Any]] | None = None
    stream: bool = False
    calling_session: bool = True


def _operation_routes(app: FastAPI, gw: Gateway, guarded: list[Any]) -> None:
    """A route per operation with an HTTP binding: its path, query and body parameters typed by the
    operation's argument model, its result documented, the binding's access rule checked, then the
    operation run as the caller (or its `POLICIES` answer)."""
    bound = [op for op in ops.OPERATIONS.values() if op.http is not None]
    bound.sort(key=lambda op: _route_path(op.http).endswith(":path}"))  # after the routes it would shadow
    for op in bound:
        _operation_route(app, gw, guarded, op, POLICIES.get(op.name, Policy()))


def _route_path(http: ops.Http) -> str:
    path = http.path
    for field in http.path_fields:
        name, converter = _PATH_PARAMS.get(field, (field, ""))
        path = path.replace("{" + field + "}", "{" + name + converter + "}")
    return path


def _operation_route(app: FastAPI, gw: Gateway, guarded: list[Any], op: ops.Operation, policy: Policy) -> None:
    http = op.http
    assert http is not None
    path_names = {field: _PATH_PARAMS.get(field, (field, ""))[0] for field in http.path_fields}
    query = http.query_params(op.args)
    body_model, body_required = _body_model(op)
    whole_body = body_model is op.args  # every argument is in the body: it is the arguments

    params = [inspect.Parameter(name, _KW, annotation=Annotated[str, Path(
        description=op.args.model_fields[field].description)]) for field, name in path_names.items()]
    if body_model is not None:
        params.append(inspect.Parameter("body", _KW, annotation=body_model) if body_required else
                      inspect.Parameter("body", _KW, annotation=body_model | None, default=None))
    if policy.calling_session:
        params.append(inspect.Parameter("caller", _KW, annotation=Caller, default=None))
    if policy.stream:
        params.append(inspect.Parameter("streamed", _KW, annotation=Annotated[bool, Query(alias="stream")],
                                        default=False))
    params += [_query_parameter(op.args, field, param) for field, param in query.items()]

    async def endpoint(**given: Any) -> Any:
        caller = given.get("caller")
        gw.check_access(http, caller)
        body = given.get("body")
        if whole_body:
            args = body if body is not None else op.args()
        else:
            fields = {field: given[name] for field, name in path_names.items()}
            fields.update((field, given[field]) for field in query if given[field] is not None)
            if body is not None:
                fields.update(body.model_dump(exclude_unset=True))
            args = gw.arguments(op, fields)
        if policy.answer is None:
            return await gw.op(op.name, caller, args=args)
        extra = {"streamed": given["streamed"]} if policy.stream else {}
        return await policy.answer(gw, args, caller, **extra)

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    empty = body_model is ops.NoArgs and not whole_body
    doc = http.doc or ("No body (or `{}`): any key in one is refused rather than ignored." if empty else "")
    app.add_api_route(_route_path(http), endpoint, methods=[http.method], dependencies=guarded, tags=[http.group],
                      responses=_doc(op.result, many=http.many), name=op.name, operation_id=op.name,
                      summary=op.summary, description=doc)


_KW = inspect.Parameter.KEYWORD_ONLY


def _body_model(op: ops.Operation) -> tuple[type[BaseModel] | None, bool]:
    """The model of the route's JSON body and whether it is required (not when every field has a
    default). A POST or PUT whose arguments are all in the path or query takes an empty body."""
    assert op.http is not None
    fields = op.http.body_fields(op.args)
    if not fields:
        return (ops.NoArgs, False) if op.http.method in ("POST", "PUT") else (None, False)
    if op.http.method in ("GET", "DELETE"):
        raise TypeError(f"{op.name}: {op.http.method} takes no body; bind {', '.join(fields)} to the path or query")
    model = op.args if len(fields) == len(op.args.model_fields) else _partial_body(op.name, op.args, fields)
    return model, any(op.args.model_fields[name].is_required() for name in fields)


@functools.cache
def _partial_body(name: str, args: type[ops.Args], fields: tuple[str, ...]) -> type[BaseModel]:
    """The body of a route with some arguments in the path: those fields of the argument model."""
    title = "".join(part.title() for part in name.split("_")) + "Body"
    return create_model(title, __base__=ops.Args, __doc__=f"The {name} arguments sent in the body (the others "
                        "are in the path).", **{f: (args.model_fields[f].annotation, args.model_fields[f])
                                                 for f in fields})


_BOUNDS = {annotated_types.Ge: "ge", annotated_types.Gt: "gt", annotated_types.Le: "le", annotated_types.Lt: "lt",
           annotated_types.MinLen: "min_length", annotated_types.MaxLen: "max_length"}


def _query_parameter(args: type[ops.Args], field: str, param: str) -> inspect.Parameter:
    """A query parameter typed like its argument field (bounds, choices, default, description).
    Query text is parsed laxly ("true", "5") where the JSON arguments are strict; an integer must
    still be written in digits and a number be finite."""
    info = args.model_fields[field]
    options: dict[str, Any] = {"alias": param, "description": info.description}
    for item in info.metadata:
        if isinstance(item, Strict):
            continue  # query values are text: strictness is the JSON arguments'
        bound = _BOUNDS.get(type(item))
        if bound is None:
            raise TypeError(f"{args.__name__}.{field}: no query parameter for the constraint {item!r}")
        options[bound] = getattr(item, bound)  # annotated_types names each bound like Query's keyword
    kinds = set(typing.get_args(info.annotation)) | {info.annotation}
    if float in kinds:
        options["allow_inf_nan"] = False
    metadata: list[Any] = [Whole] if int in kinds else []
    annotation = Annotated[info.annotation, *metadata, Query(**options)]
    default = inspect.Parameter.empty if info.is_required() else info.default
    return inspect.Parameter(field, _KW, annotation=annotation, default=default)


# --- gateway policy: what a route checks beyond its binding's access rule ------------------------
async def _answer_message(gw: Gateway, body: ops.MessageArgs, caller: str | None, streamed: bool = False) -> Any:
    """The message as the credential may send it (`_granted_message`); a calling session never routes
    by channel and sender. A client message id reused for another text answers 409 (`_message_response`)."""
    body = await _granted_message(gw, body, caller)
    if _grant.get().kind == "peer" and body.session is None:
        caller = None  # routed as the token's peer, into the session routing gives it
    else:
        body = ops.scoped_message(body, caller)  # a calling session never routes by channel and sender
    if not streamed:  # the operation checks the target is visible
        return _message_response(await gw.run_op("message", caller, args=body))
    if caller is not None:  # the stream runs the turn directly: check here (hidden = missing)
        await gw.run_op("session_status", caller, session_key=body.session)
    return await stream.turn_response(gw.engine, gw.inflight, body.model_dump())


async def _answer_create(gw: Gateway, args: ops.SessionsCreateArgs, caller: str | None) -> Any:
    """A session or peer token runs as its one session: it may not make new threads."""
    grant = _grant.get()
    if grant.kind in ("session", "peer"):
        raise _Forbidden(f"creating a thread: token {grant.name!r} runs as its one session; new "
                         "dashboard threads are made by the operator or an agent token")
    if caller is not None:
        await gw.run_op("session_status", caller)  # a missing calling session is a 404, as on every route
    return await gw.op("sessions_create", caller, args=args)


async def _answer_recall(gw: Gateway, args: ops.RecallArgs, caller: str | None) -> Any:
    """Recall for a session the caller can see: hidden (also beyond an agent token) = missing."""
    if caller is not None or not _grant.get().is_operator:
        await gw.run_op("session_status", caller, session_key=args.session)
    return await gw.op("recall", caller, args=args)


async def _answer_status(gw: Gateway, args: ops.NoArgs, caller: None) -> Any:
    """The engine's status with the gateway's own figures; a scoped token learns only what the UI
    needs (its credential, the agent and the chat model), no engine-wide figures."""
    grant = _grant.get()
    if not grant.is_operator:
        config = gw.engine.config
        return {"agentId": gw.engine.runtime.agent_id, "chatModel": config.agents.defaults.model.primary,
                "credential": {"name": grant.name, "scope": f"{grant.kind}:{grant.target}",
                               "sandboxed": grant.sandboxed}}
    data = ops.result_json(await gw.run_op("status", args=args))
    data["gateway"] = {"uptimeSeconds": round(time.time() - gw.started, 1), "inFlight": gw.inflight.count,
                       "background": gw.background.report() if gw.background is not None else None}
    return data


POLICIES: dict[str, Policy] = {
    "message": Policy(_answer_message, stream=True),
    "sessions_create": Policy(_answer_create),
    "recall": Policy(_answer_recall),
    "status": Policy(_answer_status, calling_session=False),  # its answer depends on the credential alone
}


# --- routes that are not operations -------------------------------------------------------------
def _routes(app: FastAPI, gw: Gateway, guarded: list[Any]) -> None:
    """The metrics (Prometheus text, not an operation's JSON), the health probe (open, no engine call)
    and the /v1 catch-all; the tokens are `_token_routes`, the Control UI control_ui.py."""

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
    """Operator-only: create, list and revoke caller credentials (the secret is shown once). Not
    registry operations: no session, model or MCP client may manage credentials, and a new token
    answers 201 and opens the tokenless gateway's check (`token_created`)."""

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
