"""OpenAI-compatible chat completions: `POST {baseUrl}/chat/completions`.

Covers OpenAI, Ollama (`/v1`), vLLM, llama.cpp server, LM Studio and OpenRouter. `baseUrl`
normally ends in `/v1`; a bare `http://host:port` gets `/v1` added. The key, when set, goes in
`Authorization: Bearer`. Streaming asks for `stream_options.include_usage` so the final chunk
carries usage; servers that ignore it simply report no usage.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any
from urllib.parse import urlsplit

from ...config.providers import MAX_TOKENS_FIELDS
from ...errors import InputError
from .base import ChatResult, ToolCall, empty_usage
from .http import HttpChatModel, SseEvent, as_int, finish_reason


class OpenAIChatModel(HttpChatModel):
    api = "openai"

    def __init__(self, *, max_tokens_field: str = "max_tokens", stream_usage: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        if max_tokens_field not in MAX_TOKENS_FIELDS:
            raise InputError(
                f"provider {self.provider!r}: maxTokensField {max_tokens_field!r} is not supported; "
                f"allowed: {', '.join(MAX_TOKENS_FIELDS)}"
            )
        self.max_tokens_field = max_tokens_field
        self.stream_usage = stream_usage
        if not urlsplit(self.base_url).path:
            self.base_url += "/v1"

    def _url(self) -> str:
        return self.base_url + "/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _body(
        self,
        messages: list[dict[str, Any]],
        system: str | None,
        max_tokens: int | None,
        temperature: float | None,
        stream: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        wire = ([{"role": "system", "content": system}] if system else []) + [_wire_message(m) for m in messages]
        body: dict[str, Any] = {"model": self.model, "messages": wire, "stream": stream}
        if tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t["name"], "description": t.get("description", ""),
                "parameters": t.get("parameters") or {"type": "object", "properties": {}}}} for t in tools]
        if max_tokens is not None:
            body[self.max_tokens_field] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if stream and self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    def _usage(self, usage: Any) -> dict[str, int | None]:
        if not isinstance(usage, dict):
            return empty_usage()
        return {
            "inputTokens": as_int(usage.get("prompt_tokens")),
            "outputTokens": as_int(usage.get("completion_tokens")),
        }

    def _parse(self, data: Any) -> ChatResult:
        if not isinstance(data, dict):
            raise self.bad_response("expected a JSON object")
        if data.get("error"):
            raise self.error_from_body(None, json.dumps(data))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self.bad_response("no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise self.bad_response("choices[0].message is missing")
        text = _text(message.get("content"))
        if text is None:
            raise self.bad_response("choices[0].message.content is not text")
        calls = _CallParts()
        for position, call in enumerate(message.get("tool_calls") or []):
            calls.add(call, position)
        return ChatResult(
            text=text,
            model=data.get("model") if isinstance(data.get("model"), str) else self.model,
            provider=self.provider,
            usage=self._usage(data.get("usage")),
            finish_reason=finish_reason(choices[0].get("finish_reason")),
            tool_calls=calls.finish(),
        )

    def _deltas(self, events: Iterator[SseEvent]) -> Generator[str, None, ChatResult]:
        parts: list[str] = []
        calls = _CallParts()
        usage = empty_usage()
        finish: str | None = None
        model = self.model
        done = False
        for _event, data in events:
            if data.strip() == "[DONE]":
                done = True
                break
            chunk = self.decode(data)
            if not isinstance(chunk, dict):
                raise self.bad_response("stream chunk is not a JSON object")
            if chunk.get("error"):
                raise self.error_from_body(None, data)
            if isinstance(chunk.get("model"), str) and chunk["model"]:
                model = chunk["model"]
            if chunk.get("usage"):
                usage = self._usage(chunk["usage"])
            for choice in chunk.get("choices") or []:
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                piece = _text(delta.get("content")) if isinstance(delta, dict) else None
                if piece:
                    parts.append(piece)
                    yield piece
                for call in (delta.get("tool_calls") or []) if isinstance(delta, dict) else []:
                    calls.add(call)
                if choice.get("finish_reason"):
                    finish = finish_reason(choice["finish_reason"])
        if not done and finish is None:
            raise self.bad_response("stream ended without a finish_reason or [DONE]")
        return ChatResult(text="".join(parts), model=model, provider=self.provider, usage=usage, finish_reason=finish,
                          tool_calls=calls.finish())


def _text(content: Any) -> str | None:
    """Message content as text: a string, null (""), or a list of {"type": "text", "text"} parts.
    Provider reasoning (`reasoning_content`, `reasoning` fields, reasoning parts) is not read."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # reasoning parts (type reasoning/thinking) are never the reply
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
                       and p.get("type", "text") in _TEXT_PARTS)
    return None


_TEXT_PARTS = ("text", "output_text")


def _wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """A neutral message in the chat-completions shape (tool calls as functions, results as `tool`)."""
    if message["role"] == "tool":
        return {"role": "tool", "tool_call_id": message["tool_call_id"], "content": message["content"]}
    if message.get("tool_calls"):
        return {"role": "assistant", "content": message["content"] or None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in message["tool_calls"]]}
    return {"role": message["role"], "content": message["content"]}


class _CallParts:
    """Tool calls assembled from a whole message or from stream fragments keyed by `index`
    (the id and name arrive first, the arguments in pieces)."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}

    def add(self, call: Any, position: int | None = None) -> None:
        if not isinstance(call, dict):
            return
        index = call.get("index", position if position is not None else len(self._calls))
        slot = self._calls.setdefault(index if isinstance(index, int) else len(self._calls),
                                      {"id": "", "name": "", "arguments": ""})
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        if isinstance(call.get("id"), str) and call["id"]:
            slot["id"] = call["id"]
        if isinstance(function.get("name"), str) and function["name"] and not slot["name"]:
            slot["name"] = function["name"]  # sent once, with the first fragment (some servers repeat it)
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot["arguments"] += arguments
        elif isinstance(arguments, dict):  # some servers send an object instead of JSON text
            slot["arguments"] = json.dumps(arguments, ensure_ascii=False)

    def finish(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["arguments"] or "{}")
                     for index, slot in sorted(self._calls.items()))
