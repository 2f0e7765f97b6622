"""Shared fixtures: a real home directory with real SQLite files, and a real CLI subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawkeep import Engine
from tests.helpers.cli import CliResult, run_cli

BACKENDS = ("sqlite", "postgres")
# --engine-backend: postgres is the pgvector bundle; postgres-stock is Debian's PostgreSQL 15 without
# pgvector (the memory index keeps its vectors in a plain column, exact top-k)
# client: the `engine` fixture through clawkeep.Client against a real gateway process (tests/helpers/client_engine.py)
ENGINE_BACKENDS = {"sqlite": None, "postgres": "pgvector_url", "postgres-stock": "pg_url", "client": None}


# fixtures shared by several test files
pytest_plugins = ["tests.helpers.pg_servers", "tests.helpers.targets", "tests.helpers.browser"]


def _backends(value: str) -> list[str]:
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in BACKENDS]
    if unknown or not chosen:
        raise pytest.UsageError(f"--backend {value!r}: allowed {', '.join(BACKENDS)} (comma-separated)")
    return chosen


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", type=_backends, default="sqlite,postgres",
                     help="storage backends the conformance suite (tests/storage/conformance) runs against, "
                          "comma-separated (default both); postgres starts its own servers "
                          "(tests/helpers/pg_servers.py) "
                          "unless CLAWKEEP_TEST_POSTGRES_URL / CLAWKEEP_TEST_PGVECTOR_URL name them")
    parser.addoption("--engine-backend", choices=tuple(ENGINE_BACKENDS), default="sqlite",
                     help="where every engine and CLI of the run stores its data: postgres points them all at the "
                          "pgvector test server, postgres-stock at Debian's PostgreSQL without pgvector "
                          "(CLAWKEEP_STORAGE_URL, one schema prefix per test); client runs the `engine` "
                          "fixture's calls through clawkeep.Client against a real gateway process "
                          "(tests/helpers/client_engine.py)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: reads or damages the SQLite files themselves; "
                                       "not run under --engine-backend postgres")
    config.addinivalue_line("markers", "in_process_only: needs the Engine in the test's own process (its runtime, "
                                       "a monkeypatch, its timing) or asserts wording the HTTP API documents "
                                       "otherwise (--at); not run under --engine-backend client")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marker = {"postgres": "sqlite_only", "postgres-stock": "sqlite_only", "client": "in_process_only"}.get(
        config.getoption("--engine-backend"))
    if marker is None:
        return
    kept = [item for item in items if item.get_closest_marker(marker) is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


@pytest.fixture(autouse=True)
def _engine_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Under --engine-backend postgres(-stock), only storage.url changes (through the environment,
    so CLI subprocesses see it too); each test gets its own schemas, dropped afterwards."""
    server = ENGINE_BACKENDS[request.config.getoption("--engine-backend")]
    if server is None:
        yield
        return
    import uuid

    import psycopg

    url = request.getfixturevalue(server)
    prefix = "e" + uuid.uuid4().hex[:12]
    monkeypatch.setenv("CLAWKEEP_STORAGE_URL", url)
    monkeypatch.setenv("CLAWKEEP_STORAGE_SCHEMA", prefix)
    yield
    with psycopg.connect(url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
                                    (prefix, prefix + "\\_%")).fetchall():
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def engine(request: pytest.FixtureRequest, home: Path):
    if request.config.getoption("--engine-backend") == "client":
        from tests.helpers.client_engine import ClientEngine

        with ClientEngine(home) as remote:
            yield remote
        return
    with Engine.open(home=home) as opened:
        yield opened


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if config.getoption("--engine-backend") != "client":
        return
    from tests.helpers.client_engine import FALLBACKS, OVER_HTTP

    terminalreporter.write_line(f"engine calls through clawkeep.Client: {sum(OVER_HTTP.values())} "
                                f"{dict(OVER_HTTP.most_common())}; run in-process (no route or argument): "
                                f"{dict(FALLBACKS.most_common())}")


@pytest.fixture
def cli(home: Path):
    def call(*args: str, config: Path | None = None) -> CliResult:
        return run_cli(home, *args, config=config)

    return call
