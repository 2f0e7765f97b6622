"""The `models` section: chat model providers (SPEC §0 "Models"), typed and validated at load.

A model is referenced as "<provider>/<model>" (`agents.defaults.model.primary`, `fallbacks`,
`compaction.model`, `compaction.memoryFlush.model`, Active Memory's `model`/`modelFallback`).
Every reference and every provider setting is checked when the config loads, so a bad `api`, a
`baseUrl` that is not an http(s) URL or a negative `contextWindow` is a load error naming the
key, the value and what is allowed — never a failure on the first turn. Only the API key is
looked up when a model is built (it usually comes from the environment).

This module owns every default of a provider: the built-in providers (usable without config;
a configured entry of the same name overrides their keys), the per-request timeout, retries,
backoffs, and the context window a model gets when neither its config nor the table of
well-known models (`models.chat.base.KNOWN_CONTEXT_WINDOWS`) names one.
"""

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator, model_validator

from .. import validation
from ..errors import InputError
from .base import _describe_error, _Model

PREFIX = "models.providers"
# OpenClaw-style spellings accepted for `api`, and the wire protocol each one means.
API_ALIASES: dict[str, str] = {
    "openai": "openai",
    "openai-completions": "openai",
    "openai-chat": "openai",
    "anthropic": "anthropic",
    "anthropic-messages": "anthropic",
}
ChatApi = Literal["openai", "openai-completions", "openai-chat", "anthropic", "anthropic-messages"]
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")

# The context window (tokens) of a chat model whose window is neither configured (`contextWindow`)
# nor in the table of well-known hosted models: local servers usually run far below a model's
# maximum, so the guess is small.
DEFAULT_CONTEXT_WINDOW = 32_000
# The window the turn budgets with when no chat model is configured (record mode): the caller's own
# model answers, so flush and compaction assume a window of today's common hosted models.
RECORD_MODE_CONTEXT_WINDOW = 128_000
MAX_CONTEXT_WINDOW = 100_000_000

# Providers usable without configuration; a configured entry of the same name overrides keys.
BUILTIN_PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {
        "api": "openai",
        "baseUrl": "https://api.openai.com/v1",
        "apiKeyEnv": "OPENAI_API_KEY",
        "maxTokensField": "max_completion_tokens",
    },
    "anthropic": {"api": "anthropic", "baseUrl": "https://api.anthropic.com", "apiKeyEnv": "ANTHROPIC_API_KEY"},
    "openrouter": {"api": "openai", "baseUrl": "https://openrouter.ai/api/v1", "apiKeyEnv": "OPENROUTER_API_KEY"},
    "ollama": {"api": "openai", "baseUrl": "http://127.0.0.1:11434/v1", "apiKeyEnv": "OLLAMA_API_KEY"},
    "vllm": {"api": "openai", "baseUrl": "http://127.0.0.1:8000/v1", "apiKeyEnv": "VLLM_API_KEY"},
    "lmstudio": {"api": "openai", "baseUrl": "http://127.0.0.1:1234/v1"},
    "llamacpp": {"api": "openai", "baseUrl": "http://127.0.0.1:8080/v1"},
}
# Hosted built-ins: building one of their models fails without a key while the baseUrl is the built-in one.
KEY_REQUIRED = frozenset({"openai", "anthropic", "openrouter"})


class ChatModelSettings(_Model):
    """`models.providers.<name>.models.<id>` (or one `{id, ...}` entry of the list form)."""

    id: str | None = None
    context_window: int | None = Field(None, alias="contextWindow", ge=1, le=MAX_CONTEXT_WINDOW)
    max_tokens: int | None = Field(None, alias="maxTokens", ge=1, le=MAX_CONTEXT_WINDOW)


def _blank_is_unset(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


class ProviderConfig(_Model):
    """`models.providers.<name>`: one chat model provider."""

    api: ChatApi | None = None  # required unless the name is a built-in provider
    base_url: str | None = Field(None, alias="baseUrl")  # required unless built-in
    api_key: str | None = Field(None, alias="apiKey")
    api_key_env: str | None = Field(None, alias="apiKeyEnv")  # used when apiKey is unset
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_ms: float = Field(60_000, alias="timeoutMs", ge=1, le=3_600_000)  # streams: longest silence
    retries: int = Field(2, ge=0, le=10)
    retry_backoff_ms: float = Field(500, alias="retryBackoffMs", ge=0, le=600_000)
    retry_after_cap_ms: float = Field(20_000, alias="retryAfterCapMs", ge=0, le=3_600_000)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field("max_tokens", alias="maxTokensField")
    stream_usage: bool = Field(True, alias="streamUsage")
    models: dict[str, ChatModelSettings] = Field(default_factory=dict)

    @field_validator("api", mode="before")
    @classmethod
    def _api_spelling(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("base_url", mode="before")
    @classmethod
    def _http_url(cls, value: Any) -> Any:
        value = _blank_is_unset(value)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("not a URL; give an http:// or https:// URL such as http://127.0.0.1:11434/v1")
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("not an http:// or https:// URL; give one such as http://127.0.0.1:11434/v1")
        return value.strip()

    @field_validator("api_key", "api_key_env", mode="before")
    @classmethod
    def _optional_text(cls, value: Any) -> Any:
        return _blank_is_unset(value)

    @field_validator("models", mode="before")
    @classmethod
    def _model_map(cls, value: Any) -> Any:
        """A map {id: settings}, or OpenClaw's list of {id, ...}; a null entry means no settings."""
        if value is None:
            return {}
        if isinstance(value, list):
            out: dict[str, Any] = {}
            for index, entry in enumerate(value):
                if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str) or not entry["id"]:
                    raise ValueError(f"entry {index} ({validation.shown(entry)}) is not an object with a string "
                                     "id; give {id: \"<model>\", contextWindow: ..., maxTokens: ...}")
                out[entry["id"]] = entry
            return out
        if isinstance(value, Mapping):
            return {key: {} if entry is None else entry for key, entry in value.items()}
        return value

    @property
    def protocol(self) -> str | None:
        """The wire protocol: "openai" or "anthropic"."""
        return API_ALIASES.get(self.api) if self.api else None


def merged_provider(name: str, configured: ProviderConfig | None) -> ProviderConfig:
    """A built-in provider's settings under the keys its configured entry sets (or the entry alone)."""
    builtin = BUILTIN_PROVIDERS.get(name)
    if builtin is None:
        return configured or ProviderConfig()
    if configured is None:
        return ProviderConfig.model_validate(builtin)
    return ProviderConfig.model_validate({**builtin, **configured.model_dump(by_alias=True, exclude_unset=True)})


class ModelsConfig(_Model):
    """The `models` section: `providers` maps a provider name to its settings."""

    providers: dict[str, ProviderConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete_providers(self) -> "ModelsConfig":
        """A provider that is not built in needs its `api` and `baseUrl`."""
        for name, settings in self.providers.items():
            merged = merged_provider(name, settings)
            if merged.api is None:
                raise InputError(f"{PREFIX}.{name}.api is required for a provider that is not built in; allowed "
                                 f"values: {', '.join(API_ALIASES)}")
            if merged.base_url is None:
                raise InputError(f"{PREFIX}.{name}.baseUrl is required for a provider that is not built in; give "
                                 "an http:// or https:// URL such as http://127.0.0.1:11434/v1")
        return self

    def names(self) -> list[str]:
        return sorted({*BUILTIN_PROVIDERS, *self.providers})

    def provider(self, name: str) -> ProviderConfig:
        """The settings of a known provider, built-in defaults included."""
        return merged_provider(name, self.providers.get(name))

    def _lists(self, name: str, model_id: str) -> bool:
        settings = self.providers.get(name)
        return settings is not None and model_id in settings.models

    def resolve(self, ref: Any) -> tuple[str, str]:
        """(provider, model id) of a reference; InputError naming the known providers otherwise.

        "<provider>/<model>" names a known provider's model; a bare id (or one with "/" whose head
        is not a provider, as OpenRouter ids are) is accepted when exactly one provider lists it.
        """
        if not isinstance(ref, str) or not ref.strip():
            raise InputError(f"a model reference must be a non-empty string '<provider>/<model>'; got {ref!r}")
        ref = ref.strip()
        known = self.names()
        name, sep, model = ref.partition("/")
        if sep and model and name in known:
            return name, model
        owners = [p for p in known if self._lists(p, ref)]
        if len(owners) == 1:
            return owners[0], ref
        if sep and model:
            raise InputError(f"model {ref!r}: unknown provider {name!r}; known providers: {', '.join(known)}")
        raise InputError(
            f"model {ref!r} must be written '<provider>/<model>'"
            + (f" (listed by several providers: {', '.join(owners)})" if owners else "")
            + f"; known providers: {', '.join(known)}"
        )


def models_config(value: ModelsConfig | Mapping[str, Any] | None) -> ModelsConfig:
    """The typed `models` section from a typed one, a plain dict (as in the file) or None.

    A dict is validated here with the same errors as at load ("models.providers.x.api = ...")."""
    if isinstance(value, ModelsConfig):
        return value
    if value is None:
        return ModelsConfig()
    if not isinstance(value, Mapping):
        raise InputError(f"models = {validation.shown(value)} is not allowed; give an object with a providers map")
    try:
        return ModelsConfig.model_validate(dict(value))
    except ValidationError as exc:
        problems = "; ".join(_describe_error({**err, "loc": ("models", *err["loc"])}) for err in exc.errors())
        raise InputError(f"invalid configuration: {problems}") from None
