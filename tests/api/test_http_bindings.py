"""Each operation's HTTP binding (api.operations.Http) against the gateway's real routes: method,
path, path/query/body parameters and the operator-only rule, so the binding the Python client is
generated from cannot drift from the routes gateway/app.py serves."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute

from clawkeep import Engine
from clawkeep.api.operations import OPERATIONS
from clawkeep.gateway import Gateway
from tests.helpers.gateway_process import GatewayThread

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
                params = {"path": "memory/store/x.md"} if op.name == "memory_store_read" else None
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


def test_access_rules_name_what_they_guard_and_policies_name_operations() -> None:
    """A refusal says what was refused ("listing every memory item is for the operator"), so every
    binding with an access rule names it; the gateway's policies are keyed by real operation names."""
    from clawkeep.gateway.app import POLICIES

    for op in BOUND:
        guarded = op.http.operator or op.http.own_agent
        assert bool(op.http.what) == guarded, f"{op.name}: `what` goes with an access rule"
        assert not op.http.agent_token or op.http.operator, f"{op.name}: agent_token widens an operator rule"
    assert set(POLICIES) <= {op.name for op in BOUND}


def test_generated_routes_take_the_argument_models_bounds_and_names(routes) -> None:
    """Query parameters carry the argument field's bounds and choices; a route whose body
    fields all have defaults may be sent without a body; operation ids are the operation names."""
    search = routes[("GET", "/v1/memory/search")]
    params = {p.alias: p.field_info for p in search.dependant.query_params}
    assert set(params) == {"q", "limit", "mode", "minScore", "corpus"}
    limit = [m for m in params["limit"].metadata if hasattr(m, "le")]
    assert limit and limit[0].le == 50
    assert search.operation_id == "memory_search" and search.summary == OPERATIONS["memory_search"].summary
    create = routes[("POST", "/v1/sessions")]
    assert not create.dependant.body_params[0].field_info.is_required()
    send = routes[("POST", "/v1/sessions/{}/send")]
    timeout = send.dependant.body_params[0].field_info.annotation.model_fields["timeout_seconds"]
    assert timeout.default == OPERATIONS["sessions_send"].args.model_fields["timeout_seconds"].default
