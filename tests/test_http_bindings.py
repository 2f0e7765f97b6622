"""Each operation's HTTP binding (api.operations.Http) against the gateway's real routes: method,
path, path/query/body parameters and the operator-only rule, so the binding the Python client is
generated from cannot drift from the routes gateway/app.py serves."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fastapi.routing import APIRoute
from gateway_process import GatewayThread

from clawkeep import Engine
from clawkeep.api.operations import OPERATIONS
from clawkeep.gateway import Gateway

# Routes that are not operations (or run one with a gateway-only extra, like status's uptime).
NOT_OPERATIONS = {("GET", "/v1/metrics"), ("GET", "/v1/health"), ("POST", "/v1/tokens"), ("GET", "/v1/tokens"),
                  ("DELETE", "/v1/tokens/{}")}


def _shape(path: str) -> str:
    return re.sub(r"{[^}]+}", "{}", path)


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], APIRoute]:
    home = tmp_path_factory.mktemp("bindings")
    with Engine.open(home=home) as engine:
        app = Gateway(engine, background=False).app()
        table = {}
        for route in app.routes:
            if isinstance(route, APIRoute) and route.include_in_schema:
                for method in route.methods:
                    table[(method, _shape(route.path))] = route
        return table


def _query_names(route: APIRoute) -> set[str]:
    return {param.alias for param in route.dependant.query_params}


def _body_names(route: APIRoute) -> set[str]:
    names: set[str] = set()
    for param in route.dependant.body_params:
        model = param.field_info.annotation
        options = getattr(model, "__args__", (model,))  # `Model | None`
        for option in options:
            if hasattr(option, "model_fields"):
                names |= {field.alias or name for name, field in option.model_fields.items()}
    return names


BOUND = [op for op in OPERATIONS.values() if op.http is not None]


@pytest.mark.parametrize("op", BOUND, ids=lambda op: op.name)
def test_binding_matches_a_route(op, routes) -> None:
    http = op.http
    route = routes.get((http.method, _shape(http.path)))
    assert route is not None, f"{op.name}: no route {http.method} {http.path}"
    assert len(route.dependant.path_params) == len(http.path_fields)
    assert set(http.path_fields) <= set(op.args.model_fields)
    query = set(http.query_params(op.args).values())
    extra = {"stream"} if op.name == "message" else set()  # the SSE switch, not an argument
    assert _query_names(route) == query | extra, f"{op.name}: query parameters differ"
    body = {op.args.model_fields[name].alias or name for name in http.body_fields(op.args)}
    assert _body_names(route) == body, f"{op.name}: body fields differ"
    for engine_name, field in http.engine_names:
        assert field in op.args.model_fields and engine_name not in op.args.model_fields


def test_every_operation_route_is_bound(routes) -> None:
    bound = {(op.http.method, _shape(op.http.path)) for op in BOUND}
    unbound = set(routes) - bound - NOT_OPERATIONS
    assert not unbound, f"routes without a binding in api.operations: {sorted(unbound)}"


def test_operator_only_bindings_are_refused_to_a_session(tmp_path: Path) -> None:
    """A request naming a calling session gets 403 exactly on the routes the bindings call operator-only."""
    gateway = GatewayThread(tmp_path, background=False)
    try:
        with httpx.Client(base_url=gateway.url, timeout=30) as http:
            caller = http.post("/v1/sessions", json={}).json()["key"]
            for op in BOUND:
                path = re.sub(r"{\w+}", lambda m: caller if m.group(0) == "{session_key}" else "nope", op.http.path)
                json_body = {"dreaming_enable": {"enabled": False}, "memory_item_edit": {"text": "x"},
                             "memory_store_write": {"path": "memory/store/x.md", "text": "x"}}.get(op.name)
                own_file = f"memory/store/sessions/{quote(caller, safe='')}.md"  # a session reads its own store files
                params = {"path": own_file} if op.name == "memory_store_read" else None
                headers = {"X-Clawkeep-Session": caller}
                if op.http.method != "GET":
                    headers["Content-Type"] = "application/json"
                if not op.http.operator and op.http.method != "GET":
                    continue  # a session may call it: what it answers is the operation's business
                answer = http.request(op.http.method, path, headers=headers, json=json_body, params=params)
                refused = answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"
                assert refused == op.http.operator, f"{op.name}: {answer.status_code} {answer.text[:200]}"
    finally:
        gateway.stop()
        gateway.engine.close()
