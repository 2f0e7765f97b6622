"""Config (SPEC §0): JSON5, one typed model of defaults, precise errors, unknown keys warned."""

from pathlib import Path

import pytest

from clawkeep.config import Config, config_from_dict, load_config
from clawkeep.errors import InputError


def test_defaults_are_the_documented_ones():
    cfg = Config()
    assert cfg.session.dm_scope == "main"
    assert cfg.session.reset.mode == "daily" and cfg.session.reset.at_hour == 4
    assert cfg.session.maintenance.mode == "warn"
    assert cfg.session.maintenance.prune_after == "30d" and cfg.session.maintenance.max_entries == 500
    assert cfg.tools.sessions.visibility == "tree"
    assert cfg.session.agent_to_agent.max_ping_pong_turns == 5


def test_json5_file_with_comments_and_trailing_commas(tmp_path: Path):
    file = tmp_path / "clawkeep.json5"
    file.write_text("""{
      // OpenClaw key names
      session: { dmScope: 'per-channel-peer', reset: { atHour: 6, idleMinutes: 90, }, },
      tools: { sessions: { visibility: 'agent' } },
    }""")
    cfg = load_config(file)
    assert cfg.session.dm_scope == "per-channel-peer"
    assert cfg.session.reset.at_hour == 6 and cfg.session.reset.idle_minutes == 90
    assert cfg.tools.sessions.visibility == "agent"
    assert cfg.warnings == []


def test_malformed_json5_names_the_file(tmp_path: Path):
    file = tmp_path / "bad.json5"
    file.write_text("{ session: { dmScope: 'main' ")
    with pytest.raises(InputError, match="bad.json5 is not valid JSON5"):
        load_config(file)


def test_unknown_dm_scope_names_key_value_and_allowed_values():
    with pytest.raises(InputError) as info:
        config_from_dict({"session": {"dmScope": "per-user"}})
    text = str(info.value)
    assert "session.dmScope" in text and "per-user" in text
    for allowed in ("main", "per-peer", "per-channel-peer", "per-account-channel-peer"):
        assert allowed in text


def test_bad_visibility_and_out_of_range_hour():
    with pytest.raises(InputError, match="tools.sessions.visibility = 'everyone'.*self"):
        config_from_dict({"tools": {"sessions": {"visibility": "everyone"}}})
    with pytest.raises(InputError, match="session.reset.atHour = 25"):
        config_from_dict({"session": {"reset": {"atHour": 25}}})
    with pytest.raises(InputError, match="pruneAfter"):
        config_from_dict({"session": {"maintenance": {"pruneAfter": "soon"}}})
    with pytest.raises(InputError, match="maxPingPongTurns"):
        config_from_dict({"session": {"agentToAgent": {"maxPingPongTurns": 21}}})


def test_unknown_keys_are_warnings_not_errors():
    cfg = config_from_dict({"session": {"dmScope": "main", "colour": "blue"}, "frobnicate": 1})
    assert cfg.session.dm_scope == "main"
    assert any("session.colour" in w for w in cfg.warnings)
    assert any("frobnicate" in w for w in cfg.warnings)


def test_sections_of_later_subsystems_do_not_warn():
    cfg = config_from_dict({"agents": {"defaults": {"memorySearch": {"provider": "local"}}},
                            "plugins": {"entries": {"active-memory": {"enabled": True}}}})
    assert cfg.warnings == []


def test_cli_reports_bad_config_without_traceback(cli, tmp_path: Path):
    file = tmp_path / "c.json5"
    file.write_text("{session: {dmScope: 'nope'}}")
    result = cli("status", config=file)
    assert result.code == 2
    assert "session.dmScope" in result.stderr and "Traceback" not in result.stderr


def test_cli_warns_on_unknown_key_and_still_runs(cli, tmp_path: Path):
    file = tmp_path / "c.json5"
    file.write_text("{sesion: {}}")
    result = cli("status", "--json", config=file)
    assert result.code == 0
    assert "unknown key 'sesion'" in result.stderr
    assert result.json()["dmScope"] == "main"
