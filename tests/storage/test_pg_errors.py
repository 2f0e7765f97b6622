"""PostgreSQL mode: bad storage settings are input errors that never print the password; the
gateway checks the server before serving; a pooled connection the server dropped is replaced."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from clawkeep import Engine
from clawkeep.config import load_config
from clawkeep.config.model import default_config, with_storage_environment
from clawkeep.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.pg_servers import scratch_schemas

SECRET = "S3cretPW"


def with_password(url: str, password: str = SECRET) -> str:
    """The test server's URL with a password (the servers trust local logins, so any works)."""
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user.split(':')[0]}:{password}@{host}"


@pytest.fixture
def pg(pg_url):
    yield from scratch_schemas(pg_url, "pe")


def cli_env(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CLAWKEEP_")}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(tmp_path / "home"), *args],
                          capture_output=True, text=True, timeout=60, env=environ)


# --- bug 1: the password never reaches a message ----------------------------------------------
def test_environment_url_of_another_database_is_refused_without_its_password():
    with pytest.raises(InputError) as caught:
        with_storage_environment(default_config(), {"CLAWKEEP_STORAGE_URL": "mysql://ck:EnvPassword77@h/db"})
    assert "EnvPassword77" not in str(caught.value)
    assert "not supported" in str(caught.value)


def test_config_file_url_is_refused_without_its_password(tmp_path):
    (tmp_path / "clawkeep.json5").write_text('{storage: {url: "mysql://ck:FilePassword88@h/db"}}')
    with pytest.raises(InputError) as caught:
        load_config(tmp_path / "clawkeep.json5")
    assert "FilePassword88" not in str(caught.value)
    assert "not supported" in str(caught.value)


def test_cli_never_prints_the_environment_password(tmp_path):
    proc = cli_env(tmp_path, "sessions", "list", CLAWKEEP_STORAGE_URL="mysql://ck:EnvPassword77@h/db")
    assert proc.returncode == 2, proc.stderr
    assert "EnvPassword77" not in proc.stderr + proc.stdout
    assert "not supported" in proc.stderr


def test_migrate_errors_name_the_server_not_the_password(tmp_path, pg):
    url, prefix = pg
    secret_url = with_password(url)
    home = tmp_path / "src"
    with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
        eng.message("hello from the home")
    with Engine.open(home=tmp_path / "other", config={"storage": {"url": url, "schema": prefix}}) as eng:
        eng.message("someone else's data")
    refused = run_cli(tmp_path / "unused", "migrate", "--from", str(home), "--to", secret_url, "--schema", prefix)
    assert refused.code == 2, refused.stderr
    assert "already holds entries" in refused.stderr
    assert SECRET not in refused.stderr + refused.stdout
    missing = run_cli(tmp_path / "unused", "migrate", "--from", secret_url, "--to", str(tmp_path / "back"),
                      "--schema", prefix, "--only-agent", "nope")
    assert missing.code == 2, missing.stderr
    assert "nope not found" in missing.stderr
    assert SECRET not in missing.stderr + missing.stdout


# --- bug 3: a bad port or a reserved schema is an input error ---------------------------------
@pytest.mark.parametrize("port", ["notaport", "99999"])
def test_a_bad_port_is_an_input_error(tmp_path, port):
    bad = f"postgresql://ck:{SECRET}@127.0.0.1:{port}/ckdb"
    proc = cli_env(tmp_path, "sessions", "list", CLAWKEEP_STORAGE_URL=bad)
    assert proc.returncode == 2, proc.stderr
    assert "port" in proc.stderr and "internal error" not in proc.stderr and SECRET not in proc.stderr
    migrated = cli_env(tmp_path, "migrate", "--from", bad, "--to", str(tmp_path / "back"))
    assert migrated.returncode == 2, migrated.stderr
    assert "port" in migrated.stderr and "internal error" not in migrated.stderr and SECRET not in migrated.stderr


def test_a_schema_prefix_starting_with_pg_is_refused(tmp_path, pg_url):
    proc = cli_env(tmp_path, "sessions", "send", "agent:main:main", "hello", CLAWKEEP_STORAGE_URL=pg_url,
                   CLAWKEEP_STORAGE_SCHEMA="pg_x")
    assert proc.returncode == 2, proc.stderr
    assert "pg_" in proc.stderr and "reserved" in proc.stderr and "Traceback" not in proc.stderr


# --- bug 2: the gateway checks the server before serving --------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gateway_refuses_to_start_on_an_unreachable_server(tmp_path):
    url = f"postgresql://ck:{SECRET}@127.0.0.1:{_closed_port()}/ckdb"
    proc = cli_env(tmp_path, "gateway", "--port", "0", CLAWKEEP_STORAGE_URL=url)
    assert proc.returncode == 1, proc.stderr
    assert "cannot be reached" in " ".join(proc.stderr.split()) and SECRET not in proc.stderr + proc.stdout
    assert "clawkeep gateway (home" not in proc.stdout


def test_gateway_refuses_to_start_when_the_login_is_refused(tmp_path, pg):
    url, prefix = pg
    scheme, rest = url.split("://", 1)
    nobody = f"{scheme}://nobody_{uuid.uuid4().hex[:6]}:{SECRET}@{rest.split('@', 1)[1]}"
    proc = cli_env(tmp_path, "gateway", "--port", "0", CLAWKEEP_STORAGE_URL=nobody, CLAWKEEP_STORAGE_SCHEMA=prefix)
    assert proc.returncode == 2, proc.stderr
    assert "refused the login" in " ".join(proc.stderr.split()) and SECRET not in proc.stderr + proc.stdout


def test_a_refused_login_while_serving_is_a_server_fault():
    from clawkeep.storage.postgres.connection import translate

    exc = translate("postgresql://ck:x@h/db", psycopg.errors.InvalidPassword("password authentication failed"))
    assert isinstance(exc, InputError)  # the CLI exits 2
    assert exc.http_status == 503  # the gateway answers 503: the client did nothing wrong


# --- bug 4: a connection the server dropped is not handed out -----------------------------------
def test_the_first_call_after_the_server_dropped_the_connections_succeeds(tmp_path, pg):
    url, prefix = pg
    with Engine.open(home=tmp_path / "home", config={"storage": {"url": url, "schema": prefix}}) as eng:
        eng.message("before the restart")
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE pid <> pg_backend_pid() AND datname = current_database()")
        reply = eng.message("after the restart")  # the lock connection and the pooled ones were dropped
        texts = [m.text for m in eng.sessions_history(reply.session_key).messages]
        assert texts == ["before the restart", "after the restart"]


# --- bug 5: reads create nothing -------------------------------------------------------------
@pytest.mark.parametrize("read", [("memory", "search", "foo"), ("memory", "status"), ("memory", "items"),
                                  ("memory", "get", "MEMORY.md")])
def test_memory_reads_on_a_fresh_schema_create_nothing(tmp_path, pgvector_url, read):
    prefix = "pr" + uuid.uuid4().hex[:10]
    proc = cli_env(tmp_path, *read, CLAWKEEP_STORAGE_URL=pgvector_url, CLAWKEEP_STORAGE_SCHEMA=prefix)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        created = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
                               (prefix, prefix + "\\_%")).fetchall()
        for (name,) in created:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')
    assert created == []
    home = tmp_path / "home"
    assert not home.exists() or not any(p.is_file() for p in home.rglob("*")), list(home.rglob("*"))
