"""Chat models (SPEC §0 "Models"): OpenAI-compatible and Anthropic providers over HTTP.

Usage::

    model = create_chain(primary, fallbacks, config.models)   # None → no model: record mode
    result = model.complete([{"role": "user", "content": "hi"}], system="Be brief.")
    result = model.complete(messages, tools=[{"name", "description", "parameters"}])
    result.tool_calls                                          # (ToolCall(id, name, arguments), ...)
    with model.stream(messages) as s:
        for delta in s: ...
        s.result                                               # ChatResult

Errors (all `ModelError`, a `ClawkeepError`; messages name "<provider>/<model>"):
`ModelTimeoutError` (no answer within the timeout; not retried), `ContextOverflowError`
(the documented overflow strings, matched case-insensitively in the error body; carries
`observed_tokens`/`limit_tokens` when reported; never retried, never falls back — compact and
ask again), `ModelResponseError` (empty, non-JSON or malformed answer). Connection failures,
HTTP 429 and 5xx are retried with exponential backoff (honouring `Retry-After`, capped); other
4xx fail at once. A stream is sent when `stream()` is called and reads up to the first delta,
so errors before any output are retried / fall back there; later errors raise while iterating.

HTTP (one client, timeouts, retries, Retry-After, size limits, SSE) is `clawkeep.models.http`,
shared with the embedding providers.

Config — the `models` section (a model is referenced as "<provider>/<model>"), typed and validated
when the config loads by `clawkeep.config.providers`, where every default below lives::

    models:
      providers:
        <name>:
          api:            "openai" | "anthropic"   (also "openai-completions", "openai-chat",
                                                    "anthropic-messages")
          baseUrl:        OpenAI-compatible: ".../v1" (a bare host gets /v1);
                          Anthropic: "https://api.anthropic.com" (/v1/messages is appended)
          apiKey:         literal key (optional: local servers need none)
          apiKeyEnv:      environment variable holding the key (used when apiKey is unset)
          headers:        extra HTTP headers {name: value}
          timeoutMs:      per-request timeout, default 60000 (for streams: longest silence)
          retries:        retries of transient failures, default 2 (0..10)
          retryBackoffMs: first backoff, doubled per retry, default 500
          retryAfterCapMs: longest Retry-After wait honoured, default 20000
          maxTokensField: "max_tokens" (default) | "max_completion_tokens" (openai api only)
          streamUsage:    send stream_options.include_usage when streaming, default true
          models:         {"<id>": {"contextWindow": 128000, "maxTokens": 4096}}
                          (or a list of {"id": ..., ...})

Built-in providers, usable without config (a configured entry of the same name overrides
keys): openai (OPENAI_API_KEY, max_completion_tokens), anthropic (ANTHROPIC_API_KEY),
openrouter (OPENROUTER_API_KEY), ollama (127.0.0.1:11434), vllm (:8000), lmstudio (:1234),
llamacpp (:8080). The hosted three need a key. `context_window` comes from the model's
`contextWindow`, else a table of well-known hosted models (`KNOWN_CONTEXT_WINDOWS`), else 32k.
"""

from ..errors import ContextOverflowError, ModelError, ModelResponseError, ModelTimeoutError
from .anthropic import AnthropicChatModel
from .base import (
    DEFAULT_CONTEXT_WINDOW,
    KNOWN_CONTEXT_WINDOWS,
    OVERFLOW_PATTERNS,
    ChatModel,
    ChatResult,
    StreamResult,
    ToolCall,
    default_context_window,
    is_context_overflow,
    overflow_token_counts,
)
from .factory import BUILTIN_PROVIDERS, create_chain, create_chat_model
from .fallback import FallbackChain
from .http import HttpChatModel
from .openai import OpenAIChatModel

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_CONTEXT_WINDOW",
    "KNOWN_CONTEXT_WINDOWS",
    "OVERFLOW_PATTERNS",
    "AnthropicChatModel",
    "ChatModel",
    "ChatResult",
    "ContextOverflowError",
    "FallbackChain",
    "HttpChatModel",
    "ModelError",
    "ModelResponseError",
    "ModelTimeoutError",
    "OpenAIChatModel",
    "StreamResult",
    "ToolCall",
    "create_chain",
    "create_chat_model",
    "default_context_window",
    "is_context_overflow",
    "overflow_token_counts",
]
