"""One test, two targets: an in-process `Engine`, and `clawkeep.Client` against a real gateway on
the same home (the adapters must behave alike on both)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import clawkeep
from tests.helpers.gateway_process import GatewayThread

KEYWORD_ONLY = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


@pytest.fixture(params=["engine", "client"])
def target(request: pytest.FixtureRequest, home: Path) -> Iterator[tuple[Any, clawkeep.Engine]]:
    """(what the adapter is given, the Engine to check the home with)."""
    if request.param == "engine":
        with clawkeep.Engine.open(home=home, config=KEYWORD_ONLY) as engine:
            yield engine, engine
        return
    running = GatewayThread(home, KEYWORD_ONLY, background=False)
    try:
        with clawkeep.Client(running.url) as client:
            yield client, running.engine
    finally:
        running.stop()
        running.engine.close()
