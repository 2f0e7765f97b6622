"""clawkeep.Client / AsyncClient against a real gateway over loopback HTTP: Engine's signatures and
result types, the gateway's errors as clawkeep exceptions, streaming, retries and transport failures."""

from __future__ import annotations

import asyncio
import inspect
import socket
from pathlib import Path

import pytest

import clawkeep
from clawkeep import Engine, api
from clawkeep.api.operations import OPERATIONS
from tests.helpers.gateway_process import GatewayThread
from tests.helpers.scripted_server import Reply, ScriptedServer, sse_data

COMMON = ["message", "sessions_list", "sessions_history", "sessions_search", "sessions_create", "sessions_reset",
          "sessions_fork", "session_status", "memory_search", "memory_get", "memory_remember", "memory_items",
          "memory_edit", "memory_delete", "memory_status", "memory_index", "recall", "status", "sessions_send",
          "sessions_timeline", "memory_refusals", "dreaming_status", "dreaming_review", "memory_correct",
          "memory_forget", "memory_undo"]


def model_config(server: ScriptedServer) -> dict:
    return {"models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": 5000,
                                               "retries": 0, "models": {"scripted-1": {"contextWindow": 32768}}}}},
            "agents": {"defaults": {"model": {"primary": "local/scripted-1"}, "memorySearch": {"provider": "none"}}},
            "plugins": {"entries": {"active-memory": {"enabled": False}}}}


@pytest.fixture
def gateway(home: Path):
    running = GatewayThread(home, background=False)
    yield running
    running.stop()
    running.engine.close()


@pytest.mark.parametrize("name", COMMON)
def test_methods_have_engines_names_arguments_and_result_types(name: str) -> None:
    ours, theirs = inspect.signature(getattr(clawkeep.Client, name)), inspect.signature(getattr(Engine, name))
    # `caller` is on every method a calling session may use (Engine has it where it filters by it)
    ours_names = [p for p in ours.parameters if p not in ("self", "stream", "caller")]
    theirs_names = list(theirs.parameters)
    if "inbound" in theirs_names:  # message(text, **inbound): the inbound keywords are Engine.request's
        theirs_names = list(inspect.signature(Engine.request).parameters)
    assert set(ours_names) <= set(theirs_names), f"{name}: {ours_names} vs {theirs_names}"
    positional = [p for p, v in ours.parameters.items() if v.kind == v.POSITIONAL_OR_KEYWORD]
    assert positional == [p for p, v in theirs.parameters.items() if v.kind == v.POSITIONAL_OR_KEYWORD][
        :len(positional)]
    assert eval(theirs.return_annotation, {"api": api}) == ours.return_annotation  # noqa: S307 - Engine's annotation


def test_results_equal_the_engines(gateway: GatewayThread) -> None:
    engine = gateway.engine
    with clawkeep.Client(gateway.url) as ck:
        sent = ck.message("I keep my bike in the blue shed", channel="telegram", sender="ada")
        assert isinstance(sent, api.MessageResult) and sent.session_key
        key = sent.session_key
        assert ck.sessions_list() == engine.sessions_list()
        assert ck.sessions_history(key) == engine.sessions_history(key)
        assert ck.sessions_search("blue shed") == engine.sessions_search("blue shed")
        assert ck.session_status(key) == engine.session_status(key)
        remembered = ck.memory_remember("My bike is a green Gazelle")
        assert isinstance(remembered, api.RememberResult)
        assert ck.memory_search("Gazelle", corpus="memory", limit=3) == engine.memory_search(
            "Gazelle", corpus="memory", limit=3)
        assert ck.memory_items() == engine.memory_items()
        item = ck.memory_items()[0]
        edited = ck.memory_edit(item.id, "My bike is a red Gazelle", item.text)
        assert edited.text == "My bike is a red Gazelle"
        assert ck.memory_get(ck.memory_search("Gazelle").results[0].path) == engine.memory_get(
            engine.memory_search("Gazelle").results[0].path)
        assert isinstance(ck.memory_delete(item.id), api.DeleteResult)
        thread = ck.sessions_create(label="desk")
        assert thread.key in {s.key for s in engine.sessions_list()}
        assert ck.sessions_fork(thread.key).key != thread.key
        assert isinstance(ck.sessions_reset(key), api.ResetResult)
        assert isinstance(ck.status(), api.EngineStatus) and isinstance(ck.memory_status(), api.MemoryStatus)
        assert isinstance(ck.recall("where is my bike?", session=key), api.RecallResult)


def test_a_calling_session_sees_what_the_engine_shows_it(gateway: GatewayThread) -> None:
    engine = gateway.engine
    mine = engine.message("hello from ada", channel="telegram", sender="ada").session_key
    engine.message("hello from bob", channel="telegram", sender="bob")
    with clawkeep.Client(gateway.url, session=mine) as ck:
        assert ck.sessions_list() == engine.sessions_list(caller=mine)
        assert ck.sessions_list(caller=None) == engine.sessions_list()  # per call: the operator
        with pytest.raises(clawkeep.ForbiddenError, match="operator"):
            ck.memory_items()


def test_errors_are_clawkeeps_with_the_gateways_message(gateway: GatewayThread) -> None:
    engine = gateway.engine
    with clawkeep.Client(gateway.url) as ck:
        with pytest.raises(clawkeep.NotFoundError) as missing:
            ck.sessions_history("agent:main:nope")
        with pytest.raises(clawkeep.NotFoundError) as direct:
            engine.sessions_history("agent:main:nope")
        assert str(missing.value) == str(direct.value)
        with pytest.raises(clawkeep.InputError, match="limit"):
            ck.memory_search("x", limit=0)
        with pytest.raises(clawkeep.InputError, match="unknown argument 'limt'"):
            ck.memory_search("x", limt=3)
        engine.memory_remember("The spare key is under the mat")
        item = engine.memory_items()[0]
        engine.memory_edit(item.id, "The spare key is with Ann")
        with pytest.raises(clawkeep.ConflictError):
            ck.memory_edit(item.id, "The spare key is in the car", item.text)
        first = ck.message("one", message_id="m-1")
        again = ck.message("two", message_id="m-1")
        assert again.conflict and again.session_key == first.session_key
        assert again.conflict == engine.message("three", message_id="m-1").conflict


def test_stream_yields_typed_events_sync_and_async(home: Path) -> None:
    with ScriptedServer() as server:
        chunk = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in ("Hello ", "there.")]
        chunk[-1]["choices"][0]["finish_reason"] = "stop"
        server.add(Reply(sse=sse_data(*chunk, "[DONE]")), Reply(sse=sse_data(*chunk, "[DONE]")))
        running = GatewayThread(home, model_config(server), background=False)
        try:
            with clawkeep.Client(running.url) as ck:
                events = list(ck.message("hi", stream=True))
            assert "".join(e.data for e in events if e.kind == "token") == "Hello there."
            assert events[-1].kind == "result" and isinstance(events[-1].data, api.MessageResult)
            assert events[-1].data.reply == "Hello there."

            async def streamed() -> list:
                async with clawkeep.AsyncClient(running.url) as ack:
                    got = [event async for event in ack.message_stream("again")]
                    history = await ack.sessions_history(got[-1].data.session_key)
                    return [got, history]

            got, history = asyncio.run(streamed())
            assert got[-1].data.reply == "Hello there." and isinstance(history, api.History)
            assert [m.text for m in history.messages][-2:] == ["again", "Hello there."]
        finally:
            running.stop()
            running.engine.close()


def test_async_client_runs_the_same_calls(gateway: GatewayThread) -> None:
    async def run() -> tuple:
        async with clawkeep.AsyncClient(gateway.url) as ck:
            sent = await ck.message("async hello")
            listed = await ck.sessions_list()
            with pytest.raises(clawkeep.NotFoundError):
                await ck.session_status("agent:main:missing")
            return sent, listed

    sent, listed = asyncio.run(run())
    assert listed == gateway.engine.sessions_list() and sent.session_key in {s.key for s in listed}


def test_a_refused_token_names_the_url(home: Path) -> None:
    running = GatewayThread(home, {"gateway": {"auth": {"token": "right-token-0123456789"}}}, background=False)
    try:
        with clawkeep.Client(running.url, token="wrong") as ck, pytest.raises(clawkeep.UnauthorizedError) as refused:
            ck.sessions_list()
        assert running.url in str(refused.value) and "token" in str(refused.value)
        with clawkeep.Client(running.url, token="right-token-0123456789") as ck:
            assert ck.sessions_list() == []
    finally:
        running.stop()
        running.engine.close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_gateway_that_is_down_or_a_wrong_url_is_a_clear_error(gateway: GatewayThread) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    with clawkeep.Client(down) as ck, pytest.raises(clawkeep.UnavailableError) as refused:
        ck.status()
    assert down in str(refused.value) and "running" in str(refused.value)
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    with clawkeep.Client(gateway.url + "/v1") as ck, pytest.raises(clawkeep.ClawkeepError) as wrong:
        ck.status()
    assert gateway.url + "/v1" in str(wrong.value)
    with pytest.raises(clawkeep.InputError, match="http://"):
        clawkeep.Client("127.0.0.1:8787")
    with ScriptedServer() as server, clawkeep.Client(server.url, timeout=0.5) as ck:
        server.add(Reply(delay=2, json={}))
        with pytest.raises(clawkeep.UnavailableError, match="timed out"):
            ck.memory_remember("x")


def test_retries_503_with_retry_after_and_reads_on_a_dropped_connection(gateway: GatewayThread) -> None:
    with clawkeep.Client(gateway.url) as real:
        status = real.status().to_json()
    with ScriptedServer() as server, clawkeep.Client(server.url) as ck:
        busy = {"error": {"code": "storage", "message": "busy"}}
        server.add(Reply(status=503, headers={"Retry-After": "0"}, json=busy), Reply(close=True), Reply(json=status))
        assert ck.status().to_json() == status and len(server.requests) == 3
        server.set_script([Reply(close=True), Reply(json={"results": []})])
        with pytest.raises(clawkeep.UnavailableError, match="/v1/memory/remember"):
            ck.memory_remember("a write is never sent twice")
        assert len(server.requests) == 4
        server.set_script([Reply(status=503, headers={"Retry-After": "3600"},
                                 json={"error": {"code": "storage", "message": "down for maintenance"}})])
        with pytest.raises(clawkeep.StorageError, match="down for maintenance"):
            ck.status()
        assert len(server.requests) == 5


def test_every_routed_operation_is_a_method() -> None:
    routed = {op.http.method_name(name) for name, op in OPERATIONS.items() if op.http is not None}
    assert routed <= set(dir(clawkeep.Client)) and routed <= set(dir(clawkeep.AsyncClient))
    assert set(COMMON) <= routed and routed <= set(dir(Engine))


def test_async_client_retries_a_503_with_retry_after(home: Path) -> None:
    with Engine.open(home=home) as engine:
        status = engine.memory_status().to_json()  # a real answer, replayed by the scripted server

    async def run(url: str) -> object:
        async with clawkeep.AsyncClient(url) as ck:
            return await ck.memory_status()

    with ScriptedServer() as server:
        busy = {"error": {"code": "storage", "message": "busy"}}
        server.add(Reply(status=503, headers={"Retry-After": "0"}, json=busy), Reply(json=status))
        got = asyncio.run(run(server.url))
        assert got.to_json() == status and len(server.requests) == 2
        assert server.requests[1].path == "/v1/memory/status"
