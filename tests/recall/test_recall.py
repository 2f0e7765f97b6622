"""Active Memory (A1–A5) without a model: gates, lane 1, deterministic lane 2, isolation."""

from pathlib import Path

import json5
import pytest

from clawkeep.config import config_from_dict
from clawkeep.config.active_memory import remember_across_conversations
from clawkeep.recall.lanes import normalise_summary, phrase_score
from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine

KEYWORD = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def engine(home, **session):
    return open_engine(home, {**KEYWORD, "session": session} if session else KEYWORD)


def test_acceptance_dm_main_no_model(home):
    eng = engine(home)
    told = eng.message("下周二我去上海", channel="telegram", sender="alice")
    assert told.session_key == "agent:main:main" and told.mode == "record"
    thread = eng.sessions_create()
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "ok" and result["pastQuestion"] is True and result["lane"] == 2
    assert "上海" in result["summary"] and len(result["summary"]) <= 220
    assert set(result) >= {"status", "lane", "pastQuestion", "summary", "elapsedMs"}


def test_acceptance_isolated_peers_do_not_leak(home):
    eng = engine(home, dmScope="per-channel-peer")
    eng.message("下周二我去上海", channel="telegram", sender="alice")
    bob = eng.message("你好", channel="telegram", sender="bob")
    thread = eng.sessions_create()
    for key in (thread["key"], bob.session_key):
        result = eng.recall("我下周有什么安排", session=key)
        assert result["status"] == "none" and result["summary"] is None


def test_isolated_peer_excerpts_in_memory_files_do_not_leak(home):
    eng = engine(home, dmScope="per-channel-peer")
    eng.message("my locker code is 4471 at the gym", channel="telegram", sender="alice")
    eng.message("/reset", channel="telegram", sender="alice")  # the hook writes alice's excerpt to memory/
    bob = eng.message("hello", channel="telegram", sender="bob")
    assert eng.memory_search("locker code gym")["results"]  # the operator can search it
    result = eng.recall("what did I say my locker code was?", session=bob.session_key)
    assert result["status"] == "none"
    alice = eng.recall("what did I say my locker code was?", session="agent:main:telegram:direct:alice")
    assert alice["status"] == "ok" and "4471" in alice["summary"]


def test_remember_across_conversations_defaults():
    assert remember_across_conversations(config_from_dict({})) is True
    assert remember_across_conversations(config_from_dict({"session": {"dmScope": "per-peer"}})) is False
    explicit = {"session": {"dmScope": "per-peer"},
                "plugins": {"entries": {"active-memory": {"config": {"rememberAcrossConversations": True}}}}}
    assert remember_across_conversations(config_from_dict(explicit)) is True


def test_never_recalls_groups_cron_or_the_current_session(home):
    eng = engine(home)
    eng.message("the kayak rental is on pier nine", channel="telegram", chat_type="group", group="g1")
    eng.message("kayak cron digest", channel="cron", sender="nightly")
    thread = eng.sessions_create()
    result = eng.recall("where did I say the kayak rental was?", session=thread["key"])
    assert result["status"] == "none"
    eng.message("the kayak rental is on pier nine", session=thread["key"])
    again = eng.recall("where did I say the kayak rental was?", session=thread["key"])
    assert again["status"] == "none"  # only the current conversation knows: it is already in context


def test_gates(home):
    eng = engine(home)
    group = eng.message("hi all", channel="telegram", chat_type="group", group="g1")
    assert eng.recall("what did we decide last time?", session=group.session_key)["reason"].startswith("chat type")
    beat = eng.message("tick", channel="heartbeat")
    assert eng.recall("what did we decide last time?", session=beat.session_key)["status"] == "skipped"
    secret = eng.sessions_create(incognito=True)
    assert eng.recall("what did we decide last time?", session=secret["key"])["status"] == "skipped"
    main = eng.message("hello")
    paused = eng.message("/active-memory off")
    assert paused.command == "active-memory" and paused.status == {"session": "off"}
    assert eng.recall("what did we decide last time?", session=main.session_key)["reason"].startswith("paused")
    assert eng.message("/active-memory status").status == {"enabled": True, "session": "off"}
    eng.message("/active-memory on")
    assert eng.recall("what did we decide last time?", session=main.session_key)["status"] != "skipped"


def test_denied_chat_ids_win_over_allowed(home):
    eng = open_engine(home, {**KEYWORD, "plugins": {"entries": {"active-memory": {"config": {
        "allowedChatIds": ["main"], "deniedChatIds": ["MAIN"]}}}}})
    main = eng.message("hello")
    assert eng.recall("what did we decide?", session=main.session_key)["reason"] == "chat id denied"


def test_global_switch_writes_the_overrides_file_not_the_config(home, tmp_path):
    config = tmp_path / "clawkeep.json5"
    document = "// the operator's notes\n{agents: {defaults: {memorySearch: {provider: 'none'}}}}  // keyword only\n"
    config.write_text(document)
    result = run_cli(home, "message", "/active-memory off --global", "--json", config=config)
    assert result.code == 0 and result.json()["status"]["enabled"] is False
    assert config.read_text() == document  # comments and all: the user's file is never rewritten
    overrides = tmp_path / "clawkeep.overrides.json"
    assert result.json()["status"]["config"] == str(overrides)
    assert json5.loads(overrides.read_text()) == {"plugins": {"entries": {"active-memory": {"enabled": False}}}}
    thread = run_cli(home, "sessions", "create", "--json", config=config).json()
    skipped = run_cli(home, "recall", "what did we decide last time?", "--session", thread["key"], "--json",
                      config=config).json()
    assert skipped["status"] == "skipped" and skipped["reason"] == "plugin disabled"


def test_lane_one_strong_hit_from_trusted_memory(home):
    eng = engine(home)
    eng.memory_remember("I prefer TypeScript for new services")
    ws = Path(eng.memory_status()["workspace"])
    with open(ws / "MEMORY.md", "a") as fh:
        fh.write("- Standup is at 09:30 on weekdays <!-- trigger: standup; daily meeting -->\n")
    main = eng.message("hello")
    hit = eng.recall("when is the standup?", session=main.session_key)
    assert hit["status"] == "ok" and hit["lane"] == 1 and "09:30" in hit["summary"]
    assert "(Source: MEMORY.md#L" in hit["summary"] and "trigger" not in hit["summary"]
    pref = eng.recall("which language do I prefer for new services?", session=main.session_key)
    assert pref["lane"] == 1 and "TypeScript" in pref["summary"]
    daily = eng.recall("explain the current configuration", session=main.session_key)
    assert daily["status"] == "none" and daily["reason"] == "no-recall-intent"


def test_lane_one_ignores_superseded_and_daily_notes(home):
    eng = engine(home)
    eng.memory_remember("I prefer JavaScript for new services")
    eng.memory_remember("I prefer TypeScript for new services")
    main = eng.message("hello")
    hit = eng.recall("which language do I prefer for new services?", session=main.session_key)
    assert "TypeScript" in hit["summary"] and "JavaScript" not in hit["summary"]


def test_phrase_scores():
    assert phrase_score("standup", {"standup", "time"}) == 0.85
    assert phrase_score("standup time", {"standup"}) == pytest.approx(0.8 * 0.5 + 0.2 * 0.5)
    assert phrase_score("standup time", {"lunch"}) == 0.0


def test_summary_normalisation():
    assert normalise_summary("NONE", 220) is None
    assert normalise_summary(" no relevant memories. ", 220) is None
    line = normalise_summary("word " * 100, 60)
    assert len(line) <= 60 and line.endswith("…") and "\n" not in line


def test_modes_off_and_always(home):
    off = open_engine(home, {**KEYWORD, "plugins": {"entries": {"active-memory": {"config": {"mode": "off"}}}}})
    off.message("下周二我去上海", channel="telegram", sender="alice")
    thread = off.sessions_create()
    assert off.recall("我下周有什么安排", session=thread["key"])["reason"] == "mode-off"
    always = open_engine(home, {**KEYWORD, "plugins": {"entries": {"active-memory": {"config": {"mode": "always"}}}}})
    result = always.recall("上海", session=thread["key"])  # not a question about the past, recalled anyway
    assert result["status"] == "ok" and result["pastQuestion"] is False


def test_message_output_carries_active_memory_verbose_and_trace(home):
    eng = engine(home)
    eng.message("下周二我去上海", channel="telegram", sender="alice")
    thread = eng.sessions_create()
    assert eng.message("/verbose on", session=thread["key"]).status == {"verbose": "on"}
    eng.message("/trace on", session=thread["key"])
    result = eng.message("我下周有什么安排", session=thread["key"])
    assert result.active_memory["status"] == "ok" and result.mode == "record"
    assert result.verbose.startswith("Active Memory: ok") and "上海" in result.trace


def test_classify_cli(cli):
    past = cli("recall", "--classify", "我上次说的那个方案", "--json").json()
    future = cli("recall", "--classify", "我明天去上海", "--json").json()
    assert past == {"pastQuestion": True, "language": "zh"}
    assert future == {"pastQuestion": False, "language": "zh"}


# --- toolsAllow (A3): lane 2 gathers evidence only with memory_search ------------------------------
def _tools(home, tools):
    return open_engine(home, {**KEYWORD, "plugins": {"entries": {"active-memory": {"config": {"toolsAllow": tools}}}}})


@pytest.mark.parametrize("tools", [["memory_get"], [], ["exec", "memory_*", "*"]])
def test_tools_allow_without_memory_search_skips_lane_two(home, tools):
    eng = _tools(home, tools)
    eng.message("下周二我去上海", channel="telegram", sender="alice")
    thread = eng.sessions_create()
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "skipped" and result["lane"] == 2 and result["summary"] is None
    assert result["reason"] == "toolsAllow does not permit memory_search"


def test_tools_allow_with_memory_search_alone_still_recalls(home):
    eng = _tools(home, ["memory_search"])
    eng.message("下周二我去上海", channel="telegram", sender="alice")
    thread = eng.sessions_create()
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "ok" and result["lane"] == 2 and "上海" in result["summary"]


def test_tools_allow_does_not_gate_lane_one(home):
    eng = _tools(home, [])
    eng.memory_remember("I prefer TypeScript for new services")
    main = eng.message("hello")
    hit = eng.recall("which language do I prefer for new services?", session=main.session_key)
    assert hit["status"] == "ok" and hit["lane"] == 1 and "TypeScript" in hit["summary"]


def test_tools_allow_entries_that_are_not_memory_tools_warn():
    cfg = config_from_dict({"plugins": {"entries": {"active-memory": {"config": {
        "toolsAllow": ["memory_search", "exec", "memory_*"]}}}}})
    assert cfg.plugins.entries.active_memory.config.allowed_tools() == ["memory_search"]
    assert [w.split("toolsAllow entry ")[1].split(" ")[0] for w in cfg.warnings] == ["'exec'", "'memory_*'"]
    assert config_from_dict({}).warnings == []


def test_lane_one_with_several_strong_entries(home):
    eng = engine(home)
    ws = Path(eng.memory_status()["workspace"])
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("- Standup is at 09:30 <!-- trigger: standup -->\n"
                                  "- The standup room is Orion <!-- trigger: standup -->\n")
    main = eng.message("hello")
    hit = eng.recall("when is the standup?", session=main.session_key)
    assert hit["status"] == "ok" and hit["lane"] == 1
    assert "09:30" in hit["summary"] and "Orion" in hit["summary"]


def test_lane_one_block_is_cut_between_entries_never_inside_one(home):
    # QA: block[:1800] left a dangling fragment such as "\n- Kayak " at the end of the block
    eng = engine(home)
    ws = Path(eng.memory_status()["workspace"])
    ws.mkdir(parents=True, exist_ok=True)
    trips = ["Canoe", "Hiking", "Kayak"]
    (ws / "MEMORY.md").write_text("".join(
        f"- {name} trip: " + "the weekend plan covers gear, meals and the route " * 14 + "<!-- trigger: trip -->\n"
        for name in trips))
    main = eng.message("hello")
    hit = eng.recall("which trip?", session=main.session_key)
    assert hit["status"] == "ok" and hit["lane"] == 1
    block = hit["summary"]
    assert len(block) <= 1800
    lines = block.split("\n")
    assert len(lines) == 2 and all(line.startswith("- ") and "(Source: MEMORY.md#L" in line for line in lines)
    assert sum(name in block for name in trips) == 2  # the third entry did not fit: left out whole


def test_lane_one_shortens_a_single_entry_longer_than_the_cap(home):
    eng = engine(home)
    ws = Path(eng.memory_status()["workspace"])
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("- Kayak checklist: " + "paddle, spray skirt and dry bag " * 80
                                  + "<!-- trigger: kayak -->\n")
    main = eng.message("hello")
    hit = eng.recall("kayak?", session=main.session_key)
    assert hit["status"] == "ok" and hit["lane"] == 1
    block = hit["summary"]
    assert len(block) <= 1800 and "\n" not in block
    assert block.startswith("- Kayak checklist:") and block.endswith("… (Source: MEMORY.md#L1)")
