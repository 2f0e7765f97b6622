"""Real PostgreSQL servers for the tests (SPEC D1), started once per test run, stopped at its end.

- `pg_url`: Debian's PostgreSQL (15) in a scratch cluster on 127.0.0.1 (`.ci/postgres.sh`):
  the agent store (sessions, transcripts, full-text search) on a stock server, and the memory
  index without pgvector (exact top-k; `--engine-backend postgres-stock`).
- `pgvector_url`: the `pgserver` bundle from PyPI (PostgreSQL 16 + pgvector) on a Unix socket:
  the memory index (pgvector HNSW) and the whole-engine scenarios (`--engine-backend postgres`).

Set CLAWKEEP_TEST_POSTGRES_URL / CLAWKEEP_TEST_PGVECTOR_URL to use servers of your own instead.
A server that cannot start fails the tests that need it (an error, never a skip).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "postgres.sh"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DebianServer:
    script = SCRIPT

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="ck-pg15-", dir="/tmp")  # the postgres user must reach it
        os.chmod(self.dir, 0o755)
        proc = subprocess.run(["bash", str(SCRIPT), "start", self.dir, str(_free_port())],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start ({SCRIPT} start): {proc.stderr.strip()}")
        self.url = proc.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "stop", self.dir], capture_output=True, timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)


class BundledServer:
    def __init__(self) -> None:
        import pgserver  # noqa: PLC0415 - test-only dependency

        self.dir = tempfile.mkdtemp(prefix="ck-pgvector-", dir="/tmp")
        self.server = pgserver.get_server(self.dir, cleanup_mode="stop")
        self.server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        self.url = self.server.get_uri()

    def stop(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


class _Servers:
    def __init__(self) -> None:
        self.started: dict[str, object] = {}
        self.failed: dict[str, str] = {}

    def url(self, kind: str) -> str:
        env = {"debian": "CLAWKEEP_TEST_POSTGRES_URL", "pgvector": "CLAWKEEP_TEST_PGVECTOR_URL"}[kind]
        if os.environ.get(env):
            return os.environ[env]
        if kind in self.failed:
            raise RuntimeError(self.failed[kind])
        if kind not in self.started:
            try:
                self.started[kind] = DebianServer() if kind == "debian" else BundledServer()
            except Exception as exc:  # noqa: BLE001 - every later test that needs it fails with this reason
                self.failed[kind] = f"the {kind} PostgreSQL test server could not start: {exc}"
                raise RuntimeError(self.failed[kind]) from None
        return self.started[kind].url  # type: ignore[attr-defined]

    def stop(self) -> None:
        for server in self.started.values():
            server.stop()  # type: ignore[attr-defined]
        self.started.clear()


SERVERS = _Servers()


def pytest_unconfigure(config: pytest.Config) -> None:
    SERVERS.stop()


@pytest.fixture(scope="session")
def pg_url() -> str:
    """Debian's PostgreSQL (no pgvector)."""
    return SERVERS.url("debian")


@pytest.fixture(scope="session")
def pgvector_url() -> str:
    """PostgreSQL with pgvector (the pgserver bundle)."""
    return SERVERS.url("pgvector")


def scratch_schemas(url: str, tag: str):
    """A fresh schema prefix on `url` for one test (`tag` + random hex), and every schema under
    it dropped afterwards: use as `yield from scratch_schemas(url, "mg")` in a fixture."""
    import uuid

    import psycopg

    prefix = tag + uuid.uuid4().hex[:10]
    yield url, prefix
    with psycopg.connect(url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
                                    (prefix, prefix + "\\_%")).fetchall():
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')
