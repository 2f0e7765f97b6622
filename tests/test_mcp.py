"""`clawkeep mcp` through the official MCP SDK's real client: the server runs as a subprocess,
over stdio (`mcp.client.stdio`) and over streamable HTTP on loopback (`mcp.client.streamable_http`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from conftest import run_cli
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from clawkeep import Engine, api
from clawkeep.mcp.server import MCP_TOOLS

CONFIG = {"session": {"dmScope": "per-channel-peer"}}
ALICE = "agent:main:telegram:direct:alice"
BOB = "agent:main:telegram:direct:bob"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """A home with two peers' conversations and a memory note, written through the Engine."""
    home = tmp_path_factory.mktemp("mcp") / "home"
    home.mkdir()
    (home / "clawkeep.json5").write_text(json.dumps(CONFIG))
    with Engine.open(home=home) as eng:
        eng.message("下周二我去上海出差", channel="telegram", sender="alice")
        eng.message("Safe travels to Shanghai!", role="assistant", channel="telegram", sender="alice")
        eng.message("my invoice number is INV-4471", channel="telegram", sender="bob")
        eng.memory_remember("I prefer TypeScript over JavaScript")
    return home


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")}


def server_args(home: Path, *extra: str) -> list[str]:
    return ["-m", "clawkeep", "--home", str(home), "mcp", *extra]


def over_stdio(home: Path, work, *extra: str):
    """Run `work(session)` against `clawkeep mcp …` spawned by the SDK's stdio client."""
    params = StdioServerParameters(command=sys.executable, args=server_args(home, *extra), env=_env())

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return anyio.run(main)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(home: Path, *extra: str):
    port = free_port()
    proc = subprocess.Popen([sys.executable, *server_args(home, "--http", str(port), *extra)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(20)


def over_http(url: str, work, headers: dict[str, str] | None = None):
    async def main():
        async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as client, \
                streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return anyio.run(main)


def payload(result):
    """The tool result's JSON text, checked against its structured twin when there is one."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data = json.loads(result.content[0].text)
    if isinstance(data, dict):
        assert result.structured_content == data
    return data


# --- stdio -------------------------------------------------------------------------------------
def test_stdio_lists_the_agent_tools_with_the_contract_schemas_and_runs_each(prepared):
    async def work(session):
        listed = (await session.list_tools()).tools
        calls = {
            "sessions_list": {},
            "sessions_history": {"sessionKey": ALICE},
            "sessions_search": {"query": "上海"},
            "session_status": {"sessionKey": BOB},
            "memory_search": {"query": "which language do I prefer?", "maxResults": 3},
            "memory_get": {"path": "MEMORY.md"},
            "memory_remember": {"text": "My dog is called Rex"},
            "sessions_send": {"sessionKey": BOB, "message": "a note from the operator", "timeoutSeconds": 5},
        }
        results = {name: await session.call_tool(name, args) for name, args in calls.items()}
        return listed, results

    listed, results = over_stdio(prepared, work)
    assert [t.name for t in listed] == list(MCP_TOOLS)
    for tool in listed:
        schema = api.OPERATIONS[tool.name].tool_schema()
        assert tool.input_schema == schema["parameters"] and tool.description == schema["description"]
    assert all(not r.is_error for r in results.values()), {n: r.content for n, r in results.items() if r.is_error}
    data = {name: payload(result) for name, result in results.items()}
    assert {s["key"] for s in data["sessions_list"]} == {ALICE, BOB}  # the operator sees every session
    assert [m["text"] for m in data["sessions_history"]["messages"]] == ["下周二我去上海出差", "Safe travels to Shanghai!"]
    assert data["sessions_search"]["hits"][0]["sessionKey"] == ALICE
    assert data["session_status"]["key"] == BOB and data["session_status"]["messageCount"] == 1
    assert data["memory_search"]["results"][0]["snippet"].endswith("I prefer TypeScript over JavaScript")
    assert "I prefer TypeScript over JavaScript" in data["memory_get"]["text"]
    assert data["memory_remember"]["status"] == "stored"
    assert data["sessions_send"]["status"] == "no_reply" and data["sessions_send"]["mode"] == "record"
    # the same answers as the Engine in-process
    with Engine.open(home=prepared) as eng:
        assert data["sessions_history"] == eng.sessions_history(ALICE).to_json()
        assert data["sessions_search"] == eng.sessions_search("上海").to_json()
        assert "Rex" in eng.memory_get("MEMORY.md")["text"]
        assert eng.sessions_history(BOB)["messages"][-1]["provenance"] == {"kind": "inter_session",
                                                                          "sourceTool": "sessions_send"}


def test_stdio_with_session_sees_only_what_that_session_may_see(prepared):
    async def work(session):
        return {
            "list": await session.call_tool("sessions_list", {}),
            "own": await session.call_tool("sessions_history", {"sessionKey": ALICE}),
            "other": await session.call_tool("sessions_history", {"sessionKey": BOB}),
            "missing": await session.call_tool("sessions_history", {"sessionKey": "agent:main:telegram:direct:zed"}),
            "search": await session.call_tool("sessions_search", {"query": "INV-4471"}),
            "send": await session.call_tool("sessions_send", {"sessionKey": BOB, "message": "hi bob"}),
        }

    out = over_stdio(prepared, work, "--session", ALICE)
    assert [s["key"] for s in payload(out["list"])] == [ALICE]
    assert not out["own"].is_error
    assert out["other"].is_error and out["missing"].is_error
    hidden, absent = out["other"].content[0].text, out["missing"].content[0].text
    assert hidden == f"sessions_history failed: session {BOB!r} not found"
    assert hidden.replace(BOB, "K") == absent.replace("agent:main:telegram:direct:zed", "K")  # indistinguishable
    assert payload(out["search"])["hits"] == []  # bob's invoice is not alice's to find
    assert out["send"].is_error and "not found" in out["send"].content[0].text


def test_stdio_bad_arguments_and_refused_writes_are_clear_tool_errors(prepared):
    async def work(session):
        return {
            "range": await session.call_tool("memory_search", {"query": "x", "maxResults": 0}),
            "type": await session.call_tool("sessions_search", {"query": 5}),
            "unknown_arg": await session.call_tool("memory_get", {"path": "MEMORY.md", "bogus": True}),
            "missing_arg": await session.call_tool("sessions_history", {}),
            "unknown_tool": await session.call_tool("memory_delete", {"itemId": "m-1"}),
            "outside": await session.call_tool("memory_get", {"path": "../../etc/passwd"}),
            "password": await session.call_tool("memory_remember", {"text": "my password is hunter2-Secret"}),
        }

    out = over_stdio(prepared, work)
    for name in ("range", "type", "unknown_arg", "missing_arg", "unknown_tool", "outside"):
        assert out[name].is_error, name
    assert out["range"].content[0].text == ("memory_search failed: invalid arguments for memory_search: "
                                            "maxResults: Input should be greater than or equal to 1, got int 0")
    assert "query: Input should be a valid string" in out["type"].content[0].text
    assert "bogus: Extra inputs are not permitted" in out["unknown_arg"].content[0].text
    assert "sessionKey: Field required" in out["missing_arg"].content[0].text
    assert "unknown tool 'memory_delete'; available tools: sessions_list" in out["unknown_tool"].content[0].text
    assert "memory_get failed:" in out["outside"].content[0].text
    refused = payload(out["password"])  # the write filters answer; the server does not fail
    assert refused["status"] == "refused" and "password" in refused["reason"]
    assert "hunter2" not in (prepared / "workspace" / "MEMORY.md").read_text()


def test_stdio_refuses_booleans_strings_out_of_range_lines_and_unknown_kinds(prepared):
    """Lax coercion took `true` as 1 and "3" as 3 (sessions_send then waited 1 s); `lines` past
    2000 reached the engine, whose message named the CLI's --lines; an unknown kind listed nothing."""
    calls = {
        "recent": ("sessions_list", {"recentMessages": True}),
        "max_results": ("memory_search", {"query": "x", "maxResults": True}),
        "timeout": ("sessions_send", {"sessionKey": BOB, "message": "never delivered", "timeoutSeconds": True}),
        "limit": ("sessions_search", {"query": "x", "limit": "3"}),
        "from": ("memory_get", {"path": "MEMORY.md", "from": "2"}),
        "float": ("sessions_search", {"query": "x", "limit": 3.0}),
        "lines": ("memory_get", {"path": "MEMORY.md", "lines": 999999}),
        "kind": ("sessions_list", {"kind": "bogus"}),
    }

    async def work(session):
        listed = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        return listed, {name: await session.call_tool(tool, args) for name, (tool, args) in calls.items()}

    with Engine.open(home=prepared) as eng:
        before = len(eng.sessions_history(BOB)["messages"])
    listed, out = over_stdio(prepared, work)
    for name, result in out.items():
        assert result.is_error, (name, result.content)
    text = {name: result.content[0].text for name, result in out.items()}
    assert text["recent"] == ("sessions_list failed: invalid arguments for sessions_list: "
                              "recentMessages: Input should be a valid integer, got bool True")
    assert "maxResults: Input should be a valid integer, got bool True" in text["max_results"]
    assert "timeoutSeconds: Input should be a valid integer, got bool True" in text["timeout"]
    assert "limit: Input should be a valid integer, got str '3'" in text["limit"]
    assert "from: Input should be a valid integer, got str '2'" in text["from"]
    assert "limit: Input should be a valid integer, got float 3.0" in text["float"]
    assert text["lines"] == ("memory_get failed: invalid arguments for memory_get: "
                             "lines: Input should be less than or equal to 2000, got int 999999")
    assert "--" not in text["lines"]
    assert "kind: Input should be 'main', 'direct'" in text["kind"] and "got str 'bogus'" in text["kind"]
    # the schemas state the bounds and the kinds, so a client can know them before calling
    assert listed["memory_get"]["properties"]["lines"] == {"type": "integer", "minimum": 1, "maximum": 2000}
    assert listed["sessions_list"]["properties"]["kind"]["enum"][:2] == ["main", "direct"]
    with Engine.open(home=prepared) as eng:  # the refused send delivered nothing
        assert len(eng.sessions_history(BOB)["messages"]) == before


def test_cli_refuses_a_bad_session_and_an_open_bind_without_token(prepared):
    bad = run_cli(prepared, "mcp", "--session", "not a key")
    assert bad.code == 2 and "--session" in bad.stderr and "Traceback" not in bad.stderr
    open_bind = run_cli(prepared, "mcp", "--http", str(free_port()), "--host", "0.0.0.0")
    assert open_bind.code == 2 and "--token" in open_bind.stderr and "loopback" in open_bind.stderr
    assert "streamable HTTP at" not in open_bind.stderr  # refused before anything is announced
    short = run_cli(prepared, "mcp", "--http", str(free_port()), "--token", "short")
    assert short.code == 2 and "streamable HTTP at" not in short.stderr, short.stderr
    assert "--token" in short.stderr and "5 characters" in short.stderr and "16-512" in short.stderr


# --- streamable HTTP ---------------------------------------------------------------------------
def test_http_lists_and_calls_tools_as_the_session(prepared):
    async def work(session):
        listed = (await session.list_tools()).tools
        found = await session.call_tool("memory_search", {"query": "TypeScript"})
        own = await session.call_tool("sessions_search", {"query": "上海"})
        other = await session.call_tool("session_status", {"sessionKey": BOB})
        return listed, found, own, other

    with http_server(prepared, "--session", ALICE) as (url, _):
        listed, found, own, other = over_http(url, work)
    assert [t.name for t in listed] == list(MCP_TOOLS)
    assert [t.input_schema for t in listed] == [api.OPERATIONS[n].tool_schema()["parameters"] for n in MCP_TOOLS]
    assert "TypeScript" in payload(found)["results"][0]["snippet"]
    assert [h["sessionKey"] for h in payload(own)["hits"]] == [ALICE]
    assert other.is_error and other.content[0].text == f"session_status failed: session {BOB!r} not found"


def test_http_with_a_token_refuses_requests_without_it(prepared):
    with http_server(prepared, "--token", "s3cret-token-0123456789") as (url, proc):
        plain = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Accept": "application/json, text/event-stream"})
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope"})

        async def work(session):
            return (await session.list_tools()).tools

        tools = over_http(url, work, headers={"Authorization": "Bearer s3cret-token-0123456789"})
    assert plain.status_code == 401 and wrong.status_code == 401
    assert plain.json() == {"error": {"code": "unauthorized", "message": "missing or wrong bearer token"}}
    assert len(tools) == len(MCP_TOOLS)
    assert proc.returncode == 0  # SIGTERM: a graceful stop, the engine closed
