"""CLI (SPEC §P): JSON shapes, exit codes 0/2/1, no traceback for user mistakes."""

import json
import shutil

from tests.helpers.cli import run_cli


def test_message_json_shape_and_defaults(cli):
    result = cli("message", "hello from the cli", "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert {"sessionKey", "sessionId", "messageId", "role"} <= set(data)
    assert data["sessionKey"] == "agent:main:main" and data["role"] == "user"
    assert "reply" not in data and data["mode"] == "record" and "no reply" in data["note"]


def test_full_session_flow_through_the_cli(cli):
    sent = cli("message", "下周二我去上海出差", "--channel", "telegram", "--sender", "alice",
               "--message-id", "tg-1", "--at", "2026-03-03T09:00:00+08:00", "--json").json()
    again = cli("message", "下周二我去上海出差", "--channel", "telegram", "--sender", "alice",
                "--message-id", "tg-1", "--json").json()
    assert again["messageId"] == sent["messageId"] == "tg-1" and again.get("duplicate") is True
    hits = cli("sessions", "search", "上海", "--json").json()["hits"]
    assert [h["messageId"] for h in hits] == ["tg-1"]
    assert hits[0]["timestamp"] == "2026-03-03T01:00:00.000Z"
    listed = cli("sessions", "list", "--json").json()
    assert listed[0]["key"] == sent["sessionKey"] and listed[0]["messageCount"] == 1
    assert set(listed[0]) >= {"key", "sessionId", "agentId", "kind", "chatType", "channel", "label",
                              "sessionStartedAt", "lastInteractionAt", "updatedAt", "messageCount"}
    reset = cli("sessions", "reset", sent["sessionKey"], "--json").json()
    assert reset["sessionId"] == sent["sessionId"]
    history = cli("sessions", "history", sent["sessionKey"], "--json").json()
    assert history["messages"] == []
    old = cli("sessions", "history", sent["sessionKey"], "--message-id", "tg-1", "--json").json()
    assert [m["messageId"] for m in old["messages"]] == ["tg-1"]
    fork = cli("sessions", "fork", sent["sessionKey"], "--json").json()
    assert fork["kind"] == "dashboard"
    created = cli("sessions", "create", "--label", "planning", "--json").json()
    assert created["label"] == "planning" and created["key"].startswith("agent:main:dashboard:")
    status = cli("sessions", "status", sent["sessionKey"], "--json").json()
    assert status["resetCount"] == 1
    cleanup = cli("sessions", "cleanup", "--dry-run", "--json").json()
    assert cleanup["applied"] is False


def test_human_output_is_a_table(cli):
    cli("message", "table me")
    result = cli("sessions", "list")
    assert result.code == 0 and "agent:main:main" in result.stdout and "─" in result.stdout


def test_status_shows_overview(cli):
    result = cli("status")
    assert result.code == 0
    assert "sessions search QUERY" in result.stdout and "indexedMessages" in result.stdout
    data = cli("status", "--json").json()
    assert data["storage"] == "sqlite" and data["sessions"] == 0


def test_user_mistakes_exit_2_without_traceback(cli):
    cases = [
        ("sessions", "search", "x" * 4097),
        ("sessions", "search", "  "),
        ("sessions", "search", "foo", "--limit", "99"),
        ("sessions", "history", "not-a-key"),
        ("sessions", "history", "agent:main:telegram:direct:ghost"),
        ("message", "hi", "--role", "system"),
        ("message", "hi", "--chat-type", "room9"),
        ("message", "hi", "--at", "yesterday-ish"),
        ("message", "hi", "--message-id", "has space"),
        ("message", ""),
        ("message", "/dreaming sometimes"),
        ("message", "/verbose sometimes"),
        ("message", "/active-memory maybe"),
        ("recall", "what did I say"),
        ("--agent", "Bad Agent", "status"),
        ("sessions", "list", "--active", "-5"),
        ("sessions", "frobnicate"),
    ]
    for args in cases:
        result = cli(*args)
        assert result.code == 2, (args, result.code, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.strip(), args


def test_active_minutes_flag_names_one_allowed_range(cli):
    """QA: `--active -5` said "allowed 0-…", then `--active 0` was refused naming `active_minutes`
    (the Engine's parameter, not the flag) with "allowed 1-…"."""
    for value in ("-5", "0"):
        result = cli("sessions", "list", "--active", value)
        assert result.code == 2 and f"--active {value} is out of range; allowed 1-" in result.stderr, result.stderr
    assert cli("sessions", "list", "--active", "1", "--json").code == 0


def test_global_options_work_after_the_command_as_the_readme_says(cli, tmp_path):
    """QA: the README says every command takes --home, --config and --agent, but
    `clawkeep status --home DIR` answered "No such option: --home" (they were accepted only
    before the command). A command's own option of that name still wins (`doctor --agent`)."""
    other = tmp_path / "other-home"
    sent = cli("message", "stored in the other home", "--home", str(other), "--json")
    assert sent.code == 0, sent.stderr
    assert cli("status", f"--home={other}", "--json").json()["messages"] == 1
    assert cli("status", "--json").json()["messages"] == 0  # the first home is untouched
    config = tmp_path / "c.json5"
    config.write_text('{session: {dmScope: "per-peer"}}')
    routed = cli("message", "hi", "--sender", "zoe", "--config", str(config), "--json")
    assert routed.code == 0 and routed.json()["sessionKey"] == "agent:main:direct:zoe", routed.stderr
    assert cli("status", "--agent", "work", "--json").json()["agentId"] == "work"
    assert cli("doctor", "--agent", "main", "--json").code == 0
    bare = cli("message", "hi", "--home")
    assert bare.code == 2 and "--home" in bare.stderr and "Traceback" not in bare.stderr
    literal = cli("memory", "remember", "--", "--home")  # after `--` nothing moves
    assert literal.code == 0 and "--home" in literal.stdout


def test_sessions_send_timeout_flag_is_named_in_its_error(cli):
    """QA: `sessions send KEY hi --timeout -1` answered "timeout_seconds -1 is out of range" —
    the Engine's parameter, not the flag the user typed."""
    cli("message", "hello")
    for value in ("-1", "100000"):
        result = cli("sessions", "send", "agent:main:main", "hi", "--timeout", value)
        assert result.code == 2 and f"--timeout {value} is out of range; allowed 0-3600" in result.stderr, result.stderr


def test_memory_flags_are_named_as_typed_in_their_errors(cli):
    """QA: docs/input-limits.md says the CLI names its flag; `memory refusals --days 0` said "days 0",
    `memory dreams --limit 0` "limit 0", `memory items --status gone` "status 'gone'" and
    `memory search x --mode fuzzy` "search mode 'fuzzy'"."""
    cases = {("memory", "refusals", "--days", "0"): "--days 0 is out of range; allowed 1-30",
             ("memory", "dreams", "--limit", "0"): "--limit 0 is out of range; allowed 1-200",
             ("memory", "items", "--status", "gone"): "--status 'gone' is not allowed; allowed values: active",
             ("memory", "search", "x", "--mode", "fuzzy"): "--mode 'fuzzy' is not allowed; allowed values: hybrid"}
    for args, message in cases.items():
        result = cli(*args)
        assert result.code == 2 and message in result.stderr.replace("\n", " "), (args, result.stderr)


def test_oversized_message_is_refused_and_nothing_stored(cli, home, tmp_path):
    config = tmp_path / "c.json5"
    config.write_text("{session: {maxMessageChars: 100}}")
    cli("message", "small one", config=config)
    result = cli("message", "x" * 101, "--json", config=config)
    assert result.code == 2 and "at most 100" in result.stderr
    assert cli("status", "--json", config=config).json()["messages"] == 1


def test_search_hits_json_is_stable(cli):
    cli("message", "the quarterly report is due", "--role", "assistant")
    out = cli("sessions", "search", "quarterly", "--json")
    hits = json.loads(out.stdout)["hits"]
    assert hits[0]["role"] == "assistant" and "quarterly" in hits[0]["snippet"]


def test_at_takes_epoch_ms_as_the_readme_says(cli):
    import time

    at = int(time.time() * 1000) - 3_600_000
    sent = cli("message", "an hour ago", "--at", str(at), "--json")
    assert sent.code == 0, sent.stderr
    history = cli("sessions", "history", sent.json()["sessionKey"], "--json").json()["messages"]
    assert history[0]["timestamp"].startswith(time.strftime("%Y-%m-%dT%H:%M", time.gmtime(at / 1000)))
    too_late = cli("message", "x", "--at", "99999999999999")
    assert too_late.code == 2 and "--at 99999999999999 is out of range" in too_late.stderr


def test_status_counts_indexed_messages(cli):
    """QA: `indexedMessages` was the index's highest rowid (an entry seq: session headers and
    reset boundaries counted too), not how many messages are indexed."""
    for text in ("first message", "/new", "second message", "third message"):
        assert cli("message", text).code == 0
    status = cli("status", "--json").json()
    assert status["messages"] == 3 and status["indexedMessages"] == 3


def test_a_file_the_command_cannot_write_is_a_clear_error_not_an_internal_one(home):
    """QA: Dreaming on a read-only workspace said `internal error: OSError …`; a path that cannot
    be written (here memory/.dreams is a plain file) names the path and what to do, exit 1."""
    assert run_cli(home, "memory", "dreaming", "on").code == 0
    assert run_cli(home, "memory", "remember", "I like green tea").code == 0
    dreams = home / "workspace" / "memory" / ".dreams"
    if dreams.is_dir():
        shutil.rmtree(dreams)
    dreams.write_text("in the way\n")
    result = run_cli(home, "memory", "dream")
    flat = " ".join(result.stderr.split())
    assert result.code == 1 and "internal error" not in flat and "Traceback" not in flat
    assert str(dreams) in flat and "nothing already stored was lost" in flat
    assert "I like green tea" in (home / "workspace" / "MEMORY.md").read_text()
