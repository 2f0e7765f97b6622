"""`clawkeep gateway`: serve the HTTP API (and the UI) with uvicorn on the embedded engine.

Loopback by default; any other bind address needs a token (`gateway.auth.token` or
CLAWKEEP_GATEWAY_TOKEN), and then every /v1 request must carry it. SIGTERM (or Ctrl-C) stops
taking connections, lets in-flight turns finish for `shutdownGraceSeconds`, stops the
background work and closes the engine; a turn's message is acknowledged only after it is
committed, so not even SIGKILL loses an acknowledged message.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import uvicorn
from pydantic import ValidationError

from ..config.gateway import TOKEN_ENV, GatewayConfig, is_loopback
from ..engine import Engine
from ..errors import ClawkeepError, InputError
from . import limits, logs
from .app import Gateway


def effective_settings(engine: Engine, host: str | None, port: int | None) -> GatewayConfig:
    """The configured gateway settings with this run's --host/--port and the token from the
    environment; refuses a non-loopback address without a token."""
    data = engine.config.gateway.model_dump(by_alias=True)
    if host is not None:
        data["bind"] = host
    if port is not None:
        data["port"] = port
    token_from_env = bool(os.environ.get(TOKEN_ENV))
    if token_from_env:
        data["auth"] = {"token": os.environ[TOKEN_ENV]}
    try:
        settings = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise InputError(_settings_error(exc, host, port, token_from_env)) from None
    if not is_loopback(settings.bind) and not settings.auth.token:
        raise InputError(f"refusing to listen on {settings.bind} without a token: anyone on the network could read "
                         f"every session. Set gateway.auth.token (16+ characters) or {TOKEN_ENV}, or bind 127.0.0.1")
    return settings


def _settings_error(exc: ValidationError, host: str | None, port: int | None, token_from_env: bool) -> str:
    """One line naming where the bad value came from (the flag, the environment variable or the
    config key) and what is allowed; never pydantic's dump (nor the token's value)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    if where == "port":
        name = "--port" if port is not None else "gateway.port"
        return f"{name} {first.get('input')!r} is not a port; use 0-65535 (0: any free port)"
    if where == "bind":
        name = "--host" if host is not None else "gateway.bind"
        reason = first.get("ctx", {}).get("error") or "not an IP address"
        return f"{name}: {reason}"
    if where == "auth.token":
        name = TOKEN_ENV if token_from_env else "gateway.auth.token"
        return f"{name} is not a usable token: give 16 to 512 characters"
    return f"gateway.{where or 'settings'}: {first.get('msg', 'invalid')}"


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the app starts: a busy port (or an address this machine
    does not have) is then a plain error before anything runs — not a "ready" line, a warm-up
    and uvicorn's exit 3 after the fact. uvicorn serves on this socket."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT does not block a restart
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            advice = "the port is already in use; choose another --port (0: any free port) or stop what listens there"
        else:
            advice = f"{exc.strerror or exc}; give --host an address of this machine (127.0.0.1, 0.0.0.0, …)"
        raise ListenError(f"cannot listen on {shown}: {advice}") from None
    return sock


class ListenError(ClawkeepError):
    """The address is valid but the machine refused it (in use, not ours): exit 1, like a locked database."""

    code = "listen_failed"


class _Server(uvicorn.Server):
    on_ready: Callable[[str], None] | None = None

    async def startup(self, sockets=None) -> None:  # type: ignore[no-untyped-def]
        await super().startup(sockets=sockets)
        if self.started and self.on_ready is not None and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            self.on_ready(f"http://{shown}:{port}")


def uvicorn_config(app: Any, settings: GatewayConfig) -> uvicorn.Config:
    """How uvicorn serves the gateway: its protocol with the read limits (limits.py) and the
    keep-alive timeout from the settings."""
    return uvicorn.Config(app, host=settings.bind, port=settings.port, log_config=None, access_log=False,
                          timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) or None,
                          lifespan="on", server_header=False, http=limits.protocol_class(settings),
                          timeout_keep_alive=settings.keep_alive_seconds)  # type: ignore[arg-type] # a float works


def serve(engine: Engine, *, host: str | None = None, port: int | None = None,
          on_ready: Callable[[str], None] | None = None, log_level: str = "info") -> None:
    settings = effective_settings(engine, host, port)
    # the storage answers before the gateway says it is up: an unreachable server exits 1, a
    # refused login or a missing database exits 2, as every CLI command does
    engine.check_storage()
    logs.configure(log_level)
    listener = _listen(settings.bind, settings.port)
    try:
        logs.log_turns(engine)
        app = Gateway(engine, settings).app()
        server = _Server(uvicorn_config(app, settings))
        # the URL stays the line's last word (scripts and tests read it); the home says where data goes
        home = engine.runtime.home.absolute()
        server.on_ready = on_ready or (lambda url: print(f"clawkeep gateway (home {home}) on {url}", flush=True,
                                                         file=sys.stdout))
        if threading.current_thread() is threading.main_thread():
            # uvicorn stops gracefully on SIGTERM, then re-raises it to the previous handler: a no-op
            # here, so a requested stop exits 0 instead of dying of the signal it already handled
            signal.signal(signal.SIGTERM, lambda *_: None)
        server.run(sockets=[listener])
    finally:
        listener.close()
    if not server.started:
        raise ListenError(f"the gateway could not start on {settings.bind}:{settings.port}; the log above says why")
