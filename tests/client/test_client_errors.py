"""A bad argument reads the same through clawkeep.Client as in process: the client runs the Engine's
checks before sending, and the gateway words a refused request with the same checks (naming the
query parameter or JSON field the request used)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import clawkeep
from tests.helpers.gateway_process import GatewayThread

CALLS = [
    lambda e: e.sessions_search("hello", limit=0),
    lambda e: e.sessions_search("hello", limit=True),
    lambda e: e.memory_search("hello", limit=51),
    lambda e: e.memory_search("hello", min_score=2.0),
    lambda e: e.memory_search("hello", min_score=float("nan")),
    lambda e: e.memory_get("MEMORY.md", from_line=0),
    lambda e: e.memory_get("MEMORY.md", lines=10**9),
    lambda e: e.sessions_list(recent_messages=21),
    lambda e: e.sessions_list(kind="bogus"),
    lambda e: e.memory_search("hello", corpus="everything"),
]


def test_the_client_raises_the_engines_words(home: Path) -> None:
    running = GatewayThread(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}, background=False)
    try:
        with clawkeep.Client(running.url) as client:
            for call in CALLS:
                with pytest.raises(clawkeep.InputError) as in_process:
                    call(running.engine)
                with pytest.raises(clawkeep.InputError) as remote:
                    call(client)
                assert str(remote.value) == str(in_process.value)
        with httpx.Client(base_url=running.url, timeout=30) as http:  # a raw request: the HTTP names
            answers = {
                "limit 0 is out of range; allowed 1-50": http.get("/v1/memory/search", params={"q": "x", "limit": 0}),
                "from 0 is out of range; allowed 1-9007199254740992":
                    http.get("/v1/memory/file", params={"path": "MEMORY.md", "from": 0}),
                "minScore 2.0 is out of range; allowed 0-1":
                    http.get("/v1/memory/search", params={"q": "x", "minScore": 2}),
                "kind 'bogus' is not allowed; allowed values: main, direct, group, channel, thread, cron, hook, "
                "heartbeat, subagent, dashboard, coding, other": http.get("/v1/sessions", params={"kind": "bogus"}),
                "timeoutSeconds must be an integer in 0-3600, got bool True":
                    http.post("/v1/sessions/agent:main:main/send", json={"message": "hi", "timeoutSeconds": True}),
            }
            for message, answer in answers.items():
                assert answer.status_code == 422 and answer.json()["error"] == {
                    "code": "invalid_input", "message": message}, answer.text
    finally:
        running.stop()
        running.engine.close()
