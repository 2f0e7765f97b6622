"""Another system's conversations in clawkeep: a session opened by its key, messages recorded
without a reply, and the index brought up to date on request (what the OpenClaw plugin uses)."""

from __future__ import annotations

import json

from tests.helpers.gateway_process import GatewayThread
from tests.helpers.scripted_server import ScriptedServer

JSON = {"content-type": "application/json"}


def test_sessions_create_key_opens_once_and_maps_foreign_keys(cli):
    first = cli("sessions", "create", "--key", "agent:main:telegram:direct:+15555550123", "--json")
    assert first.code == 0, first.stderr
    made = json.loads(first.stdout)
    assert made["created"] is True and made["kind"] == "direct" and made["channel"] == "telegram"
    again = json.loads(cli("sessions", "create", "--key", "agent:main:telegram:direct:+15555550123",
                               "--json").stdout)
    assert again["created"] is False and again["sessionId"] == made["sessionId"]
    # a key without the agent prefix (OpenClaw's cron keys) is mapped as import maps it
    cron = json.loads(cli("sessions", "create", "--key", "cron:nightly", "--json").stdout)
    assert cron["key"] == "agent:main:cron:nightly" and cron["kind"] == "cron"


def test_sessions_create_key_refuses_thread_kinds_made_elsewhere(cli):
    refused = cli("sessions", "create", "--key", "agent:main:dashboard:x")
    assert refused.code == 2 and "sessions create" in refused.stderr and "Traceback" not in refused.stderr
    both = cli("sessions", "create", "--key", "agent:main:main", "--incognito")
    assert both.code == 2 and "incognito" in both.stderr


def test_record_only_stores_without_calling_the_model(home):
    with ScriptedServer() as model:  # any request to it would be answered 500 "script exhausted"
        config = {"models": {"providers": {"p": {"api": "openai", "baseUrl": f"{model.url}/v1", "apiKey": "k",
                                                 "models": {"m": {}}}}},
                  "agents": {"defaults": {"model": {"primary": "p/m"}}}}
        running = GatewayThread(home, config, background=False)
        try:
            with running.client(headers=JSON) as http:
                opened = http.post("/v1/sessions", json={"key": "agent:main:alpha"})
                assert opened.status_code == 200 and opened.json()["created"] is True
                caller = {"x-clawkeep-session": "agent:main:alpha"}
                said = http.post("/v1/messages", headers=caller,
                                 json={"text": "My roaster is Kestrel", "recordOnly": True, "messageId": "oc-1"})
                answered = http.post("/v1/messages", headers=caller,
                                     json={"text": "Noted.", "role": "assistant", "recordOnly": True})
                assert said.status_code == 200 and said.json()["mode"] == "record", said.text
                assert "recordOnly" in said.json()["note"] and "reply" not in said.json()
                assert answered.status_code == 200, answered.text
                history = http.get("/v1/sessions/agent:main:alpha/history").json()["messages"]
                assert [(m["role"], m["text"]) for m in history] == [("user", "My roaster is Kestrel"),
                                                                      ("assistant", "Noted.")]
                # a calling session may open only itself
                other = http.post("/v1/sessions", headers=caller, json={"key": "agent:main:beta"})
                assert other.status_code == 400 and "only itself" in other.json()["error"]["message"]
        finally:
            running.stop()
        assert model.requests == []


def test_memory_index_route_indexes_a_new_note(home):
    running = GatewayThread(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}, background=False)
    try:
        (home / "workspace").mkdir(exist_ok=True)
        (home / "workspace" / "MEMORY.md").write_text("# Memory\n\n- The roaster is Kestrel\n")
        with running.client(headers=JSON) as http:
            report = http.post("/v1/memory/index", json={})
            assert report.status_code == 200, report.text
            assert "MEMORY.md" in report.json()["indexed"] and report.json()["chunks"] >= 1
            scoped = http.post("/v1/memory/index", json={"force": True},
                               headers={"x-clawkeep-session": "agent:main:main"})
            assert scoped.status_code in (403, 404)
    finally:
        running.stop()
