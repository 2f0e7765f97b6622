"""Anthropic Messages API: `POST {baseUrl}/v1/messages` (baseUrl default `https://api.anthropic.com`).

Headers `x-api-key` and `anthropic-version: 2023-06-01`. The system prompt is the top-level
`system` field (system-role messages are folded into it, in order); `max_tokens` is required
and defaults to 1024. Usage counts cache reads/writes as input tokens, since they occupy the
context window.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

from ...errors import InputError
from .base import ChatResult, ToolCall, empty_usage, parse_arguments
from .http import HttpChatModel, SseEvent, as_int, finish_reason

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


class AnthropicChatModel(HttpChatModel):
    api = "anthropic"

    def _url(self) -> str:
        return self.base_url + ("/messages" if self.base_url.endswith("/v1") else "/v1/messages")

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION, "Accept": "application/json, text/event-stream"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
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
        systems = ([system] if system else []) + [m["content"] for m in messages if m["role"] == "system"]
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
            "messages": _wire_messages([m for m in messages if m["role"] != "system"]),
        }
        if tools:
            body["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                              "input_schema": t.get("parameters") or {"type": "object", "properties": {}}}
                             for t in tools]
        if not body["messages"]:
            raise InputError(f"{self.ref}: the Messages API needs at least one user or assistant message")
        if systems:
            body["system"] = "\n\n".join(systems)
        if temperature is not None:
            body["temperature"] = temperature
        if stream:
            body["stream"] = True
        return body

    def _usage(self, usage: Any, into: dict[str, int | None] | None = None) -> dict[str, int | None]:
        result = into if into is not None else empty_usage()
        if not isinstance(usage, dict):
            return result
        inputs = [
            as_int(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if inputs[0] is not None:
            result["inputTokens"] = sum(n for n in inputs if n is not None)
        if as_int(usage.get("output_tokens")) is not None:
            result["outputTokens"] = as_int(usage.get("output_tokens"))
        return result

    def _parse(self, data: Any) -> ChatResult:
        if not isinstance(data, dict):
            raise self.bad_response("expected a JSON object")
        if data.get("type") == "error" or data.get("error"):
            raise self.error_from_body(None, json.dumps(data))
        content = data.get("content")
        if not isinstance(content, list):
            raise self.bad_response("content is not a list of blocks")
        text = "".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
        calls = tuple(
            ToolCall(id=str(block.get("id") or f"toolu_{n}"), name=str(block.get("name") or ""),
                     arguments=json.dumps(block.get("input") or {}, ensure_ascii=False))
            for n, block in enumerate(content) if isinstance(block, dict) and block.get("type") == "tool_use")
        return ChatResult(
            text=text,
            model=data.get("model") if isinstance(data.get("model"), str) else self.model,
            provider=self.provider,
            usage=self._usage(data.get("usage")),
            finish_reason=finish_reason(data.get("stop_reason")),
            tool_calls=calls,
        )

    def _deltas(self, events: Iterator[SseEvent]) -> Generator[str, None, ChatResult]:
        parts: list[str] = []
        calls: dict[int, dict[str, str]] = {}  # content-block index → tool_use id, name, JSON so far
        usage = empty_usage()
        finish: str | None = None
        model = self.model
        stopped = False
        for event, data in events:
            obj = self.decode(data)
            if not isinstance(obj, dict):
                raise self.bad_response(f"stream event {event!r} is not a JSON object")
            kind = obj.get("type") or event
            if kind == "message_start":
                message = obj.get("message") or {}
                if isinstance(message, dict):
                    if isinstance(message.get("model"), str) and message["model"]:
                        model = message["model"]
                    self._usage(message.get("usage"), usage)
            elif kind == "content_block_start":
                block = obj.get("content_block") or {}
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[obj.get("index", len(calls))] = {"id": str(block.get("id") or ""),
                                                           "name": str(block.get("name") or ""), "json": ""}
            elif kind == "content_block_delta":
                delta = obj.get("delta") or {}
                if isinstance(delta, dict) and delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                    if delta["text"]:
                        parts.append(delta["text"])
                        yield delta["text"]
                elif isinstance(delta, dict) and delta.get("type") == "input_json_delta":
                    slot = calls.get(obj.get("index", -1))
                    if slot is not None and isinstance(delta.get("partial_json"), str):
                        slot["json"] += delta["partial_json"]
            elif kind == "message_delta":
                delta = obj.get("delta") or {}
                if isinstance(delta, dict) and delta.get("stop_reason"):
                    finish = finish_reason(delta["stop_reason"])
                self._usage(obj.get("usage"), usage)
            elif kind == "message_stop":
                stopped = True
                break
            elif kind == "error":
                err = obj.get("error")
                kind_name = err.get("type") if isinstance(err, dict) else None
                raise self.error_from_body(None, data, retryable=kind_name in RETRYABLE_ERROR_TYPES)
        if not stopped:
            raise self.bad_response("stream ended before message_stop")
        tool_calls = tuple(ToolCall(id=c["id"] or f"toolu_{i}", name=c["name"], arguments=c["json"] or "{}")
                           for i, c in sorted(calls.items()))
        return ChatResult(text="".join(parts), model=model, provider=self.provider, usage=usage, finish_reason=finish,
                          tool_calls=tool_calls)


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral messages as Messages-API turns: tool calls become `tool_use` blocks of the
    assistant turn, results `tool_result` blocks of the next user turn (consecutive user-side
    messages are merged, since the API expects the roles to alternate)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "user" if message["role"] == "tool" else message["role"]
        if message["role"] == "tool":
            blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": message["tool_call_id"],
                                             "content": message["content"], "is_error": message.get("is_error", False)}]
        elif message.get("tool_calls"):
            blocks = ([{"type": "text", "text": message["content"]}] if message["content"] else []) + [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": parse_arguments(c["arguments"])}
                for c in message["tool_calls"]]
        else:
            blocks = [{"type": "text", "text": message["content"]}]
        if wire and wire[-1]["role"] == role and (role == "user" or message.get("tool_calls")):
            previous = wire[-1]["content"]
            wire[-1]["content"] = (previous if isinstance(previous, list) else
                                   [{"type": "text", "text": previous}]) + blocks
        elif len(blocks) == 1 and blocks[0]["type"] == "text":
            wire.append({"role": role, "content": blocks[0]["text"]})  # plain text stays a plain string
        else:
            wire.append({"role": role, "content": blocks})
    return wire
