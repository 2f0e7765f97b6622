"""Issue 33 items 2, 9, 10 and issue 29's corpus-limit bug, tried from outside: the CLI as a
subprocess, the real HTTP gateway, the official MCP client and a scripted model on loopback
(docs/memory-behaviours.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import open_engine, run_cli


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
