"""A real `clawkeep gateway` for the tests: either a subprocess started exactly as a user would
(`python -m clawkeep --home H gateway --port 0`, the URL read from its first line) or the same
app served by uvicorn in a thread of the test process. Both speak real HTTP on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from clawkeep import Engine
from clawkeep.gateway import Gateway, effective_settings
from clawkeep.gateway.server import uvicorn_config


def write_config(home: Path, config: dict[str, Any] | None) -> Path | None:
    if config is None:
        return None
    path = home / "clawkeep.json5"
    path.write_text(json.dumps(config))
    return path


class GatewayProcess:
    def __init__(self, home: Path, *args: str, config: dict[str, Any] | None = None, env: dict[str, str] | None = None):
        self.home = home
        write_config(home, config)
        environment = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_GATEWAY_TOKEN")}
        environment.update(env or {})
        self.log = open(home / "gateway.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "clawkeep", "--home", str(home), "gateway", "--port", "0",
                                      *args], stdout=subprocess.PIPE, stderr=self.log, env=environment)
        self.url = self._read_url()

    def _read_url(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if "http://" not in line:
            self.proc.kill()
            log = (self.home / "gateway.log").read_text()[-2000:]
            raise RuntimeError(f"gateway did not start: {line!r}; log: {log}")
        url = line.strip().split()[-1]
        while time.monotonic() < deadline:  # ready: lifespan done and routes answering
            try:
                if httpx.get(url + "/v1/health", timeout=2).status_code in (200, 401):
                    return url
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("gateway never answered /v1/health")

    def wait_warm(self, timeout: float = 120, **client_args: Any) -> None:
        """Until the background warm-up (index sync, model load) has run: after it, nothing but a
        request (or the watcher, when on) makes the gateway look at its files."""
        deadline = time.monotonic() + timeout
        with self.client(**client_args) as http:
            while time.monotonic() < deadline:
                jobs = http.get("/v1/status").json()["gateway"]["background"]
                if any(job.get("name") == "warm-up" and job.get("runs") for job in jobs):
                    return
                time.sleep(0.1)
        raise RuntimeError("the gateway's warm-up never ran")

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kwargs.pop("timeout", 60), **kwargs)

    def signal(self, sig: int) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=90)
        finally:
            self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
        if not self.log.closed:
            self.log.close()

    def logs(self) -> str:
        return (self.home / "gateway.log").read_text(errors="replace")


class GatewayThread:
    """The gateway app in this process (uvicorn in a thread): fast to start, same HTTP."""

    def __init__(self, home: Path, config: dict[str, Any] | None = None, *, background: bool = True, **settings: Any):
        self.engine = Engine.open(home=home, config=config)
        gateway_settings = effective_settings(self.engine, settings.pop("host", None), 0)
        if settings:
            gateway_settings = gateway_settings.model_copy(update=settings)
        self.gateway = Gateway(self.engine, gateway_settings, background=background)
        # served as `clawkeep gateway` serves it: the same protocol, read limits and timeouts
        self.server = uvicorn.Server(uvicorn_config(self.gateway.app(), gateway_settings))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("gateway thread did not start")
            time.sleep(0.01)
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kwargs.pop("timeout", 60), **kwargs)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)
