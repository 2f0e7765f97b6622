"""Build tests/data/openclaw/legacy-home from the real events of sqlite-home.

The events (every line's JSON) are OpenClaw 2026.9.6's own, read from the real database in
sqlite-home. The legacy *layout* is built by hand from OpenClaw's documentation and source:
`sessions/sessions.json` (key → session entry with `sessionFile`), `<sessionId>.jsonl` and
`<sessionId>-topic-<id>.jsonl` transcripts, reset rotations `<file>.reset.<time>` (one
zstd-compressed, `.zst`), a `.deleted.` archive, an old-style rotation that no key names, and a
few events written by hand in documented shapes (a `branch_summary`, a `custom_message`, an
abandoned branch, an unknown event type). Run: python tests/data/openclaw/build_legacy.py
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import zstandard

HERE = Path(__file__).parent
SOURCE = HERE / "sqlite-home"
TARGET = HERE / "legacy-home"
MAIN, PROJECT = "68fbf2df-eb9b-485e-af6d-a0574c7ceded", "764e5532-1a22-4cde-ac9d-c040e4616e36"


def events(session_id: str) -> list[dict]:
    db = sqlite3.connect(f"file:{SOURCE}/agents/main/agent/openclaw-agent.sqlite?mode=ro", uri=True)
    rows = db.execute("SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (session_id,))
    return [json.loads(text) for (text,) in rows]


def stamp(iso: str) -> str:
    return iso.replace(":", "-")


def write(path: Path, lines: list[dict], *, compress: bool = False) -> None:
    text = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
    if compress:
        path.write_bytes(zstandard.ZstdCompressor(level=1).compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")


def main() -> None:
    if TARGET.exists():
        shutil.rmtree(TARGET)
    sessions = TARGET / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    main_events = events(MAIN)
    header, rest = main_events[0], main_events[1:]
    # the main transcript, rotated at each reset: interval 1 and 2 are `.reset.` files, 3 is current
    intervals, current = [], []
    for event in rest:
        if event["type"] == "reset":
            intervals.append((event["timestamp"], current))
            current = []
        else:
            current.append(event)
    for index, (at, lines) in enumerate(intervals):
        name = f"{MAIN}.jsonl.reset.{stamp(at)}" + (".zst" if index == 1 else "")
        write(sessions / name, [header, *lines], compress=index == 1)
    write(sessions / f"{MAIN}.jsonl", [header, *current])
    # a Telegram forum topic: the project events, with an abandoned branch and hand-written events
    project = events(PROJECT)
    head, body = project[0], project[1:]
    messages = [e for e in body if e["type"] == "message"]
    fork_point = messages[1]  # the first assistant reply
    branch = [
        {"type": "message", "id": "b0000000-0000-4000-8000-000000000001", "parentId": fork_point["id"],
         "timestamp": fork_point["timestamp"], "message": {"role": "user", "content": "abandoned question"}},
        {"type": "message", "id": "b0000000-0000-4000-8000-000000000002",
         "parentId": "b0000000-0000-4000-8000-000000000001", "timestamp": fork_point["timestamp"],
         "message": {"role": "assistant", "content": [{"type": "text", "text": "abandoned answer"}]}},
        {"type": "branch_summary", "id": "b0000000-0000-4000-8000-000000000003", "parentId": fork_point["id"],
         "timestamp": fork_point["timestamp"], "fromId": "b0000000-0000-4000-8000-000000000002",
         "summary": "The user asked an abandoned question and got an abandoned answer."},
    ]
    after = body.index(fork_point) + 1
    body[after] = {**body[after], "parentId": branch[-1]["id"]}
    leaf = body[-1]["id"]
    tail = [
        {"type": "custom_message", "id": "c0000000-0000-4000-8000-000000000001", "parentId": leaf,
         "timestamp": body[-1]["timestamp"], "customType": "reminder", "display": True,
         "content": "Reminder: the project X demo is on 2026-12-10."},
        {"type": "future_thing", "id": "c0000000-0000-4000-8000-000000000002",
         "parentId": "c0000000-0000-4000-8000-000000000001", "timestamp": body[-1]["timestamp"], "payload": 1},
    ]
    write(sessions / f"{PROJECT}-topic-42.jsonl", [head, *body[:after], *branch, *body[after:], *tail])
    # an old-style rotation (the key minted a new session id at /new): no key names it any more
    old = "0d9e2c1a-5b4f-4e3d-9c2b-1a0f9e8d7c6b"
    write(sessions / f"{old}.jsonl.reset.2026-11-28T09-00-00.000Z", [
        {"type": "session", "version": 3, "id": old, "timestamp": "2026-11-28T08:00:00.000Z", "cwd": "/home/user"},
        {"type": "message", "id": "d0000000-0000-4000-8000-000000000001", "parentId": None,
         "timestamp": "2026-11-28T08:00:01.000Z", "message": {"role": "user", "content": "老的会话：去杭州"}},
        {"type": "message", "id": "d0000000-0000-4000-8000-000000000002",
         "parentId": "d0000000-0000-4000-8000-000000000001", "timestamp": "2026-11-28T08:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "好的"}]}},
    ])
    write(sessions / f"{old}.jsonl.deleted.2026-11-29T09-00-00.000Z", [
        {"type": "session", "version": 3, "id": old, "timestamp": "2026-11-28T08:00:00.000Z", "cwd": "/home/user"}])
    store = {
        "agent:main:main": {"sessionId": MAIN, "sessionFile": f"{MAIN}.jsonl", "updatedAt": 1796153569274,
                            "sessionStartedAt": 1796153475573, "chatType": "direct",
                            "displayName": "Remember I prefer TypeScript"},
        "agent:main:telegram:group:-100123:topic:42": {
            "sessionId": PROJECT, "sessionFile": f"{PROJECT}-topic-42.jsonl", "updatedAt": 1796153503887,
            "chatType": "group", "channel": "telegram", "subject": "Project X", "label": "project x",
            "modelOverride": "m1", "providerOverride": "scripted"},
        "cron:nightly-report": {"sessionId": "e0000000-0000-4000-8000-000000000009", "updatedAt": 1796153503887},
    }
    (sessions / "sessions.json").write_text(json.dumps(store, indent=2) + "\n", encoding="utf-8")
    write(sessions / "e0000000-0000-4000-8000-000000000009.jsonl", [
        {"type": "session", "version": 3, "id": "e0000000-0000-4000-8000-000000000009",
         "timestamp": "2026-11-30T03:00:00.000Z", "cwd": "/home/user"},
        {"type": "message", "id": "e0000000-0000-4000-8000-000000000001", "parentId": None,
         "timestamp": "2026-11-30T03:00:00.000Z", "message": {"role": "user", "content": "nightly report"}}])
    workspace = TARGET / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- User prefers TypeScript for new projects.\n"
                                         "- Project X demo on 2026-12-10.\n", encoding="utf-8")
    (workspace / "memory" / "2026-11-29.md").write_text("# 2026-11-29\n\n- 去杭州看房\n", encoding="utf-8")
    config = {
        "agents": {"defaults": {
            "workspace": "~/.openclaw/workspace",
            "memorySearch": {"provider": "local", "query": {"maxResults": 8, "hybrid": {"vectorWeight": 0.6,
                                                                                      "textWeight": 0.4}},
                             "store": {"vector": {"enabled": True}}},
            "compaction": {"reserveTokensFloor": 16000, "memoryFlush": {"enabled": False},
                           "mode": "safeguard"},
            "contextPruning": {"mode": "cache-ttl", "ttl": "1h"}}},
        "session": {"dmScope": "per-channel-peer", "idleMinutes": 120, "maintenance": {"maxEntries": 0},
                    "resetByType": {"dm": {"mode": "idle", "idleMinutes": 60}},
                    "identityLinks": {"alice": ["telegram:alice", "slack:alice_w"]}, "groupScope": "per-group"},
        "tools": {"sessions": {"visibility": "agent"}, "exec": {"security": "allowlist"}},
        "plugins": {"entries": {"active-memory": {"enabled": True, "config": {
            "queryMode": "message", "circuitBreakerMaxTimeouts": 5, "circuitBreakerCooldownMs": 30000}},
            "memory-core": {"config": {"dreaming": {"enabled": True}}}, "telegram": {"enabled": True}}},
        "channels": {"telegram": {"botToken": "000000:not-a-real-token"}},
        "gateway": {"port": 18789, "mode": "local"},
    }
    (TARGET / "openclaw.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
