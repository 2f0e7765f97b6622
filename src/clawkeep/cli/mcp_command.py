"""`clawkeep mcp`: serve the agent tools over MCP (stdio, or streamable HTTP with --http)."""

from __future__ import annotations

import typer

from .. import validation as check
from ..engine import Engine
from .app import app, engine, err


@app.command("mcp")
def mcp_command(
    ctx: typer.Context,
    session: str | None = typer.Option(None, "--session", help="The calling session of every tool call "
                                       "(its visibility, like --as); default: the operator."),
    http: int | None = typer.Option(None, "--http", metavar="PORT", min=1, max=65535,
                                    help="Serve streamable HTTP on PORT (path /mcp) instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address for --http (off loopback needs --token)."),
    token: str | None = typer.Option(None, "--token", envvar="CLAWKEEP_MCP_TOKEN",
                                     help="Bearer token HTTP clients must send (required off loopback)."),
    sandboxed: bool = typer.Option(False, "--sandboxed", help="The caller is sandboxed: "
                                   "agents.defaults.sandbox.sessionToolsVisibility applies to its tools."),
) -> None:
    """MCP server: sessions_list, sessions_history, sessions_search, session_status, memory_search,
    memory_get, memory_remember, memory_edit, memory_forget, memory_undo and sessions_send, as the
    --session caller."""
    from ..mcp.server import check_http_access, serve_http, serve_stdio  # deferred: the MCP SDK, for this command only

    if session is not None:
        Engine.check_session_key(session, "--session")
    if http is None:
        serve_stdio(engine(ctx), session, sandboxed=sandboxed)
        return
    check.ident(host, "--host")
    check_http_access(host, token)  # before the announcement: a refused start must not print the URL first
    opened = engine(ctx)
    err.print(f"clawkeep mcp: streamable HTTP at http://{host}:{http}/mcp"
              + (f" as {session}" if session else " as the operator") + (" (sandboxed)" if sandboxed else ""),
              highlight=False)
    serve_http(opened, session, host=host, port=http, token=token, sandboxed=sandboxed)
