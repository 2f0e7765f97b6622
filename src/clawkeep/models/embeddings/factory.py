"""Build the embedding provider named by `agents.defaults.memorySearch` (see the package docstring)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ...config.model import EMBEDDING_PROVIDERS, OnnxEmbeddingConfig
from ...errors import InputError
from .base import REMOTE_PROVIDER_IDS as REMOTE_PROVIDERS
from .base import EmbeddingProvider
from .local import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, LocalEmbeddingProvider, resolve_local_model

if TYPE_CHECKING:
    from .remote import HttpEmbeddingProvider

PREFIX = "agents.defaults.memorySearch"

# `auto` tries these in order and takes the first with an API key; else the local default.
AUTO_ORDER: tuple[str, ...] = ("openai", "gemini", "voyage", "mistral")
# Environment variables holding each provider's key, checked in this order.
KEY_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "voyage": ("VOYAGE_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "ollama": ("OLLAMA_API_KEY",),  # optional; only for an Ollama behind an authenticating proxy
}
# Shorthand provider ids that mean "local" with a fixed model.
LOCAL_SHORTHANDS: dict[str, str] = {"local-e5": "multilingual-e5-small", "local-use": "use-multilingual-v3"}
PROVIDER_IDS: tuple[str, ...] = ("auto", "local", *LOCAL_SHORTHANDS, "onnx", *REMOTE_PROVIDERS)
# the config refuses any other provider at load; "none" (keyword only) never reaches this factory
assert set(EMBEDDING_PROVIDERS) == {*PROVIDER_IDS, "none"}, "config.model.EMBEDDING_PROVIDERS names these providers"


def create_embedding_provider(
    settings: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None
) -> EmbeddingProvider:
    """The provider described by the `agents.defaults.memorySearch` dict.

    `env` defaults to `os.environ` (API keys are read from it). Raises `InputError` for an
    invalid setting (naming the key, the value and what is allowed) or a missing API key,
    `EmbeddingError` when the chosen local model's package is not installed. Creating a
    provider does no network call and loads no weights.
    """
    settings = dict(settings or {})
    env = os.environ if env is None else env
    provider_id = _string(settings, "provider") or "auto"
    provider_id = provider_id.strip().lower()
    if provider_id not in PROVIDER_IDS:
        raise InputError(
            f"{PREFIX}.provider {settings.get('provider')!r} is not supported; allowed: {', '.join(PROVIDER_IDS)}"
        )
    remote = settings.get("remote") or {}
    if not isinstance(remote, Mapping):
        raise InputError(f"{PREFIX}.remote must be an object with baseUrl, apiKey, headers; got {remote!r}")
    model = _string(settings, "model")

    if provider_id == "auto":
        return _auto(settings, remote, model, env)
    if provider_id in LOCAL_SHORTHANDS:
        if model and resolve_local_model(model, DEFAULT_LOCAL_MODEL) is not LOCAL_MODELS[LOCAL_SHORTHANDS[provider_id]]:
            raise InputError(
                f"{PREFIX}.provider {provider_id!r} fixes the model to {LOCAL_SHORTHANDS[provider_id]!r}, "
                f"but {PREFIX}.model is {model!r}; use provider 'local' with that model, or drop model"
            )
        return _local(settings, LOCAL_SHORTHANDS[provider_id])
    if provider_id == "local":
        return _local(settings, model)
    if provider_id == "onnx":
        return _onnx(settings)
    return _remote(provider_id, settings, remote, model, env)


def _auto(settings: dict[str, Any], remote: Mapping[str, Any], model: str | None, env: Mapping[str, str]):
    if model:
        if resolve_local_model(model, DEFAULT_LOCAL_MODEL) is not None:
            provider = _local(settings, model)
            provider.selected_by = "auto: model names a bundled local model"
            return provider
        raise InputError(
            f"{PREFIX}.model {model!r} is set but {PREFIX}.provider is 'auto'; a remote model name only means "
            f"something for one provider, so set provider to one of {', '.join(REMOTE_PROVIDERS)} "
            f"(local models: {', '.join(LOCAL_MODELS)})"
        )
    for key in ("apiKey", "baseUrl"):
        if remote.get(key):
            raise InputError(
                f"{PREFIX}.remote.{key} is set but {PREFIX}.provider is 'auto'; name the provider it belongs to "
                f"({', '.join(REMOTE_PROVIDERS)})"
            )
    for provider_id in AUTO_ORDER:
        found = _env_key(provider_id, env)
        if found:
            name, _ = found
            provider = _remote(provider_id, settings, remote, None, env)
            provider.selected_by = f"auto: {name}"
            return provider
    provider = _local(settings, None)
    provider.selected_by = (
        "auto: no remote API key ("
        + ", ".join(name for pid in AUTO_ORDER for name in KEY_ENV[pid])
        + "), bundled local model"
    )
    return provider


def _env_key(provider_id: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    for name in KEY_ENV.get(provider_id, ()):
        value = (env.get(name) or "").strip()
        if value:
            return name, value
    return None


def _local(settings: dict[str, Any], model: str | None) -> LocalEmbeddingProvider:
    local = settings.get("local") or {}
    if not isinstance(local, Mapping):
        raise InputError(f"{PREFIX}.local must be an object, got {local!r}")
    if model is None:
        model = _string(local, "model", f"{PREFIX}.local.model")
    spec = resolve_local_model(model, DEFAULT_LOCAL_MODEL)
    if spec is None:
        aliases = "; ".join(f"{s.name} (or {', '.join(s.aliases[:3])})" for s in LOCAL_MODELS.values())
        raise InputError(f"{PREFIX}.model {model!r} is not a bundled local model; allowed: {aliases}")
    return LocalEmbeddingProvider(
        spec,
        batch_size=_int(settings, "batchSize", minimum=1),
        timeout_s=_timeout_s(settings) or 300.0,
        threads=_int(local, "threads", minimum=1, key_path=f"{PREFIX}.local.threads"),
    )


def _onnx(settings: dict[str, Any]) -> EmbeddingProvider:
    raw = settings.get("onnx") or {}
    try:
        onnx_settings = OnnxEmbeddingConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"{PREFIX}.onnx is not valid ({problems}); see docs/configuration.md") from None
    from .onnx import OnnxEmbeddingProvider  # deferred: provider onnx only (the extra clawkeep[onnx])

    return OnnxEmbeddingProvider(onnx_settings, batch_size=_int(settings, "batchSize", minimum=1),
                                 timeout_s=_timeout_s(settings) or 300.0)


def remote_module() -> Any:
    """The remote providers' module, imported when one is made or named (the package's attributes)."""
    from . import remote  # deferred: httpx, for a remote provider only

    return remote


def _remote(
    provider_id: str,
    settings: dict[str, Any],
    remote: Mapping[str, Any],
    model: str | None,
    env: Mapping[str, str],
) -> HttpEmbeddingProvider:
    cls = remote_module().REMOTE_PROVIDERS[provider_id]
    base_url = _string(remote, "baseUrl", f"{PREFIX}.remote.baseUrl")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise InputError(f"{PREFIX}.remote.baseUrl must start with http:// or https://, got {base_url!r}")
    api_key = _string(remote, "apiKey", f"{PREFIX}.remote.apiKey")
    if not api_key:
        found = _env_key(provider_id, env)
        api_key = found[1] if found else None
    custom_endpoint = bool(base_url) and base_url.rstrip("/") != cls.default_base_url.rstrip("/")
    if cls.needs_key and not api_key and not custom_endpoint:
        names = " or ".join(KEY_ENV.get(provider_id, ()))
        raise InputError(
            f"{PREFIX}.provider is {provider_id!r} but no API key was found: set {PREFIX}.remote.apiKey or {names}"
        )
    headers = remote.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise InputError(f"{PREFIX}.remote.headers must map header names to string values, got {headers!r}")
    dimensions = _int(settings, "dimensions", minimum=1)
    if dimensions is None:
        dimensions = _int(settings, "outputDimensionality", minimum=1)
    kwargs: dict[str, Any] = {
        "model": model,
        "base_url": base_url,
        "api_key": api_key,
        "headers": dict(headers),
        "dimensions": dimensions,
        "batch_size": _int(settings, "batchSize", minimum=1),
        "timeout_s": _timeout_s(settings),
        "max_retries": _int(settings, "maxRetries", minimum=0, maximum=10) if "maxRetries" in settings else 2,
        "query_prefix": _raw_string(settings, "queryPrefix"),
        "document_prefix": _raw_string(settings, "documentPrefix"),
    }
    query_type = _string(settings, "queryInputType")
    document_type = _string(settings, "documentInputType")
    if provider_id == "openai":
        kwargs.update(query_input_type=query_type, document_input_type=document_type)
    elif query_type or document_type:
        raise InputError(
            f"{PREFIX}.queryInputType/documentInputType apply to provider 'openai' (OpenAI-compatible servers); "
            f"{provider_id!r} sets its own query/document convention"
        )
    return cls(**kwargs)


def _timeout_s(settings: Mapping[str, Any]) -> float | None:
    if settings.get("timeoutMs") is not None:
        return _positive(settings["timeoutMs"], f"{PREFIX}.timeoutMs") / 1000.0
    sync = settings.get("sync")
    if isinstance(sync, Mapping) and sync.get("embeddingBatchTimeoutSeconds") is not None:
        return _positive(sync["embeddingBatchTimeoutSeconds"], f"{PREFIX}.sync.embeddingBatchTimeoutSeconds")
    return None


def _positive(value: Any, key_path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{key_path} must be a positive number, got {value!r}")
    return float(value)


def _int(
    settings: Mapping[str, Any], key: str, *, minimum: int, maximum: int | None = None, key_path: str | None = None
) -> int | None:
    value = settings.get(key)
    if value is None:
        return None
    key_path = key_path or f"{PREFIX}.{key}"
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (maximum and value > maximum):
        allowed = f"an integer ≥ {minimum}" + (f" and ≤ {maximum}" if maximum else "")
        raise InputError(f"{key_path} must be {allowed}, got {value!r}")
    return value


def _string(settings: Mapping[str, Any], key: str, key_path: str | None = None) -> str | None:
    value = settings.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{key_path or PREFIX + '.' + key} must be a string, got {value!r}")
    return value.strip() or None


def _raw_string(settings: Mapping[str, Any], key: str) -> str:
    """A string kept exactly as written (prefixes such as "search_query: " end in a space)."""
    value = settings.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{PREFIX}.{key} must be a string, got {value!r}")
    return value
