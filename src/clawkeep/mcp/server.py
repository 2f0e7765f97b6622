"""The MCP server: one Engine, one calling session per server, the agent tools.

The caller is fixed when the server starts (`--session KEY`, visibility as `--as KEY`; none =
the operator; `--sandboxed` makes it a sandboxed caller). Over HTTP a stored token (`clawkeep
tokens create`) may also be sent: the call then runs as that token's caller, `--session` only
narrowing it, as the gateway's X-Clawkeep-Session does (docs/security.md). A tool call runs the
operation in a worker thread (the engine is synchronous), and whatever goes wrong in it —
arguments that do not fit the schema, a refused input, a hidden session — is an MCP tool error
(`isError`) carrying the ClawkeepError's message, never a crash of the server.
"""

from __future__ import annotations

import hmac
import json
import signal
import threading
from functools import partial
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import credentials
from ..api import AGENT_TOOLS, OPERATIONS
from ..api.operations import result_json
from ..engine import Engine
from ..errors import ClawkeepError, InputError
from ..visibility import Limit
from .stdio import CheckedLines, ClaimedStdin

SERVER_NAME = "clawkeep"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MIN_TOKEN_CHARS, MAX_TOKEN_CHARS = 16, 512  # the gateway's bounds (config.gateway)


# The agent tools, plus what an MCP client (a coding agent) needs that the reply model does not:
# opening its coding session (agent:<id>:coding:<name>) to record into.
MCP_TOOLS: tuple[str, ...] = (*AGENT_TOOLS, "sessions_create")


def tool_list() -> list[types.Tool]:
    """The MCP tools, described by the typed contract (never a hand-written schema)."""
    tools = []
    for name in MCP_TOOLS:
        schema = OPERATIONS[name].tool_schema()
        tools.append(types.Tool(name=name, description=schema["description"], input_schema=schema["parameters"]))
    return tools


def call_tool(engine: Engine, caller: str | None, name: str, arguments: dict[str, Any] | None, *,
              grant: credentials.Grant | None = None, sandboxed: bool = False) -> Any:
    """Run one agent tool as `caller` (within `grant`, the HTTP request's token, if any) and return
    its JSON; ClawkeepError for anything refused."""
    if name not in MCP_TOOLS:
        raise InputError(f"unknown tool {name[:100]!r}; available tools: {', '.join(MCP_TOOLS)}")
    operation = OPERATIONS[name]
    limit = Limit(sandboxed=sandboxed)
    if grant is not None:
        if name == "sessions_create" and grant.kind in ("session", "peer"):  # as the gateway's POST /v1/sessions
            raise InputError(f"sessions_create: token {grant.name!r} runs as its one session; new sessions are "
                             "made by the operator or an agent token")
        caller = grant.caller(engine.runtime, caller)
        limit = Limit(grant.limit().agent_id, grant.sandboxed or sandboxed)
    return result_json(operation.run(engine.limited(limit), operation.parse(arguments or {}), caller))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def build_server(engine: Engine, caller: str | None = None, *, sandboxed: bool = False) -> Server:
    """An MCP server offering the agent tools, each run on `engine` as `caller` (sandboxed: a
    sandboxed caller, so agents.defaults.sandbox.sessionToolsVisibility applies)."""
    tools = tool_list()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def run_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            state = getattr(getattr(ctx, "request", None), "scope", {}).get("state") or {}
            work = partial(call_tool, engine, caller, params.name, params.arguments,
                           grant=state.get(GRANT_STATE), sandboxed=sandboxed)
            data = await anyio.to_thread.run_sync(work)
        except ClawkeepError as exc:
            return _error(f"{params.name} failed: {exc}")
        except Exception as exc:  # noqa: BLE001 - one failed call must not take the server down
            engine.runtime.log_warning(f"MCP tool {params.name} crashed: {type(exc).__name__}: {exc}")
            return _error(f"{params.name} failed with an internal error ({type(exc).__name__})")
        text = json.dumps(data, ensure_ascii=False, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=data if isinstance(data, dict) else None)

    return Server(SERVER_NAME, version=_version(), on_list_tools=list_tools, on_call_tool=run_tool,
                  instructions="Session and memory tools of a clawkeep engine: search past conversations and "
                               "memory, read them, remember durable facts, message other sessions.")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - once per server

    try:
        return version("clawkeep")
    except PackageNotFoundError:
        return "0"


def serve_stdio(engine: Engine, caller: str | None = None, *, sandboxed: bool = False) -> None:
    """Serve over this process's stdin/stdout until the client closes them. Every input line is
    checked first (mcp/stdio.py): a malformed one is answered with a JSON-RPC error, never dropped."""
    server = build_server(engine, caller, sandboxed=sandboxed)

    async def main(source: Any) -> None:
        lines = CheckedLines(source)
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type] - iterated only
            lines.answer_with(write.send)
            await server.run(read, write, server.create_initialization_options())

    with ClaimedStdin() as source:
        anyio.run(main, source)


def check_http_access(host: str, token: str | None) -> None:
    """Refuse an open bind without a token, and a token shorter than the gateway accepts (16+
    characters: a short one is guessable); `clawkeep mcp` asks before it announces anything."""
    if token is not None and not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
        raise InputError(f"--token (or CLAWKEEP_MCP_TOKEN) is {len(token)} characters long; a token needs "
                         f"{MIN_TOKEN_CHARS}-{MAX_TOKEN_CHARS} characters (like gateway.auth.token)")
    if host not in LOOPBACK_HOSTS and not token:
        raise InputError(f"--host {host} is not a loopback address: give a --token (or CLAWKEEP_MCP_TOKEN), and "
                         "clients must send 'Authorization: Bearer <token>'")


def serve_http(engine: Engine, caller: str | None = None, *, host: str = "127.0.0.1", port: int = 8765,
               token: str | None = None, sandboxed: bool = False) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted. Off loopback a token is
    required, and every request must carry `Authorization: Bearer <token>`."""
    import uvicorn  # noqa: PLC0415 - only the HTTP transport needs it

    check_http_access(host, token)
    # plain JSON answers (no SSE stream per call): the tools send no progress notifications
    app: Any = build_server(engine, caller, sandboxed=sandboxed).streamable_http_app(host=host, json_response=True)
    app = _CredentialGuard(app, engine, token)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    if threading.current_thread() is threading.main_thread():
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-sends the signal to the handler it
        # found: make that a no-op, so the caller still closes the engine (finishing background work)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: None)
    server.run()


GRANT_STATE = "clawkeep_grant"  # where the guard leaves the request's credential (ASGI scope["state"])


class _CredentialGuard:
    """ASGI middleware: the request's credential, as the gateway checks it — the server's --token
    (operator), a stored token (its scope), or none, which only a server without either admits.
    Anything else gets 401 and nothing else. The grant goes to the tool call in scope["state"]."""

    def __init__(self, app: Any, engine: Engine, token: str | None):
        self.app, self.engine = app, engine
        self._expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            try:
                grant = await self._grant(given)
            except credentials.CredentialRefused as exc:
                return await _refuse(send, str(exc))
            if grant is None:
                return await _refuse(send, "missing or wrong bearer token")
            scope.setdefault("state", {})[GRANT_STATE] = grant
        await self.app(scope, receive, send)

    async def _grant(self, given: bytes) -> credentials.Grant | None:
        if self._expected is not None and hmac.compare_digest(given, self._expected):
            return credentials.Grant("operator")
        scheme, _, value = given.decode("latin-1").partition(" ")
        rt = self.engine.runtime
        if scheme.lower() == "bearer" and value.strip():
            found = await anyio.to_thread.run_sync(credentials.authenticate, rt, value.strip())
            if found is not None:
                return found
        if self._expected is None and not await anyio.to_thread.run_sync(credentials.required, rt):
            return credentials.Grant("operator")
        return None


async def _refuse(send: Any, message: str) -> None:
    body = json.dumps({"error": {"code": "unauthorized", "message": message}})
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": body.encode()})
