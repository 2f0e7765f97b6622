"""PostgreSQL bad input (SPEC D1): an unknown URL, an unreachable server, a role without rights,
a database of a newer schema, a server restarted or a connection killed mid-turn."""

from __future__ import annotations

import json
import socket
import subprocess

import psycopg
import pytest

from clawkeep import Engine
from clawkeep.config import StorageConfig, config_from_dict
from clawkeep.errors import InputError, StorageError
from clawkeep.storage import open_agent_store
from clawkeep.storage.postgres.sessions import MIGRATIONS
from tests.helpers.cli import run_cli

from ..records import append_text, session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unknown_url_is_refused_naming_the_key():
    refused = r"storage\.url = 'mysql://db': this kind of URL is not supported; allowed: unset"
    with pytest.raises(InputError, match=refused):
        config_from_dict({"storage": {"url": "mysql://db"}})
    with pytest.raises(InputError, match="storage"):
        config_from_dict({"storage": {"url": "postgresql://h/db", "schema": "Bad-Prefix"}})


def test_an_unreachable_server_is_a_clear_error_with_exit_1(tmp_path, home):
    url = f"postgresql://postgres:secret@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(StorageError, match=r"PostgreSQL at postgresql://127\.0\.0\.1:\d+/postgres cannot be reached"):
        open_agent_store(tmp_path, "main", StorageConfig(url=url, connectTimeoutMs=2000))
    config = tmp_path / "ck.json5"
    config.write_text(json.dumps({"storage": {"url": url, "connectTimeoutMs": 2000}}))
    result = run_cli(home, "message", "hello", config=config)
    assert result.code == 1
    assert "cannot be reached" in result.stderr and "Traceback" not in result.stderr
    assert "secret" not in result.stderr  # the password is never shown


def test_a_role_without_rights_gets_a_clear_message_with_exit_2(pg_url, prefix, tmp_path, home):
    role = f"ck_{prefix}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        url = pg_url.replace("postgres@", f"{role}@", 1)
        with pytest.raises(InputError, match="the role may not do what clawkeep needs"):
            open_agent_store(tmp_path, "main", StorageConfig(url=url, schema=prefix))
        config = tmp_path / "ck.json5"
        config.write_text(json.dumps({"storage": {"url": url, "schema": prefix}}))
        result = run_cli(home, "message", "hello", config=config)
        assert result.code == 2 and "grant it CREATE" in result.stderr and "Traceback" not in result.stderr
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP ROLE "{role}"')


def test_a_newer_schema_is_refused_and_left_untouched(pg_url, prefix, tmp_path):
    config = StorageConfig(url=pg_url, schema=prefix)
    store = open_agent_store(tmp_path, "main", config)
    record = session()
    store.insert_session(record)
    schema = store.schema
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{schema}".schema_migrations VALUES (99, %s, 1)', ("from the future",))
    with pytest.raises(StorageError, match="schema version 99, newer than this clawkeep understands"):
        open_agent_store(tmp_path, "main", config)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        versions = [r[0] for r in conn.execute(f'SELECT version FROM "{schema}".schema_migrations ORDER BY 1')]
        assert versions == [m.version for m in MIGRATIONS] + [99]
        assert conn.execute(f'SELECT count(*) FROM "{schema}".sessions').fetchone()[0] == 1


def test_a_connection_killed_mid_transaction_fails_that_step_only(pg_url, prefix, tmp_path):
    store = open_agent_store(tmp_path, "main", StorageConfig(url=pg_url, schema=prefix))
    try:
        record = session()
        store.insert_session(record)
        kept = append_text(store, record.session_id, "acknowledged before")
        with pytest.raises(StorageError, match="the step that failed was rolled back"), store.transaction():
            append_text(store, record.session_id, "in flight")
            with psycopg.connect(pg_url, autocommit=True) as admin:  # the server drops our connection
                # the store's backend, mid-transaction (a pipelined one shows as active, not idle in transaction)
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                              "AND (state LIKE 'idle in transaction%%' OR state = 'active' AND query LIKE %s)",
                              (f"%{store.schema}%",))
            append_text(store, record.session_id, "after the kill")
        texts = [e.content[0]["text"] for e in store.iter_entries(record.session_id)]
        assert texts == ["acknowledged before"]  # the next call reconnects
        append_text(store, record.session_id, "next turn")
        assert store.get_entry(kept.entry_id) is not None and store.count_entries(record.session_id) == 2
    finally:
        store.close()


def test_a_server_restart_mid_run_reconnects_and_loses_nothing_acknowledged(pg_url, prefix, tmp_path, home):
    from tests.helpers.pg_servers import SERVERS

    server = SERVERS.started.get("debian")
    if server is None:
        pytest.fail("this test restarts the Debian test server, so it needs the one "
                    "tests/helpers/pg_servers.py started "
                    "(unset CLAWKEEP_TEST_POSTGRES_URL)")
    with Engine.open(home=home, config={"storage": {"url": pg_url, "schema": prefix},
                                        "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as engine:
        first = engine.message("before the restart", sender="alice")
        subprocess.run(["bash", str(server.script), "restart", server.dir],
                       check=True, capture_output=True, timeout=120)
        outcomes = []
        for n in range(3):  # the first call may meet a dead pooled connection: it fails clearly, or reconnects
            try:
                outcomes.append(engine.message(f"after the restart {n}", sender="alice").message_id)
            except StorageError as exc:
                outcomes.append(str(exc))
        assert any(not o.startswith("the connection") for o in outcomes)
        history = [m["text"] for m in engine.sessions_history(first.session_key)["messages"]]
        assert history[0] == "before the restart"
        stored_ok = [f"after the restart {n}" for n, o in enumerate(outcomes) if not o.startswith("the connection")]
        assert [t for t in history if t.startswith("after")] == stored_ok
