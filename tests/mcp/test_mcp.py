"""`clawkeep mcp` through the official MCP SDK's real client: the server runs as a subprocess,
over stdio (`mcp.client.stdio`) and over streamable HTTP on loopback (`mcp.client.streamable_http`)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.server.stdio import stdio_server

from clawkeep import Engine, api
from clawkeep.mcp.server import MCP_TOOLS
from clawkeep.mcp.stdio import MAX_LINE_BYTES, CheckedLines
from tests.helpers.cli import run_cli
from tests.helpers.mcp_client import (
    free_port,
    http_server,
    over_http,
    over_stdio,
    payload,
    server_args,
    server_env,
)

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
    assert [m["text"] for m in data["sessions_history"]["messages"]] == ["下周二我去上海出差",
                                                                         "Safe travels to Shanghai!"]
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


# --- malformed lines on stdio (issue 28) ------------------------------------------------------------
OVERSIZED = b'{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{"pad":"' + b"a" * MAX_LINE_BYTES + b'"}}'
MALFORMED = [  # (line, the id the answer must carry, the JSON-RPC error code)
    (b"{", None, types.PARSE_ERROR),
    (b"[]", None, types.INVALID_REQUEST),
    (b"{}", None, types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}', 1, types.INVALID_PARAMS),
    (b'{"jsonrpc":"2.0","id":"s-2","method":"tools/call","params":{"name":"memory_search",'
     b'"arguments":{"query":"\\ud800"}}}', "s-2", types.INVALID_PARAMS),
    (b'[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]', None, types.INVALID_REQUEST),
    (b'"a string"', None, types.INVALID_REQUEST),
    (b'{"jsonrpc":"1.0","id":4,"method":"tools/list"}', 4, types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None, types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":5,"method":"tools/list"} trailing', None, types.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x\xff"}}', None, types.PARSE_ERROR),
    (b"[" * 100_000 + b"]" * 100_000, None, types.PARSE_ERROR),
    (OVERSIZED, None, types.INVALID_REQUEST),
]
ANSWER_WITHIN_S = 10


def answer_to(proc: subprocess.Popen, line: bytes) -> tuple[dict, float]:
    """Write one raw line to the server's stdin; its one answer line (and how long it took), or a
    failure after ANSWER_WITHIN_S (the reading thread cannot hang the test)."""
    started = time.monotonic()
    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(ANSWER_WITHIN_S)
    if not box:
        proc.kill()
        pytest.fail(f"no answer within {ANSWER_WITHIN_S} s to {line[:80]!r}")
    assert box[0].endswith(b"\n"), box[0]
    return json.loads(box[0]), time.monotonic() - started


def test_stdio_answers_every_malformed_line_and_keeps_serving(prepared, tmp_path):
    """Raw lines to `clawkeep mcp`'s stdin: each malformed one gets its JSON-RPC error (with the
    request's id, null when unknown) within a bounded time; then a valid raw request and the
    official client work in the same server process."""
    log = open(tmp_path / "stderr.txt", "w+b")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, *server_args(prepared)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=log, env=server_env())
    try:
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
        assert answer_to(proc, json.dumps(hello).encode())[0]["result"]["serverInfo"]["name"] == "clawkeep"
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n\n')  # and a blank line
        slowest = 0.0
        for line, expected_id, code in MALFORMED:
            answer, took = answer_to(proc, line)
            slowest = max(slowest, took)
            assert answer["jsonrpc"] == "2.0" and "id" in answer and answer["id"] == expected_id, (line[:80], answer)
            assert answer["error"]["code"] == code and answer["error"]["message"], (line[:80], answer)
            assert proc.poll() is None
        listed, _ = answer_to(proc, b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
        assert [t["name"] for t in listed["result"]["tools"]] == list(MCP_TOOLS)
        result = anyio.run(official_client_on, proc)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not result.is_error and "TypeScript" in payload(result)["results"][0]["snippet"]
    log.seek(0)
    stderr = log.read().decode()
    log.close()
    assert stderr.count("answered a malformed line") == len(MALFORMED) and "Traceback" not in stderr
    print(f"slowest answer to a malformed line: {slowest * 1000:.0f} ms")


async def official_client_on(proc: subprocess.Popen):
    """The official client over the running server's pipes (the SDK's transport, given explicit
    streams): initialize, one tool call, then end of input."""
    client_in = anyio.wrap_file(io.TextIOWrapper(proc.stdout, encoding="utf-8"))
    client_out = anyio.wrap_file(io.TextIOWrapper(proc.stdin, encoding="utf-8", write_through=True))
    async with stdio_server(stdin=client_in, stdout=client_out) as (read, write), \
            ClientSession(read, write) as session:
        with anyio.fail_after(60):
            await session.initialize()
            result = await session.call_tool("memory_search", {"query": "which language do I prefer?"})
        proc.stdin.close()  # the server sees end of input and exits
    return result


def test_checked_lines_pass_valid_messages_unchanged():
    """Valid lines reach the SDK exactly as written (escapes, spacing, key order, CRLF kept)."""
    valid = [b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n',
             b'{ "method" : "tools/call", "params": {"name": "memory_search", "arguments": '
             b'{"query": "caf\\u00e9 \\ud83d\\ude00 \xe4\xb8\x8a\xe6\xb5\xb7"}}, "id": "x", "jsonrpc": "2.0" }\r\n',
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    answers = []

    async def main():
        lines = CheckedLines(io.BytesIO(b"".join(valid[:2]) + b"{\n" + valid[2]))

        async def reply(message):
            answers.append(message.message)

        lines.answer_with(reply)
        return [line async for line in lines]

    passed = anyio.run(main)
    assert [line.encode("utf-8") for line in passed] == valid
    assert len(answers) == 1 and answers[0].error.code == types.PARSE_ERROR and answers[0].id is None
