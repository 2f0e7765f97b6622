"""`clawkeep gateway`: the long-running service (HTTP API, UI, background work)."""

from __future__ import annotations

import typer

from .app import app, engine, err


@app.command()
def gateway(
    ctx: typer.Context,
    host: str | None = typer.Option(None, "--host", help="Bind address (default gateway.bind, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", help="Port (default gateway.port, 18790; 0 = any free port)."),
    log_level: str = typer.Option("info", "--log-level", help="debug | info | warning | error"),
) -> None:
    """Serve the HTTP API and the control UI; Ctrl-C or SIGTERM stops it gracefully."""
    from ..gateway import serve  # deferred: the web stack, for this command only

    if log_level.lower() not in ("debug", "info", "warning", "error"):
        raise typer.BadParameter(f"{log_level!r} is not a log level; use debug, info, warning or error")
    opened = engine(ctx)
    try:
        serve(opened, host=host, port=port, log_level=log_level)
    except KeyboardInterrupt:
        err.print("gateway stopped")
