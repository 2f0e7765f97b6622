"""Build chat models from the `models` config section (keys documented in the package docstring).

The section is typed and validated by `clawkeep.config.providers` (also where the built-in
providers and every default live); this module only turns a validated provider into a model."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ...config.providers import (
    API_ALIASES,
    BUILTIN_PROVIDERS,
    KEY_REQUIRED,
    PREFIX,
    ChatModelSettings,
    ModelsConfig,
)
from ...config.providers import models_config as models_config_of
from ...errors import InputError
from .anthropic import AnthropicChatModel
from .base import ChatModel
from .fallback import FallbackChain
from .http import HttpChatModel
from .openai import OpenAIChatModel

__all__ = ["API_ALIASES", "APIS", "BUILTIN_PROVIDERS", "create_chain", "create_chat_model"]

APIS: dict[str, type[HttpChatModel]] = {"openai": OpenAIChatModel, "anthropic": AnthropicChatModel}


def create_chat_model(
    ref: str, models_config: ModelsConfig | Mapping[str, Any] | None, *, env: Mapping[str, str] | None = None
) -> ChatModel:
    """The model named by `ref` ("<provider>/<model>"); no network call is made.

    `models_config` is the typed `models` section (validated at load) or a plain dict, which is
    validated here with the same errors. A ref without "/" is accepted when exactly one provider
    lists that model id. Raises InputError for an unknown provider, a bad setting (naming the
    key, value and what is allowed) or a missing API key for a hosted provider.
    """
    env = os.environ if env is None else env
    models = models_config_of(models_config)
    name, model = models.resolve(ref)
    settings = models.provider(name)
    where = f"{PREFIX}.{name}"
    api = settings.protocol
    if api is None or settings.base_url is None:  # only a built-in without its api / baseUrl could get here
        raise InputError(f"{where}: api and baseUrl are required; allowed api values: {', '.join(API_ALIASES)}")
    api_key = settings.api_key
    if not api_key and settings.api_key_env:
        api_key = env.get(settings.api_key_env) or None
    builtin = BUILTIN_PROVIDERS.get(name, {})
    if not api_key and name in KEY_REQUIRED and settings.base_url.rstrip("/") == builtin.get("baseUrl"):
        raise InputError(
            f"model {ref!r}: no API key for provider {name!r}; set {where}.apiKey or the "
            f"{settings.api_key_env or 'apiKeyEnv'} environment variable"
        )
    model_settings = settings.models.get(model) or ChatModelSettings()
    kwargs: dict[str, Any] = {
        "provider": name,
        "model": model,
        "base_url": settings.base_url,
        "api_key": api_key,
        "headers": dict(settings.headers),
        "context_window": model_settings.context_window,
        "max_tokens": model_settings.max_tokens,
        "timeout_s": settings.timeout_ms / 1000,
        "retries": settings.retries,
        "retry_backoff_s": settings.retry_backoff_ms / 1000,
        "retry_after_cap_s": settings.retry_after_cap_ms / 1000,
    }
    if api == "openai":
        kwargs["max_tokens_field"] = settings.max_tokens_field
        kwargs["stream_usage"] = settings.stream_usage
    return APIS[api](**kwargs)


def create_chain(
    primary: str | None,
    fallbacks: Sequence[str] | None,
    models_config: ModelsConfig | Mapping[str, Any] | None,
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
    typed = models_config_of(models_config)
    models = [create_chat_model(ref, typed, env=env) for ref in refs]
    return models[0] if len(models) == 1 else FallbackChain(models)
