"""The OpenAI Agents SDK on clawkeep: a `Session` kept as a clawkeep transcript, and clawkeep's
memory tools as SDK function tools. `pip install 'clawkeep[openai-agents]'`.

    from agents import Agent, Runner
    from clawkeep.integrations.openai_agents import ClawkeepSession, memory_tools

    ck = clawkeep.Client("http://127.0.0.1:8787", token="…")      # or clawkeep.Engine.open()
    agent = Agent(name="helper", tools=memory_tools(ck))
    await Runner.run(agent, "hi", session=ClawkeepSession("user-42", ck))

The SDK's session id names the clawkeep session `agent:<agent>:agents-sdk:<id>` (a full
`agent:…` key is used as given), so the conversation is an ordinary clawkeep session: readable
history, search, memory capture, the Control UI. Stored are the conversation's text messages
(user and assistant); the SDK's tool calls, tool outputs and reasoning items are not kept (the
model gets the conversation text back; a past call and its output are left out together).
`clear_session` is a clawkeep reset: a new interval, the old one kept; `pop_item` likewise keeps
everything (it resets and records the remaining items again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import FunctionTool, RunContextWrapper

from ..api.operations import OPERATIONS, result_json
from . import _target

KEY_PREFIX = "agents-sdk"
MEMORY_TOOLS = ("memory_search", "memory_get", "memory_remember")


def session_key(session_id: str, agent: str = "main") -> str:
    """The clawkeep session key of an SDK session id."""
    return session_id if session_id.startswith("agent:") else f"agent:{agent}:{KEY_PREFIX}:{session_id}"


class ClawkeepSession:
    """The SDK's `Session` protocol on a clawkeep session (Engine, Client or AsyncClient)."""

    session_settings = None

    def __init__(self, session_id: str, engine_or_client: Any, *, agent: str = "main"):
        self.session_id = session_id
        self.target = engine_or_client
        self.key = session_key(session_id, agent)
        self._opened = False

    async def _open(self) -> None:
        if not self._opened:
            await _target.call(self.target, "sessions_create", key=self.key)
            self._opened = True

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        await self._open()
        history = await _target.call(self.target, "sessions_history", self.key)
        items = [{"role": m.role, "content": m.text} for m in history.messages if m.role in ("user", "assistant")]
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        await self._open()
        for item in items:
            role, text = message_text(item)
            if role is not None and text:
                await _target.call(self.target, "message", text, session=self.key, role=role, record_only=True)

    async def pop_item(self) -> dict[str, Any] | None:
        items = await self.get_items()
        if not items:
            return None
        await self.clear_session()
        await self.add_items(items[:-1])
        return items[-1]

    async def clear_session(self) -> None:
        await self._open()
        await _target.call(self.target, "sessions_reset", self.key)


def message_text(item: Any) -> tuple[str | None, str]:
    """(role, text) of a user or assistant message item; (None, "") for anything else."""
    if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
        return None, ""
    if item.get("type", "message") != "message":
        return None, ""
    content = item.get("content")
    if isinstance(content, str):
        return item["role"], content
    parts = [part.get("text", "") for part in content or [] if isinstance(part, dict)
             and part.get("type") in ("input_text", "output_text", "text")]
    return item["role"], "".join(parts)


def memory_tools(engine_or_client: Any, *, caller: str | None = None,
                 names: Sequence[str] = MEMORY_TOOLS) -> list[FunctionTool]:
    """clawkeep's memory tools (any of the agent tools: `api.AGENT_TOOLS`) as SDK function tools,
    with the same schemas the reply model gets; run as `caller` (None: the operator)."""
    return [_tool(OPERATIONS[name], engine_or_client, caller) for name in names]


def _tool(op: Any, target: Any, caller: str | None) -> FunctionTool:
    async def invoke(_: RunContextWrapper[Any], arguments: str) -> str:
        try:
            parsed = json.loads(arguments or "{}")
            result = await _target.run_op(target, op.name, parsed, caller)
        except Exception as exc:  # noqa: BLE001 - the model reads the error and may correct its call
            return json.dumps({"error": {"message": str(exc), "type": type(exc).__name__}})
        return json.dumps(result_json(result), ensure_ascii=False)

    schema = op.tool_schema()
    return FunctionTool(name=op.name, description=schema["description"], params_json_schema=schema["parameters"],
                        on_invoke_tool=invoke, strict_json_schema=False)
