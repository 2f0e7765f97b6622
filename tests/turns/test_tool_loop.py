"""The reply model's tool loop over real HTTP: a scripted model asks for tools (OpenAI
`tool_calls`, Anthropic `tool_use`), the engine runs them as the calling session, records calls
and results in the transcript, and sends the results back."""

import json
import re

import pytest

from tests.helpers.engine import open_engine
from tests.helpers.model_replies import completion, config_for, last_message
from tests.helpers.scripted_server import Reply, ScriptedServer, sse_data, sse_events


# --- the scripted model ------------------------------------------------------------------------
def side_model(request):
    """Recall, flush and compaction calls offer no tools: answer them plainly."""
    return completion("NONE")


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def tool_requests(server):
    return [r.json() for r in server.requests if "tools" in r.json()]


# --- the loop --------------------------------------------------------------------------------
def test_model_searches_memory_and_answers_from_the_result(home, server):
    server.add(completion("", [("memory_search", {"query": "TypeScript"})]),
               lambda req: completion("You prefer " + ("TypeScript." if "TypeScript" in last_message(req)["content"]
                                                       else "nothing I know of.")))
    eng = open_engine(home, config_for(server))
    eng.memory_remember("I prefer TypeScript over JavaScript")
    result = eng.message("which language do I like?")
    assert result.reply == "You prefer TypeScript."
    assert result.tool_calls == [{"name": "memory_search", "isError": False}]
    first, second = server.requests[0].json(), server.requests[1].json()
    offered = {t["function"]["name"] for t in first["tools"]}
    assert offered == {"sessions_list", "sessions_history", "sessions_search", "session_status",
                       "memory_search", "memory_get", "memory_remember", "memory_edit", "memory_forget",
                       "memory_undo", "sessions_send"}
    assert first["messages"][0]["role"] == "system" and "TypeScript" in first["messages"][0]["content"]
    call, answer = second["messages"][-2], second["messages"][-1]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"]["name"] == "memory_search"
    assert answer["role"] == "tool" and answer["tool_call_id"] == call["tool_calls"][0]["id"]
    assert json.loads(answer["content"])["results"][0]["path"] == "MEMORY.md"
    # calls and results are transcript entries: hidden by default, shown with include_tools
    plain = eng.sessions_history("agent:main:main")["messages"]
    assert [m["role"] for m in plain] == ["user", "assistant"]
    full = eng.sessions_history("agent:main:main", include_tools=True)["messages"]
    assert [m["role"] for m in full] == ["user", "assistant", "tool", "assistant"]
    assert "memory_search" in full[1]["text"] and "TypeScript" in full[2]["text"]


def test_history_tool_calls_go_back_as_calls_and_results_on_the_next_turn(home, server):
    server.add(completion("", [("session_status", {})]), completion("status read"), completion("second answer"))
    eng = open_engine(home, config_for(server))
    eng.message("how big is this session?")
    eng.message("and now?")
    sent = server.requests[2].json()["messages"]
    roles = [m["role"] for m in sent]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"] or \
        roles == ["user", "assistant", "tool", "assistant", "user"]
    call = next(m for m in sent if m.get("tool_calls"))
    result = next(m for m in sent if m["role"] == "tool")
    assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert json.loads(result["content"])["key"] == "agent:main:main"


def test_anthropic_tool_use_and_tool_result(home, server):
    def message(blocks, stop):
        return Reply(json={"id": "m", "type": "message", "role": "assistant", "model": "scripted-1",
                           "content": blocks, "stop_reason": stop,
                           "usage": {"input_tokens": 30, "output_tokens": 4}})

    server.add(message([{"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "toolu_1", "name": "memory_search", "input": {"query": "dog"}}],
                       "tool_use"),
               lambda req: message([{"type": "text", "text": "Your dog is Rex." if "Rex" in json.dumps(
                   req.json()["messages"][-1], ensure_ascii=False) else "No idea."}], "end_turn"))
    eng = open_engine(home, config_for(server, api="anthropic"))
    eng.memory_remember("My dog is called Rex")
    result = eng.message("what's my dog's name?")
    assert result.reply == "Your dog is Rex."
    first, second = server.requests[0].json(), server.requests[1].json()
    assert {t["name"] for t in first["tools"]} >= {"memory_search", "sessions_search"}
    assert "input_schema" in first["tools"][0] and "Rex" in first["system"]
    assistant, user = second["messages"][-2], second["messages"][-1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "text", "text": "Let me look."}
    assert assistant["content"][1]["type"] == "tool_use" and assistant["content"][1]["input"] == {"query": "dog"}
    assert user["role"] == "user" and user["content"][0]["type"] == "tool_result"
    assert user["content"][0]["tool_use_id"] == "toolu_1" and user["content"][0]["is_error"] is False


def test_streamed_tool_calls_are_assembled_from_fragments(home, server):
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_s", "type": "function", "function": {"name": "memory_search", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"que'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'ry": "tea"}'}}]},
                      "finish_reason": "tool_calls"}]}]
    final = [{"choices": [{"index": 0, "delta": {"content": "You drink "}}]},
             {"choices": [{"index": 0, "delta": {"content": "green tea."}, "finish_reason": "stop"}]}]
    server.add(Reply(sse=sse_data(*chunks, "[DONE]")), Reply(sse=sse_data(*final, "[DONE]")))
    eng = open_engine(home, config_for(server))
    eng.memory_remember("I drink green tea every morning")
    events = list(eng.message_stream("what do I drink?"))
    kinds = [e.kind for e in events]
    assert kinds.index("tool_call") < kinds.index("token") and kinds[-1] == "result"
    tool_event = next(e for e in events if e.kind == "tool_call")
    assert tool_event.data == {"id": "call_s", "name": "memory_search", "isError": False}
    assert events[-1].data.reply == "You drink green tea."
    sent = server.requests[1].json()["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["arguments"] == '{"query": "tea"}'
    assert "green tea" in sent[-1]["content"]


def test_anthropic_streamed_tool_use(home, server):
    events = sse_events(
        ("message_start", {"type": "message_start", "message": {"model": "scripted-1", "usage": {"input_tokens": 9}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "tool_use", "id": "toolu_9", "name": "session_status",
                                                   "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}))
    done = sse_events(
        ("message_start", {"type": "message_start", "message": {"model": "scripted-1", "usage": {"input_tokens": 9}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Checked."}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}))
    server.add(Reply(sse=events), Reply(sse=done))
    eng = open_engine(home, config_for(server, api="anthropic"))
    out = list(eng.message_stream("status please"))
    assert out[-1].kind == "result" and out[-1].data.reply == "Checked."
    result_block = server.requests[1].json()["messages"][-1]["content"][0]
    assert result_block["tool_use_id"] == "toolu_9" and "agent:main:main" in result_block["content"]


# --- bad input from the model ------------------------------------------------------------------
def test_malformed_arguments_and_unknown_tools_are_tool_errors(home, server):
    server.add(completion("", [("memory_search", '{"query": "tea"'), ("delete_everything", {}),
                               ("memory_search", {"query": "x", "bogus": 1}), ("memory_search", "[1, 2]")]),
               completion("sorry"))
    eng = open_engine(home, config_for(server))
    result = eng.message("hi")
    assert result.reply == "sorry"
    assert [c["isError"] for c in result.tool_calls] == [True, True, True, True]
    results = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert "not valid JSON" in results[0]["content"]
    assert "unknown tool 'delete_everything'" in results[1]["content"] and "memory_search" in results[1]["content"]
    assert "bogus" in results[2]["content"] and "invalid arguments" in results[2]["content"]
    assert "must be a JSON object" in results[3]["content"]


def test_a_loop_that_never_ends_stops_at_the_step_limit(home, server):
    server.set_script(lambda req: completion("", [("session_status", {})]) if "tools" in req.json()
                      else completion("giving up"))
    eng = open_engine(home, config_for(server, tools={"maxSteps": 3}))
    result = eng.message("loop forever")
    assert len(result.tool_calls) == 3
    assert len(server.requests) == 4  # 3 steps with tools, then one call without
    last = server.requests[-1].json()
    assert "tools" not in last and "step limit" in last["messages"][0]["content"]
    assert result.reply == "giving up"
    history = eng.sessions_history("agent:main:main", include_tools=True)["messages"]
    assert [m["role"] for m in history].count("tool") == 3


def test_huge_results_and_arguments_are_cut_or_refused(home, server):
    workspace = home / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "MEMORY.md").write_text("# Memory\n" + "\n".join(f"- line {i} " + "x" * 90 for i in range(1500)))
    server.add(completion("", [("memory_get", {"path": "MEMORY.md"}),
                               ("memory_search", {"query": "y" * (10 * 1024 * 1024)})]),
               completion("done"))
    eng = open_engine(home, config_for(server, tools={"maxResultChars": 5000}))
    result = eng.message("read it all")
    assert result.reply == "done"
    got, refused = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert len(got["content"]) <= 5000 and "result cut" in got["content"]
    assert "invalid arguments for memory_search" in refused["content"] and "4096" in refused["content"]
    assert len(refused["content"]) < 2000  # the error does not echo the 10 MB back


def test_provider_timeout_mid_loop_keeps_everything_recorded(home, server):
    server.add(completion("", [("session_status", {})]), Reply(hang=True), completion("back again"))
    config = config_for(server)
    # long enough for the first answer on a loaded machine; the second one never comes
    config["models"]["providers"]["local"]["timeoutMs"] = 2000
    eng = open_engine(home, config)
    from clawkeep.models.chat import ModelTimeoutError
    with pytest.raises(ModelTimeoutError):
        eng.message("check the session")
    history = eng.sessions_history("agent:main:main", include_tools=True)["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    server.set_script([completion("back again")])
    assert eng.message("still there?").reply == "back again"  # the session is usable
    sent = server.requests[-1].json()["messages"]
    assert any(m["role"] == "tool" for m in sent)  # the interrupted call and its result are replayed, paired


def test_calls_land_with_their_results_in_order_and_every_call_counts_its_usage(home, server):
    server.add(completion("", [("session_status", {}), ("memory_search", {"query": "tea"})]),
               completion("", [("sessions_list", {})]), completion("done"))
    eng = open_engine(home, config_for(server))
    recorded = []
    from clawkeep.events import MessageRecorded
    eng.subscribe(MessageRecorded, lambda event: recorded.append(event.role))
    assert eng.message("look around").reply == "done"
    history = eng.sessions_history("agent:main:main", include_tools=True)["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
    assert "session_status" in history[1]["text"] and "memory_search" in history[1]["text"]
    assert "agent:main:main" in history[2]["text"] and "messageCount" in history[5]["text"]
    assert [r for r in recorded if r] == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
    status = eng.session_status("agent:main:main")
    # three model calls of 40 + 5 tokens: the two that asked for tools and the one that answered
    assert status["usage"]["inputTokens"] == 120 and status["usage"]["outputTokens"] == 15


def test_a_tool_that_outlives_its_timeout_is_a_tool_error(home, server):
    server.add(completion("", [("memory_search", {"query": "slow"})]), completion("ok"))
    eng = open_engine(home, config_for(server, tools={"timeoutSeconds": 0.2}))
    import threading
    import time
    original = eng.memory_search
    release = threading.Event()

    def slow(*args, **kwargs):  # an embedding service that stalls, played by a blocking callable
        release.wait(5)
        return original(*args, **kwargs)

    eng.memory_search = slow  # the engine object the tools run on; not a mock of the code under test
    started = time.monotonic()
    result = eng.message("search slowly")
    release.set()
    assert result.reply == "ok" and result.tool_calls == [{"name": "memory_search", "isError": True}]
    assert time.monotonic() - started < 4
    tool = next(m for m in server.requests[1].json()["messages"] if m["role"] == "tool")
    assert "did not finish within 0.2 s" in tool["content"]


# --- visibility, toolsAllow, writes ------------------------------------------------------------
def test_tools_allow_and_deny_pick_what_is_offered(home, server):
    server.add(completion("", [("sessions_list", {})]), completion("ok"))
    eng = open_engine(home, config_for(server, tools={"allow": ["memory_*"], "deny": ["memory_remember"]}))
    result = eng.message("list sessions")
    offered = {t["function"]["name"] for t in server.requests[0].json()["tools"]}
    assert offered == {"memory_search", "memory_get", "memory_edit", "memory_forget", "memory_undo"}
    assert result.tool_calls == [{"name": "sessions_list", "isError": True}]
    refused = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"][0]["content"]
    assert "'sessions_list' is not allowed in this session" in refused and "allow/deny" in refused
    assert "unknown" not in refused


def test_tools_run_as_the_calling_session(home, server):
    """alice's model never sees bob's note or bob's conversation, whatever it asks for."""
    config = config_for(server)
    config["session"] = {"dmScope": "per-peer"}
    config["tools"] = {"sessions": {"visibility": "self"}}
    server.set_script(side_model)
    eng = open_engine(home, config)
    eng.message("my locker code is the blue door", channel="telegram", sender="bob")
    bob_key = eng.sessions_list()[0]["key"]
    server.set_script([completion("", [("memory_remember", {"text": "Bob's parking spot is B12"})]),
                       completion("stored")])
    eng.message("remember my parking spot is B12", channel="telegram", sender="bob")
    server.set_script([completion("", [("memory_search", {"query": "parking spot B12"}),
                                       ("sessions_search", {"query": "locker"}),
                                       ("sessions_history", {"sessionKey": bob_key}),
                                       ("memory_get", {"path": "MEMORY.md"})]),
                       completion("nothing")])
    eng.message("what is bob's parking spot?", channel="telegram", sender="alice")
    results = [m for m in server.requests[-1].json()["messages"] if m["role"] == "tool"]
    assert json.loads(results[0]["content"])["results"] == []
    memory_file = json.loads(results[3]["content"])
    assert memory_file["path"] == "MEMORY.md" and "B12" not in memory_file["text"]
    assert "ck:" not in memory_file["text"]  # state comments never reach a model
    assert "B12" not in results[1]["content"] and "locker" not in results[1]["content"].replace('"query"', "")
    assert "not found" in results[2]["content"] and "blue door" not in results[2]["content"]
    line = next(x for x in (home / "workspace" / "MEMORY.md").read_text().splitlines() if "B12" in x)
    assert f"session={bob_key}" in line.replace("%3A", ":")  # the fact is bob's


def test_memory_remember_tool_goes_through_the_write_filters(home, server):
    server.add(completion("", [("memory_remember", {"text": "my password is hunter2"}),
                               ("memory_remember", {"text": "I am allergic to peanuts"})]),
               completion("noted"))
    eng = open_engine(home, config_for(server))
    result = eng.message("I'm allergic to peanuts; my password is hunter2")
    refused, stored = [json.loads(m["content"]) for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert refused["status"] == "refused" and "secret" in refused["reason"]
    assert stored["status"] == "stored"
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert "peanuts" in memory and "hunter2" not in memory
    assert result.tool_calls == [{"name": "memory_remember", "isError": False}] * 2


def test_read_only_workspace_offers_no_memory_writes(home, server):
    server.add(completion("ok"))
    eng = open_engine(home, config_for(server, workspaceAccess="ro"))
    eng.message("hello")
    assert "memory_remember" not in {t["function"]["name"] for t in server.requests[0].json()["tools"]}


def test_record_mode_has_no_loop_and_remembers_by_rule(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    stored = eng.message("Remember that I prefer TypeScript")
    assert stored.mode == "record" and stored.tool_calls is None
    assert stored.remembered["status"] == "stored" and stored.remembered["item"]["text"] == "I prefer TypeScript"
    refused = eng.message("记住我的密码是 abc12345")
    assert refused.remembered["status"] == "refused"
    assert eng.message("do you remember what I prefer?").remembered is None
    memory = (home / "workspace" / "MEMORY.md").read_text()
    assert "I prefer TypeScript" in memory and "abc12345" not in memory
    assert re.search(r"session=agent%3Amain%3Amain|session=agent:main:main", memory)


def tool_model(answer):
    """A scripted reply model: calls without tools (the recall helper) get NONE; the others
    `answer(last message)`."""
    def model(req):
        body = req.json()
        return completion("NONE") if "tools" not in body else answer(body["messages"][-1])
    return model


# --- the seed's scenario -----------------------------------------------------------------------
def test_fact_from_a_telegram_dm_answers_a_question_in_a_new_dashboard_thread(home, server):
    """Telegram DM states a fact → a new dashboard thread asks → the model calls memory_search
    and answers with the fact."""
    @tool_model
    def model(last):
        if last["role"] == "tool":
            found = json.loads(last["content"])
            snippets = " ".join(hit.get("snippet", "") for hit in found.get("results", found.get("hits", [])))
            return completion(f"From memory: {snippets}" if snippets else "I found nothing.")
        if "下周三" in last["content"]:
            return completion("", [("memory_remember", {"text": "下周三去上海出差"})])
        return completion("", [("memory_search", {"query": "上海 出差"})])

    server.set_script(model)
    eng = open_engine(home, config_for(server))
    eng.message("我下周三去上海出差，帮我记一下", channel="telegram", sender="alice")
    thread = eng.sessions_create()
    answer = eng.message("我下周要去哪里出差？", session=thread["key"])
    assert answer.tool_calls == [{"name": "memory_search", "isError": False}]
    assert "上海" in answer.reply and answer.reply.startswith("From memory:")


def test_sessions_search_finds_the_dm_from_the_main_session(home, server):
    def model(req):
        body = req.json()
        if "tools" not in body:
            return completion("NONE")
        last = body["messages"][-1]
        if last["role"] == "tool":
            hits = json.loads(last["content"])["hits"]
            return completion("You said: " + hits[0]["snippet"] if hits else "nothing")
        if "offsite" in last["content"] and "moved" in last["content"]:
            return completion("ok")
        return completion("", [("sessions_search", {"query": "offsite"})])

    server.set_script(model)
    eng = open_engine(home, config_for(server))
    eng.message("we moved the team offsite to Lisbon", channel="telegram", sender="alice")
    reply = eng.message("where is the offsite again?").reply
    assert "Lisbon" in reply


def test_tool_errors_never_end_the_turn_even_when_the_engine_raises(home, server):
    server.add(completion("", [("sessions_history", {"sessionKey": "agent:main:nope"})]), completion("fine"))
    eng = open_engine(home, config_for(server))
    result = eng.message("read a missing session")
    assert result.reply == "fine" and result.tool_calls[0]["isError"]
    tool = next(m for m in server.requests[1].json()["messages"] if m["role"] == "tool")
    assert "not found" in tool["content"]
    assert eng.sessions_history("agent:main:main")["messages"][-1]["text"] == "fine"


def test_new_with_a_model_and_text_answers_with_that_model(home, server):
    config = config_for(server)
    config["models"]["providers"]["local"]["models"]["scripted-2"] = {"contextWindow": 16384}
    server.add(completion("hello from one"), completion("a joke from two"), completion("still two"))
    eng = open_engine(home, config)
    eng.message("hi")
    switched = eng.message("/new local/scripted-2 tell me a joke")
    assert switched.command and switched.reply == "a joke from two"
    assert eng.message("another").reply == "still two"
    assert [r.json()["model"] for r in server.requests] == ["scripted-1", "scripted-2", "scripted-2"]
    texts = [m["text"] for m in eng.sessions_history("agent:main:main")["messages"]]
    assert texts == ["tell me a joke", "a joke from two", "another", "still two"]


def test_overflow_compacts_and_retries_and_a_refused_turn_leaves_the_session_usable(home, server):
    """A provider that refuses prompts above ~5k tokens (its own count) behind an 8k window."""
    def provider(req):
        body = req.json()
        size = len(json.dumps(body, ensure_ascii=False)) // 4
        if size > 5000:
            return Reply(status=400, json={"error": {"code": "context_length_exceeded", "message":
                         f"This model's maximum context length is 5000 tokens. However, you requested {size} tokens"}})
        if "tools" not in body:
            return completion("summary of the earlier talk")
        return completion(f"answer {len(body['messages'])}")

    server.set_script(provider)
    config = config_for(server)
    config["models"]["providers"]["local"]["models"]["scripted-1"]["contextWindow"] = 8192
    eng = open_engine(home, config)
    replies = [eng.message(f"note {i}: " + "lorem ipsum dolor " * 250).reply for i in range(8)]
    assert all(r.startswith("answer") for r in replies)
    from clawkeep.models.chat import ContextOverflowError
    with pytest.raises(ContextOverflowError, match="your message is saved"):
        eng.message("a pasted log: " + "x1 y2 z3 " * 12000)  # ~25k tokens on its own: cannot fit
    assert eng.message("sorry, short question now").reply.startswith("answer")  # usable again
    texts = [m["text"] for m in eng.sessions_history("agent:main:main")["messages"]]
    assert any(t.startswith("a pasted log") for t in texts)  # nothing stored was lost


def test_a_note_edited_between_turns_is_found_by_the_next_turns_search(home, server):
    """The workspace is checked for edits once per turn (not per tool call): an edit made
    between two turns is always seen by the second turn's searches, its second search included."""
    found = []

    def answer(req):
        found.append(json.loads(last_message(req)["content"])["results"])
        return completion("ok")

    server.add(completion("", [("memory_search", {"query": "kayak"})]), answer,
               completion("", [("memory_search", {"query": "kayak"})]),
               completion("", [("memory_search", {"query": "kayak"})]), answer)
    eng = open_engine(home, config_for(server))
    eng.memory_remember("I keep my bike in the garage")
    eng.message("where is my kayak?")
    (home / "workspace" / "memory" / "2026-01-02.md").write_text("- The red kayak is in the boathouse\n")
    eng.message("and now, where is my kayak?")
    assert found[0] == [] and "boathouse" in found[1][0]["snippet"]


@pytest.mark.parametrize("pieces, shown", [
    (["<thi", "nk>plan: say 7781", "</think>", "Final ", "answer"], ["Final ", "answer"]),
    (["Final ", "answer<", "think>7781 trailing"], ["Final ", "answer"]),
    (["plan: 7781", "</think>", "Final answer"], ["plan: 7781", None, "Final answer"]),  # a lone closing tag
])
def test_streamed_reasoning_never_reaches_a_token_event(home, server, pieces, shown):
    deltas = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    deltas[-1]["choices"][0]["finish_reason"] = "stop"
    server.add(Reply(sse=sse_data(*deltas, "[DONE]")))
    eng = open_engine(home, config_for(server))
    events = list(eng.message_stream("hello"))
    streamed = [e.data if e.kind == "token" else None for e in events if e.kind in ("token", "discard")]
    assert streamed == shown
    assert events[-1].data.reply == "Final answer"
    if None not in shown:
        assert all("7781" not in e.data for e in events if e.kind == "token")


# --- memory_search over indexed transcripts never answers with the message being answered ---
SESSION_MEMORY = {"memorySearch": {"provider": "none", "sources": ["memory", "sessions"],
                                   "experimental": {"sessionMemory": True}}}


def _searching_model(query):
    """Asks memory_search (corpus sessions) once, then answers with what came back."""
    @tool_model
    def model(last):
        if last["role"] == "tool":
            return completion("RESULT " + last["content"])
        if "what is QUASAR77" in (last.get("content") or ""):
            return completion("", [("memory_search", {"query": query, "corpus": "sessions"})])
        return completion("ok")
    return model


def _tool_result(server):
    body = server.requests[-1].json()
    assert body["messages"][-1]["role"] == "tool"
    return json.loads(body["messages"][-1]["content"])


def test_memory_search_over_transcripts_never_offers_the_pending_message_alone(home, server):
    server.set_script(_searching_model("QUASAR77 telescope"))
    eng = open_engine(home, config_for(server, **SESSION_MEMORY))
    result = eng.message("quick question about the telescope: what is QUASAR77")
    asking = eng.sessions_history("agent:main:main")["messages"][0]
    found = _tool_result(server)["results"]
    assert all(asking["messageId"] not in (hit.get("messageIds") or []) for hit in found), found
    assert "what is QUASAR77" not in json.dumps(found)
    assert result.tool_calls == [{"name": "memory_search", "isError": False}]


def test_memory_search_keeps_earlier_turns_but_not_the_pending_line(home, server):
    """A window that holds the pending message next to earlier turns of the same conversation
    keeps the earlier turns and loses the pending line."""
    server.set_script(_searching_model("QUASAR77 telescope"))
    eng = open_engine(home, config_for(server, **SESSION_MEMORY))
    eng.message("QUASAR77 is the name of my backyard telescope")
    eng.message("quick question about the telescope: what is QUASAR77")
    messages = eng.sessions_history("agent:main:main")["messages"]
    asking = [m for m in messages if m["role"] == "user"][-1]
    found = _tool_result(server)["results"]
    text = json.dumps(found)
    assert "backyard telescope" in text
    assert "what is QUASAR77" not in text
    assert all(asking["messageId"] not in (hit.get("messageIds") or []) for hit in found)
