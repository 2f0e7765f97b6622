"""Chat-model types shared by every provider: results, errors, the abstract model, overflow detection."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...config.providers import DEFAULT_CONTEXT_WINDOW
from ...errors import InputError

ROLES = ("user", "assistant", "system", "tool")

# Well-known context windows (tokens) of hosted model families, matched by the longest prefix of the
# lower-cased model id (an OpenRouter-style "vendor/" prefix is ignored). Open-weight models are
# deliberately absent: a local server (Ollama, llama.cpp, vLLM, LM Studio) runs them with whatever
# context it was started with, usually far below the model's maximum, so set `contextWindow` for them.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
}


def default_context_window(model: str) -> int:
    """The table's window for `model` (longest matching prefix), else the config's DEFAULT_CONTEXT_WINDOW."""
    name = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in KNOWN_CONTEXT_WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return KNOWN_CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW


# -- results ---------------------------------------------------------------------------------


def empty_usage() -> dict[str, int | None]:
    return {"inputTokens": None, "outputTokens": None}


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for. `arguments` is the JSON text exactly as the model
    sent it: the caller parses it, so malformed arguments become a tool error, not a crash."""

    id: str
    name: str
    arguments: str = "{}"

    def to_message(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ChatResult:
    """One finished answer. `usage` values are None when the server did not report them.

    `finish_reason` is normalised: "stop" (natural end or stop sequence), "length" (hit
    max_tokens), "tool_calls" (the model asks for `tool_calls`); anything else is passed
    through as the provider reported it.
    """

    text: str
    model: str
    provider: str
    usage: dict[str, int | None] = field(default_factory=empty_usage)
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class StreamResult(Iterator[str]):
    """Iterate for text deltas; `.result` is the final ChatResult (reading it early drains the rest).

    Usable as a context manager; `close()` drops the connection when abandoning a stream early.
    """

    def __init__(self, deltas: Generator[str, None, ChatResult]):
        self._deltas = deltas
        self._result: ChatResult | None = None

    def __iter__(self) -> StreamResult:
        return self

    def __next__(self) -> str:
        if self._result is not None:
            raise StopIteration
        try:
            return next(self._deltas)
        except StopIteration as stop:
            self._result = stop.value
            raise StopIteration from None

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def result(self) -> ChatResult:
        for _ in self:
            pass
        assert self._result is not None
        return self._result

    def close(self) -> None:
        self._deltas.close()

    def __enter__(self) -> StreamResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def finished_stream(result: ChatResult) -> StreamResult:
    """A StreamResult that yields `result.text` once (if any) and ends."""

    def gen() -> Generator[str, None, ChatResult]:
        if result.text:
            yield result.text
        return result

    return StreamResult(gen())


# -- context overflow detection --------------------------------------------------------------

# The documented overflow strings (reference facts §10), plus the spellings the same providers
# use in practice (the snake_case code, OpenAI/vLLM "maximum context length", Anthropic
# "prompt is too long", llama.cpp server's exceed_context_size_error).
OVERFLOW_PATTERNS: tuple[str, ...] = (
    "request_too_large",
    "context length exceeded",
    "context_length_exceeded",
    "maximum context length",
    "input exceeds the maximum number of tokens",
    "input token count exceeds the maximum number of input tokens",
    "input is too long for the model",
    "prompt is too long",
    "ollama error: context length exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
)

_NUM = r"(\d[\d,]*)"
_OBSERVED_RES = (
    re.compile(_NUM + r"\s*tokens?\s*>\s*" + _NUM),  # Anthropic: "208310 tokens > 200000 maximum"
    re.compile(
        r"(?:resulted in|requested|you have|prompt has|input has|contains?|got)\s+" + _NUM + r"\s+(?:input\s+)?tokens?"
    ),
    re.compile(r'"n_prompt_tokens"\s*:\s*' + _NUM),  # llama.cpp server
)
_LIMIT_RES = (
    re.compile(r"maximum context length (?:is|of)\s+" + _NUM),
    re.compile(_NUM + r"\s*tokens?\s*>\s*" + _NUM),
    re.compile(r'"n_ctx"\s*:\s*' + _NUM),
    re.compile(r"(?:maximum|limit)(?: of| is)?\s+" + _NUM + r"\s+(?:input\s+)?tokens"),
)


def is_context_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(pattern in lowered for pattern in OVERFLOW_PATTERNS)


def overflow_token_counts(text: str) -> tuple[int | None, int | None]:
    """(observed prompt tokens, limit) when the error text reports them."""

    def num(value: str) -> int:
        return int(value.replace(",", ""))

    lowered = text.lower()
    observed = limit = None
    for index, regex in enumerate(_OBSERVED_RES):
        match = regex.search(lowered)
        if match:
            observed = num(match.group(1))
            if index == 0:
                limit = num(match.group(2))
            break
    if limit is None:
        for index, regex in enumerate(_LIMIT_RES):
            match = regex.search(lowered)
            if match:
                limit = num(match.group(2) if index == 1 else match.group(1))
                break
    return observed, limit


def error_detail(text: str, limit: int = 400) -> str:
    """The human part of an error body: `error.message`, `error`, `message` or `detail`, else the text."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    detail = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            message = err.get("message")
            kind = err.get("type") or err.get("code")
            if isinstance(message, str):
                detail = f"{kind}: {message}" if isinstance(kind, str) and kind not in message else message
        elif isinstance(err, str):
            detail = err
        if detail is None:
            for key in ("message", "detail"):
                if isinstance(data.get(key), str):
                    detail = data[key]
                    break
    detail = (detail if detail is not None else text).strip() or "(empty body)"
    return detail if len(detail) <= limit else detail[:limit] + "…"


# -- the model interface ---------------------------------------------------------------------


def check_messages(messages: Any) -> list[dict[str, Any]]:
    """Validate provider-neutral messages; InputError otherwise.

    `{"role": "user"|"assistant"|"system", "content": str}`; an assistant message may carry
    `tool_calls: [{"id", "name", "arguments": JSON text}]`; a tool result is
    `{"role": "tool", "tool_call_id", "name"?, "content": str, "is_error"?: bool}`.
    """
    if not isinstance(messages, list) or not messages:
        raise InputError("messages must be a non-empty list of {role, content} objects")
    clean: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InputError(f"messages[{index}] must be an object with role and content; got {message!r}")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise InputError(f"messages[{index}].role {role!r} is not supported; allowed: {', '.join(ROLES)}")
        if not isinstance(content, str):
            raise InputError(f"messages[{index}].content must be a string; got {type(content).__name__}")
        item: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and message.get("tool_calls"):
            item["tool_calls"] = [_check_call(index, call) for call in message["tool_calls"]]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InputError(f"messages[{index}] is a tool result without a tool_call_id")
            item.update(tool_call_id=call_id, name=str(message.get("name") or ""),
                        is_error=bool(message.get("is_error")))
        clean.append(item)
    return clean


def _check_call(index: int, call: Any) -> dict[str, str]:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
        raise InputError(f"messages[{index}].tool_calls entries need a string id and name; got {call!r}")
    arguments = call.get("arguments", "{}")
    return {"id": call["id"], "name": call["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)}


def check_tools(tools: Any) -> list[dict[str, Any]] | None:
    """Validate `[{"name", "description", "parameters": JSON schema}]` (None or [] = no tools)."""
    if not tools:
        return None
    if not isinstance(tools, list):
        raise InputError("tools must be a list of {name, description, parameters} objects")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or \
                not isinstance(tool.get("parameters", {}), dict):
            raise InputError(f"tools[{index}] must be an object with a string name and a parameters schema")
    return tools


def parse_arguments(text: str) -> Any:
    """A tool call's arguments as JSON (for protocols that want an object); a malformed text is
    kept under "_raw" so nothing the model sent is lost."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": text}


class ChatModel(ABC):
    """A chat model: `complete` for one answer, `stream` for text deltas then the same ChatResult.

    With `tools` (neutral function schemas) the model may answer with `ChatResult.tool_calls`."""

    provider: str
    model: str
    context_window: int = DEFAULT_CONTEXT_WINDOW  # a provider that knows its model's window sets it

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.model}"

    @abstractmethod
    def complete(
        self,
        messages: list[dict],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ChatResult: ...

    @abstractmethod
    def stream(
        self,
        messages: list[dict],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> StreamResult:
        """Send the request now (errors before the first delta raise here); iterate for deltas."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def __enter__(self) -> ChatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ref} window={self.context_window}>"
