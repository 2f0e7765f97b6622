"""Issue 33's seed behaviours, each tried from outside as a user would: the CLI as a subprocess,
a real `clawkeep gateway` over HTTP, the official MCP client, a scripted model over HTTP, and the
Control UI in Chromium. One section per item (docs/behaviours.md says what each guarantees)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.helpers.browser import ARGS, CHROMIUM, UI
from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayProcess, write_config
from tests.helpers.mcp_client import over_stdio, payload
from tests.helpers.model_replies import completion, config_for, last_message
from tests.helpers.scripted_server import ScriptedServer

MAIN = "agent:main:main"
NO_VECTORS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def one_line(text: str) -> str:
    return " ".join(text.split())  # rich wraps stderr at the terminal width


@pytest.fixture
def gateway(home):
    running = GatewayProcess(home, config=NO_VECTORS)
    yield running
    running.stop()


# --- item 1: session_status with sessionKey "current" --------------------------------------------
def test_current_names_the_calling_session_on_the_cli(home):
    write_config(home, {**NO_VECTORS, "session": {"dmScope": "per-channel-peer"}})
    bob = "agent:main:telegram:direct:bob"
    assert run_cli(home, "message", "hello").code == 0
    for text in ("hi from bob", "and again"):
        assert run_cli(home, "message", text, "--channel", "telegram", "--sender", "bob").code == 0
    own = run_cli(home, "sessions", "status", "current", "--as", bob, "--json")
    assert own.code == 0, own.stderr
    assert own.json()["key"] == bob and own.json()["current"] is True and own.json()["messageCount"] == 2
    operator = run_cli(home, "sessions", "status", "current")
    assert operator.code == 2 and "Traceback" not in operator.stderr
    assert "'current' means the calling session, and there is none" in one_line(operator.stderr)


def test_current_over_http_and_mcp(home, gateway):
    with gateway.client() as http:
        assert http.post("/v1/messages", json={"text": "hello"}).status_code == 200
        own = http.get("/v1/sessions/current", headers={"X-Clawkeep-Session": MAIN})
        operator = http.get("/v1/sessions/current")
    assert own.status_code == 200 and own.json()["key"] == MAIN and own.json()["current"] is True
    assert operator.status_code == 400
    assert "calling session" in operator.json()["error"]["message"]
    gateway.stop()  # one writer at a time on the home: the MCP server opens it next

    async def work(session):
        return await session.call_tool("session_status", {"sessionKey": "current"})

    result = over_stdio(home, work, "--session", MAIN)
    assert not result.is_error and payload(result)["key"] == MAIN and payload(result)["current"] is True
    alone = over_stdio(home, work)  # no --session: the operator has no current session
    assert alone.is_error and "calling session" in alone.content[0].text


def test_current_as_a_model_tool(home):
    with ScriptedServer() as server:
        server.add(completion("", [("session_status", {"sessionKey": "current"})]),
                   lambda req: completion("status: " + json.loads(last_message(req)["content"]).get("key", "none")))
        write_config(home, config_for(server))
        sent = run_cli(home, "message", "what is my session?", "--json")
    assert sent.code == 0, sent.stderr
    assert sent.json()["reply"] == f"status: {MAIN}"
    assert sent.json()["toolCalls"] == [{"name": "session_status", "isError": False}]


# --- item 3: an unknown embedding provider is a config error at load -------------------------------
def test_bogus_embedding_provider_is_refused_at_load(home):
    write_config(home, {"agents": {"defaults": {"memorySearch": {"provider": "bogus"}}}})
    for command in (("memory", "status"), ("status",), ("sessions", "list")):
        refused = run_cli(home, *command)
        message = one_line(refused.stderr)
        assert refused.code == 2 and "Traceback" not in refused.stderr, command
        assert "agents.defaults.memorySearch.provider = 'bogus'" in message
        assert "allowed values: auto, local, local-e5, local-use, onnx, openai, ollama, gemini, voyage, mistral, none" \
            in message


# --- item 4: OpenClaw's memorySearch keys keep their meaning ---------------------------------------
OPENCLAW_KEYS = {
    "agents": {"defaults": {"memorySearch": {
        "provider": "local", "fallback": "none", "local": {"modelPath": "~/.node-llama-cpp/models/x.gguf"},
        "queryInputType": "query", "documentInputType": "passage", "sync": {"embeddingBatchTimeoutSeconds": 30}}}},
    "memory": {"search": {"rememberAcrossConversations": True}},
}


def test_openclaw_memory_keys_are_known_and_reported(home):
    write_config(home, OPENCLAW_KEYS)
    status = run_cli(home, "memory", "status", "--json")
    assert status.code == 0, status.stderr
    assert "unknown key" not in status.stderr
    rows = {row["key"].removeprefix("agents.defaults.memorySearch."): row for row in status.json()["openclawKeys"]}
    assert {k: r["handling"] for k, r in rows.items()} == {
        "fallback": "implemented", "local.modelPath": "ignored", "queryInputType": "ignored",
        "documentInputType": "ignored", "sync.embeddingBatchTimeoutSeconds": "mapped",
        "memory.search.rememberAcrossConversations": "mapped"}
    assert "GGUF" in rows["local.modelPath"]["detail"] and "timeoutMs = 30000" in \
        rows["sync.embeddingBatchTimeoutSeconds"]["detail"]
    assert run_cli(home, "memory", "remember", "I prefer tea over coffee").code == 0
    deep = run_cli(home, "memory", "status", "--deep", "--json")  # the timeout really is the provider's
    assert deep.code == 0, deep.stderr
    assert deep.json()["provider"]["timeoutMs"] == 30_000


def test_openclaw_fallback_takes_over_when_the_provider_cannot_start(home):
    write_config(home, {"agents": {"defaults": {"memorySearch": {"provider": "openai", "fallback": "local",
                                                                 "queryInputType": "query"}}}})
    env = {"OPENAI_API_KEY": ""}  # no key: OpenAI cannot be used, OpenClaw's fallback takes over
    assert _cli_env(home, env, "memory", "remember", "I prefer tea over coffee").returncode == 0
    deep = _cli_env(home, env, "memory", "status", "--deep", "--json")
    assert deep.returncode == 0, deep.stderr
    provider = json.loads(deep.stdout)["provider"]
    assert provider["ok"] is True and provider["provider"] == "local"
    assert provider["selectedBy"].startswith("fallback local: provider 'openai' failed")


def test_openclaw_input_types_and_remember_across_refused_when_they_cannot_hold(home):
    write_config(home, {"agents": {"defaults": {"memorySearch": {"provider": "gemini", "queryInputType": "query"}}}})
    refused = run_cli(home, "memory", "status")
    assert refused.code == 2 and "agents.defaults.memorySearch.queryInputType = 'query'" in one_line(refused.stderr)
    write_config(home, {"memory": {"search": {"rememberAcrossConversations": True}},
                        "plugins": {"entries": {"active-memory": {"config": {"rememberAcrossConversations": False}}}}})
    both = run_cli(home, "memory", "status")
    assert both.code == 2 and "disagree" in one_line(both.stderr)


def _cli_env(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    merged = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")} | env
    return subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(home), *args], capture_output=True,
                          text=True, timeout=120, env=merged)


# --- item 5: coding sessions -----------------------------------------------------------------------
def test_coding_session_created_on_the_cli_and_messaged(home):
    write_config(home, NO_VECTORS)
    created = run_cli(home, "sessions", "create", "--coding", "my-app.v2", "--json")
    assert created.code == 0, created.stderr
    key = "agent:main:coding:my-app.v2"
    assert created.json()["key"] == key and created.json()["kind"] == "coding"
    sent = run_cli(home, "message", "--session", key, "run the tests", "--json")
    assert sent.code == 0 and sent.json()["sessionKey"] == key
    listed = run_cli(home, "sessions", "list", "--kind", "coding", "--json").json()
    assert [(s["key"], s["messageCount"]) for s in listed] == [(key, 1)]
    again = run_cli(home, "sessions", "create", "--coding", "my-app.v2")
    assert again.code == 1 and "exists already" in one_line(again.stderr)
    bad = run_cli(home, "sessions", "create", "--coding", "my app")
    assert bad.code == 2 and "letters, digits, '.', '_' or '-'" in one_line(bad.stderr)
    both = run_cli(home, "sessions", "create", "--coding", "x", "--incognito")
    assert both.code == 2 and "cannot be incognito" in one_line(both.stderr)


def test_coding_session_over_http_and_mcp(home, gateway):
    with gateway.client() as http:
        made = http.post("/v1/sessions", json={"coding": "web"})
        dup = http.post("/v1/sessions", json={"coding": "web"})
        bad = http.post("/v1/sessions", json={"coding": "a/b"})
        sent = http.post("/v1/messages", json={"text": "hello coder", "session": "agent:main:coding:web"})
    assert made.status_code == 200 and made.json()["key"] == "agent:main:coding:web"
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "conflict"
    assert bad.status_code == 400
    assert "letters, digits" in bad.json()["error"]["message"]
    assert sent.status_code == 200 and sent.json()["sessionKey"] == "agent:main:coding:web"
    gateway.stop()

    async def work(session):
        return await session.call_tool("sessions_create", {"coding": "cli-agent"})

    result = over_stdio(home, work)
    assert not result.is_error and payload(result)["key"] == "agent:main:coding:cli-agent"


@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def test_coding_session_from_the_control_ui(chromium, gateway):
    ui = UI(chromium, gateway)
    page = ui.open()
    page.once("dialog", lambda dialog: dialog.accept("ui-made"))
    page.click("#new-coding")
    expect(page.locator(".group-coding a[data-key='agent:main:coding:ui-made']")).to_be_visible()
    expect(page).to_have_url(re.compile(r"#/chat/agent%3Amain%3Acoding%3Aui-made$"))
    ui.close()


# --- item 7: text after a [Tool Call: …] marker stays in the history -------------------------------
def test_history_keeps_text_after_a_tool_call_marker(home, gateway):
    write_config(home, NO_VECTORS)
    assert run_cli(home, "message", "please look").code == 0
    said = run_cli(home, "message", "--role", "assistant", "before [Tool Call: foo(1)] … after")
    with_args = run_cli(home, "message", "--role", "assistant",
                        "Looking. [Tool Call: read (ID: 7)]\nArguments: {\"path\": \"a\"}\n\nFound it.")
    assert said.code == 0 and with_args.code == 0
    texts = [m["text"] for m in run_cli(home, "sessions", "history", MAIN, "--json").json()["messages"]]
    assert texts == ["please look", "before … after", "Looking.\n\nFound it."]
    with gateway.client() as http:  # the history view the UI reads
        view = http.get(f"/v1/sessions/{MAIN}/history").json()
    assert [m["text"] for m in view["messages"]][1:] == ["before … after", "Looking.\n\nFound it."]


# --- item 8: a reused message id with another text is a conflict ----------------------------------
def test_reused_message_id_with_another_text_is_a_conflict_on_the_cli(home):
    write_config(home, NO_VECTORS)
    first = run_cli(home, "message", "--message-id", "m-1", "lunch at noon", "--json")
    same = run_cli(home, "message", "--message-id", "m-1", "lunch at noon", "--json")
    other = run_cli(home, "message", "--message-id", "m-1", "dinner at eight", "--json")
    assert first.code == 0 and same.code == 0 and same.json()["duplicate"] is True
    assert "conflict" not in same.json()
    assert other.code == 2 and other.json()["conflict"] is True and other.json()["storedText"] == "lunch at noon"
    assert "the stored text is 'lunch at noon'" in one_line(other.stderr)
    texts = [m["text"] for m in run_cli(home, "sessions", "history", MAIN, "--json").json()["messages"]]
    assert texts == ["lunch at noon"]  # nothing stored twice, nothing overwritten


def test_reused_message_id_with_another_text_is_a_409_over_http(gateway):
    body = {"text": "ship on Friday", "channel": "telegram", "sender": "alice", "messageId": "77"}
    with gateway.client() as http:
        first = http.post("/v1/messages", json=body)
        same = http.post("/v1/messages", json=body)
        other = http.post("/v1/messages", json={**body, "text": "ship on Monday"})
        elsewhere = http.post("/v1/messages", json={**body, "sender": "bob", "text": "ship on Monday"})
    assert first.status_code == 200 and same.status_code == 200 and same.json()["duplicate"] is True
    assert other.status_code == 409
    error = other.json()["error"]
    assert error["code"] == "conflict" and error["conflict"] is True and error["storedText"] == "ship on Friday"
    assert "the stored text is 'ship on Friday'" in error["message"]
    assert elsewhere.status_code == 200 and "duplicate" not in elsewhere.json()  # ids are per conversation


# --- item 13: the home is named first --------------------------------------------------------------
def test_gateway_and_status_name_the_home_first(home):
    write_config(home, NO_VECTORS)
    status = run_cli(home, "status")
    assert status.code == 0 and f"home {home}" in status.stdout.splitlines()[0]
    proc = subprocess.Popen([sys.executable, "-m", "clawkeep", "--home", str(home), "gateway", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(30)
    assert line.startswith(f"clawkeep gateway (home {home}) on http://127.0.0.1:"), line
