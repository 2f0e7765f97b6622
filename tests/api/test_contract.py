"""One typed contract for every surface (clawkeep.api): the Engine returns the models, the CLI's
`--json` prints their JSON, and an HTTP app built only from `OPERATIONS` (a throwaway FastAPI app
here; the gateway later) serves the same shapes with an OpenAPI schema generated from them."""

import json
import typing

import pytest
from fastapi import FastAPI, Header, HTTPException
from fastapi.testclient import TestClient

from clawkeep import api
from clawkeep.api import operations as ops
from clawkeep.errors import ClawkeepError
from clawkeep.routing.keys import KINDS
from tests.helpers.engine import open_engine


@pytest.fixture
def engine(home):
    with open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as opened:
        yield opened


def http_app(engine) -> FastAPI:
    """Routes generated from the operation registry: nothing hand-written per operation."""
    app = FastAPI()

    def route_for(op: api.Operation):
        def route(args: op.args, x_clawkeep_session: str | None = Header(None)) -> dict:  # type: ignore[name-defined]
            try:
                result = op.run(engine, args, x_clawkeep_session)
            except ClawkeepError as exc:
                raise HTTPException(exc.http_status, {"code": exc.code, "message": str(exc)}) from None
            return [r.to_json() for r in result] if isinstance(result, list) else result.to_json()

        return route

    for op in api.OPERATIONS.values():
        app.post(f"/ops/{op.name}", name=op.name, response_model=None)(route_for(op))
    return app


def test_engine_results_are_the_contract_models(engine):
    sent = engine.message("Noted the 上海 trip", channel="telegram", sender="alice", message_id="t-1")
    assert isinstance(sent, api.MessageResult) and sent.message_id == "t-1"
    hits = engine.sessions_search("上海")
    assert isinstance(hits, api.SearchResult) and isinstance(hits.hits[0], api.SearchHit)
    assert hits["hits"][0]["messageId"] == hits.hits[0].message_id == "t-1"  # reads like its JSON
    assert set(hits.hits[0]) == {"sessionKey", "sessionId", "messageId", "role", "timestamp", "snippet",
                                 "clientMessageId"}
    assert isinstance(engine.sessions_list()[0], api.SessionInfo)
    assert isinstance(engine.memory_remember("I prefer TypeScript"), api.RememberResult)
    assert isinstance(engine.recall("what did I say about 上海?", session=sent.session_key), api.RecallResult)
    assert isinstance(engine.session_status(sent.session_key), api.SessionStatus)


def test_cli_json_is_the_models_json(engine, home, cli):
    sent = engine.message("the parcel code is 7781", message_id="p-1")
    engine.close()
    printed = cli("sessions", "search", "7781", "--json").json()
    reopened = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    assert printed == reopened.sessions_search("7781").to_json()
    assert api.SearchResult.model_validate(printed).hits[0].message_id == sent.message_id


def test_http_app_from_the_registry_serves_the_same_shapes(engine):
    client = TestClient(http_app(engine))
    body = {"text": "下周二我去上海出差", "channel": "telegram", "sender": "alice", "messageId": "tg-9"}
    sent = client.post("/ops/message", json=body).json()
    assert sent["messageId"] == "tg-9" and sent["sessionKey"] == "agent:main:main" and sent["mode"] == "record"
    assert api.MessageResult.model_validate(sent).to_json() == sent
    again = client.post("/ops/message", json=body).json()
    assert again["duplicate"] is True and again["messageId"] == "tg-9"
    assert client.post("/ops/message", json={**body, "colour": "red"}).status_code == 422  # unknown keys refused
    found = client.post("/ops/sessions_search", json={"query": "上海"}).json()
    assert found == engine.sessions_search("上海").to_json()
    hidden = client.post("/ops/sessions_history", json={"sessionKey": sent["sessionKey"]},
                         headers={"X-Clawkeep-Session": engine.sessions_create()["key"]})
    missing = client.post("/ops/sessions_history", json={"sessionKey": "agent:main:nobody"})
    assert hidden.status_code == missing.status_code == 404  # hidden == missing (S8)
    bad = client.post("/ops/sessions_search", json={"query": "x", "limit": 99})
    assert bad.status_code == 422  # the argument model's bounds
    schema = client.get("/openapi.json").json()
    message_args = schema["components"]["schemas"]["MessageArgs"]["properties"]
    assert {"text", "chatType", "messageId", "session"} <= set(message_args)


def test_tool_schemas_come_from_the_argument_models():
    tools = {name: api.OPERATIONS[name].tool_schema() for name in api.AGENT_TOOLS}
    assert set(tools) == {"sessions_list", "sessions_history", "sessions_search", "session_status",
                          "memory_search", "memory_get", "memory_remember", "memory_edit", "memory_forget",
                          "memory_undo", "sessions_send"}
    history = tools["sessions_history"]["parameters"]
    assert history["required"] == ["sessionKey"] and "includeTools" in history["properties"]
    # every bound the engine enforces is in the schema, so a refusal names the tool's own argument
    kinds = tools["sessions_list"]["parameters"]["properties"]["kind"]["enum"]
    assert tuple(kinds) == typing.get_args(ops.SessionKind) == KINDS  # the api layer's copy of the session kinds
    get = tools["memory_get"]["parameters"]["properties"]
    assert get["from"] == {"minimum": 1, "type": "integer"}  # the MAX_INT bound is checked, not shown to a model
    assert get["lines"] == {"minimum": 1, "maximum": 2000, "type": "integer"}
    send = tools["sessions_send"]["parameters"]
    assert send["required"] == ["sessionKey", "message"]
    timeout = send["properties"]["timeoutSeconds"]
    assert timeout["default"] == 30 and timeout["minimum"] == 0
    assert '"title"' not in json.dumps(tools)  # titles and null-unions cost tokens and say nothing
    json.dumps(tools)  # plain JSON, ready for OpenAI `tools` / Anthropic `input_schema`
