"""`--engine-backend client`: the whole-engine scenarios run a second time through clawkeep.Client
against a real `clawkeep gateway` process (tests/helpers/gateway_process.py) serving the test's home.

`ClientEngine` stands where the test's Engine stood. Every Engine method that is an operation with an
HTTP route goes over HTTP; what the HTTP API does not take — a method with no route (system_event,
memory_sweep, import…), an argument the route does not carry (`at=` clock control, `force=`), or
`engine.runtime` — runs on an Engine of the same home in the test process (as a second instance
beside the gateway: the multi-instance design), and is counted in `fallbacks` so the rerun says
how much of a file really went through the client."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import clawkeep
from clawkeep.api.operations import OPERATIONS
from clawkeep.client.core import ArgumentsNotServed
from tests.helpers.gateway_process import GatewayProcess

ROUTED = {name for name, op in OPERATIONS.items() if op.http is not None}
FALLBACKS: Counter[str] = Counter()  # over the whole run: printed by conftest at the end
OVER_HTTP: Counter[str] = Counter()


class ClientEngine:
    def __init__(self, home: Path):
        self.home = home
        self.gateway = GatewayProcess(home)
        self.client = clawkeep.Client(self.gateway.url, timeout=120)
        self._local: clawkeep.Engine | None = None

    @property
    def local(self) -> clawkeep.Engine:
        if self._local is None:
            self._local = clawkeep.Engine.open(home=self.home)
        return self._local

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in ROUTED:
            FALLBACKS[name] += 1
            return getattr(self.local, name)
        remote = getattr(self.client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = remote(*args, **kwargs)
            except ArgumentsNotServed:  # an argument the route does not carry (at=, force=, …)
                FALLBACKS[f"{name}({', '.join(sorted(kwargs))})"] += 1
                return getattr(self.local, name)(*args, **kwargs)
            OVER_HTTP[name] += 1
            return result

        return call

    def close(self) -> None:
        self.client.close()
        self.gateway.stop()
        if self._local is not None:
            self._local.close()

    def __enter__(self) -> ClientEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
