"""Credentials on the MCP HTTP transport, and sandboxed callers declared per credential and per
MCP server (issue 28 item 1, issue 33 item 6): from outside, over real HTTP and the MCP client."""

from __future__ import annotations

import json

import httpx
import pytest

from clawkeep import Engine
from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayThread
from tests.helpers.mcp_client import http_server, over_http, over_stdio, payload
from tests.helpers.model_replies import completion, last_message, model_config, read_sse, stream_chunks
from tests.helpers.scripted_server import ScriptedServer

ALICE = "agent:main:telegram:direct:alice"
BOB = "agent:main:telegram:direct:bob"
BASE = {"session": {"dmScope": "per-channel-peer"}, "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def _home(tmp_path, **tools_visibility):
    home = tmp_path / "home"
    home.mkdir()
    config = json.loads(json.dumps(BASE))
    if tools_visibility:
        config["tools"] = {"sessions": {"visibility": tools_visibility["level"]}}
        config["agents"]["defaults"]["sandbox"] = {"sessionToolsVisibility": tools_visibility["sandbox"]}
    (home / "clawkeep.json5").write_text(json.dumps(config))
    with Engine.open(home=home) as eng:
        eng.message("alice was here", channel="telegram", sender="alice")
        eng.message("bob was here", channel="telegram", sender="bob")
    return home


def _token(home, name, scope, *extra):
    made = run_cli(home, "tokens", "create", name, "--scope", scope, "--json", *extra)
    assert made.code == 0, made.stderr
    return made.json()["token"]


def test_mcp_http_accepts_stored_tokens_with_their_scope_and_refuses_revoked_ones(tmp_path):
    home = _home(tmp_path)
    alice, op = _token(home, "alice", "peer:telegram:alice"), _token(home, "op", "operator")

    async def work(session):
        listed = await session.call_tool("sessions_list", {})
        hidden = await session.call_tool("sessions_history", {"sessionKey": BOB})
        created = await session.call_tool("sessions_create", {"label": "x"})
        return payload(listed), hidden, created

    with http_server(home) as (url, _):
        as_alice, hidden, alice_created = over_http(url, work, headers={"Authorization": f"Bearer {alice}"})
        as_operator, _, operator_created = over_http(url, work, headers={"Authorization": f"Bearer {op}"})
        anonymous = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                               headers={"Accept": "application/json, text/event-stream"})
        assert run_cli(home, "tokens", "revoke", "alice").code == 0
        revoked = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Accept": "application/json, text/event-stream",
                                      "Authorization": f"Bearer {alice}"})
    assert [s["key"] for s in as_alice] == [ALICE]
    assert hidden.is_error and "bob was here" not in hidden.content[0].text
    assert {ALICE, BOB} <= {s["key"] for s in as_operator}
    assert alice_created.is_error and "runs as its one session" in alice_created.content[0].text
    assert not operator_created.is_error
    assert anonymous.status_code == 401  # tokens exist: a credential is required, even on loopback
    assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]["message"]


@pytest.mark.parametrize(("sandbox", "sandboxed_sees_bob"), [("spawned", False), ("all", True)])
def test_a_sandboxed_token_is_held_to_sandbox_session_tools_visibility(tmp_path, sandbox, sandboxed_sees_bob):
    home = _home(tmp_path, level="agent", sandbox=sandbox)
    free = _token(home, "free", "peer:telegram:alice")
    boxed = _token(home, "boxed", "peer:telegram:alice", "--sandboxed")
    assert [t["sandboxed"] for t in run_cli(home, "tokens", "list", "--json").json()] == [False, True]
    running = GatewayThread(home, None, background=False)
    try:
        with running.client() as client:
            def keys(secret):
                response = client.get("/v1/sessions", headers={"Authorization": f"Bearer {secret}"})
                assert response.status_code == 200, response.text
                return {s["key"] for s in response.json()}

            assert keys(free) == {ALICE, BOB}  # visibility "agent": a peer sees its agent's sessions
            assert (BOB in keys(boxed)) is sandboxed_sees_bob
            history = client.get(f"/v1/sessions/{BOB}/history", headers={"Authorization": f"Bearer {boxed}"})
            assert history.status_code == (200 if sandboxed_sees_bob else 404)
    finally:
        running.stop()


def test_a_sandboxed_mcp_server_is_held_to_sandbox_session_tools_visibility(tmp_path):
    home = _home(tmp_path, level="agent", sandbox="spawned")

    async def work(session):
        return payload(await session.call_tool("sessions_list", {}))

    free = over_stdio(home, work, "--session", ALICE)
    boxed = over_stdio(home, work, "--session", ALICE, "--sandboxed")
    assert {s["key"] for s in free} == {ALICE, BOB}
    assert [s["key"] for s in boxed] == [ALICE]


def test_streamed_messages_take_the_same_credentials(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with ScriptedServer() as model:
        model.add(stream_chunks("hi ", "alice"))
        config = {**model_config(model), "session": {"dmScope": "per-channel-peer"}}
        running = GatewayThread(home, config, background=False)
        try:
            running.engine.message("bob's secret plan zqx-stream-bob", channel="telegram", sender="bob",
                                   role="assistant")  # recorded without a model call
            alice = running.engine.tokens_create("alice", "peer:telegram:alice")["token"]
            gone = running.engine.tokens_create("gone", "peer:telegram:alice")["token"]
            running.engine.tokens_revoke("gone")
            with running.client() as http:
                def stream(headers, **body):
                    with http.stream("POST", "/v1/messages", params={"stream": "true"},
                                     json={"text": "hello", **body}, headers=headers) as response:
                        return response.status_code, response.headers["content-type"], response.read().decode()

                for headers in ({}, {"Authorization": f"Bearer {gone}"}, {"Authorization": "Bearer ck_wrong"}):
                    status, kind, text = stream(headers)
                    assert status == 401 and kind.startswith("application/json"), text
                status, _, text = stream({"Authorization": f"Bearer {alice}"}, session=BOB)
                assert status == 404 and "zqx-stream-bob" not in text
                with http.stream("POST", "/v1/messages", params={"stream": "true"}, json={"text": "hello"},
                                 headers={"Authorization": f"Bearer {alice}"}) as response:
                    assert response.status_code == 200
                    events = read_sse(response)
            assert events[-1][0] == "result" and events[-1][1]["sessionKey"] == ALICE
            assert events[-1][1]["reply"] == "hi alice" and "zqx-stream-bob" not in json.dumps(events)
            assert len(running.engine.sessions_history(BOB).messages) == 1  # the refused streams wrote nothing
        finally:
            running.stop()


def test_the_models_tools_in_a_streamed_turn_run_as_the_sandboxed_caller(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    call = [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "sessions_list", "arguments": "{}"}}]
    with ScriptedServer() as model:
        for _ in range(2):  # one turn per token: a sessions_list call, then the answer
            model.add(stream_chunks("", calls=call), stream_chunks("done"))
        config = {**model_config(model), "session": {"dmScope": "per-channel-peer"},
                  "tools": {"sessions": {"visibility": "agent"}}}
        config["agents"]["defaults"]["sandbox"] = {"sessionToolsVisibility": "spawned"}
        running = GatewayThread(home, config, background=False)
        try:
            running.engine.message("bob's note", channel="telegram", sender="bob", role="assistant")
            boxed = running.engine.tokens_create("boxed", "peer:telegram:alice", sandboxed=True)["token"]
            free = running.engine.tokens_create("free", "peer:telegram:alice")["token"]
            with running.client() as http:
                for secret in (boxed, free):
                    with http.stream("POST", "/v1/messages", params={"stream": "true"}, json={"text": "who?"},
                                     headers={"Authorization": f"Bearer {secret}"}) as response:
                        assert response.status_code == 200
                        assert read_sse(response)[-1][0] == "result"
        finally:
            running.stop()
    tool_results = [json.loads(r.body)["messages"][-1] for r in model.requests[1::2]]
    assert all(m["role"] == "tool" for m in tool_results)
    assert BOB not in tool_results[0]["content"]  # sandboxed: its own tree only
    assert BOB in tool_results[1]["content"]  # the same session unsandboxed sees its agent


@pytest.mark.parametrize("wait_s", [30, 0])
def test_a_sessions_send_turn_runs_under_the_senders_sandboxed_credential_waited_or_not(tmp_path, wait_s):
    """The target's turn (its model's tools) carries the sending credential's limit, whether the
    sender waits for the reply or fires and forgets (`timeoutSeconds: 0`)."""
    home = tmp_path / "home"
    home.mkdir()
    call = ("sessions_list", {})
    with ScriptedServer() as model:
        model.add(completion(calls=[call]), completion("done"))
        config = {**model_config(model), "session": {"dmScope": "per-channel-peer"},
                  "tools": {"sessions": {"visibility": "agent"}}}
        config["agents"]["defaults"]["sandbox"] = {"sessionToolsVisibility": "spawned"}
        running = GatewayThread(home, config, background=False)
        try:
            for sender in ("alice", "bob"):  # recorded without a model call
                running.engine.message(f"{sender} was here", channel="telegram", sender=sender, role="assistant")
            boxed = running.engine.tokens_create("boxed", "agent:main", sandboxed=True)["token"]
            with running.client() as http:
                sent = http.post(f"/v1/sessions/{ALICE}/send", json={"message": "who is around?",
                                                                     "timeoutSeconds": wait_s},
                                 headers={"Authorization": f"Bearer {boxed}"})
                assert sent.status_code == 200, sent.text
                assert sent.json()["status"] == ("ok" if wait_s else "accepted"), sent.text
            running.engine.runtime.background.wait()  # the fire-and-forget turn has ended
        finally:
            running.stop()
    tool_result = last_message(model.requests[1])
    assert tool_result["role"] == "tool" and ALICE in tool_result["content"]
    assert BOB not in tool_result["content"]  # sandboxed: alice's own tree, not the agent's sessions
