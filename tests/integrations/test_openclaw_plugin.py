"""The OpenClaw memory plugin (integrations/openclaw) in real OpenClaw 2026.9.6 on Node 24.

One world for the module, built as a user would: a clawkeep gateway subprocess with a token, a
scripted OpenAI-compatible model on loopback configured as an OpenClaw custom provider, and an
OpenClaw home where the plugin is installed from this clone (`openclaw plugins install … --force
--accept-capabilities`), given the gateway's URL and token, granted conversation access and put in
the memory slot with memory-core disabled. OpenClaw and Node come from the npm registry through
`.ci/openclaw.sh install` (cached outside the clone). The tests run in file order: capture, then
the tool path, the CLI, and last the gateway going away.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.gateway_process import GatewayProcess
from tests.helpers.scripted_server import RecordedRequest, Reply, ScriptedServer, sse_data

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "integrations" / "openclaw"
TOKEN = "ck-openclaw-plugin-test-token-0123456789"  # the gateway's operator token (the test's own checks)
INTERNAL = "OPENCLAW_INTERNAL_CONTEXT"  # OpenClaw's own context blocks, sent as user messages
TURN_TIMEOUT_S = 400


# --- the scripted model ------------------------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def scripted_model(request: RecordedRequest) -> Any:
    """Asked to "search memory for X", it calls memory_search (directly, or through OpenClaw's
    tool_call when Tool Search hides the schemas); given a tool result, it answers with it;
    otherwise it says "OK noted."."""
    body = request.json()
    spoken = [m for m in body.get("messages", []) if not (m["role"] == "user" and INTERNAL in _text(m.get("content")))]
    last = spoken[-1] if spoken else {}
    users = [m for m in spoken if m["role"] == "user"]
    asked = re.search(r"search memory for ([^\n]+)", _text(users[-1]["content"])) if users else None
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    if last.get("role") == "tool":
        message: dict[str, Any] = {"role": "assistant", "content": "TOOLRESULT: " + _text(last.get("content"))}
    elif asked:
        query = {"query": asked.group(1)}
        call = ({"name": "memory_search", "arguments": json.dumps(query)} if "memory_search" in tools
                else {"name": "tool_call", "arguments": json.dumps({"id": "memory_search", "args": query})})
        message = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "call_1", "type": "function", "function": call}]}
    else:
        message = {"role": "assistant", "content": "OK noted."}
    return _completion(body, message)


def _completion(body: dict[str, Any], message: dict[str, Any]) -> Any:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    base = {"id": "c1", "created": int(time.time()), "model": body.get("model")}
    if not body.get("stream"):
        return {**base, "object": "chat.completion", "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    delta = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(call, index=0) for call in message["tool_calls"]]
    first = {**base, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    last = {**base, "object": "chat.completion.chunk", "usage": usage,
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    return Reply(sse=sse_data(first, last, "[DONE]"))


# --- the world ---------------------------------------------------------------------------------
@dataclass
class World:
    openclaw_home: Path
    clawkeep_home: Path
    env: dict[str, str]
    gateway: GatewayProcess
    model: ScriptedServer
    plugin_token: str = ""  # agent-scoped: what OpenClaw is given

    def openclaw(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["openclaw", *args], capture_output=True, text=True, timeout=timeout, env=self.env,
                              cwd=self.openclaw_home, stdin=subprocess.DEVNULL)

    def turn(self, session_key: str, text: str) -> tuple[subprocess.CompletedProcess[str], str]:
        """One embedded OpenClaw agent turn; its reply text."""
        done = self.openclaw("agent", "--local", "--session-key", session_key, "--message", text, "--json",
                             timeout=TURN_TIMEOUT_S)
        try:
            payloads = json.loads(done.stdout).get("payloads") or []
        except json.JSONDecodeError:
            payloads = []
        return done, "\n".join(p.get("text") or "" for p in payloads)

    def clawkeep(self) -> httpx.Client:
        return self.gateway.client(headers={"authorization": f"Bearer {TOKEN}"})


def _openclaw_bin() -> Path:
    done = subprocess.run(["bash", str(REPO / ".ci" / "openclaw.sh"), "install"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return Path(done.stdout.strip().splitlines()[-1]) / "bin"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("openclaw")
    clawkeep_home, openclaw_home = root / "clawkeep", root / "home"
    clawkeep_home.mkdir()
    (openclaw_home / ".openclaw").mkdir(parents=True)
    model = ScriptedServer(scripted_model).start()
    gateway = GatewayProcess(clawkeep_home, env={"CLAWKEEP_GATEWAY_TOKEN": TOKEN}, config={
        "agents": {"defaults": {"memorySearch": {"sources": ["memory", "sessions"],
                                                 "experimental": {"sessionMemory": True}}}}})
    # OpenClaw gets an agent-scoped credential, made as the docs say (clawkeep tokens create … --json)
    made = subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(clawkeep_home), "tokens", "create",
                           "openclaw", "--scope", "agent:main", "--json"], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "CLAWKEEP_HOME"})
    assert made.returncode == 0, made.stderr
    plugin_token = json.loads(made.stdout)["token"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "CLAWKEEP"))}
    env.update(HOME=str(openclaw_home), PATH=f"{_openclaw_bin()}:{os.environ['PATH']}", CK_TOKEN=plugin_token,
               NO_COLOR="1")
    (openclaw_home / ".openclaw" / "openclaw.json").write_text(json.dumps({
        "agents": {"defaults": {"model": {"primary": "scripted/m1"}}},
        "models": {"mode": "merge", "providers": {"scripted": {
            "baseUrl": f"{model.url}/v1", "apiKey": "sk-local", "api": "openai-completions",
            "models": [{"id": "m1", "name": "Scripted", "reasoning": False, "input": ["text"], "contextWindow": 32000,
                        "maxTokens": 1024, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}},
    }))
    world = World(openclaw_home, clawkeep_home, env, gateway, model, plugin_token)
    try:
        for step in (("plugins", "install", str(PLUGIN), "--force", "--accept-capabilities"),
                     ("config", "set", "plugins.entries.memory-clawkeep.config.url", gateway.url),
                     ("config", "set", "plugins.entries.memory-clawkeep.config.token", "${CK_TOKEN}"),
                     ("config", "set", "plugins.entries.memory-clawkeep.hooks.allowConversationAccess", "true"),
                     ("plugins", "disable", "memory-core")):
            done = world.openclaw(*step)
            assert done.returncode == 0, (step, done.stdout[-1500:], done.stderr[-1500:])
        yield world
    finally:
        gateway.stop()
        world.gateway.stop()  # a test restarts the gateway on a new port: that one is stopped too
        model.stop()


# --- the tests, in order -----------------------------------------------------------------------
def test_the_plugin_is_installed_in_the_memory_slot(world: World):
    config = json.loads((world.openclaw_home / ".openclaw" / "openclaw.json").read_text())
    assert world.plugin_token not in json.dumps(config)  # the secret stays in the environment
    assert config["plugins"]["slots"]["memory"] == "memory-clawkeep"
    assert config["plugins"]["entries"]["memory-core"]["enabled"] is False
    inspected = world.openclaw("plugins", "inspect", "memory-clawkeep", "--runtime", "--json")
    assert inspected.returncode == 0, inspected.stderr[-1500:]
    assert '"memory_search"' in inspected.stdout and '"memory_get"' in inspected.stdout


def test_a_turn_is_captured_into_the_clawkeep_session_of_the_same_key(world: World):
    done, reply = world.turn("agent:main:alpha", "My favourite coffee roaster is Kestrel Roasters in Leeds")
    assert done.returncode == 0, done.stderr[-3000:]
    assert reply == "OK noted."
    with world.clawkeep() as http:
        history = http.get("/v1/sessions/agent:main:alpha/history")
    assert history.status_code == 200, history.text
    spoken = [(m["role"], m["text"]) for m in history.json()["messages"]]
    assert spoken == [("user", "My favourite coffee roaster is Kestrel Roasters in Leeds"),
                      ("assistant", "OK noted.")]


def test_memory_search_from_another_conversation_is_answered_by_clawkeep(world: World):
    asked_before = len(world.model.requests)
    done, reply = world.turn("agent:main:main", "please search memory for coffee roaster")
    assert done.returncode == 0, done.stderr[-3000:]
    # the model read memory-core's result shape, filled by clawkeep from the other conversation
    tool_results = [_text(m.get("content")) for r in world.model.requests[asked_before:]
                    for m in r.json().get("messages", []) if m["role"] == "tool"]
    assert any("Kestrel Roasters" in text and '"source": "sessions"' in text for text in tool_results), tool_results
    assert "Kestrel Roasters" in reply
    assert '"provider": "clawkeep"' in reply
    # the call ran as the calling OpenClaw session's clawkeep session (the owner boundary)
    searches = [json.loads(line) for line in world.gateway.logs().splitlines()
                if '"route": "/v1/memory/search"' in line]
    assert searches and searches[-1]["sessionKey"] == "agent:main:main"


def test_openclaw_memory_cli_answers_from_clawkeep_with_cjk(world: World):
    stored = subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(world.clawkeep_home), "memory",
                             "remember", "我最喜欢的咖啡是澳白，每天早上一杯"],
                            capture_output=True, text=True, timeout=120,
                            env={k: v for k, v in os.environ.items() if k != "CLAWKEEP_HOME"})
    assert stored.returncode == 0, stored.stderr
    found = world.openclaw("memory", "search", "澳白", "--json")
    assert found.returncode == 0, found.stderr[-1500:]
    results = json.loads(found.stdout)["results"]
    assert results and results[0]["path"] == "MEMORY.md" and "澳白" in results[0]["snippet"]
    status = world.openclaw("memory", "status", "--json")
    assert status.returncode == 0, status.stderr[-1500:]
    assert json.loads(status.stdout)["backend"] == "clawkeep"
    indexed = world.openclaw("memory", "index", "--json")
    assert indexed.returncode == 0, indexed.stderr[-1500:]
    assert json.loads(indexed.stdout)["chunks"] >= 1


def test_with_the_gateway_down_tools_report_it_and_the_turn_goes_on(world: World):
    world.gateway.stop()
    searched = world.openclaw("memory", "search", "coffee", "--json")
    assert searched.returncode != 0
    assert world.gateway.url in searched.stderr and "unreachable" in searched.stderr
    done, reply = world.turn("agent:main:main", "please search memory for coffee")
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"unavailable": true' in reply and world.gateway.url in reply
    assert "this turn was not recorded in clawkeep" in done.stderr


def test_turns_missed_while_the_gateway_was_down_are_captured_when_it_is_back(world: World):
    missed = "The boiler service is booked for the 14th with Hartley Heating"
    done, _ = world.turn("agent:main:gamma", "Remember that my locker code is kept in the blue notebook")
    assert done.returncode == 0, done.stderr[-3000:]
    world.gateway.stop()
    done, reply = world.turn("agent:main:gamma", missed)
    assert done.returncode == 0 and reply == "OK noted.", done.stderr[-3000:]
    assert "this turn was not recorded in clawkeep" in done.stderr
    world.gateway = GatewayProcess(world.clawkeep_home, env={"CLAWKEEP_GATEWAY_TOKEN": TOKEN})  # same home, new port
    configured = world.openclaw("config", "set", "plugins.entries.memory-clawkeep.config.url", world.gateway.url)
    assert configured.returncode == 0, configured.stderr[-1500:]
    done, _ = world.turn("agent:main:gamma", "And the bike shop closes at six")
    assert done.returncode == 0, done.stderr[-3000:]
    with world.clawkeep() as http:
        history = http.get("/v1/sessions/agent:main:gamma/history").json()["messages"]
    users = [m["text"] for m in history if m["role"] == "user"]
    assert users == ["Remember that my locker code is kept in the blue notebook", missed,
                     "And the bike shop closes at six"]  # in order, each once
    assert [m["role"] for m in history].count("assistant") == 3
