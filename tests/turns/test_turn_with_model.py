"""The full turn with a scripted model over real HTTP (OpenAI-compatible protocol)."""

import os
import subprocess
import sys
import time

import pytest

from tests.helpers.engine import open_engine
from tests.helpers.gateway_process import write_config
from tests.helpers.scripted_server import Reply, ScriptedServer


def completion(text, prompt_tokens=50, completion_tokens=10):
    return Reply(json={"id": "x", "object": "chat.completion", "model": "scripted-1",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}})


def overflow():
    return Reply(status=400, json={"error": {"message": "This model's maximum context length is 8192 tokens. "
                                             "However, you requested 9000 tokens", "code": "context_length_exceeded"}})


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def model_config(server, *, timeout_ms=5000, retries=0, **extra):
    return {
        "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": timeout_ms,
                                           "retries": retries, "models": {"scripted-1": {"contextWindow": 8192}}}}},
        "agents": {"defaults": {"model": {"primary": "local/scripted-1"},
                                "memorySearch": {"provider": "none"}, **extra}},
    }


def test_full_turn_injects_recall_before_the_user_message_and_stores_the_reply(home, server):
    server.add(completion("Noted: Shanghai next Tuesday."),
                  completion("The user said they go to 上海 next Tuesday."),  # lane 2: the recall sub-agent
                  completion("You go to Shanghai next Tuesday."))
    eng = open_engine(home, model_config(server))
    first = eng.message("下周二我去上海", channel="telegram", sender="alice")
    assert first.reply == "Noted: Shanghai next Tuesday." and first.mode is None
    thread = eng.sessions_create()
    result = eng.message("我下周有什么安排", session=thread["key"])
    assert result.reply == "You go to Shanghai next Tuesday."
    assert result.active_memory == {**result.active_memory, "status": "ok", "lane": 2,
                                    "summary": "The user said they go to 上海 next Tuesday."}
    recall_prompt = server.requests[1].json()["messages"][-1]["content"]
    assert "下周二我去上海" in recall_prompt  # the sub-agent saw what the memory tools found
    sent = server.requests[-1].json()["messages"]
    user = sent[-1]
    assert user["role"] == "user"
    assert user["content"].index("<active_memory_plugin>") < user["content"].index("我下周有什么安排")
    assert "Untrusted context" in user["content"] and "上海" in user["content"].split("</active_memory_plugin>")[0]
    assert all(m["role"] != "system" or "active_memory_plugin" not in m["content"] for m in sent)
    assert sum("我下周有什么安排" in m["content"] for m in sent) == 1
    history = eng.sessions_history(thread["key"])["messages"]
    assert [(m["role"], m["text"]) for m in history] == [
        ("user", "我下周有什么安排"), ("assistant", "You go to Shanghai next Tuesday.")]
    assert "active_memory_plugin" not in history[0]["text"]  # the transcript keeps the user's own words
    status = eng.session_status(thread["key"])
    assert status["usage"]["inputTokens"] == 50 and status["model"] == "local/scripted-1"


def test_bootstrap_and_history_reach_the_model(home, server):
    server.add(completion("a1"), completion("a2"))
    eng = open_engine(home, model_config(server))
    eng.memory_remember("I prefer TypeScript")
    eng.message("first question")
    eng.message("second question")
    first, second = server.requests[0].json()["messages"], server.requests[1].json()["messages"]
    assert first[0]["role"] == "system" and "I prefer TypeScript" in first[0]["content"]
    assert [m["content"] for m in second if m["role"] != "system"] == ["first question", "a1", "second question"]


def test_overflow_compacts_then_retries_once(home, server):
    server.add(completion("ok 1"), completion("ok 2"), completion("ok 3"), overflow(),
               completion("NO_REPLY"),  # the cycle's memory flush runs before the compaction
               completion("summary of earlier turns"), completion("answer after compaction"))
    eng = open_engine(home, model_config(server, compaction={"keepRecentTokens": 50}))
    for i in range(3):
        eng.message(f"turn {i} " + "words " * 100)
    result = eng.message("the question that overflows")
    assert result.reply == "answer after compaction"
    assert result.compaction["compacted"] and result.compaction["reason"] == "overflow"
    assert result.compaction["summarizer"] == "model"
    latest = eng.sessions_timeline(result.session_key).intervals[-1].compactions[-1]
    assert latest.summary.startswith("summary of earlier turns")


def test_overflow_forever_is_an_error_and_nothing_is_lost(home, server):
    server.add(completion("ok"), overflow(),
               completion("NO_REPLY"),  # the cycle's memory flush runs before the compaction
               completion("summary"), overflow())
    eng = open_engine(home, model_config(server, compaction={"keepRecentTokens": 10}))
    eng.message("first " + "x " * 50)
    from clawkeep.models.chat import ContextOverflowError
    with pytest.raises(ContextOverflowError):
        eng.message("second")
    texts = [m["text"] for m in eng.sessions_history("agent:main:main")["messages"]]
    assert texts[-1] == "second"  # the user message was stored before the model failed


def test_garbage_and_hanging_models_raise_clear_errors(home, server):
    from clawkeep.models.chat import ModelResponseError, ModelTimeoutError
    server.add(Reply(body="this is not json", headers={"Content-Type": "application/json"}), Reply(hang=True))
    eng = open_engine(home, model_config(server, timeout_ms=300))
    with pytest.raises(ModelResponseError, match="local/scripted-1"):
        eng.message("hello")
    with pytest.raises(ModelTimeoutError):
        eng.message("hello again")
    assert len(eng.sessions_history("agent:main:main")["messages"]) == 2


def test_recall_circuit_breaker_opens_after_three_timeouts(home, server):
    config = model_config(server, timeout_ms=60_000)
    config["plugins"] = {"entries": {"active-memory": {"config": {"timeoutMs": 300}}}}
    server.add(*[Reply(hang=True) for _ in range(3)])
    eng = open_engine(home, config)
    thread = eng.sessions_create()
    statuses = [eng.recall("what did we decide last time?", session=thread["key"])["status"] for _ in range(3)]
    assert statuses == ["timeout", "timeout", "timeout"]
    opened = eng.recall("what did we decide last time?", session=thread["key"])
    assert opened["status"] == "skipped" and "circuit" in opened["reason"]
    assert len(server.requests) == 3  # the open circuit sent nothing


def test_model_lane_two_returns_one_line_or_none(home, server):
    config = model_config(server)
    server.add(completion("The user plans a trip to Shanghai next Tuesday.\nSecond line ignored"),
                  completion("NONE"))
    eng = open_engine(home, config)
    eng.memory_remember("下周二我去上海出差")
    thread = eng.sessions_create()
    hit = eng.recall("我下周有什么安排", session=thread["key"])
    assert hit["status"] == "ok"
    assert hit["summary"] == "The user plans a trip to Shanghai next Tuesday. Second line ignored"
    prompt = server.requests[0].json()["messages"]
    assert "上海" in prompt[-1]["content"] and "NONE" in prompt[0]["content"]
    assert eng.recall("我下周有什么安排", session=thread["key"])["status"] == "none"


def test_llm_slug_names_the_session_memory_file(home, server):
    config = model_config(server)
    config["hooks"] = {"internal": {"entries": {"session-memory": {"llmSlug": True}}}}
    server.add(completion("Sure, blue."), completion("Logo Colours!"))
    eng = open_engine(home, config)
    eng.message("we picked the blue logo", at="2026-03-01T10:00:00Z")
    eng.message("/reset", at="2026-03-01T10:05:00Z")
    names = sorted(p.name for p in (home / "workspace" / "memory").glob("*.md"))
    assert names == ["2026-03-01-logo-colours.md"]


def test_pluggable_compaction_provider_and_notice(home, server):
    from clawkeep.errors import ClawkeepError

    class Broken:
        name = "team-summarizer"

        def summarize(self, messages, **kwargs):
            raise ClawkeepError("down")

    class Good:
        name = "house-style"

        def summarize(self, messages, **kwargs):
            return f"{len(messages)} messages about invoices"

    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"},
                                                     "compaction": {"keepRecentTokens": 10, "notifyUser": True}}}})
    eng.register_compaction_provider(Broken())
    eng.register_compaction_provider(Good())
    for i in range(4):
        eng.message(f"invoice INV-{i} " + "w " * 100)
    result = eng.message("/compact")
    assert result.status["summarizer"] == "house-style" and result.status["errors"] == ["team-summarizer: down"]
    assert result.status["notice"].startswith("Context compacted: ")


@pytest.mark.parametrize("mode, expected, absent", [
    ("message", "Latest user message:", "Recent conversation tail"),
    ("recent", "Recent conversation tail:", "Full conversation context"),
    ("full", "Full conversation context:", "Recent conversation tail"),
])
def test_query_mode_shapes_the_recall_context(home, server, mode, expected, absent):
    config = model_config(server)
    config["plugins"] = {"entries": {"active-memory": {"config": {"queryMode": mode}}}}
    server.add(completion("hi there"), completion("NONE"))
    eng = open_engine(home, config)
    eng.message("we talked about the garden shed roof")
    eng.recall("what did we decide about the roof?", session="agent:main:main")
    prompt = server.requests[-1].json()["messages"][-1]["content"]
    assert expected in prompt and absent not in prompt
    if mode != "message":
        assert "garden shed roof" in prompt


def test_persist_transcripts_keeps_the_recall_exchange(home, server):
    config = model_config(server)
    config["plugins"] = {"entries": {"active-memory": {"config": {"persistTranscripts": True}}}}
    server.add(completion("The user fixed the roof in May."))
    eng = open_engine(home, config)
    thread = eng.sessions_create()
    eng.recall("what did we decide about the roof?", session=thread["key"])
    subagents = eng.sessions_list(kind="subagent")
    assert len(subagents) == 1 and subagents[0]["label"] == "active-memory recall"
    texts = [m["text"] for m in eng.sessions_history(subagents[0]["key"])["messages"]]
    assert texts[-1] == "The user fixed the roof in May."
    assert eng.session_status(subagents[0]["key"])["parentSessionId"] == \
        eng.session_status(thread["key"])["sessionId"]


@pytest.mark.parametrize("raw, final", [
    ("<think>the user wants the code: 7781</think>Final answer", "Final answer"),
    ("<thinking>\nplan: mention 7781\n</thinking>\n\nFinal answer", "Final answer"),
    ("plan: mention 7781</think>Final answer", "Final answer"),  # the opening tag was left out
    ("Final answer<think>trailing 7781", "Final answer"),  # a block left open
])
def test_reasoning_is_never_returned_stored_or_indexed(home, server, raw, final):
    server.add(completion(raw))
    eng = open_engine(home, model_config(server))
    sent = eng.message("hello there")
    assert sent.reply == final
    assert [m["text"] for m in eng.sessions_history(sent.session_key)["messages"]] == ["hello there", final]
    assert eng.sessions_search("7781")["hits"] == []


def test_memory_md_is_in_the_system_context_of_every_call(home, server):
    server.add(completion("one"), completion("two"), completion("three"))
    eng = open_engine(home, model_config(server))
    (home / "workspace").mkdir(exist_ok=True)
    (home / "workspace" / "MEMORY.md").write_text("# Memory\n\n- The user's cat is called Miso\n")
    for text in ("hi", "how are you", "tell me something"):
        eng.message(text)
    systems = [next((m["content"] for m in r.json()["messages"] if m["role"] == "system"), "")
               for r in server.requests]
    assert len(systems) == 3 and all("Miso" in s for s in systems)


def test_provider_reasoning_fields_are_never_the_reply(home, server):
    """reasoning_content (DeepSeek, vLLM, Ollama) and reasoning content parts are dropped."""
    server.add(Reply(json={"id": "x", "object": "chat.completion", "model": "scripted-1", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "reasoning_content": "secret plan 7781",
            "content": [{"type": "reasoning", "text": "more plan 7781"}, {"type": "text", "text": "Final answer"}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}}))
    eng = open_engine(home, model_config(server))
    sent = eng.message("hello there")
    assert sent.reply == "Final answer"
    assert eng.sessions_search("7781")["hits"] == []


def test_turns_of_one_session_from_two_processes_take_turns(home, server):
    """Two `clawkeep message` processes on one home and one session (a CLI beside a gateway, a
    cron job): the second turn starts after the first one's reply is stored, so every reply
    follows its own message (before: user, user, assistant, assistant)."""
    server.set_script(lambda request: Reply(delay=1.5, json=completion(
        "reply to " + request.json()["messages"][-1]["content"].split()[-1]).json))
    path = write_config(home, model_config(server, timeout_ms=20000))
    command = [sys.executable, "-m", "clawkeep", "--home", str(home), "--config", str(path), "message"]
    env = {k: v for k, v in os.environ.items() if k != "CLAWKEEP_HOME"}
    first = subprocess.Popen([*command, "first"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.8)  # the first turn is waiting for its model
    second = subprocess.Popen([*command, "second"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert first.wait(60) == 0 and second.wait(60) == 0, (first.stderr.read(), second.stderr.read())
    eng = open_engine(home, model_config(server))
    history = eng.sessions_history("agent:main:main")["messages"]
    assert [(m["role"], m["text"]) for m in history] == [
        ("user", "first"), ("assistant", "reply to first"), ("user", "second"), ("assistant", "reply to second")]
