"""Loading a config builds only the sections it sets (config/model.py `_validated`): the result,
the warnings and every error must be exactly what validating the whole `Config` gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from clawkeep.config import Config, config_from_dict, default_config
from clawkeep.config.base import _describe_error
from clawkeep.errors import InputError


def whole_model(data: dict[str, Any]) -> tuple[str, Any]:
    """What loading gave before sections were validated one by one: Config.model_validate."""
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        return "error", "config: invalid configuration: " + "; ".join(_describe_error(e) for e in exc.errors())
    except InputError as exc:
        return "error", f"config: invalid configuration: {exc}"
    return "ok", config.model_dump(by_alias=True)


def by_sections(data: dict[str, Any]) -> tuple[str, Any]:
    try:
        config = config_from_dict(data)
    except InputError as exc:
        return "error", str(exc)
    return "ok", config.model_dump(by_alias=True)


def test_defaults_built_without_validation_equal_the_validated_defaults():
    lazy, full = default_config(), Config()
    assert lazy == full
    assert lazy.model_dump(by_alias=True) == full.model_dump(by_alias=True)
    assert lazy.model_fields_set == full.model_fields_set == set()
    assert lazy.session.reset.at_hour == 4 and lazy.agents.defaults.memory_search.provider == "local"


def test_an_absent_section_is_never_validated():
    config = config_from_dict({"storage": {"synchronous": "FULL"}})
    assert config.storage.synchronous == "FULL"
    assert config.model_fields_set == {"storage", "warnings"}
    # The session section was not in the file: its defaults are there, nothing was validated.
    assert config.session == Config().session


CASES: list[dict[str, Any]] = [
    {},
    {"session": {"dmScope": "per-peer", "reset": {"atHour": 6, "idleMinutes": 90}}},
    {"session": {"dmScope": "per-user"}},
    {"session": {"reset": {"atHour": 25}}, "tools": {"sessions": {"visibility": "everyone"}}},
    {"session": 5},
    {"plugins": None},
    {"plugins": {"entries": None}},
    {"plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": True}}}}}},
    {"plugins": {"entries": {"active-memory": {"config": {"toolsAllow": ["memory_search", "exec"]}}}}},
    {"storage": {"busyTimeoutMs": True}, "session": {"maxMessageChars": 1e30}},
    {"agents": {"defaults": {"model": {"primary": "nope/x"}}}},
    {"agents": {"defaults": {"model": {"primary": "local/qwen"}}},
     "models": {"providers": {"local": {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1",
                                        "models": {"qwen": {"contextWindow": 8192}}}}}},
    {"models": {"providers": {"foo": {}}}},
    {"agents": {"list": [{"id": "Bad Id"}], "defaults": {"memorySearch": {"provider": "none", "zz": 1}}}},
    {"zzz": 1, "session": {"dmScope": "main"}},
    {"warnings": ["from the file"]},
    {"gateway": {"port": 0, "bind": "lan"}},
    {"hooks": {"internal": {"entries": {"session-memory": {"messages": 0}}}}},
]


@pytest.mark.parametrize("data", CASES)
def test_same_result_and_errors_as_the_whole_model(data: dict[str, Any]):
    assert by_sections(data) == whole_model(data)


@pytest.mark.parametrize("data", [{"zzz": 1, "session": {"x": 2}},
                                  {"plugins": {"entries": {"other": {}}}}])
def test_same_warnings_as_the_whole_model(data: dict[str, Any]):
    expected = config_from_dict(data).warnings
    full = Config.model_validate(data)
    assert expected and all("unknown key" in w for w in expected)
    assert full.model_dump() == config_from_dict(data).model_dump()


_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 100_000), st.floats(allow_nan=False),
                  st.sampled_from(["main", "FULL", "NORMAL", "30d", "soon", "tree", "local", "none", "x/y", ""]))
_keys = st.sampled_from(["session", "tools", "agents", "storage", "memory", "hooks", "plugins", "models",
                         "gateway", "dmScope", "reset", "atHour", "synchronous", "defaults", "memorySearch",
                         "provider", "entries", "active-memory", "sessions", "visibility", "port", "unknown"])
_tree = st.recursive(_leaf, lambda inner: st.dictionaries(_keys, inner, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _tree, max_size=4))
def test_random_documents_load_the_same_way(data: dict[str, Any]):
    assert by_sections(data) == whole_model(data)
