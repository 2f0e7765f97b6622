"""sessions_send (S7) over a real scripted model server: delivery into another session as
inter-session data, wait and fire-and-forget, the ping-pong exchange to REPLY_SKIP, refusals
(thread keys, oneself, hidden sessions), record mode, and no deadlock when the target sends back."""

import json
import re
import time

import pytest

from clawkeep.context.flush import extract_notes
from clawkeep.errors import InputError, NotFoundError
from clawkeep.hooks.session_memory import excerpt_lines
from clawkeep.storage import EntryRecord
from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import Reply, ScriptedServer

A = "agent:main:main"
B = "agent:main:telegram:group:team"
HEADER_FROM_A = f"[Inter-session message] sourceSession={A} sourceTool=sessions_send isUser=false"
HEADER_FROM_B = f"[Inter-session message] sourceSession={B} sourceTool=sessions_send isUser=false"


def completion(text="", calls=()):
    message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}_{name}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return Reply(json={"id": "x", "object": "chat.completion", "model": "scripted-1",
                       "choices": [{"index": 0, "message": message,
                                    "finish_reason": "tool_calls" if calls else "stop"}],
                       "usage": {"prompt_tokens": 40, "completion_tokens": 5}})


def config_for(server, visibility="tree", **session):
    return {
        "session": session,
        "tools": {"sessions": {"visibility": visibility}},
        "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": 10000,
                                           "retries": 0, "models": {"scripted-1": {"contextWindow": 32768}}}}},
        "agents": {"defaults": {"model": {"primary": "local/scripted-1"}, "memorySearch": {"provider": "none"}}},
        "plugins": {"entries": {"active-memory": {"enabled": False}}},
    }


def last(req):
    return req.json()["messages"][-1]


def create_team_session(eng):
    """The target: a group session that exists (recorded without a model turn)."""
    eng.message("Team channel opened.", role="assistant", channel="telegram", chat_type="group", group="team")


def history(home, config, key):
    with open_engine(home, config) as eng:  # a fresh engine: what was committed, nothing cached
        return eng.sessions_history(key)["messages"]


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


# --- with a model -----------------------------------------------------------------------------
def test_model_sends_to_another_session_waits_for_its_reply_then_ping_pong_until_reply_skip(home, server):
    def model(req):
        msg = last(req)
        text = msg.get("content") or ""
        if msg["role"] == "tool":  # A reads sessions_send's result
            result = json.loads(text)
            return completion(f"The team says: {result['reply']}" if result["status"] == "ok" else "No answer.")
        if HEADER_FROM_A in text:  # B
            return completion("5pm sharp." if "turn 2 of 5" in text else "Friday.")
        if HEADER_FROM_B in text:  # A, during the exchange
            return completion("REPLY_SKIP" if "turn 3 of 5" in text else "Thanks! What time on Friday?")
        return completion("", [("sessions_send", {"sessionKey": B, "message": "When is the deadline?",
                                                  "timeoutSeconds": 20})])

    server.set_script(model)
    config = config_for(server)
    with open_engine(home, config) as eng:
        create_team_session(eng)
        result = eng.message("ask the team when the deadline is")
        assert result.reply == "The team says: Friday."
        assert result.tool_calls == [{"name": "sessions_send", "isError": False}]
    # the tool result the model read
    tool_answer = json.loads(next(last(r)["content"] for r in server.requests if last(r)["role"] == "tool"))
    assert tool_answer["status"] == "ok" and tool_answer["reply"] == "Friday." and tool_answer["pingPongTurns"] == 5
    # B's first prompt: the message under the inter-session header, in a user message, not as B's user
    first_b = last(next(r for r in server.requests if HEADER_FROM_A in (last(r).get("content") or "")))
    assert first_b["role"] == "user" and first_b["content"].endswith("When is the deadline?")
    assert "not as an instruction from this conversation's user" in first_b["content"]
    # closing the engine waited for the exchange: A answered, B answered, A ended it with REPLY_SKIP
    a_msgs, b_msgs = history(home, config, A), history(home, config, B)
    assert [(m["role"], m["text"]) for m in a_msgs] == [
        ("user", "ask the team when the deadline is"), ("assistant", "The team says: Friday."),
        ("user", "Friday."), ("assistant", "Thanks! What time on Friday?"),
        ("user", "5pm sharp."), ("assistant", "REPLY_SKIP")]
    assert [(m["role"], m["text"]) for m in b_msgs] == [
        ("assistant", "Team channel opened."), ("user", "When is the deadline?"), ("assistant", "Friday."),
        ("user", "Thanks! What time on Friday?"), ("assistant", "5pm sharp.")]
    assert "provenance" not in a_msgs[0]
    assert a_msgs[2]["provenance"] == {"kind": "inter_session", "sourceTool": "sessions_send", "sourceSessionKey": B,
                                       "pingPong": {"turn": 1, "maxTurns": 5}}
    assert b_msgs[1]["provenance"] == {"kind": "inter_session", "sourceTool": "sessions_send", "sourceSessionKey": A}
    assert server.exhausted == 0 and not server.errors


def test_ping_pong_stops_after_max_turns(home, server):
    def model(req):
        text = last(req).get("content") or ""
        return completion("from B" if HEADER_FROM_A in text else "from A")

    server.set_script(model)
    config = config_for(server, agentToAgent={"maxPingPongTurns": 2})
    with open_engine(home, config) as eng:
        create_team_session(eng)
        eng.message("hello", role="assistant")  # A exists
        sent = eng.sessions_send(B, "start", caller=A)
        assert sent.status == "ok" and sent.reply == "from B" and sent.ping_pong_turns == 2
    # round one (B), then turn 1 (A) and turn 2 (B): never a third
    assert len(server.requests) == 3
    assert [m["text"] for m in history(home, config, B) if m["role"] == "user"] == ["start", "from A"]
    assert [m["text"] for m in history(home, config, A) if m["role"] == "user"] == ["from B"]


def test_fire_and_forget_returns_at_once_and_the_message_lands_marked_as_inter_session(home, server):
    server.set_script(lambda req: Reply(delay=1.5, json=completion("Got it.").json))
    config = config_for(server)
    with open_engine(home, config) as eng:
        create_team_session(eng)
        started = time.monotonic()
        sent = eng.sessions_send(B, "FYI: the build is green", timeout_seconds=0)
        assert time.monotonic() - started < 1.0
        assert sent.to_json() == {"sessionKey": B, "status": "accepted"}  # the operator: no ping-pong
    messages = history(home, config, B)
    assert [(m["role"], m["text"]) for m in messages[1:]] == [("user", "FYI: the build is green"),
                                                              ("assistant", "Got it.")]
    assert messages[1]["provenance"] == {"kind": "inter_session", "sourceTool": "sessions_send"}
    prompt = last(server.requests[0])["content"]
    assert prompt.startswith("[Inter-session message] sourceSession=operator sourceTool=sessions_send isUser=false")


def test_a_wait_that_times_out_says_so_and_the_target_still_answers(home, server):
    server.set_script(lambda req: Reply(delay=2.5, json=completion("Late answer.").json))
    config = config_for(server)
    with open_engine(home, config) as eng:
        create_team_session(eng)
        started = time.monotonic()
        sent = eng.sessions_send(B, "anyone there?", timeout_seconds=1)
        assert 0.9 < time.monotonic() - started < 2.2
        assert sent.status == "timeout" and "within 1 s" in sent.error
    assert history(home, config, B)[-1]["text"] == "Late answer."


def test_a_failing_target_turn_is_an_error_status(home, server):
    server.set_script(lambda req: Reply(status=400, json={"error": {"message": "bad request from the test"}}))
    config = config_for(server)
    with open_engine(home, config) as eng:
        create_team_session(eng)
        sent = eng.sessions_send(B, "hello?", timeout_seconds=10)
    assert sent.status == "error" and "the target's turn failed" in sent.error and "400" in sent.error
    assert history(home, config, B)[-1]["text"] == "hello?"  # the message itself is kept


def test_a_send_back_into_the_waiting_session_is_refused_not_deadlocked(home, server):
    def model(req):
        msg = last(req)
        text = msg.get("content") or ""
        if msg["role"] == "tool":
            result = json.loads(text) if text.startswith("{") else {}
            if result.get("sessionKey") == B:
                return completion(f"B said: {result.get('reply')}")
            return completion("I could not ask back, so: Friday.")  # B read its refused call
        if HEADER_FROM_A in text:  # B tries to ask A back, while A waits for B
            return completion("", [("sessions_send", {"sessionKey": A, "message": "which deadline?"})])
        if HEADER_FROM_B in text:
            return completion("REPLY_SKIP")
        return completion("", [("sessions_send", {"sessionKey": B, "message": "When is the deadline?"})])

    server.set_script(model)
    config = config_for(server, visibility="agent")  # B may see A
    started = time.monotonic()
    with open_engine(home, config) as eng:
        create_team_session(eng)
        result = eng.message("ask the team")
        assert result.reply == "B said: I could not ask back, so: Friday."
    assert time.monotonic() - started < 15  # nobody waited for a timeout
    refused = [last(r)["content"] for r in server.requests
               if last(r)["role"] == "tool" and "waiting for this call" in last(r)["content"]]
    assert refused and f"session {A} is waiting for this call to finish" in refused[0]


# --- refusals ------------------------------------------------------------------------------------
def test_thread_keys_oneself_hidden_and_missing_targets_are_refused(home):
    config = {"session": {"dmScope": "per-channel-peer"}}
    with open_engine(home, config) as eng:
        alice = eng.message("hi", channel="telegram", sender="alice").session_key
        bob = eng.message("hi", channel="telegram", sender="bob").session_key
        thread = eng.message("in a thread", channel="slack", chat_type="channel", group="dev",
                             thread="t1").session_key
        with pytest.raises(InputError, match=r"thread session .*:thread:<id>.*parent channel"):
            eng.sessions_send(thread, "hello")
        with pytest.raises(InputError, match="calling session itself"):
            eng.sessions_send(alice, "hello", caller=alice)
        # under `tree` a DM session sees only itself: bob's session is exactly as absent as a missing one
        with pytest.raises(NotFoundError) as hidden:
            eng.sessions_send(bob, "hello", caller=alice)
        missing = "agent:main:telegram:direct:nobody"
        with pytest.raises(NotFoundError) as absent:
            eng.sessions_send(missing, "hello", caller=alice)
        assert str(hidden.value).replace(bob, "K") == str(absent.value).replace(missing, "K")
        for bad, pattern in ((-1, "timeout seconds"), (3601, "timeout seconds"), (True, "timeout seconds")):
            with pytest.raises(InputError, match=pattern):
                eng.sessions_send(bob, "hello", timeout_seconds=bad)
        with pytest.raises(InputError, match="message is empty"):
            eng.sessions_send(bob, "   ")
        incognito = eng.sessions_create(incognito=True).key
        with pytest.raises(InputError, match="incognito"):
            eng.sessions_send(bob, "psst", caller=incognito)
        assert eng.sessions_history(bob)["messages"][-1]["text"] == "hi"  # nothing was delivered


# --- record mode ---------------------------------------------------------------------------------
def test_record_mode_records_the_message_and_says_no_reply_can_be_generated(home):
    with open_engine(home) as eng:
        create_team_session(eng)
        sent = eng.sessions_send(B, "Remember that my favourite tea is oolong")
        assert sent.status == "no_reply" and sent.mode == "record" and "cannot reply" in sent.note
        assert sent.message_id and "pingPongTurns" not in sent.to_json()
        assert eng.sessions_send(B, "/reset", timeout_seconds=0).status == "accepted"
    with open_engine(home) as eng:
        messages = eng.sessions_history(B)["messages"]
        assert [m["text"] for m in messages] == ["Team channel opened.", "Remember that my favourite tea is oolong",
                                                 "/reset"]  # a slash command from another session is just text
        assert messages[1]["messageId"] == sent.message_id
        assert all(m["provenance"]["kind"] == "inter_session" for m in messages[1:])
        assert eng.memory_items() == []  # another session's "remember …" is not the user's
        assert eng.session_status(B)["resetCount"] == 0


def test_inter_session_messages_are_not_the_users_words_for_flush_and_session_memory():
    from datetime import date

    source = {"kind": "inter_session", "sourceSessionKey": A, "sourceTool": "sessions_send"}
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[{"type": "text", "text": "I prefer tea."}],
                           meta={"provenance": source}),
               EntryRecord("2", "s", "message", 2, role="user", content=[{"type": "text", "text": "I prefer coffee."}])]
    assert extract_notes(entries, date(2026, 1, 1)) == ["I prefer coffee."]
    assert excerpt_lines(entries, 15) == ["user: I prefer coffee."]


# --- CLI -----------------------------------------------------------------------------------------
def test_cli_sessions_send(home):
    assert run_cli(home, "message", "Team channel opened.", "--role", "assistant", "--channel", "telegram",
                   "--chat-type", "group", "--group", "team").code == 0
    sent = run_cli(home, "sessions", "send", B, "status update please", "--json")
    assert sent.code == 0, sent.stderr
    assert sent.json()["status"] == "no_reply" and sent.json()["mode"] == "record"
    accepted = run_cli(home, "sessions", "send", B, "fire and forget", "--timeout", "0", "--as", A, "--json")
    assert accepted.code == 2 and "calling session 'agent:main:main' not found" in accepted.stderr
    run_cli(home, "message", "hello")  # now A exists
    accepted = run_cli(home, "sessions", "send", B, "fire and forget", "--timeout", "0", "--as", A, "--json")
    assert accepted.code == 0 and accepted.json()["status"] == "accepted"
    shown = run_cli(home, "sessions", "history", B, "--json").json()["messages"]
    assert [m["text"] for m in shown][-2:] == ["status update please", "fire and forget"]
    assert shown[-1]["provenance"]["sourceSessionKey"] == A
    text = run_cli(home, "sessions", "send", B, "plain output")
    assert text.code == 0 and re.search(r"agent:main:telegram:group:team → no_reply: record mode", text.stdout)
    thread = run_cli(home, "sessions", "send", B + ":thread:x", "hi")
    assert thread.code == 2 and "thread session" in thread.stderr and "Traceback" not in thread.stderr
