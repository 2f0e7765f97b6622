"""The OpenAI Agents SDK (openai-agents from PyPI) on clawkeep: ClawkeepSession as the SDK's Session
and clawkeep's memory tools as function tools, with an agent whose model is the scripted
OpenAI-compatible server on loopback — on an in-process Engine and through clawkeep.Client."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402
from agents.memory import Session  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from clawkeep.integrations.openai_agents import ClawkeepSession, memory_tools  # noqa: E402
from tests.helpers.scripted_server import ScriptedServer  # noqa: E402


def completion(content: str | None = None, call: tuple[str, dict] | None = None, n: int = 0) -> dict:
    message: dict = {"role": "assistant", "content": content}
    if call is not None:
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": call[0], "arguments": json.dumps(call[1])}}]
    return {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def test_an_agent_remembers_in_one_session_and_finds_it_from_another(target) -> None:
    set_tracing_disabled(True)
    store, engine = target
    with ScriptedServer() as model:
        model.add(completion(call=("memory_remember", {"text": "Ada's favourite tea is jasmine"}), n=1),
                  completion("Noted.", n=2),
                  completion(call=("memory_search", {"query": "favourite tea"}), n=3),
                  completion("Jasmine.", n=4))
        openai = AsyncOpenAI(base_url=model.url + "/v1", api_key="scripted", max_retries=0)
        agent = Agent(name="helper", instructions="Help Ada.", tools=memory_tools(store),
                      model=OpenAIChatCompletionsModel(model="scripted", openai_client=openai))
        first, second = ClawkeepSession("ada-1", store), ClawkeepSession("ada-2", store)
        assert isinstance(first, Session)

        async def run() -> tuple:
            one = await Runner.run(agent, "My favourite tea is jasmine, remember it.", session=first)
            two = await Runner.run(agent, "Which tea do I like?", session=second)
            return one, two

        one, two = asyncio.run(run())
        assert one.final_output == "Noted." and two.final_output == "Jasmine."
        assert [item.text for item in engine.memory_items()] == ["Ada's favourite tea is jasmine"]
        tool_output = [m for m in model.requests[3].json()["messages"] if m["role"] == "tool"][0]["content"]
        assert "jasmine" in json.loads(tool_output)["results"][0]["snippet"].lower()
        # the second session started empty: the first one's conversation is not in its input
        assert "favourite tea is jasmine, remember" not in json.dumps(model.requests[2].json()["messages"])

    history = engine.sessions_history(first.key)
    assert [(m.role, m.text) for m in history.messages] == [
        ("user", "My favourite tea is jasmine, remember it."), ("assistant", "Noted.")]


def test_session_protocol_items_pop_and_clear_keep_history(target) -> None:
    store, engine = target
    session = ClawkeepSession("ops-7", store)

    async def run() -> tuple:
        await session.add_items([
            {"role": "user", "content": "first question"},
            {"type": "message", "role": "assistant", "status": "completed", "id": "m1",
             "content": [{"type": "output_text", "text": "first answer", "annotations": []}]},
            {"type": "function_call", "call_id": "x", "name": "memory_search", "arguments": "{}"},
            {"role": "user", "content": [{"type": "input_text", "text": "second question"}]},
        ])
        everything = await session.get_items()
        latest = await session.get_items(limit=1)
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        return everything, latest, popped, after_pop, await session.get_items(), await session.pop_item()

    everything, latest, popped, after_pop, cleared, nothing = asyncio.run(run())
    assert everything == [{"role": "user", "content": "first question"},
                          {"role": "assistant", "content": "first answer"},
                          {"role": "user", "content": "second question"}]
    assert latest == everything[-1:] and popped == everything[-1] and after_pop == everything[:-1]
    assert cleared == [] and nothing is None
    timeline = engine.sessions_timeline(session.key)
    assert len(timeline.intervals) >= 2  # clear is a reset: the earlier intervals are kept
    assert engine.sessions_search("second question").hits  # and still searchable
