"""`clawkeep call`: every registry operation from the command line, derived from its declaration."""

from __future__ import annotations

import json

from clawkeep.api.operations import OPERATIONS
from tests.helpers.cli import run_cli

NO_VECTORS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def _config(home):
    path = home / "clawkeep.json5"
    path.write_text(json.dumps(NO_VECTORS))
    return path


def test_every_operation_is_listed_with_its_arguments(tmp_path):
    listed = run_cli(tmp_path, "call", "--list", "--json")
    assert listed.code == 0, listed.stderr
    rows = {row["operation"]: row for row in listed.json()}
    assert set(rows) == set(OPERATIONS)  # a new declaration is a command with nothing else written
    assert rows["sessions_search"]["arguments"] == "query [limit]"
    described = run_cli(tmp_path, "call", "memory_search", "--describe").json()
    assert described == json.loads(json.dumps(OPERATIONS["memory_search"].tool_schema()))


def test_calls_take_snake_or_camel_names_and_print_the_documented_json(tmp_path):
    config = _config(tmp_path)
    assert run_cli(tmp_path, "message", "we rented kayaks at the pier", config=config).code == 0
    found = run_cli(tmp_path, "call", "sessions_search", "query=kayaks", "limit=3", config=config)
    assert found.code == 0, found.stderr
    assert [h["snippet"] for h in found.json()["hits"]] == ["we rented kayaks at the pier"]
    history = run_cli(tmp_path, "call", "sessions-history", "session_key=agent:main:main", "includeTools=false",
                      config=config)
    assert history.code == 0, history.stderr
    assert [m["text"] for m in history.json()["messages"]] == ["we rented kayaks at the pier"]
    remembered = run_cli(tmp_path, "call", "memory_remember", "text=My bike is a green Brompton", config=config)
    assert remembered.code == 0, remembered.stderr
    assert remembered.json()["item"]["text"] == "My bike is a green Brompton"
    text_that_looks_like_json = run_cli(tmp_path, "call", "sessions_search", "query=2026", config=config)
    assert text_that_looks_like_json.code == 0 and text_that_looks_like_json.json()["hits"] == []


def test_bad_calls_name_the_input_and_what_is_allowed(tmp_path):
    config = _config(tmp_path)
    unknown = run_cli(tmp_path, "call", "sessions_serch", "query=x", config=config)
    assert unknown.code == 2 and "'sessions_serch' is unknown" in unknown.stderr and "sessions_search" in unknown.stderr
    wrong_name = run_cli(tmp_path, "call", "sessions_search", "quarry=x", config=config)
    assert wrong_name.code == 2 and "'quarry' is not one of sessions_search's: query, limit" in wrong_name.stderr
    wrong_type = run_cli(tmp_path, "call", "sessions_search", "query=x", "limit=many", config=config)
    assert wrong_type.code == 2 and "limit" in wrong_type.stderr and "integer" in wrong_type.stderr
    no_equals = run_cli(tmp_path, "call", "sessions_search", "kayaks", config=config)
    assert no_equals.code == 2 and "write NAME=VALUE" in no_equals.stderr
    missing = run_cli(tmp_path, "call", "sessions_search", config=config)
    assert missing.code == 2 and "query" in missing.stderr
    assert "Traceback" not in unknown.stderr + wrong_name.stderr + wrong_type.stderr + missing.stderr
