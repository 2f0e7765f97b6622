"""The turn as a pipeline of steps, each called alone with the turn object (`turns.turn.Turn`):
route → session → recall → transcript → context → model and tools → transcript → hooks. The
turn's state (held locks, one index check, the answered message, the credential limit) travels
on the object, never in hidden context variables. Real stores, a scripted model on loopback."""

import re
from pathlib import Path

import pytest

from clawkeep.api import RecallResult
from clawkeep.errors import InputError
from clawkeep.events import TurnCompleted
from clawkeep.memory import service as memory
from clawkeep.turns import pipeline, reply, send
from clawkeep.turns.messages import MessageResult
from clawkeep.turns.turn import Turn
from clawkeep.visibility import NO_LIMIT, Limit
from tests.helpers import model_replies
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import ScriptedServer

NO_RECALL = {"plugins": {"entries": {"active-memory": {"enabled": False}}},
             "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def opened(home, config=None):
    """An engine and a turn of "remember the milk" taken through route → session → transcript."""
    eng = open_engine(home, config or NO_RECALL)
    rt = eng.runtime
    turn = pipeline.start_turn(rt, eng.request("remember the milk"))
    pipeline.route_step(rt, turn)
    turn.interactive = True
    pipeline.session_step(rt, turn)
    pipeline.record_step(rt, turn)
    return eng, rt, turn


def test_route_session_and_transcript_steps_alone_fill_the_turn(home):
    eng = open_engine(home, NO_RECALL)
    rt = eng.runtime
    turn = pipeline.start_turn(rt, eng.request("remember the milk", at=1_790_000_000_000))
    assert (turn.text, turn.at, turn.limit, turn.held, turn.session) == ("remember the milk", 1_790_000_000_000,
                                                                        NO_LIMIT, (), None)
    routed = pipeline.route_step(rt, turn)
    assert turn.route is routed and routed.key == "agent:main:main"
    turn.interactive = True
    session = pipeline.session_step(rt, turn)
    assert turn.session is session and session.key == routed.key
    assert eng.sessions_history(routed.key)["messages"] == []  # opening stores no message
    entry = pipeline.record_step(rt, turn)
    assert turn.entry is entry
    history = eng.sessions_history(routed.key)["messages"]
    assert [(m["role"], m["text"], m["messageId"]) for m in history] == [("user", "remember the milk",
                                                                          entry.entry_id)]


def test_start_turn_refuses_a_bad_request_before_anything_runs(home):
    eng = open_engine(home, NO_RECALL)
    with pytest.raises(InputError, match="message text is empty"):
        pipeline.start_turn(eng.runtime, eng.request("   "))
    assert eng.sessions_list() == []


def test_recall_step_alone_runs_active_memory_for_the_turn(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    eng.memory_remember("the locker code is 4711")
    rt = eng.runtime
    turn = pipeline.start_turn(rt, eng.request("what was the locker code again?"))
    pipeline.route_step(rt, turn)
    turn.interactive = True
    pipeline.session_step(rt, turn)
    recalled = pipeline.recall_step(rt, turn)
    assert turn.recalled is recalled and recalled.status == "ok" and "4711" in recalled.summary
    assert eng.sessions_history("agent:main:main")["messages"] == []  # recall runs before the message is stored


def test_context_step_alone_computes_the_model_input_and_writes_nothing(home):
    eng, rt, turn = opened(home)
    before = rt.store().get_session(turn.session.session_id)
    turn.recalled = RecallResult(status="ok", lane=1, past_question=False, summary="milk is in the fridge",
                                 elapsed_ms=3)
    context = reply.context_step(rt, turn)
    assert context.messages[-1]["role"] == "user"
    assert context.messages[-1]["content"].endswith("remember the milk")
    assert "milk is in the fridge" in context.messages[-1]["content"]  # the recall block, before the message
    after = rt.store().get_session(turn.session.session_id)
    assert (after.version, after.meta, after.message_count) == (before.version, before.meta, before.message_count)


def test_transcript_and_hooks_steps_alone(home):
    eng, rt, turn = opened(home)
    heard = []
    eng.subscribe(TurnCompleted, heard.append)
    reply.transcript_step(rt, turn, reply.ModelReply("Noted: milk."))
    history = eng.sessions_history("agent:main:main")["messages"]
    assert [(m["role"], m["text"]) for m in history] == [("user", "remember the milk"), ("assistant", "Noted: milk.")]
    result = MessageResult(turn.session.key, turn.session.session_id, turn.entry.entry_id, "user")
    event = pipeline.hooks_step(rt, turn, reply.TurnOutcome(reply="Noted: milk."), result)
    assert heard == [event]
    assert (event.session_key, event.turn_id, event.mode, event.reply) == ("agent:main:main", turn.entry.entry_id,
                                                                           "model", "Noted: milk.")


def completion(text="", query=None):
    """A plain answer, or (given a query) a memory_search tool call."""
    return model_replies.completion(text, calls=[("memory_search", {"query": query})] if query is not None else ())


def test_model_step_alone_runs_the_tools_for_the_turn(home):
    with ScriptedServer([completion("", query="locker"), completion("done")]) as server:
        config = {
            "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": 5000,
                                               "retries": 0, "models": {"scripted-1": {"contextWindow": 32768}}}}},
            "agents": {"defaults": {"model": {"primary": "local/scripted-1"}, "memorySearch": {"provider": "none"}}},
            "plugins": {"entries": {"active-memory": {"enabled": False}}},
        }
        eng = open_engine(home, config)
        eng.memory_remember("the locker code is 4711")
        rt = eng.runtime
        turn = pipeline.start_turn(rt, eng.request("what is the locker code?"))
        pipeline.route_step(rt, turn)
        turn.interactive = True
        pipeline.session_step(rt, turn)
        pipeline.record_step(rt, turn)
        turn.model = reply.session_model(rt, turn.session)
        assert not turn.index_checked and turn.answering == frozenset()
        answer = reply.model_step(rt, turn)
        assert answer.text == "done" and answer.tool_calls == [{"name": "memory_search", "isError": False}]
        # the tool ran for this turn: its search checked the index (once) and knew the answered message
        assert turn.index_checked and turn.answering == {turn.entry.entry_id}
        tool_result = server.requests[1].json()["messages"][-1]
        assert tool_result["role"] == "tool" and "4711" in tool_result["content"]


def test_a_turn_checks_the_memory_index_once_and_no_turn_checks_every_search(home):
    eng = open_engine(home, NO_RECALL)
    eng.memory_remember("the locker code is 4711")
    rt = eng.runtime
    turn = pipeline.start_turn(rt, eng.request("hi"))
    assert memory.search(rt, "locker", turn=turn)["results"] and turn.index_checked
    note = memory.workspace(rt) / "MEMORY.md"
    note.write_text(note.read_text() + "- the boat is called Quokkaboat\n")
    assert memory.search(rt, "Quokkaboat", turn=turn)["results"] == []  # checked once this turn already
    assert memory.search(rt, "Quokkaboat")["results"]  # no turn: every search checks for edits


def test_a_send_into_a_session_held_up_the_chain_is_refused(home):
    eng = open_engine(home, NO_RECALL)
    rt = eng.runtime
    target = eng.sessions_create(label="other")["key"]
    waiting = pipeline.start_turn(rt, eng.request("hi"))
    waiting.hold(target)
    nested = Turn.start(eng.request("relay"), rt.now(), within=waiting)
    assert nested.held == (target,)  # a turn another turn waits for inherits the chain
    with pytest.raises(InputError, match="would wait for itself"):
        eng.for_turn(waiting).sessions_send(target, "ping", timeout_seconds=5)
    with pytest.raises(InputError, match="would wait for itself"):
        send.sessions_send(rt, target, "ping", timeout_s=5, caller=None, turn=nested)
    # outside any turn nothing is held: the delivery goes through
    assert eng.sessions_send(target, "ping", timeout_seconds=0).status == "accepted"
    rt.background.wait(10)
    assert [m["text"] for m in eng.sessions_history(target)["messages"]] == ["ping"]


def test_the_credential_limit_travels_explicitly(home):
    eng = open_engine(home, NO_RECALL)
    eng.message("hello")
    other = eng.limited(Limit(agent_id="elsewhere"))
    assert other.runtime.store() is eng.runtime.store()  # a view: the same stores and state
    assert other.sessions_list() == [] and len(eng.sessions_list()) == 1  # nothing leaks back to the engine
    turn = pipeline.start_turn(other.runtime, eng.request("hi"))
    assert turn.limit == Limit(agent_id="elsewhere")
    assert eng.for_turn(turn).sessions_list() == []  # the turn's tools see what its caller may
    assert eng.limited(NO_LIMIT).runtime is eng.runtime


def test_context_package_writes_nothing_itself():
    """context/ computes; the session layer writes (sessions/compactions.py). The import-linter
    contract keeps session-writing modules out of context/; this keeps direct store writes out."""
    writes = re.compile(r"\.(transaction|update_session|insert_session|append_entry|delete_\w+)\(|transcript\.append\(")
    package = Path(__file__).resolve().parents[2] / "src" / "clawkeep" / "context"
    assert len(list(package.glob("*.py"))) >= 4  # the package itself, not an empty glob
    found = [f"{path.name}: {line.strip()}" for path in sorted(package.glob("*.py"))
             for line in path.read_text().splitlines() if writes.search(line)]
    assert found == []
