"""Shared fixtures: a real home directory with real SQLite files, and a real CLI subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clawkeep import Engine

BACKENDS = ("sqlite", "postgres")


pytest_plugins = ["pg_servers"]


def _backends(value: str) -> list[str]:
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in BACKENDS]
    if unknown or not chosen:
        raise pytest.UsageError(f"--backend {value!r}: allowed {', '.join(BACKENDS)} (comma-separated)")
    return chosen


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", type=_backends, default="sqlite,postgres",
                     help="storage backends the conformance suite (tests/storage/conformance) runs against, "
                          "comma-separated (default both); postgres starts its own servers (tests/pg_servers.py) "
                          "unless CLAWKEEP_TEST_POSTGRES_URL / CLAWKEEP_TEST_PGVECTOR_URL name them")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def engine(home: Path):
    with Engine.open(home=home) as opened:
        yield opened


def open_engine(home: Path, config: dict | None = None, agent: str = "main") -> Engine:
    return Engine.open(home=home, config=config, agent=agent)


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self):
        return json.loads(self.stdout)


def run_cli(home: Path, *args: str, config: Path | None = None, timeout: float = 60) -> CliResult:
    """Run `python -m clawkeep` as a separate process, exactly as a user would."""
    command = [sys.executable, "-m", "clawkeep", "--home", str(home)]
    if config is not None:
        command += ["--config", str(config)]
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")}
    env["COLUMNS"] = "200"
    proc = subprocess.run(command + list(args), capture_output=True, text=True, timeout=timeout, env=env)
    return CliResult(proc)


@pytest.fixture
def cli(home: Path):
    def call(*args: str, config: Path | None = None) -> CliResult:
        return run_cli(home, *args, config=config)

    return call
