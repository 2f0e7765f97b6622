"""Issue 33 items 2, 9, 10 and issue 29's corpus-limit bug, tried from outside: the CLI as a
subprocess, the real HTTP gateway, the official MCP client and a scripted model on loopback
(docs/memory-behaviours.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine


def _remember(home: Path, text: str) -> dict:
    result = run_cli(home, "memory", "remember", text, "--json")
    assert result.code == 0, result.stderr
    return result.json()


def _items(home: Path) -> list[dict]:
    result = run_cli(home, "memory", "items", "--json")
    assert result.code == 0, result.stderr
    return result.json()


# --- item 2: near-duplicates are merged or superseded, never kept twice -------------------------
@pytest.mark.parametrize(("short", "long"), [
    ("我喜欢喝美式", "我喜欢喝美式咖啡"),
    ("I live in Lisbon", "I live in Lisbon Portugal"),
    ("我住在北京", "我住在北京朝阳区"),
])
def test_a_near_duplicate_supersedes_the_shorter_line_with_the_trail_kept(home, short, long):
    first = _remember(home, short)
    second = _remember(home, long)
    assert second["status"] == "stored" and second["superseded"] == [first["item"]["id"]], second
    by_id = {item["id"]: item for item in _items(home)}
    assert by_id[first["item"]["id"]]["status"] == "superseded"  # the trail: kept, linked to the new line
    assert by_id[first["item"]["id"]]["supersededBy"] == second["item"]["id"]
    assert [i["text"] for i in by_id.values() if i["status"] == "active"] == [long]
    # the shorter wording again merges into the richer line instead of adding a third
    again = _remember(home, short)
    assert again["status"] == "duplicate" and again["item"]["id"] == second["item"]["id"], again
    assert len([i for i in _items(home) if i["status"] == "active"]) == 1


@pytest.mark.parametrize(("first", "second"), [
    ("I like tea", "I don't like tea"),
    ("我喜欢喝美式", "我不喜欢喝美式咖啡"),
    ("The trip budget is 5000 euros", "The trip budget is 50000 euros"),
    ("预算5000元", "预算50000元"),
    ("I like dogs", "I like hot dogs"),
    ("I like tea", "I like tea but not green tea"),
])
def test_different_facts_are_not_merged_as_near_duplicates(home, first, second):
    a, b = _remember(home, first), _remember(home, second)
    assert b["status"] == "stored", b
    if b.get("superseded"):  # a real contradiction may supersede; a near-duplicate merge may not
        assert first in ("I like tea", "我喜欢喝美式", "The trip budget is 5000 euros", "预算5000元"), b
    texts = {i["text"] for i in _items(home)}
    assert {first, second} <= texts and a["item"]["id"] != b["item"]["id"]


# --- item 9: "remember" does not make a one-off instruction durable ------------------------------
@pytest.mark.parametrize("text", [
    "Remember this: 把这份文档转成PDF发我邮箱",
    "记住这个：把这份文档转成PDF发我邮箱",
    "Please remember the following: send this file to my email now",
    "Remember: 把这份文档转成PDF发我邮箱",
    "Remember to send this file to my email now",
])
def test_an_explicit_remember_does_not_make_a_one_off_instruction_durable(home, text):
    result = _remember(home, text)
    assert result["status"] == "refused" and "one-off operational instruction" in result["reason"], result
    assert _items(home) == []
    refusals = run_cli(home, "memory", "refusals", "--json").json()
    assert refusals and refusals[0]["source"] == "remember"


def test_a_remembered_standing_instruction_or_fact_is_still_kept(home):
    assert _remember(home, "Remember this: 以后文件都发我工作邮箱")["item"]["text"] == "以后文件都发我工作邮箱"
    assert _remember(home, "Remember this restaurant closes on Mondays")["status"] == "stored"
    assert _remember(home, "Remember to call mom every Sunday")["status"] == "stored"  # a standing reminder


# --- issue 29: memory_search(corpus="memory", limit=1) picks the corpus before the limit ---------
TRANSCRIPTS = {"agents": {"defaults": {"memorySearch": {
    "provider": "none", "sources": ["memory", "sessions"], "experimental": {"sessionMemory": True}}}}}


def test_corpus_memory_with_limit_one_finds_the_memory_file_hit_beside_transcripts(home):
    config = home / "clawkeep.json5"
    config.write_text(json.dumps(TRANSCRIPTS))
    with open_engine(home, TRANSCRIPTS) as eng:
        eng.memory_remember("The staging database runs on host db7")
        for n in range(6):  # transcripts that outrank the single memory line for the query
            eng.message(f"staging database staging database host db7 problem number {n}")
        everything = eng.memory_search("staging database host", limit=3).to_json()["results"]
    assert everything and everything[0]["origin"] == "sessions"  # the case the bug needs
    found = run_cli(home, "memory", "search", "staging database host", "--corpus", "memory", "--limit", "1",
                    "--json", config=config)
    assert found.code == 0, found.stderr
    [hit] = found.json()["results"]
    assert hit["origin"] == "memory" and hit["path"] == "MEMORY.md" and "db7" in hit["snippet"]
    sessions = run_cli(home, "memory", "search", "staging database host", "--corpus", "sessions", "--limit", "1",
                       "--json", config=config).json()["results"]
    assert [h["origin"] for h in sessions] == ["sessions"]
    bad = run_cli(home, "memory", "search", "x", "--corpus", "notes", config=config)
    assert bad.code == 2 and "corpus" in bad.stderr and "allowed values: all, memory, sessions" in bad.stderr


# --- item 10: the model corrects memory (tool loop, HTTP, MCP) -----------------------------------
PEERS = {"session": {"dmScope": "per-channel-peer"}, "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
ALICE = "agent:main:telegram:direct:alice"
BOB = "agent:main:telegram:direct:bob"


def _statuses(eng) -> dict[str, str]:
    return {i["text"]: i["status"] for i in (item.to_json() for item in eng.memory_items())}


def test_the_model_edits_and_forgets_its_own_lines_through_the_tool_loop(home):
    from tests.helpers.model_replies import completion, config_for, last_message
    from tests.helpers.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        config = config_for(server)
        config["session"] = {"dmScope": "per-channel-peer"}
        replies = {}

        def answer(request):
            replies.setdefault("results", []).append(json.loads(last_message(request)["content"]))
            return completion("Done.")

        server.add(completion("", [("memory_edit", {"oldText": "I live in Beijing", "text": "I live in Hangzhou"})]),
                   answer,
                   completion("", [("memory_forget", {"oldText": "I live in Hangzhou"})]), answer,
                   completion("", [("memory_edit", {"oldText": "I drink coffee", "text": "my password is hunter2X!"})]),
                   answer)
        with open_engine(home, config) as eng:
            eng.message("hello", channel="telegram", sender="alice", role="assistant")
            eng.memory_remember("I live in Beijing", caller=ALICE)
            eng.memory_remember("I drink coffee", caller=ALICE)
            eng.message("I moved to Hangzhou, please fix that", channel="telegram", sender="alice")
            offered = {t["function"]["name"] for t in server.requests[0].json()["tools"]}
            assert {"memory_edit", "memory_forget", "memory_undo"} <= offered
            edited = replies["results"][0]
            assert edited["status"] == "edited" and edited["item"]["text"] == "I live in Hangzhou"
            assert edited["previous"]["status"] == "superseded"  # the trail
            assert _statuses(eng) == {"I live in Beijing": "superseded", "I live in Hangzhou": "active",
                                      "I drink coffee": "active"}
            eng.message("forget where I live", channel="telegram", sender="alice")
            assert replies["results"][1]["status"] == "forgotten"
            assert _statuses(eng)["I live in Hangzhou"] == "forgotten"
            listed = run_cli(home, "memory", "items", "--status", "forgotten", "--json").json()
            assert [(i["text"], i["forgottenBy"]) for i in listed] == [("I live in Hangzhou", ALICE)]
            hits = eng.memory_search("where do I live Hangzhou", caller=ALICE).to_json()["results"]
            assert not any("Hangzhou" in h["snippet"] for h in hits)  # a forgotten line is not recalled
            eng.message("change the coffee note", channel="telegram", sender="alice")
            refused = replies["results"][2]
            assert refused["status"] == "refused" and "secret" in refused["reason"]  # the same write filters
            assert "hunter2" not in (home / "workspace" / "MEMORY.md").read_text()
            assert eng.memory_refusals()[0].to_json()["source"] == "tool"


def test_corrections_over_http_keep_the_owner_boundary_and_undo(home):
    from tests.helpers.gateway_process import GatewayThread

    running = GatewayThread(home, PEERS)
    try:
        eng = running.engine
        eng.message("hi", channel="telegram", sender="alice")
        eng.message("hi", channel="telegram", sender="bob")
        alice_line = eng.memory_remember("My favourite colour is blue", caller=ALICE).to_json()["item"]
        as_alice, as_bob = {"X-Clawkeep-Session": ALICE}, {"X-Clawkeep-Session": BOB}
        with running.client() as http:
            hidden = http.post("/v1/memory/edit", headers=as_bob,
                               json={"itemId": alice_line["id"], "text": "My favourite colour is red"})
            absent = http.post("/v1/memory/forget", json={"itemId": "m-00000000"}, headers=as_bob)
            assert hidden.status_code == absent.status_code == 404  # another peer's line is missing, not forbidden
            assert hidden.json()["error"]["message"].replace(alice_line["id"], "X") == \
                absent.json()["error"]["message"].replace("m-00000000", "X")
            edited = http.post("/v1/memory/edit", headers=as_alice,
                               json={"itemId": alice_line["id"], "text": "My favourite colour is green"})
            assert edited.status_code == 200, edited.text
            change = edited.json()
            assert change["status"] == "edited" and change["previous"]["supersededBy"] == change["item"]["id"]
            both = http.post("/v1/memory/edit", json={"itemId": "x", "oldText": "blue", "text": "y"}, headers=as_alice)
            assert both.status_code == 400 and "exactly one of itemId" in both.json()["error"]["message"]
            undone = http.post("/v1/memory/undo", json={"itemId": change["undo"]}, headers=as_alice).json()
            assert undone["status"] == "undone" and undone["item"]["text"] == "My favourite colour is blue"
            assert undone["item"]["status"] == "active" and undone["previous"]["status"] == "superseded"
            # the operator's edit and delete stay as they were: in place, no trail, a session refused
            forbidden = http.put(f"/v1/memory/items/{alice_line['id']}", json={"text": "x"}, headers=as_alice)
            assert forbidden.status_code == 403
            in_place = http.put(f"/v1/memory/items/{alice_line['id']}", json={"text": "My favourite colour is teal"})
            assert in_place.status_code == 200 and in_place.json()["id"] == alice_line["id"]
    finally:
        running.stop()


def test_mcp_offers_the_corrections_and_read_only_workspaces_refuse_them(home):
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.helpers.mcp_client import payload, server_args, server_env

    (home / "clawkeep.json5").write_text(json.dumps(PEERS))
    with open_engine(home) as eng:
        eng.message("hi", channel="telegram", sender="alice")
        line = eng.memory_remember("I drink green tea every morning", caller=ALICE).to_json()["item"]

    async def work(session):
        names = [t.name for t in (await session.list_tools()).tools]
        forgot = payload(await session.call_tool("memory_forget", {"oldText": "green tea"}))
        back = payload(await session.call_tool("memory_undo", {"itemId": forgot["undo"]}))
        return names, forgot, back

    params = StdioServerParameters(command=sys.executable, args=server_args(home, "--session", ALICE), env=server_env())

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    names, forgot, back = anyio.run(main)
    assert {"memory_edit", "memory_forget", "memory_undo"} <= set(names)
    assert forgot["status"] == "forgotten" and forgot["previous"]["id"] == line["id"]
    assert back["status"] == "undone" and back["item"]["status"] == "active"
    read_only = {**PEERS, "agents": {"defaults": {**PEERS["agents"]["defaults"], "workspaceAccess": "ro"}}}
    (home / "clawkeep.json5").write_text(json.dumps(read_only))
    refused = run_cli(home, "memory", "items", "--json")
    assert refused.code == 0
    with open_engine(home) as eng, pytest.raises(Exception, match="read-only"):
        eng.memory_forget(line["id"], caller=ALICE)


# --- item 11: a fact recalled on one day by enough distinct queries is promoted -------------------
def test_a_fact_recalled_ten_times_by_five_queries_on_one_day_passes_deep(home):
    from datetime import UTC, datetime

    day = datetime.now(UTC).date().isoformat()
    notes = home / "workspace" / "memory"
    notes.mkdir(parents=True)
    (notes / f"{day}.md").write_text(f"# {day}\n\n- The team standup moved to 9:30 on Tuesdays\n"
                                     "- The printer on floor 3 is out of toner\n")
    config = home / "clawkeep.json5"
    dreaming = {"memory-core": {"config": {"dreaming": {"enabled": True}}}}
    config.write_text(json.dumps({"session": {"reset": {"timezone": "UTC"}}, "plugins": {"entries": dreaming},
                                  "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}))
    queries = ["The team standup moved to 9:30 on Tuesdays", "team standup time", "when is the standup",
               "standup Tuesdays", "standup moved to 9:30"]
    for query in queries * 2:
        searched = run_cli(home, "memory", "search", query, "--json", config=config)
        assert searched.code == 0 and "standup" in searched.json()["results"][0]["snippet"], searched.stderr
    run_cli(home, "memory", "search", "printer toner", config=config)  # recalled once: stays short-term
    explained = run_cli(home, "memory", "promote-explain", "standup", "--json", config=config)
    assert explained.code == 0, explained.stderr
    [fact] = [c for c in explained.json()["candidates"] if "standup" in c["text"]]
    assert fact["recallCount"] == 10 and fact["uniqueQueries"] == 5 and fact["recallDays"] == [day]
    # keyword-only recalls are read on OpenClaw's lexical scale: the exact words count as relevant
    assert fact["components"]["relevance"] >= 0.8, fact
    assert fact["passed"] and fact["score"] >= explained.json()["gates"]["minScore"] == 0.8, fact
    printer = run_cli(home, "memory", "promote-explain", "printer", "--json", config=config).json()["candidates"]
    assert printer and not printer[0]["passed"] and "minRecallCount" in printer[0]["rejected"]
    promoted = run_cli(home, "memory", "promote", "--apply", "--json", config=config)
    assert promoted.code == 0, promoted.stderr
    assert "The team standup moved to 9:30 on Tuesdays" in (home / "workspace" / "MEMORY.md").read_text()
