"""Caller credentials over real HTTP (issue 28 item 1, item 5's credential part; issue 33 item 6).

The routes are enumerated from the gateway's own FastAPI app, so a new route is covered without
editing this file. Every route is asked with no credential, a wrong token, a revoked token, an
expired token, another peer's token, a session token naming an outside session, and the operator:
the status and the error JSON are checked, no response to peer A holds peer B's markers, and no
refused request changes anything stored.
"""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest
from fastapi.routing import APIRoute

from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayProcess, GatewayThread

CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}, "session": {"dmScope": "per-channel-peer"}}
BOB_MESSAGE_MARKER = "zqxbobmsg" + uuid.uuid4().hex[:8]
BOB_MEMORY_MARKER = "zqxbobmem" + uuid.uuid4().hex[:8]
ALICE_KEY = "agent:main:telegram:direct:alice"
BOB_KEY = "agent:main:telegram:direct:bob"
MISSING_KEY = "agent:main:telegram:direct:nobody"
# Meaningful bodies for the routes that take one; a new route gets `{}` (its validation answers).
BODIES = {
    ("POST", "/v1/messages"): {"text": "hello"},
    ("POST", "/v1/memory/remember"): {"text": "Alice likes green tea"},
    ("POST", "/v1/sessions"): {"label": "x"},
    ("POST", "/v1/sessions/{key:path}/send"): {"message": "hi", "timeoutSeconds": 0},
    ("PUT", "/v1/memory/items/{item_id}"): {"text": "changed"},
    ("PUT", "/v1/dreaming"): {"enabled": False},
    ("POST", "/v1/recall"): {"text": "what do I like", "session": BOB_KEY},
    ("POST", "/v1/tokens"): {"name": "made-by-caller", "scope": "operator"},
}
QUERY = {"q": BOB_MESSAGE_MARKER, "path": "MEMORY.md"}
JSON = {"Content-Type": "application/json"}  # the browser guard wants it on every DELETE and body-less POST


@pytest.fixture(scope="module")
def world(tmp_path_factory, request):
    """One gateway for the route sweeps (module-wide: it is asked ~250 times per credential). Under
    --engine-backend postgres it gets its own schemas, as the per-test fixture gives each test."""
    with pytest.MonkeyPatch.context() as patch:
        prefix = None
        if request.config.getoption("--engine-backend") == "postgres":
            prefix = "s" + uuid.uuid4().hex[:12]
            patch.setenv("CLAWKEEP_STORAGE_URL", request.getfixturevalue("pgvector_url"))
            patch.setenv("CLAWKEEP_STORAGE_SCHEMA", prefix)
        yield from _world(tmp_path_factory)
        if prefix is not None:
            _drop_schemas(request.getfixturevalue("pgvector_url"), prefix)


def _drop_schemas(url, prefix):
    import psycopg  # noqa: PLC0415 - PostgreSQL runs only

    with psycopg.connect(url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
                                    (prefix, prefix + "\\_%")).fetchall():
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def _world(tmp_path_factory):
    home = tmp_path_factory.mktemp("security") / "home"
    home.mkdir()
    running = GatewayThread(home, CONFIG, background=False)
    engine = running.engine
    engine.message(f"my locker code is {BOB_MESSAGE_MARKER}", channel="telegram", sender="bob")
    engine.message("hello from alice", channel="telegram", sender="alice")
    engine.memory_remember(f"Bob's code word is {BOB_MEMORY_MARKER}", caller=BOB_KEY)
    item = next(i for i in engine.memory_items() if BOB_MEMORY_MARKER in i.text)
    tokens = {name: engine.tokens_create(name, scope, expires=expires)["token"] for name, scope, expires in [
        ("op", "operator", None), ("alice", "peer:telegram:alice", None), ("bob", "peer:telegram:bob", None),
        ("alice-session", f"session:{ALICE_KEY}", None), ("revoked", "peer:telegram:alice", None),
        ("expired", "peer:telegram:alice", "1s")]}
    engine.tokens_revoke("revoked")
    time.sleep(1.1)  # the 1 s token expires
    yield {"gw": running, "home": home, "tokens": tokens, "item": item.id}
    running.stop()


def _app(running):
    return running.server.config.app


def _routes(app):
    for route in app.routes:
        if isinstance(route, APIRoute):
            for method in sorted(route.methods - {"HEAD"}):
                yield method, route


def _concrete(path, key, item):
    path = path.replace("{key:path}", key).replace("{item_id}", item).replace("{name}", "bob")
    return path.replace("{rest:path}", "no-such-route")


def _request(client, method, route, key, item, headers):
    query = {p.alias: QUERY[p.alias] for p in route.dependant.query_params
             if p.alias in QUERY and p.field_info.is_required()}
    body = BODIES.get((method, route.path), {}) if method in ("POST", "PUT") else None
    headers = {"Content-Type": "application/json", **headers}  # what the browser guard asks of any state change
    return client.request(method, _concrete(route.path, key, item), params=query, json=body, headers=headers)


def _guarded(gw, route):
    return any(d.call == gw.gateway._authorised for d in route.dependant.dependencies)


def _takes_caller(route):
    pending = list(route.dependant.dependencies)
    while pending:
        dep = pending.pop()
        if getattr(dep.call, "__name__", "") == "_calling_session":
            return True
        pending.extend(dep.dependencies)
    return False


def _error_shape(response):
    data = response.json()
    assert set(data) == {"error"} and set(data["error"]) == {"code", "message"}, response.text
    assert isinstance(data["error"]["message"], str) and data["error"]["message"]
    return data["error"]


def _snapshot(engine, home):
    """Everything a request could change: sessions with their transcripts, memory, tokens."""
    sessions = [s.to_json() for s in engine.sessions_list()]
    histories = {s["key"]: engine.sessions_history(s["key"]).to_json() for s in sessions}
    memory = (home / "workspace" / "MEMORY.md")
    tokens = [{k: v for k, v in t.items() if k != "lastUsedAt"} for t in engine.tokens_list()]
    return json.dumps([sessions, histories, [i.to_json() for i in engine.memory_items()], tokens,
                       memory.read_text() if memory.exists() else None], sort_keys=True, default=str)


def _leaks(text):
    return BOB_MESSAGE_MARKER in text or BOB_MEMORY_MARKER in text


REFUSED = {"none": None, "wrong": "Bearer ck_" + "x" * 43, "revoked": "revoked", "expired": "expired"}


@pytest.mark.parametrize("credential", sorted(REFUSED))
def test_every_guarded_route_refuses_a_request_without_a_valid_credential(world, credential):
    gw, tokens = world["gw"], world["tokens"]
    value = REFUSED[credential]
    headers = {} if value is None else {"Authorization": value if value.startswith("Bearer") else
                                        f"Bearer {tokens[value]}"}
    before = _snapshot(gw.engine, world["home"])
    checked = 0
    with gw.client() as client:
        for method, route in _routes(_app(gw)):
            response = _request(client, method, route, BOB_KEY, world["item"], headers)
            assert not _leaks(response.text), (method, route.path)
            if not _guarded(gw, route):
                continue
            assert response.status_code == 401, (credential, method, route.path, response.text)
            error = _error_shape(response)
            assert error["code"] == "unauthorized"
            if credential in ("revoked", "expired"):
                assert credential in error["message"]
            checked += 1
    assert checked >= 25
    assert _snapshot(gw.engine, world["home"]) == before


def test_only_the_health_probe_is_open_under_v1(world):
    gw = world["gw"]
    open_routes = {route.path for _, route in _routes(_app(gw))
                   if route.path.startswith("/v1") and not _guarded(gw, route)}
    assert open_routes == {"/v1/health"}


@pytest.mark.parametrize("who", ["alice", "alice-session"])
def test_another_peers_token_sees_nothing_of_bob_and_refusals_change_nothing(world, who):
    gw, tokens = world["gw"], world["tokens"]
    headers = {"Authorization": f"Bearer {tokens[who]}"}
    with gw.client() as client:
        for method, route in _routes(_app(gw)):
            before = _snapshot(gw.engine, world["home"])
            response = _request(client, method, route, BOB_KEY, world["item"], headers)
            assert not _leaks(response.text), (who, method, route.path, response.text[:300])
            assert response.status_code < 500, (method, route.path, response.text)
            if response.status_code >= 400:
                error = _error_shape(response)
                assert _snapshot(gw.engine, world["home"]) == before, (method, route.path)
                if "{key" in route.path and error["code"] == "not_found":
                    missing = _request(client, method, route, MISSING_KEY, world["item"], headers)
                    assert missing.status_code == 404
                    assert missing.json()["error"]["message"].replace(MISSING_KEY, "K") == \
                        error["message"].replace(BOB_KEY, "K"), (method, route.path)
            elif "{key" in route.path:
                pytest.fail(f"{who} reached bob's session through {method} {route.path}: {response.text[:200]}")
        # the operator's routes answer 403 to a scoped token
        for method, path in (("GET", "/v1/tokens"), ("GET", "/v1/memory/items"), ("GET", "/v1/metrics"),
                             ("POST", "/v1/dreaming/sweep"), ("DELETE", "/v1/tokens/bob")):
            response = client.request(method, path, headers={**headers, "Content-Type": "application/json"})
            assert response.status_code == 403, (method, path, response.text)
            assert _error_shape(response)["code"] == "forbidden"
        # searching for bob's markers finds nothing; alice's own conversation is there
        for q in (BOB_MESSAGE_MARKER, BOB_MEMORY_MARKER):
            for path in ("/v1/search", "/v1/memory/search"):
                found = client.get(path, params={"q": q}, headers=headers)
                assert found.status_code == 200 and not _leaks(found.text)
        listed = client.get("/v1/sessions", headers=headers).json()
        assert [s["key"] for s in listed] == [ALICE_KEY]
        # routing as bob, or delivering into bob's session, is refused
        assert client.post("/v1/messages", json={"text": "x", "channel": "telegram", "sender": "bob"},
                           headers=headers).status_code == 400
        assert client.post("/v1/messages", json={"text": "x", "session": BOB_KEY}, headers=headers).status_code == 404


def test_another_agents_token_sees_nothing_and_refusals_change_nothing(world):
    gw = world["gw"]
    headers = {"Authorization": f"Bearer {gw.engine.tokens_create('ops-agent', 'agent:ops')['token']}"}
    with gw.client() as client:
        for method, route in _routes(_app(gw)):
            before = _snapshot(gw.engine, world["home"])
            response = _request(client, method, route, BOB_KEY, world["item"], headers)
            assert not _leaks(response.text), (method, route.path, response.text[:300])
            assert response.status_code < 500, (method, route.path, response.text)
            if response.status_code >= 400:
                _error_shape(response)
                assert _snapshot(gw.engine, world["home"]) == before, (method, route.path)
            else:
                assert "{key" not in route.path and route.path != "/v1/messages", (method, route.path)


def test_a_session_token_naming_an_outside_session_gets_the_missing_session_404(world):
    gw, tokens = world["gw"], world["tokens"]
    before = _snapshot(gw.engine, world["home"])
    with gw.client() as client:
        for name in ("alice", "alice-session"):
            for method, route in _routes(_app(gw)):
                if not _takes_caller(route):
                    continue
                answers = []
                for named in (BOB_KEY, MISSING_KEY):
                    headers = {"Authorization": f"Bearer {tokens[name]}", "X-Clawkeep-Session": named}
                    response = _request(client, method, route, ALICE_KEY, world["item"], headers)
                    assert response.status_code == 404, (name, method, route.path, response.text)
                    assert not _leaks(response.text)
                    answers.append(_error_shape(response)["message"].replace(named, "K"))
                assert answers[0] == answers[1], (method, route.path)
            # narrowing to its own session is allowed
            own = client.get("/v1/sessions", headers={"Authorization": f"Bearer {tokens[name]}",
                                                      "X-Clawkeep-Session": ALICE_KEY})
            assert own.status_code == 200 and [s["key"] for s in own.json()] == [ALICE_KEY]
    assert _snapshot(gw.engine, world["home"]) == before


def test_the_operator_token_reaches_every_route_and_sees_the_markers(world):
    gw, tokens = world["gw"], world["tokens"]
    headers = {"Authorization": f"Bearer {tokens['op']}"}
    with gw.client() as client:
        history = client.get(f"/v1/sessions/{BOB_KEY}/history", headers=headers)
        assert BOB_MESSAGE_MARKER in history.text  # the markers are findable: their absence above means something
        assert BOB_MEMORY_MARKER in client.get("/v1/memory/items", headers=headers).text
        for method, route in _routes(_app(gw)):
            response = _request(client, method, route, BOB_KEY, world["item"], headers)
            assert response.status_code not in (401, 403) and response.status_code < 500, \
                (method, route.path, response.text)
            if response.status_code >= 400:
                _error_shape(response)


def test_a_peer_token_routes_its_first_message_as_that_peer(world):
    gw = world["gw"]
    created = gw.engine.tokens_create("carol", "peer:telegram:carol")["token"]
    headers = {"Authorization": f"Bearer {created}"}
    with gw.client() as client:
        before = client.get("/v1/sessions", headers=headers)  # no session yet: the calling session is missing
        assert before.status_code == 404 and "not found" in before.json()["error"]["message"]
        sent = client.post("/v1/messages", json={"text": "hi, I am carol"}, headers=headers)
        assert sent.status_code == 200, sent.text
        assert sent.json()["sessionKey"] == "agent:main:telegram:direct:carol"
        assert [s["key"] for s in client.get("/v1/sessions", headers=headers).json()] == [sent.json()["sessionKey"]]
        status = client.get("/v1/status", headers=headers).json()
        assert status["credential"]["scope"] == "peer:telegram:carol" and "sessions" not in status


def test_a_scoped_token_sending_routing_fields_is_told_the_token_is_why(world):
    """QA: a peer token's message with `channel`/`sender` was refused with "send it without
    X-Clawkeep-Session" — a header the caller never sent; the message names the token too."""
    gw, tokens = world["gw"], world["tokens"]
    with gw.client() as client:
        for token in ("alice", "alice-session"):
            refused = client.post("/v1/messages", json={"text": "x", "channel": "telegram", "sender": "bob"},
                                  headers={"Authorization": f"Bearer {tokens[token]}"})
            assert refused.status_code == 400, refused.text
            message = refused.json()["error"]["message"]
            assert "channel, sender" in message and "scoped token" in message and "leave them out" in message


def test_a_peer_token_finds_a_sender_id_with_colons_and_case_as_routing_does(world):
    gw = world["gw"]
    sent = gw.engine.message("hi from matrix", channel="Matrix", sender="@Alice:example.org")
    secret = gw.engine.tokens_create("matrix-alice", "peer:matrix:@alice:example.org")["token"]
    with gw.client() as client:
        listed = client.get("/v1/sessions", headers={"Authorization": f"Bearer {secret}"})
        assert listed.status_code == 200, listed.text
        assert [s["key"] for s in listed.json()] == [sent.session_key]


def test_token_routes_create_list_and_revoke_for_the_operator(world):
    gw, tokens = world["gw"], world["tokens"]
    headers = {"Authorization": f"Bearer {tokens['op']}"}
    with gw.client() as client:
        made = client.post("/v1/tokens", json={"name": "dave", "scope": "peer:telegram:dave", "expires": "2h"},
                           headers=headers)
        assert made.status_code == 201, made.text
        secret = made.json()["token"]
        listed = client.get("/v1/tokens", headers=headers)
        assert secret not in listed.text and "dave" in listed.text
        again = client.post("/v1/tokens", json={"name": "dave", "scope": "operator"}, headers=headers)
        assert again.status_code == 409 and "dave" in _error_shape(again)["message"]
        bad = client.post("/v1/tokens", json={"name": "eve", "scope": "root"}, headers=headers)
        assert bad.status_code == 400 and "agent:ID" in _error_shape(bad)["message"]
        # accepted (dave has no session yet, so the missing calling session answers), not refused
        assert client.get("/v1/sessions", headers={"Authorization": f"Bearer {secret}"}).status_code == 404
        assert client.delete("/v1/tokens/dave", headers=JSON | headers).json()["state"] == "revoked"
        refused = client.get("/v1/sessions", headers={"Authorization": f"Bearer {secret}"})
        assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]


def test_an_agent_token_sees_only_its_agent(world):
    gw = world["gw"]
    other = gw.engine.tokens_create("other-agent", "agent:ops")["token"]
    mine = gw.engine.tokens_create("main-agent", "agent:main")["token"]
    with gw.client() as client:
        assert client.get("/v1/sessions", headers={"Authorization": f"Bearer {other}"}).json() == []
        hidden = client.get(f"/v1/sessions/{BOB_KEY}/history", headers={"Authorization": f"Bearer {other}"})
        assert hidden.status_code == 404 and not _leaks(hidden.text)
        assert client.get("/v1/memory/search", params={"q": BOB_MEMORY_MARKER},
                          headers={"Authorization": f"Bearer {other}"}).status_code == 403
        seen = client.get("/v1/sessions", headers={"Authorization": f"Bearer {mine}"}).json()
        assert {ALICE_KEY, BOB_KEY} <= {s["key"] for s in seen}
        assert client.get("/v1/memory/items", headers={"Authorization": f"Bearer {mine}"}).status_code == 403
        # narrowing to a session of its agent runs as that session; the other agent's token cannot name it
        narrowed = client.get("/v1/sessions",
                              headers={"Authorization": f"Bearer {mine}", "X-Clawkeep-Session": BOB_KEY})
        narrowed_keys = {s["key"] for s in narrowed.json()}
        assert BOB_KEY in narrowed_keys and ALICE_KEY not in narrowed_keys  # bob's tree (forks of it may exist)
        outside = client.get("/v1/sessions",
                             headers={"Authorization": f"Bearer {other}", "X-Clawkeep-Session": BOB_KEY})
        assert outside.status_code == 404 and not _leaks(outside.text)


def test_a_tokenless_loopback_gateway_stays_open_until_a_token_exists(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    running = GatewayThread(home, CONFIG, background=False)
    try:
        with running.client() as client:
            assert client.get("/v1/sessions").status_code == 200
            made = client.post("/v1/tokens", json={"name": "first", "scope": "operator"})
            assert made.status_code == 201
            assert client.get("/v1/sessions").status_code == 401
            secret = made.json()["token"]
            assert client.get("/v1/sessions", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    finally:
        running.stop()


def test_a_first_token_made_by_another_process_closes_an_open_gateway_within_a_second(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    running = GatewayThread(home, CONFIG, background=False)
    try:
        with running.client() as client:
            assert client.get("/v1/sessions").status_code == 200
            assert run_cli(home, "tokens", "create", "elsewhere", "--scope", "operator").code == 0
            time.sleep(1.1)  # NO_TOKEN_RECHECK_S
            refused = client.get("/v1/sessions")
            assert refused.status_code == 401 and _error_shape(refused)["code"] == "unauthorized"
    finally:
        running.stop()


def test_the_gateway_token_keeps_operator_rights_beside_stored_tokens(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    gateway_token = "g" * 24
    monkeypatch.setenv("CLAWKEEP_GATEWAY_TOKEN", gateway_token)
    running = GatewayThread(home, CONFIG, background=False)
    try:
        peer = running.engine.tokens_create("p", "peer:telegram:p")["token"]
        with running.client() as client:
            assert client.get("/v1/sessions").status_code == 401
            ok = client.get("/v1/tokens", headers={"Authorization": f"Bearer {gateway_token}"})
            assert ok.status_code == 200 and [t["name"] for t in ok.json()] == ["p"]
            assert client.get("/v1/tokens", headers={"Authorization": f"Bearer {peer}"}).status_code == 403
    finally:
        running.stop()


def test_a_token_revoked_through_one_gateway_process_is_refused_at_once_by_another(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    made = run_cli(home, "tokens", "create", "shared", "--scope", "operator", "--json")
    assert made.code == 0, made.stderr
    op = run_cli(home, "tokens", "create", "admin", "--scope", "operator", "--json").json()["token"]
    secret = made.json()["token"]
    first, second = GatewayProcess(home, config=CONFIG), GatewayProcess(home, config=CONFIG)
    try:
        with first.client() as a, second.client() as b:
            auth = {"Authorization": f"Bearer {secret}"}
            assert a.get("/v1/sessions", headers=auth).status_code == 200
            assert b.get("/v1/sessions", headers=auth).status_code == 200
            revoked = a.delete("/v1/tokens/shared", headers=JSON | {"Authorization": f"Bearer {op}"})
            assert revoked.status_code == 200, revoked.text
            refused = b.get("/v1/sessions", headers=auth)
            assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]
    finally:
        first.stop()
        second.stop()


def test_tokens_cli_input_errors_exit_2_naming_the_input(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cases = [(["bad name", "--scope", "operator"], "token name"), (["x", "--scope", "admin"], "--scope 'admin'"),
             (["x", "--scope", "operator", "--expires", "soon"], "--expires 'soon'"),
             (["x", "--scope", "peer:telegram"], "peer:CHANNEL:SENDER")]
    for args, named in cases:
        result = run_cli(home, "tokens", "create", *args)
        assert result.code == 2, result.stderr
        assert named in re.sub(r"\s+", " ", result.stderr) and "Traceback" not in result.stderr
    assert run_cli(home, "tokens", "create", "x", "--scope", "operator").code == 0
    duplicate = run_cli(home, "tokens", "create", "x", "--scope", "operator")
    assert duplicate.code == 2 and "already exists" in duplicate.stderr
    listed = run_cli(home, "tokens", "list", "--json").json()
    assert [t["name"] for t in listed] == ["x"] and "token" not in listed[0]
    assert run_cli(home, "tokens", "revoke", "nobody").code == 2
