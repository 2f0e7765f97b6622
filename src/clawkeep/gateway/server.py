"""`clawkeep gateway`: serve the HTTP API (and the UI) with uvicorn on the embedded engine.

Loopback by default; any other bind address needs a token (`gateway.auth.token` or
CLAWKEEP_GATEWAY_TOKEN), and then every /v1 request must carry it. SIGTERM (or Ctrl-C) stops
taking connections, lets in-flight turns finish for `shutdownGraceSeconds`, stops the
background work and closes the engine; a turn's message is acknowledged only after it is
committed, so not even SIGKILL loses an acknowledged message.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable

import uvicorn

from ..config.gateway import TOKEN_ENV, GatewayConfig, is_loopback
from ..engine import Engine
from ..errors import InputError
from . import logs
from .app import Gateway


def effective_settings(engine: Engine, host: str | None, port: int | None) -> GatewayConfig:
    """The configured gateway settings with this run's --host/--port and the token from the
    environment; refuses a non-loopback address without a token."""
    data = engine.config.gateway.model_dump(by_alias=True)
    if host is not None:
        data["bind"] = host
    if port is not None:
        data["port"] = port
    if os.environ.get(TOKEN_ENV):
        data["auth"] = {"token": os.environ[TOKEN_ENV]}
    try:
        settings = GatewayConfig.model_validate(data)
    except ValueError as exc:
        raise InputError(f"gateway settings: {exc}") from None
    if not is_loopback(settings.bind) and not settings.auth.token:
        raise InputError(f"refusing to listen on {settings.bind} without a token: anyone on the network could read "
                         f"every session. Set gateway.auth.token (16+ characters) or {TOKEN_ENV}, or bind 127.0.0.1")
    return settings


class _Server(uvicorn.Server):
    on_ready: Callable[[str], None] | None = None

    async def startup(self, sockets=None) -> None:  # type: ignore[no-untyped-def]
        await super().startup(sockets=sockets)
        if self.started and self.on_ready is not None and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            self.on_ready(f"http://{shown}:{port}")


def serve(engine: Engine, *, host: str | None = None, port: int | None = None,
          on_ready: Callable[[str], None] | None = None, log_level: str = "info") -> None:
    settings = effective_settings(engine, host, port)
    logs.configure(log_level)
    logs.log_turns(engine.runtime)
    app = Gateway(engine, settings).app()
    config = uvicorn.Config(app, host=settings.bind, port=settings.port, log_config=None, access_log=False,
                            timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) or None,
                            lifespan="on", server_header=False)
    server = _Server(config)
    server.on_ready = on_ready or (lambda url: print(f"clawkeep gateway on {url}", flush=True, file=sys.stdout))
    if threading.current_thread() is threading.main_thread():
        # uvicorn stops gracefully on SIGTERM, then re-raises it to the previous handler: a no-op
        # here, so a requested stop exits 0 instead of dying of the signal it already handled
        signal.signal(signal.SIGTERM, lambda *_: None)
    server.run()
    if not server.started:
        raise InputError(f"the gateway could not listen on {settings.bind}:{settings.port} "
                         "(in use, or not an address of this machine); choose another --port or --host")
