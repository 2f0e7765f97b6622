"""Build chat models from the `models` config section (keys documented in the package docstring)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import InputError
from .anthropic import AnthropicChatModel
from .base import ChatModel
from .fallback import FallbackChain
from .http import HttpChatModel
from .openai import MAX_TOKENS_FIELDS, OpenAIChatModel

PREFIX = "models.providers"
APIS: dict[str, type[HttpChatModel]] = {"openai": OpenAIChatModel, "anthropic": AnthropicChatModel}
# OpenClaw-style spellings accepted for `api`.
API_ALIASES: dict[str, str] = {
    "openai": "openai",
    "openai-completions": "openai",
    "openai-chat": "openai",
    "anthropic": "anthropic",
    "anthropic-messages": "anthropic",
}

# Providers usable without configuration; a configured entry of the same name overrides keys.
# `_keyRequired`: creation fails without a key while the baseUrl is the built-in one.
BUILTIN_PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {
        "api": "openai",
        "baseUrl": "https://api.openai.com/v1",
        "apiKeyEnv": "OPENAI_API_KEY",
        "maxTokensField": "max_completion_tokens",
        "_keyRequired": True,
    },
    "anthropic": {
        "api": "anthropic",
        "baseUrl": "https://api.anthropic.com",
        "apiKeyEnv": "ANTHROPIC_API_KEY",
        "_keyRequired": True,
    },
    "openrouter": {
        "api": "openai",
        "baseUrl": "https://openrouter.ai/api/v1",
        "apiKeyEnv": "OPENROUTER_API_KEY",
        "_keyRequired": True,
    },
    "ollama": {"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1", "apiKeyEnv": "OLLAMA_API_KEY"},
    "vllm": {"api": "openai", "baseUrl": "http://127.0.0.1:8000/v1", "apiKeyEnv": "VLLM_API_KEY"},
    "lmstudio": {"api": "openai", "baseUrl": "http://127.0.0.1:1234/v1"},
    "llamacpp": {"api": "openai", "baseUrl": "http://127.0.0.1:8080/v1"},
}


def create_chat_model(
    ref: str, models_config: Mapping[str, Any] | None, *, env: Mapping[str, str] | None = None
) -> ChatModel:
    """The model named by `ref` ("<provider>/<model>"); no network call is made.

    A ref without "/" is accepted when exactly one provider lists that model id. Raises
    InputError for an unknown provider, a bad setting (naming the key, value and what is
    allowed) or a missing API key for a hosted provider.
    """
    env = os.environ if env is None else env
    providers = _providers(models_config)
    name, model = _split_ref(ref, providers)
    settings = providers[name]
    where = f"{PREFIX}.{name}"

    api_raw = settings.get("api")
    api = API_ALIASES.get(api_raw.strip().lower()) if isinstance(api_raw, str) else None
    if api is None:
        raise InputError(
            f"{where}.api {api_raw!r} is not supported; allowed: {', '.join(API_ALIASES)}"
            if api_raw is not None
            else f"{where}.api is required; allowed: {', '.join(API_ALIASES)}"
        )
    base_url = settings.get("baseUrl")
    if not isinstance(base_url, str) or not base_url.strip():
        raise InputError(
            f"{where}.baseUrl is required for a custom provider (an http:// or https:// URL); got {base_url!r}"
        )
    base_url = base_url.strip()

    api_key = _opt_str(settings, "apiKey", where)
    key_env = _opt_str(settings, "apiKeyEnv", where)
    if not api_key and key_env:
        api_key = env.get(key_env) or None
    builtin = BUILTIN_PROVIDERS.get(name, {})
    if not api_key and builtin.get("_keyRequired") and base_url.rstrip("/") == builtin["baseUrl"]:
        raise InputError(
            f"model {ref!r}: no API key for provider {name!r}; set {where}.apiKey or the "
            f"{key_env or 'apiKeyEnv'} environment variable"
        )

    headers = settings.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise InputError(f"{where}.headers must be an object of string values; got {headers!r}")

    model_settings = _model_settings(settings.get("models"), where).get(model, {})
    mwhere = f"{where}.models.{model}"
    kwargs: dict[str, Any] = {
        "provider": name,
        "model": model,
        "base_url": base_url,
        "api_key": api_key,
        "headers": dict(headers),
        "context_window": _number(model_settings, "contextWindow", mwhere, minimum=1, integer=True),
        "max_tokens": _number(model_settings, "maxTokens", mwhere, minimum=1, integer=True),
    }
    timeout_ms = _number(settings, "timeoutMs", where, minimum=1)
    if timeout_ms is not None:
        kwargs["timeout_s"] = timeout_ms / 1000
    retries = _number(settings, "retries", where, minimum=0, maximum=10, integer=True)
    if retries is not None:
        kwargs["retries"] = retries
    backoff_ms = _number(settings, "retryBackoffMs", where, minimum=0)
    if backoff_ms is not None:
        kwargs["retry_backoff_s"] = backoff_ms / 1000
    cap_ms = _number(settings, "retryAfterCapMs", where, minimum=0)
    if cap_ms is not None:
        kwargs["retry_after_cap_s"] = cap_ms / 1000
    if api == "openai":
        field = settings.get("maxTokensField", "max_tokens")
        if field not in MAX_TOKENS_FIELDS:
            raise InputError(
                f"{where}.maxTokensField {field!r} is not supported; allowed: {', '.join(MAX_TOKENS_FIELDS)}"
            )
        kwargs["max_tokens_field"] = field
        stream_usage = settings.get("streamUsage", True)
        if not isinstance(stream_usage, bool):
            raise InputError(f"{where}.streamUsage must be true or false; got {stream_usage!r}")
        kwargs["stream_usage"] = stream_usage
    return APIS[api](**kwargs)


def create_chain(
    primary: str | None,
    fallbacks: Sequence[str] | None,
    models_config: Mapping[str, Any] | None,
    *,
    env: Mapping[str, str] | None = None,
) -> ChatModel | None:
    """The primary model followed by its fallbacks (duplicates dropped); None when no ref is given.

    One ref gives that model itself; several give a FallbackChain.
    """
    refs: list[str] = []
    for ref in [primary, *(fallbacks or [])]:
        if ref is None or (isinstance(ref, str) and not ref.strip()):
            continue
        if not isinstance(ref, str):
            raise InputError(f"a model reference must be a string '<provider>/<model>'; got {ref!r}")
        if ref.strip() not in refs:
            refs.append(ref.strip())
    if not refs:
        return None
    models = [create_chat_model(ref, models_config, env=env) for ref in refs]
    return models[0] if len(models) == 1 else FallbackChain(models)


# -- helpers ---------------------------------------------------------------------------------


def _providers(models_config: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    if models_config is None:
        models_config = {}
    if not isinstance(models_config, Mapping):
        raise InputError(f"models must be an object with a providers map; got {models_config!r}")
    configured = models_config.get("providers") or {}
    if not isinstance(configured, Mapping):
        raise InputError(f"{PREFIX} must be an object mapping provider names to settings; got {configured!r}")
    providers = {name: dict(settings) for name, settings in BUILTIN_PROVIDERS.items()}
    for name, settings in configured.items():
        if not isinstance(settings, Mapping):
            raise InputError(f"{PREFIX}.{name} must be an object (api, baseUrl, apiKey, ...); got {settings!r}")
        merged = providers.get(name, {})
        merged.update(settings)
        providers[str(name)] = merged
    return providers


def _split_ref(ref: Any, providers: dict[str, dict[str, Any]]) -> tuple[str, str]:
    if not isinstance(ref, str) or not ref.strip():
        raise InputError(f"a model reference must be a non-empty string '<provider>/<model>'; got {ref!r}")
    ref = ref.strip()
    name, sep, model = ref.partition("/")
    if sep and name in providers and model:
        return name, model
    owners = [p for p, s in providers.items() if ref in _model_ids(s.get("models"))]
    if len(owners) == 1:
        return owners[0], ref
    if sep and model:
        raise InputError(f"model {ref!r}: unknown provider {name!r}; known providers: {', '.join(sorted(providers))}")
    raise InputError(
        f"model {ref!r} must be written '<provider>/<model>'"
        + (f" (listed by several providers: {', '.join(owners)})" if owners else "")
        + f"; known providers: {', '.join(sorted(providers))}"
    )


def _model_ids(models: Any) -> set[str]:
    if isinstance(models, Mapping):
        return {str(k) for k in models}
    if isinstance(models, list):
        return {m["id"] for m in models if isinstance(m, Mapping) and isinstance(m.get("id"), str)}
    return set()


def _model_settings(models: Any, where: str) -> dict[str, Mapping[str, Any]]:
    """`models` as {id: settings}; accepts a map or an OpenClaw-style list of {id, ...}."""
    if models is None:
        return {}
    if isinstance(models, Mapping):
        out: dict[str, Mapping[str, Any]] = {}
        for key, value in models.items():
            if value is None:
                value = {}
            if not isinstance(value, Mapping):
                raise InputError(f"{where}.models.{key} must be an object (contextWindow, maxTokens); got {value!r}")
            out[str(key)] = value
        return out
    if isinstance(models, list):
        out = {}
        for index, value in enumerate(models):
            if not isinstance(value, Mapping) or not isinstance(value.get("id"), str):
                raise InputError(f"{where}.models[{index}] must be an object with a string id; got {value!r}")
            out[value["id"]] = value
        return out
    raise InputError(f"{where}.models must be an object keyed by model id (or a list of {{id, ...}}); got {models!r}")


def _opt_str(settings: Mapping[str, Any], key: str, where: str) -> str | None:
    value = settings.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}.{key} must be a string; got {type(value).__name__}")
    return value


def _number(
    settings: Mapping[str, Any],
    key: str,
    where: str,
    *,
    minimum: float,
    maximum: float | None = None,
    integer: bool = False,
) -> Any:
    value = settings.get(key)
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= minimum
    ok = ok and (maximum is None or value <= maximum) and (not integer or float(value).is_integer())
    if not ok:
        kind = "an integer" if integer else "a number"
        bounds = f">= {minimum:g}" + (f" and <= {maximum:g}" if maximum is not None else "")
        raise InputError(f"{where}.{key} must be {kind} {bounds}; got {value!r}")
    return int(value) if integer else value
