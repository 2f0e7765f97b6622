"""The HTTP gateway over real HTTP on loopback (SPEC G1, §P): every route with the same shapes as
the Engine and the CLI, errors as JSON with the listed statuses, visibility by header, tokens,
server-sent events with a scripted model, background work and metrics."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayProcess, GatewayThread
from tests.helpers.model_replies import model_config, read_sse, stream_chunks
from tests.helpers.scripted_server import Reply, ScriptedServer

JSON_TYPE = {"Content-Type": "application/json"}  # state changes say JSON, even without a body
NO_VECTORS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


@pytest.fixture
def gateway(home):
    running = GatewayThread(home, NO_VECTORS)
    yield running
    running.stop()


@pytest.fixture
def http(gateway):
    with gateway.client() as client:
        yield client


def send(http, text, **fields):
    response = http.post("/v1/messages", json={"text": text, **fields})
    assert response.status_code == 200, response.text
    return response.json()


# --- the routes -------------------------------------------------------------------------------
def test_message_routes_records_and_answers_like_the_cli(gateway, http, home):
    sent = send(http, "下周二我去上海出差", channel="telegram", sender="alice", messageId="tg-1")
    assert sent["sessionKey"] == "agent:main:main" and sent["mode"] == "record" and sent["messageId"] == "tg-1"
    again = send(http, "下周二我去上海出差", channel="telegram", sender="alice", messageId="tg-1")
    assert again["duplicate"] is True
    found = http.get("/v1/search", params={"q": "上海"}).json()
    assert [h["messageId"] for h in found["hits"]] == ["tg-1"]
    cli = run_cli(home, "sessions", "search", "上海", "--json")
    assert cli.code == 0 and cli.json() == found  # the CLI beside the gateway, on the same home
    history = http.get(f"/v1/sessions/{sent['sessionKey']}/history").json()
    assert [m["text"] for m in history["messages"]] == ["下周二我去上海出差"]
    listed = http.get("/v1/sessions").json()
    assert [s["key"] for s in listed] == ["agent:main:main"] and listed[0]["messageCount"] == 1
    status = http.get("/v1/sessions/agent:main:main").json()
    assert status["key"] == "agent:main:main" and status["sessionId"] == sent["sessionId"]


def test_thread_lifecycle_reset_fork_and_delivery_into_a_session(http):
    thread = http.post("/v1/sessions", json={"label": "planning"}).json()
    assert thread["kind"] == "dashboard" and thread["label"] == "planning"
    send(http, "budget is 5000 EUR", session=thread["key"])
    before = http.get(f"/v1/sessions/{thread['key']}/history").json()["messages"]
    reset = http.post(f"/v1/sessions/{thread['key']}/reset", headers=JSON_TYPE).json()
    assert reset["sessionKey"] == thread["key"] and reset["boundaryId"]
    assert http.get(f"/v1/sessions/{thread['key']}/history").json()["messages"] == []
    reopened = http.get(f"/v1/sessions/{thread['key']}/history", params={"messageId": before[0]["messageId"]})
    assert [m["text"] for m in reopened.json()["messages"]] == ["budget is 5000 EUR"]
    fork = http.post(f"/v1/sessions/{thread['key']}/fork", json={}).json()
    assert fork["key"] != thread["key"] and fork["kind"] == "dashboard"
    missing = http.post("/v1/messages", json={"text": "hi", "session": "agent:main:dashboard:nope"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_sessions_send_over_http_marks_the_message_as_inter_session(http):
    source = http.post("/v1/sessions", json={"label": "source"}).json()
    target = http.post("/v1/sessions", json={"label": "target"}).json()
    # under the default visibility (tree) one thread cannot see another: hidden, like a missing one
    hidden = http.post(f"/v1/sessions/{target['key']}/send", json={"message": "psst", "timeoutSeconds": 0},
                       headers={"X-Clawkeep-Session": source["key"]})
    assert hidden.status_code == 404
    sent = http.post(f"/v1/sessions/{target['key']}/send", json={"message": "the build is green", "timeoutSeconds": 0})
    assert sent.status_code == 200, sent.text
    assert sent.json()["status"] in ("accepted", "ok", "no_reply")
    texts = wait_for(lambda: [m["text"] for m in http.get(f"/v1/sessions/{target['key']}/history").json()["messages"]])
    assert any("the build is green" in t for t in texts)
    bad = http.post(f"/v1/sessions/{target['key']}/send", json={"message": "x", "timeoutSeconds": -1})
    assert bad.status_code == 422


def test_memory_routes_remember_search_read_edit_delete(http):
    stored = http.post("/v1/memory/remember", json={"text": "I prefer TypeScript over JavaScript"}).json()
    assert stored["status"] == "stored"
    refused = http.post("/v1/memory/remember", json={"text": "my password is hunter2"}).json()
    assert refused["status"] == "refused" and "password" in refused["reason"].lower()
    hits = http.get("/v1/memory/search", params={"q": "which language do I prefer", "mode": "keyword"}).json()
    assert hits["results"][0]["path"] == "MEMORY.md"
    page = http.get("/v1/memory/file", params={"path": "MEMORY.md"}).json()
    assert "TypeScript" in page["text"]
    outside = http.get("/v1/memory/file", params={"path": "../../etc/passwd"})
    assert outside.status_code == 400 and outside.json()["error"]["code"] == "invalid_input"
    items = http.get("/v1/memory/items").json()
    item_id = next(i["id"] for i in items if "TypeScript" in i["text"])
    edited = http.put(f"/v1/memory/items/{item_id}", json={"text": "I prefer Rust"}).json()
    assert edited["text"] == "I prefer Rust"
    assert "Rust" in http.get("/v1/memory/file", params={"path": "MEMORY.md"}).json()["text"]
    assert http.delete(f"/v1/memory/items/{item_id}", headers=JSON_TYPE).json()["deleted"] == item_id
    assert all(i["id"] != item_id for i in http.get("/v1/memory/items").json())
    assert http.get("/v1/memory/status").json()["workspaceExists"] is True


def test_recall_status_health_and_openapi(http):
    send(http, "my sister's name is Ana", channel="telegram", sender="alice")
    recalled = http.post("/v1/recall", json={"text": "what did I tell you about my sister?",
                                             "session": "agent:main:main"}).json()
    assert recalled["pastQuestion"] is True and recalled["status"] in ("ok", "none")
    status = http.get("/v1/status").json()
    assert status["sessions"] == 1 and status["gateway"]["inFlight"] == 0
    assert http.get("/v1/health").json()["ok"] is True
    spec = http.get("/openapi.json").json()
    paths = set(spec["paths"])
    for route in ("/v1/messages", "/v1/sessions", "/v1/sessions/{key}/history", "/v1/sessions/{key}/reset",
                  "/v1/sessions/{key}/fork", "/v1/search", "/v1/memory/search", "/v1/memory/file",
                  "/v1/memory/remember", "/v1/memory/items/{item_id}", "/v1/memory/status", "/v1/recall",
                  "/v1/status", "/v1/metrics"):
        assert route in paths, route
    message_body = spec["paths"]["/v1/messages"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert message_body["$ref"].endswith("MessageArgs")
    assert "messageId" in spec["components"]["schemas"]["MessageArgs"]["properties"]


# --- errors -----------------------------------------------------------------------------------
def test_bad_requests_are_clear_4xx_json_errors(gateway, http):
    malformed = http.post("/v1/messages", content=b'{"text": "hi",', headers={"Content-Type": "application/json"})
    assert malformed.status_code == 422 and "JSON" in malformed.json()["error"]["message"]
    unknown = http.post("/v1/messages", json={"text": "hi", "colour": "red"})
    assert unknown.status_code == 422 and "colour" in unknown.json()["error"]["message"]
    missing = http.post("/v1/messages", json={"channel": "cli"})
    assert missing.status_code == 422 and "text" in missing.json()["error"]["message"]
    empty = http.post("/v1/messages", json={"text": "   "})
    assert empty.status_code == 400 and "empty" in empty.json()["error"]["message"]
    huge = http.post("/v1/messages", content=b'{"text": "' + b"x" * (20 * 1024 * 1024) + b'"}',
                     headers={"Content-Type": "application/json"})
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "too_large"
    bad_limit = http.get("/v1/search", params={"q": "x", "limit": 99})
    assert bad_limit.status_code == 422 and "limit" in bad_limit.json()["error"]["message"]
    nowhere = http.get("/v1/nothing-here")
    assert nowhere.status_code == 404 and nowhere.json()["error"]["code"] == "not_found"
    assert http.get("/v1/sessions").json() == []  # nothing of the refused requests was stored


def test_integers_are_whole_numbers_kinds_are_known_and_the_caller_must_exist(http):
    """`limit=1.0` was taken as 1 while `limit=true` was a 422; a JSON `true` was a 1 s wait; an
    unknown kind listed nothing; POST /v1/sessions as a missing caller made a thread (200)."""
    for route, params in (("/v1/memory/search", {"q": "x", "limit": "1.0"}), ("/v1/search", {"q": "x", "limit": "1.0"}),
                          ("/v1/memory/file", {"path": "MEMORY.md", "from": "2.0"}),
                          ("/v1/sessions", {"recentMessages": "1e0"}),
                          ("/v1/memory/search", {"q": "x", "limit": "true"})):
        refused = http.get(route, params=params)
        assert refused.status_code == 422, (route, params, refused.text)
        message = refused.json()["error"]["message"]
        name = next(k for k in params if k not in ("q", "path"))
        assert message.startswith(f"{name}: ") and "whole number" in message, message
    assert http.get("/v1/memory/search", params={"q": "x", "limit": "1"}).status_code == 200
    lines = http.get("/v1/memory/file", params={"path": "MEMORY.md", "lines": 2001})
    assert lines.status_code == 422 and "lines" in lines.json()["error"]["message"]
    assert "2000" in lines.json()["error"]["message"]
    kind = http.get("/v1/sessions", params={"kind": "bogus"})
    assert kind.status_code == 422, kind.text
    assert "kind" in kind.json()["error"]["message"] and "'direct'" in kind.json()["error"]["message"]
    assert http.get("/v1/sessions", params={"kind": "dashboard"}).json() == []
    target = http.post("/v1/sessions", json={}).json()
    wait = http.post(f"/v1/sessions/{target['key']}/send", json={"message": "hi", "timeoutSeconds": True})
    assert wait.status_code == 422 and "timeoutSeconds" in wait.json()["error"]["message"], wait.text
    ghost = "agent:main:telegram:direct:ghost"
    created = http.post("/v1/sessions", json={}, headers={"X-Clawkeep-Session": ghost})
    elsewhere = http.get("/v1/search", params={"q": "x"}, headers={"X-Clawkeep-Session": ghost})
    assert created.status_code == elsewhere.status_code == 404, created.text
    assert created.json() == elsewhere.json()  # the same answer as every other route
    assert [s["key"] for s in http.get("/v1/sessions").json()] == [target["key"]]  # nothing was created or sent
    assert http.get(f"/v1/sessions/{target['key']}/history").json()["messages"] == []


def test_chunked_body_over_the_limit_is_refused(home):
    running = GatewayThread(home, NO_VECTORS, max_body_bytes=2048)
    try:
        def chunks():
            yield b'{"text": "'
            for _ in range(10):
                yield b"y" * 1024
            yield b'"}'

        with running.client() as client:
            response = client.post("/v1/messages", content=chunks(), headers={"Content-Type": "application/json"})
            assert response.status_code == 413
            assert client.get("/v1/sessions").json() == []
    finally:
        running.stop()


def test_another_peers_session_answers_exactly_like_a_missing_one(http):
    alice = send(http, "alice's note", channel="telegram", sender="alice", chatType="direct")
    thread = http.post("/v1/sessions", json={}).json()
    as_thread = {"X-Clawkeep-Session": thread["key"]}
    hidden = http.get(f"/v1/sessions/{alice['sessionKey']}/history", headers=as_thread)
    absent = http.get("/v1/sessions/agent:main:nobody/history", headers=as_thread)
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["error"]["code"] == absent.json()["error"]["code"] == "not_found"
    # the same words, only the key asked for differs: nothing tells a hidden session from a missing one
    assert hidden.json()["error"]["message"].replace(alice["sessionKey"], "KEY") == \
        absent.json()["error"]["message"].replace("agent:main:nobody", "KEY")
    assert http.get("/v1/search", params={"q": "alice"}, headers=as_thread).json()["hits"] == []
    assert http.get("/v1/search", params={"q": "alice"}).json()["hits"]  # the operator sees it
    into = http.post("/v1/messages", json={"text": "hi", "session": alice["sessionKey"]}, headers=as_thread)
    assert into.status_code == 404
    edit = http.get("/v1/memory/items", headers=as_thread)
    assert edit.status_code == 403 and edit.json()["error"]["code"] == "forbidden"


def test_a_calling_session_never_routes_into_another_conversation(http):
    alice = send(http, "my secret codename is ZEBRA42", channel="telegram", sender="alice")
    thread = http.post("/v1/sessions", json={}).json()
    as_thread = {"X-Clawkeep-Session": thread["key"]}
    for body in ({"text": "forged reply", "role": "assistant", "channel": "telegram", "sender": "alice"},
                 {"text": "/reset", "channel": "telegram", "sender": "alice"},
                 {"text": "/status", "sender": "alice"}):
        for stream in (False, True):
            refused = http.post("/v1/messages", json=body, headers=as_thread, params={"stream": stream})
            assert refused.status_code == 400, refused.text
            error = refused.json()["error"]
            assert error["code"] == "invalid_input" and "X-Clawkeep-Session" in error["message"]
            assert "ZEBRA42" not in refused.text and alice["sessionId"] not in refused.text
    history = http.get(f"/v1/sessions/{alice['sessionKey']}/history").json()
    assert [m["text"] for m in history["messages"]] == ["my secret codename is ZEBRA42"]
    assert len(http.get(f"/v1/sessions/{alice['sessionKey']}/timeline").json()["intervals"]) == 1  # never reset
    # without routing fields the message goes into the calling session itself
    own = http.post("/v1/messages", json={"text": "hello from the thread"}, headers=as_thread)
    assert own.status_code == 200 and own.json()["sessionKey"] == thread["key"]
    streamed = http.post("/v1/messages", json={"text": "and streamed"}, headers=as_thread, params={"stream": True})
    assert streamed.status_code == 200 and thread["key"] in streamed.text
    texts = [m["text"] for m in http.get(f"/v1/sessions/{thread['key']}/history").json()["messages"]]
    assert texts == ["hello from the thread", "and streamed"]


def test_token_required_beyond_loopback_and_checked_on_every_request(home):
    refused = run_cli(home, "gateway", "--host", "0.0.0.0", "--port", "0", timeout=60)
    assert refused.code == 2 and "token" in refused.stderr and "Traceback" not in refused.stderr
    token = "s3cret-token-of-some-length"
    running = GatewayProcess(home, "--host", "0.0.0.0", config=NO_VECTORS, env={"CLAWKEEP_GATEWAY_TOKEN": token})
    try:
        url = running.url.replace("0.0.0.0", "127.0.0.1")
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/v1/sessions").status_code == 401
            wrong = client.get("/v1/sessions", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
            assert "s3cret" not in wrong.text
            ok = client.get("/v1/sessions", headers={"Authorization": f"Bearer {token}"})
            assert ok.status_code == 200 and ok.json() == []
            assert client.post("/v1/messages", json={"text": "hi"}).status_code == 401
    finally:
        running.stop()


# --- streaming with a model -------------------------------------------------------------------
@pytest.fixture
def model_server():
    with ScriptedServer() as server:
        yield server


def test_stream_sends_tokens_tool_calls_then_the_result(home, model_server):
    call = [{"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "memory_search", "arguments": '{"query": "tea"}'}}]
    model_server.add(stream_chunks("<think>plan 7781</think>", calls=call),
                     stream_chunks("You drink ", "green tea."))
    running = GatewayThread(home, model_config(model_server))
    try:
        with running.client() as http:
            http.post("/v1/memory/remember", json={"text": "I drink green tea every morning"})
            with http.stream("POST", "/v1/messages", params={"stream": "true"}, json={"text": "what do I drink?"}) as r:
                assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
                events = read_sse(r)
            kinds = [k for k, _ in events]
            assert kinds[-1] == "result" and "tool_call" in kinds and kinds.index("tool_call") < kinds.index("token")
            assert "".join(d["text"] for k, d in events if k == "token") == "You drink green tea."
            assert "7781" not in json.dumps(events)
            result = events[-1][1]
            assert result["reply"] == "You drink green tea." and result["toolCalls"][0]["name"] == "memory_search"
            history = http.get(f"/v1/sessions/{result['sessionKey']}/history").json()["messages"]
            assert [m["text"] for m in history] == ["what do I drink?", "You drink green tea."]
            bad = http.post("/v1/messages", params={"stream": "true"}, json={"text": " "})
            assert bad.status_code == 400 and bad.headers["content-type"].startswith("application/json")
    finally:
        running.stop()


def test_a_provider_error_mid_stream_is_an_error_event_and_the_message_is_kept(home, model_server):
    model_server.add(Reply(status=500, json={"error": {"message": "boom"}}))
    running = GatewayThread(home, model_config(model_server))
    try:
        with running.client() as http:
            with http.stream("POST", "/v1/messages?stream=true", json={"text": "hello"}) as r:
                events = read_sse(r)
            assert events[-1][0] == "error" and "boom" in events[-1][1]["error"]["message"]
            assert [m["text"] for m in http.get("/v1/sessions/agent:main:main/history").json()["messages"]] == \
                ["hello"]
    finally:
        running.stop()


# --- background work and metrics --------------------------------------------------------------
def wait_for(predicate, timeout=20.0, every=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


def test_watcher_reindexes_an_edited_note_without_a_per_search_check(home):
    running = GatewayThread(home, NO_VECTORS)
    try:
        with running.client() as http:
            http.post("/v1/memory/remember", json={"text": "The spare key is under the blue pot"})
            wait_for(lambda: http.get("/v1/status").json()["gateway"]["background"][0].get("runs"))
            note = home / "workspace" / "memory" / "2026-02-03.md"
            note.write_text("- The kayak is stored in the boathouse\n")
            found = wait_for(lambda: http.get("/v1/memory/search", params={"q": "kayak boathouse"}).json()["results"])
            assert found[0]["path"] == "memory/2026-02-03.md"
    finally:
        running.stop()


def test_reset_clock_rolls_over_an_idle_session_and_writes_its_excerpt(home):
    config = {**NO_VECTORS, "session": {"reset": {"mode": "idle", "idleMinutes": 1}},
              "gateway": {"clockSeconds": 0.2}}
    running = GatewayThread(home, config)
    try:
        with running.client() as http:
            old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 300))
            send(http, "we picked the Lisbon venue", at=old)
            wait_for(lambda: http.get("/v1/sessions/agent:main:main/history").json()["messages"] == [])
            # the excerpt is written by the session-memory hook right after the rollover commits
            notes = home / "workspace" / "memory"
            wait_for(lambda: any("Lisbon" in p.read_text() for p in notes.glob("*.md")))
            jobs = http.get("/v1/status").json()["gateway"]["background"]
            clock = next(j for j in jobs if j["name"] == "reset-clock")
            assert clock["ok"] is True
    finally:
        running.stop()


def test_every_response_carries_a_request_id_echoed_or_minted(http):
    given = http.get("/v1/status", headers={"X-Request-Id": "abc123"})
    assert given.headers["x-request-id"] == "abc123"
    minted = {http.get("/v1/status").headers["x-request-id"] for _ in range(3)}
    assert len(minted) == 3 and all(len(i) == 12 for i in minted)
    missing = http.get("/v1/sessions/agent:main:nope/history")  # errors carry it too
    assert missing.status_code == 404 and missing.headers["x-request-id"]


def test_metrics_count_turns_compactions_and_requests(home):
    running = GatewayThread(home, NO_VECTORS)
    try:
        with running.client() as http:
            for i in range(3):
                send(http, f"note number {i}")
            http.post("/v1/memory/remember", json={"text": "I drink tea"})
            http.post("/v1/memory/remember", json={"text": "I quit tea, now I drink coffee"})
            text = http.get("/v1/metrics").text
            assert 'clawkeep_events_total{name="turns"} 3.0' in text
            assert 'clawkeep_http_requests_total{method="POST",route="/v1/messages",status="200"} 3.0' in text
            assert "clawkeep_supersession_rate 0.5" in text and "clawkeep_turn_seconds_count" in text
            metrics = http.get("/v1/status").json()["metrics"]
            assert metrics["turns"] == 3 and metrics["supersessionRate"] == 0.5
    finally:
        running.stop()
    # the counters were flushed at shutdown: a new process reports the same figures
    status = run_cli(home, "status", "--json")
    assert status.json()["metrics"]["turns"] == 3


def test_dreaming_schedule_runs_in_the_gateway(home):
    config = {**NO_VECTORS, "plugins": {"entries": {"memory-core": {"config": {"dreaming": {
        "enabled": True, "frequency": "* * * * *"}}}}}}
    running = GatewayThread(home, config)
    try:
        with running.client() as http:
            http.post("/v1/memory/remember", json={"text": "The team meets on Thursdays"})

            def swept():
                jobs = http.get("/v1/status").json()["gateway"]["background"]
                job = next(j for j in jobs if j["name"] == "dreaming")
                return job if job.get("result") else None

            job = wait_for(swept, timeout=60)
            assert job["ok"] is True and job["result"]["status"] == "ok"
            assert (home / "workspace" / "DREAMS.md").is_file()
    finally:
        running.stop()



def test_warm_up_freezes_the_start_up_objects_and_the_gateway_keeps_serving(home):
    running = GatewayProcess(home, config=NO_VECTORS)
    try:
        running.wait_warm()
        with running.client() as http:
            warm = next(j for j in http.get("/v1/status").json()["gateway"]["background"] if j["name"] == "warm-up")
            assert warm["ok"] and warm["result"]["frozenObjects"] > 10_000  # modules, config, index, rules
            http.post("/v1/memory/remember", json={"text": "The spare key is under the blue pot"})
            assert send(http, "where is the spare key?")["sessionKey"]  # work after the freeze goes on as before
            found = http.get("/v1/memory/search", params={"q": "spare key"}).json()["results"]
            assert found and "blue pot" in found[0]["snippet"]
    finally:
        running.stop()


# --- QA regressions ---------------------------------------------------------------------------
OVERFLOW = {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                                 "resulted in 9000 tokens.", "type": "invalid_request_error",
                      "code": "context_length_exceeded"}}


def test_context_overflow_after_the_message_is_stored_is_an_error_event_or_a_502(home, model_server):
    # every call overflows, the one after the engine's hard compaction too
    model_server.set_script(lambda request: Reply(status=400, json=OVERFLOW))
    running = GatewayThread(home, model_config(model_server))
    try:
        with running.client() as http:
            with http.stream("POST", "/v1/messages?stream=true", json={"text": "first"}) as r:
                assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
                events = read_sse(r)
            assert events[-1][0] == "error" and events[-1][1]["error"]["code"] == "context_overflow"
            plain = http.post("/v1/messages", json={"text": "second"})
            # 502 as for any provider failure: never 413, which reads as "body refused, nothing kept"
            assert plain.status_code == 502 and plain.json()["error"]["code"] == "context_overflow"
            assert "saved" in plain.json()["error"]["message"]
            texts = [m["text"] for m in http.get("/v1/sessions/agent:main:main/history").json()["messages"]]
            assert texts == ["first", "second"]
    finally:
        running.stop()


def test_a_body_that_is_not_utf8_or_nested_too_deep_is_a_422_naming_the_body(http):
    for raw, words in ((b'{"text": "\xff\xfe"}', ("body", "UTF-8", "0xff")),
                       (b"[" * 100_000 + b"]" * 100_000, ("body", "nested"))):
        answer = http.post("/v1/messages", content=raw, headers={"Content-Type": "application/json"})
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["code"] == "invalid_input" and all(w in error["message"] for w in words), error
    assert http.get("/v1/sessions").json() == []


def test_unknown_keys_unknown_query_parameters_and_loose_booleans_are_refused(http):
    send(http, "hello")
    for route in ("reset", "fork"):
        bogus = http.post(f"/v1/sessions/agent:main:main/{route}", json={"bogus": 1})
        assert bogus.status_code == 422 and "bogus: is not a known field" in bogus.json()["error"]["message"]
    assert http.post("/v1/sessions/agent:main:main/reset", json={}).status_code == 200
    assert http.post("/v1/sessions/agent:main:main/reset", headers=JSON_TYPE).status_code == 200
    bare = http.post("/v1/sessions/agent:main:main/reset")  # no Content-Type: a form could forge it (415)
    assert bare.status_code == 415 and "Content-Type: application/json" in bare.json()["error"]["message"]
    for loose in ("yes", 1, "true"):
        refused = http.post("/v1/sessions", json={"incognito": loose})
        assert refused.status_code == 422, refused.text
        assert "incognito: must be true or false" in refused.json()["error"]["message"]
    assert all(s["kind"] != "dashboard" for s in http.get("/v1/sessions").json())  # no thread was created
    dreaming = http.put("/v1/dreaming", json={"enabled": "true"})
    assert dreaming.status_code == 422 and "enabled" in dreaming.json()["error"]["message"]
    assert http.get("/v1/dreaming").json()["enabled"] is False
    unknown = http.get("/v1/search", params={"q": "x", "unknown": "1"})
    message = unknown.json()["error"]["message"]
    assert unknown.status_code == 422 and "unknown: is not a query parameter" in message and "limit" in message
    assert http.get("/v1/sessions", params={"limt": 5}).status_code == 422
    assert http.get("/v1/search", params={"q": "x", "limit": 3}).status_code == 200
    for bad in ("nan", "inf", "2", "x"):
        score = http.get("/v1/memory/search", params={"q": "x", "minScore": bad})
        assert score.status_code == 422 and "minScore: must be a number between 0 and 1" in \
            score.json()["error"]["message"], score.text


def test_at_takes_epoch_ms_and_errors_name_the_json_field(http):
    at = int(time.time() * 1000) - 3_600_000
    sent = send(http, "an hour ago", at=at)
    stored = http.get(f"/v1/sessions/{sent['sessionKey']}/history").json()["messages"][0]
    assert stored["text"] == "an hour ago" and stored["timestamp"].startswith(
        time.strftime("%Y-%m-%dT%H:%M", time.gmtime(at / 1000)))
    for bad in ("2300-01-01T00:00:00Z", "yesterday", 10**15):
        refused = http.post("/v1/messages", json={"text": "x", "at": bad})
        message = refused.json()["error"]["message"]
        assert refused.status_code == 400 and message.startswith("at ") and "--at" not in message, message
    for not_a_time in (True, 1.5):
        assert http.post("/v1/messages", json={"text": "x", "at": not_a_time}).status_code == 422


def test_health_is_open_but_tells_nothing_and_docs_need_no_cdn(home):
    from clawkeep.config.gateway import GatewayAuthConfig

    running = GatewayThread(home, NO_VECTORS, auth=GatewayAuthConfig(token="a-token-of-enough-length"))
    try:
        with running.client() as http:
            assert http.get("/v1/status").status_code == 401
            health = http.get("/v1/health")
            # only liveness and a count: the background warm-up may be in flight at this moment
            assert health.status_code == 200 and sorted(health.json()) == ["inFlight", "ok"]
            assert health.json()["ok"] is True and isinstance(health.json()["inFlight"], int)
            assert http.get("/openapi.json").json()["info"]["title"] == "clawkeep gateway"
            for page in ("/docs", "/redoc"):
                answer = http.get(page)
                assert answer.status_code == 404 and "cdn.jsdelivr" not in answer.text
    finally:
        running.stop()


def test_gateway_on_a_busy_port_says_so_before_anything_runs(home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = run_cli(home, "gateway", "--port", str(port), timeout=60)
    assert busy.code == 1, (busy.code, busy.stderr)
    assert f"error: cannot listen on 127.0.0.1:{port}" in busy.stderr and "--port" in busy.stderr
    assert "in use" in busy.stderr and busy.stdout == ""
    assert "gateway ready" not in busy.stderr and "warm-up" not in busy.stderr and "Errno" not in busy.stderr


def test_gateway_settings_errors_name_the_flag_or_variable_without_a_pydantic_dump(home):
    import os
    import subprocess
    import sys

    cases = [(["--port", "70000"], {}, "--port 70000"), (["--port", "-1"], {}, "--port -1"),
             (["--host", "not a host!"], {}, "--host"),
             (["--host", "0.0.0.0"], {"CLAWKEEP_GATEWAY_TOKEN": "short"}, "CLAWKEEP_GATEWAY_TOKEN")]
    for args, env, named in cases:
        environment = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_GATEWAY_TOKEN")}
        proc = subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(home), "gateway", *args],
                              capture_output=True, text=True, timeout=60, env={**environment, **env, "COLUMNS": "300"})
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (args, proc.stderr)
        assert lines[0].startswith(f"error: {named}"), lines
        for noise in ("pydantic", "validation error", "type=", "auth.token", "short"):
            assert noise not in lines[0].replace("CLAWKEEP_GATEWAY_TOKEN", ""), (noise, lines)


def test_session_previews_are_redacted_over_http(http):
    """QA: `GET /v1/sessions?preview=true&recentMessages=2` showed credentials in clear text."""
    send(http, "my aws key AKIAIOSFODNN7EXAMPLE ok")
    send(http, "password: hunter2secret")
    listed = http.get("/v1/sessions", params={"preview": "true", "recentMessages": 2})
    assert listed.status_code == 200
    assert "AKIAIOSFODN" not in listed.text and "hunter2secret" not in listed.text and "[REDACTED]" in listed.text
    assert len(listed.json()[0]["recentMessages"]) == 2
