"""`clawkeep migrate` carries the caller tokens: a gateway on the target accepts the same secrets
and still refuses the revoked ones (it must not come up as an open loopback gateway)."""

from __future__ import annotations

import pytest

from clawkeep import Engine
from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayThread
from tests.helpers.pg_servers import scratch_schemas


@pytest.fixture
def pg(pgvector_url):
    yield from scratch_schemas(pgvector_url, "tk")


def test_tokens_survive_a_migration_to_postgres(tmp_path, pg):
    url, prefix = pg
    home = tmp_path / "home"
    home.mkdir()
    with Engine.open(home=home, config={"storage": {"url": None}}) as engine:
        engine.message("hello", channel="telegram", sender="alice")
        kept = engine.tokens_create("kept", "operator")["token"]
        gone = engine.tokens_create("gone", "peer:telegram:alice")["token"]
        engine.tokens_revoke("gone")
    result = run_cli(tmp_path / "unused", "migrate", "--from", str(home), "--to", url, "--schema", prefix, "--json")
    assert result.code == 0, result.stderr
    instance = tmp_path / "instance"
    instance.mkdir()
    running = GatewayThread(instance, {"storage": {"url": url, "schema": prefix},
                                       "agents": {"defaults": {"memorySearch": {"provider": "none"}}}},
                            background=False)
    try:
        with running.client() as client:
            assert client.get("/v1/sessions").status_code == 401  # tokens exist there too: not open
            assert client.get("/v1/sessions", headers={"Authorization": f"Bearer {kept}"}).status_code == 200
            refused = client.get("/v1/sessions", headers={"Authorization": f"Bearer {gone}"})
            assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]
    finally:
        running.stop()
    again = run_cli(tmp_path / "unused", "migrate", "--from", str(home), "--to", url, "--schema", prefix, "--json")
    assert again.code == 0, again.stderr  # a re-run copies nothing twice
