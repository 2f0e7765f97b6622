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


def test_malformed_json5_says_the_line_not_string(tmp_path: Path):
    """QA: a broken config was reported as "…bad.json5 is not valid JSON5: <string>:2 Unexpected
    end of input" — `<string>` is the parser's name for the file named just before it."""
    file = tmp_path / "bad.json5"
    file.write_text("{ session: { dmScope: 'main',\n  reset: { atHour: 4 }, ,\n}}\n")
    with pytest.raises(InputError, match=r"bad.json5 is not valid JSON5: line 2: Unexpected") as raised:
        load_config(file)
    assert "<string>" not in str(raised.value)


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


def test_a_missing_required_key_is_named_without_its_parent_object():
    with pytest.raises(InputError) as caught:
        config_from_dict({"agents": {"defaults": {"memorySearch": {"onnx": {"similarity": {"scale": 1.5}}}}}})
    message = str(caught.value)
    assert "agents.defaults.memorySearch.onnx.similarity.offset is not set; it is required here" in message
    assert "{'scale'" not in message  # the enclosing object is not shown as the key's value


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


# --- typed sections: models, plugins, agents.list (every bad value is a load error) ---------------
from clawkeep import Engine  # noqa: E402
from clawkeep.config import DEFAULT_CONTEXT_WINDOW, RECORD_MODE_CONTEXT_WINDOW  # noqa: E402


def _refused(data: dict) -> str:
    with pytest.raises(InputError) as info:
        config_from_dict(data)
    return str(info.value)


def _provider(**settings) -> dict:
    return {"models": {"providers": {"x": {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1", **settings}}}}


def test_provider_api_is_checked_at_load():
    text = _refused(_provider(api="grpc"))
    assert "models.providers.x.api = 'grpc' is not allowed" in text
    for allowed in ("openai", "openai-completions", "anthropic", "anthropic-messages"):
        assert allowed in text
    assert config_from_dict(_provider(api=" Anthropic-Messages ")).models.providers["x"].protocol == "anthropic"


@pytest.mark.parametrize("url", ["ftp://host/v1", "localhost:11434", "http://", 5])
def test_provider_base_url_must_be_an_http_url(url):
    text = _refused(_provider(baseUrl=url))
    assert "models.providers.x.baseUrl = " in text and repr(url) in text and "http:// or https://" in text


def test_custom_provider_needs_api_and_base_url_but_a_builtin_does_not():
    assert "models.providers.x.api is required" in _refused({"models": {"providers": {"x": {"baseUrl": "http://h"}}}})
    text = _refused({"models": {"providers": {"x": {"api": "openai"}}}})
    assert "models.providers.x.baseUrl is required" in text and "http://" in text
    ollama = config_from_dict({"models": {"providers": {"ollama": {"baseUrl": "http://gpu-box:11434/v1"}}}})
    merged = ollama.models.provider("ollama")
    assert merged.protocol == "openai" and merged.base_url == "http://gpu-box:11434/v1"
    assert merged.api_key_env == "OLLAMA_API_KEY"  # the built-in's other keys stay


@pytest.mark.parametrize(("models", "key"), [
    ({"m": {"contextWindow": -1}}, "models.providers.x.models.m.contextWindow = -1"),
    ({"m": {"contextWindow": 0}}, "models.providers.x.models.m.contextWindow = 0"),
    ([{"id": "m", "contextWindow": -5}], "models.providers.x.models.m.contextWindow = -5"),
    ({"m": {"maxTokens": True}}, "models.providers.x.models.m.maxTokens = True"),
    ([{"contextWindow": 8192}], "models.providers.x.models"),
])
def test_model_windows_are_positive_integers(models, key):
    text = _refused(_provider(models=models))
    assert key in text


@pytest.mark.parametrize(("settings", "key"), [
    ({"timeoutMs": -1}, "models.providers.x.timeoutMs = -1"),
    ({"retries": 11}, "models.providers.x.retries = 11"),
    ({"retries": 1.5}, "models.providers.x.retries = 1.5"),
    ({"maxTokensField": "max"}, "models.providers.x.maxTokensField = 'max' is not allowed"),
    ({"headers": {"X-Team": 5}}, "models.providers.x.headers.X-Team = 5"),
    ({"streamUsage": "sometimes"}, "models.providers.x.streamUsage = 'sometimes'"),
])
def test_provider_settings_are_checked_at_load(settings, key):
    assert key in _refused(_provider(**settings))


def test_provider_defaults_have_one_home():
    settings = config_from_dict(_provider()).models.provider("x")
    assert (settings.timeout_ms, settings.retries, settings.retry_backoff_ms, settings.retry_after_cap_ms) == (
        60_000, 2, 500, 20_000)
    from clawkeep.models.chat import DEFAULT_CONTEXT_WINDOW as chat_default
    from clawkeep.models.chat import create_chat_model

    assert chat_default == DEFAULT_CONTEXT_WINDOW
    model = create_chat_model("x/unknown-7b", _provider()["models"])
    assert model.context_window == DEFAULT_CONTEXT_WINDOW and model.timeout_s == 60 and model.retries == 2
    assert RECORD_MODE_CONTEXT_WINDOW == 128_000


@pytest.mark.parametrize("key", [("agents", "defaults", "model", "primary"),
                                 ("agents", "defaults", "compaction", "model"),
                                 ("plugins", "entries", "active-memory", "config", "model")])
def test_model_references_name_a_known_provider(key):
    data: dict = {}
    node = data
    for part in key[:-1]:
        node = node.setdefault(part, {})
    node[key[-1]] = "nowhere/m1"
    text = _refused(data)
    assert f"{'.'.join(key)} = 'nowhere/m1'" in text and "unknown provider 'nowhere'" in text and "ollama" in text
    fine = config_from_dict({**_provider(models={"m1": {}}), "agents": {"defaults": {"model": {
        "primary": "x/m1", "fallbacks": ["m1", "ollama/qwen2.5", "openrouter/meta/llama-3"]}}}})
    assert fine.agents.defaults.model.fallbacks[0] == "m1"  # a bare id one provider lists
    assert "agents.defaults.model.fallbacks.0 = 'zzz'" in _refused({"agents": {"defaults": {"model": {
        "fallbacks": ["zzz"]}}}})


@pytest.mark.parametrize(("entry", "key", "what"), [
    ({"id": 5}, "agents.list.0.id = 5", "agent id"),
    ({"id": "Bad Id!"}, "agents.list.0.id = 'Bad Id!'", "a-z, 0-9"),
    ({"id": "ops", "workspace": 5}, "agents.list.0.workspace = 5", "path"),
])
def test_agents_list_entries_are_typed(entry, key, what):
    text = _refused({"agents": {"list": [entry]}})
    assert key in text and what in text
    assert "agents.list.0 = 5 is not allowed; give an object" in _refused({"agents": {"list": [5]}})


def test_agents_list_workspace_is_used_and_unknown_entry_keys_warn(tmp_path: Path):
    cfg = config_from_dict({"agents": {"list": [{"id": "ops", "workspace": str(tmp_path / "ops-ws"), "name": "Ops"}]}})
    assert cfg.agents.agents_list[0].workspace == str(tmp_path / "ops-ws")
    assert any("agents.list.0.name" in w for w in cfg.warnings)
    from clawkeep.memory.workspace import workspace_dir

    assert workspace_dir(tmp_path, cfg, "ops") == tmp_path / "ops-ws"


def test_dreaming_settings_are_typed_with_their_defaults_and_bad_values_refused():
    on = config_from_dict({"plugins": {"entries": {"memory-core": {"config": {"dreaming": {
        "enabled": True, "timezone": "America/Los_Angeles", "frequency": "0 */6 * * *"}}}}}})
    dreaming = on.plugins.entries.memory_core.config.dreaming
    assert dreaming.enabled and dreaming.frequency == "0 */6 * * *" and on.warnings == []
    defaults = config_from_dict({}).plugins.entries.memory_core.config.dreaming
    assert (defaults.enabled, defaults.frequency, defaults.timezone) == (False, "0 3 * * *", None)
    deep = defaults.deep
    assert (deep.min_score, deep.min_recall_count, deep.min_unique_queries, deep.limit, deep.recency_half_life_days,
            deep.max_age_days, deep.max_prior_entry_loss_fraction) == (0.8, 3, 3, 10, 14, 30, 0.25)
    for bad, message in ((("frequency", "every night"), "not a cron expression"),
                         (("timezone", "Mars/Olympus"), "unknown time zone"),
                         (("deep", {"minScore": 1.5}), "dreaming.deep.minScore"),
                         (("model", "nowhere/x"), "dreaming.model")):
        text = _refused({"plugins": {"entries": {"memory-core": {"config": {"dreaming": {bad[0]: bad[1]}}}}}})
        assert message in text, text


def test_plugin_entries_are_typed_and_unknown_plugins_warn():
    cfg = config_from_dict({"plugins": {"entries": {"active-memory": {"config": {"timeoutMs": 300}},
                                                    "memory-core": None, "lossless-claw": {"enabled": True}}}})
    assert cfg.plugins.entries.active_memory.config.timeout_ms == 300
    assert cfg.warnings == ["config: unknown key 'plugins.entries.lossless-claw' ignored"]
    text = _refused({"plugins": {"entries": {"active-memory": {"config": {"mode": "sometimes"}}}}})
    assert "plugins.entries.active-memory.config.mode = 'sometimes' is not allowed" in text and "escalate" in text
    assert "plugins.entries.active-memory = 'on' is not allowed; give an object" in _refused(
        {"plugins": {"entries": {"active-memory": "on"}}})


def test_load_errors_name_the_file(tmp_path: Path):
    file = tmp_path / "clawkeep.json5"
    file.write_text("{models: {providers: {x: {api: 'grpc', baseUrl: 'http://h'}}}}")
    with pytest.raises(InputError, match=r"clawkeep\.json5: invalid configuration: models\.providers\.x\.api"):
        load_config(file)


# --- the overrides file: what the engine changes, merged over the user's file ---------------------
def test_global_switch_never_rewrites_a_commented_config(home: Path):
    file = home / "clawkeep.json5"
    document = ("// Alice's assistant — keep these notes\n{\n  session: { dmScope: 'main' },  // one DM session\n"
                "  /* Active Memory stays on */\n  plugins: { entries: { 'active-memory': { enabled: true } } },\n}\n")
    file.write_bytes(document.encode())
    with Engine.open(home=home) as engine:
        assert engine.message("/active-memory off --global").status["enabled"] is False
        assert engine.message("/active-memory status").status["enabled"] is False
    assert file.read_bytes() == document.encode()
    assert (home / "clawkeep.overrides.json").exists()
    with Engine.open(home=home) as fresh:
        assert fresh.config.plugins.entries.active_memory.enabled is False
        assert fresh.config.session.dm_scope == "main"
        key = fresh.message("hello").session_key
        assert fresh.recall("what did we decide last time?", session=key)["reason"] == "plugin disabled"
        fresh.message("/active-memory on --global")
    assert file.read_bytes() == document.encode()
    with Engine.open(home=home, config=str(file)) as again:
        assert again.config.plugins.entries.active_memory.enabled is True


def test_overrides_apply_without_a_config_file(home: Path):
    with Engine.open(home=home) as engine:
        engine.message("/active-memory off --global")
    assert not (home / "clawkeep.json5").exists()
    with Engine.open(home=home) as fresh:
        assert fresh.config.plugins.entries.active_memory.enabled is False


def test_a_broken_overrides_file_is_a_load_error(tmp_path: Path):
    file = tmp_path / "clawkeep.json5"
    file.write_text("{}")
    (tmp_path / "clawkeep.overrides.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="clawkeep.overrides.json.*must be an object"):
        load_config(file)
    (tmp_path / "clawkeep.overrides.json").write_text('{"plugins": {"entries": {"active-memory": {"enabled": 3}}}}')
    with pytest.raises(InputError, match=r"with clawkeep\.overrides\.json.*active-memory\.enabled = 3"):
        load_config(file)
