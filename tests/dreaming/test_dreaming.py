"""Dreaming (Dr1–Dr2) over a month of synthetic notes and recall traces: exactly the planted
durable facts are promoted, everything else is refused or gated with its reason; undo restores
MEMORY.md byte for byte; a person's edit during Deep is never overwritten."""

from __future__ import annotations

import json

import pytest

from clawkeep.dreaming import deep
from clawkeep.dreaming.claims import redacted
from clawkeep.dreaming.store import DreamsDir
from clawkeep.errors import InputError
from clawkeep.events import DreamingProgress
from clawkeep.memory import items
from tests.helpers.cli import run_cli
from tests.helpers.dreaming_month import CONFIG, EXPECTED_PROMOTED, INITIAL_MEMORY, MONTH, today, write_month
from tests.helpers.engine import open_engine


@pytest.fixture
def month(home):
    ws = home / "workspace"
    return write_month(ws, today())


def edit_notes_after_light(month):
    """What a person does between the nightly Light run and the next sweep: one recalled line
    is reworded (stale), another deleted."""
    dentist = month.facts["dentist"]
    path = month.workspace / dentist.path
    path.write_text(path.read_text().replace("Dr. Weber", "Dr. Schmidt"))
    passport = month.facts["passport"]
    path = month.workspace / passport.path
    path.write_text("\n".join(line for line in path.read_text().splitlines() if "passport" not in line) + "\n")


def promoted_texts(ws):
    found = items.parse_items("MEMORY.md", (ws / "MEMORY.md").read_text())
    return {i.text for i in found if i.attrs.get("dream")}


def test_a_month_promotes_exactly_the_durable_recalled_facts(home, month):
    ws = month.workspace
    with open_engine(home, MONTH) as eng:
        first = eng.dream(phase="light").to_json()
        assert first["status"] == "ok" and first["light"]["traces"] == sum(
            len(f.queries) for f in month.facts.values())
        assert first["light"]["merged"] >= 1  # the two Postgres wordings are one claim
        assert (ws / "MEMORY.md").read_text() == INITIAL_MEMORY  # Light never writes MEMORY.md
        edit_notes_after_light(month)
        report = eng.dream().to_json()
    assert report["status"] == "ok"
    assert {p["text"] for p in report["promoted"]} == EXPECTED_PROMOTED
    assert promoted_texts(ws) == EXPECTED_PROMOTED

    by_text = {d["text"]: d for d in report["deep"]["decisions"]}
    reasons = {name: by_text.get(redacted(month.facts[name].text)) for name in month.facts}
    assert "secret" in reasons["pin"]["reason"] and reasons["pin"]["status"] == "refused"
    assert "one-off" in reasons["report"]["reason"]
    assert "venting" in reasons["printer"]["reason"]
    assert reasons["blue"]["status"] == "superseded"
    assert reasons["dentist"]["status"] == "stale"
    assert reasons["passport"]["status"] == "deleted"
    assert reasons["oslo"]["status"] == "time-bound"
    for name in ("tomatoes", "vlan", "weather", "backup"):  # gated before Deep: never decided
        assert reasons[name] is None, name

    # the supersession went through the ordinary write path: markers on both lines
    memory_items = {i.text: i for i in items.parse_items("MEMORY.md", (ws / "MEMORY.md").read_text())}
    hamburg = memory_items["I moved last month, now I live in Hamburg"]
    assert memory_items["I live in Berlin"].attrs["supersededBy"] == hamburg.id
    assert hamburg.attrs["supersedes"] == "m-berlin00" and hamburg.attrs["dream"] == report["runId"]
    # blue was never promoted; its daily-note line is what green replaces (as `memory remember` would)
    green = memory_items["My favourite color is now green"]
    blue_note = month.workspace / month.facts["blue"].path
    (blue,) = [i for i in items.parse_items(month.facts["blue"].path, blue_note.read_text()) if "blue" in i.text]
    assert green.attrs["supersedes"] == blue.id and blue.attrs["supersededBy"] == green.id
    assert memory_items["My sister is called Anna"].attrs == {"id": "m-anna0000", "at": "2026-01-10"}

    # the secret never reached any Dreaming file in clear
    for path in [ws / "DREAMS.md", *(ws / "memory" / ".dreams").rglob("*")]:
        if path.is_file():
            assert "4821" not in path.read_text(), path

    dreams = (ws / "DREAMS.md").read_text()
    for heading in ("## Light Sleep", "## REM Sleep", "## Deep Sleep", "## Dream Diary"):
        assert heading in dreams
    assert f"promote-undo {hamburg.id}" in dreams
    assert "not yet: “The router VLAN for IoT devices is 30”" in dreams and "distinct queries" in dreams


def test_gate_reasons_are_explained_signal_by_signal(home, month):
    with open_engine(home, CONFIG) as eng:
        explained = eng.memory_promote_explain("router vlan").to_json()
        assert explained["weights"] == {"relevance": 0.3, "frequency": 0.24, "diversity": 0.15, "recency": 0.15,
                                        "consolidation": 0.1, "conceptual": 0.06}
        (vlan,) = [c for c in explained["candidates"] if "VLAN" in c["text"]]
        assert set(vlan["components"]) == set(explained["weights"])
        assert vlan["recallCount"] == 5 and vlan["uniqueQueries"] == 1
        assert vlan["decision"] == "gated" and "minUniqueQueries 3" in vlan["decisionReason"]
        total = sum(vlan["components"][k] * w for k, w in explained["weights"].items()) + vlan["phaseBoost"]
        assert vlan["score"] == pytest.approx(min(1.0, total), abs=1e-3)
        preview = eng.memory_promote().to_json()
        assert len(preview["decisions"]) == 10  # deep.limit: the best ten passing candidates are decided
        assert {d["text"] for d in preview["decisions"] if d["status"] == "promoted"} >= {
            "My favourite editor is Helix"}
    # previews write nothing: MEMORY.md untouched, the traces still waiting
    assert (month.workspace / "MEMORY.md").read_text() == INITIAL_MEMORY
    assert (month.workspace / "memory" / ".dreams" / "recall-log.jsonl").exists()
    assert not (month.workspace / "memory" / ".dreams" / "short-term-recall.json").exists()


def test_undo_restores_memory_byte_identical_and_the_claims_stay_out(home, month):
    ws = month.workspace
    with open_engine(home, CONFIG) as eng:
        report = eng.dream().to_json()
        assert report["promoted"]
        undone = eng.memory_promote_undo().to_json()
        assert undone["restored"] == "byte-identical" and undone["runId"] == report["runId"]
        assert (ws / "MEMORY.md").read_bytes() == INITIAL_MEMORY.encode()
        again = eng.dream().to_json()
        assert again["promoted"] == []  # an undone promotion is not made again by a sweep


def test_undo_of_one_item_after_a_later_edit_removes_just_that_line(home, month):
    ws = month.workspace
    with open_engine(home, CONFIG) as eng:
        report = eng.dream().to_json()
        hamburg = next(p for p in report["promoted"] if "Hamburg" in p["text"])
        eng.memory_remember("My cat is called Tom")  # MEMORY.md changes after the run
        eng.memory_promote_undo(hamburg["id"])
    text = (ws / "MEMORY.md").read_text()
    assert "Hamburg" not in text and "My cat is called Tom" in text
    berlin = next(i for i in items.parse_items("MEMORY.md", text) if i.text == "I live in Berlin")
    assert "supersededBy" not in berlin.attrs  # Berlin is the current fact again
    assert "My favourite editor is Helix" in promoted_texts(ws)


def test_an_edit_of_memory_during_deep_is_never_overwritten(home, month):
    ws = month.workspace
    edited = INITIAL_MEMORY.replace("My sister is called Anna", "My sister is called Anna-Lena") \
        + "- I adopted a cat named Tom\n"

    def human_edit(event):
        if event.step == "deep:planned":
            (ws / "MEMORY.md").write_text(edited)

    with open_engine(home, CONFIG) as eng:
        stop_editing = eng.runtime.events.subscribe(DreamingProgress, human_edit)
        report = eng.dream().to_json()
        assert report["deep"]["mode"] == "append"
        text = (ws / "MEMORY.md").read_text()
        assert text.startswith(edited)  # every byte the person wrote, untouched
        assert promoted_texts(ws) == {p["text"] for p in report["promoted"]} >= EXPECTED_PROMOTED
        berlin = next(i for i in items.parse_items("MEMORY.md", text) if i.text == "I live in Berlin")
        assert "supersededBy" not in berlin.attrs  # not rewritten under the person's feet...
        stop_editing()
        repair = eng.dream(phase="deep").to_json()
    assert repair["deep"]["repaired"] == ["m-berlin00"]  # ...and repaired by the next sweep
    text = (ws / "MEMORY.md").read_text()
    berlin = next(i for i in items.parse_items("MEMORY.md", text) if i.text == "I live in Berlin")
    assert berlin.attrs["supersededBy"].startswith("m-")
    assert "My sister is called Anna-Lena" in text and "I adopted a cat named Tom" in text


def test_a_rewrite_that_loses_more_than_a_quarter_of_the_entries_is_refused(home):
    before = "# Memory\n\n" + "".join(f"- fact {n} <!-- ck:id=m-0000000{n} -->\n" for n in range(8))
    kept_six = "# Memory\n\n" + "".join(f"- fact {n} <!-- ck:id=m-0000000{n} -->\n" for n in range(6))
    kept_five = "# Memory\n\n" + "".join(f"- fact {n} <!-- ck:id=m-0000000{n} -->\n" for n in range(5))
    assert deep.loss_check(before, kept_six, 0.25) is None  # 2 of 8 lost: allowed
    refused = deep.loss_check(before, kept_five, 0.25)
    assert refused and "3 of 8" in refused
    ws = home / "workspace"
    ws.mkdir()
    (ws / "MEMORY.md").write_text(before)
    plan = deep.DeepPlan("d-test", [], [], before, kept_five + "- new <!-- ck:id=m-new00000 -->\n",
                         new_lines=["- new <!-- ck:id=m-new00000 -->"], loss_refused=refused)
    applied = deep.apply(ws, plan)
    assert applied.mode == "append"
    assert (ws / "MEMORY.md").read_text() == before + "- new <!-- ck:id=m-new00000 -->\n"


def test_the_recall_store_is_fed_by_searches_and_recall_through_the_bus(home):
    ws = home / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / f"{today().isoformat()}.md").write_text("# today\n\n- My favourite editor is Helix\n")
    (ws / "MEMORY.md").write_text("# Memory\n\n- I like long walks\n")
    off = {**CONFIG, "plugins": {}}
    with open_engine(home, off) as eng:
        eng.memory_search("which editor")
    assert not (ws / "memory" / ".dreams").exists()  # disabled: nothing recorded, nothing created
    with open_engine(home, CONFIG) as eng:
        eng.memory_search("which editor do I use")
        eng.memory_search("long walks")  # a MEMORY.md hit: long-term already, not recorded as a hit
        sent = eng.message("hello there", channel="telegram", sender="alice")
        eng.recall("what did I say about my editor?", session=sent.session_key)
    traces = [json.loads(line) for line in (ws / "memory" / ".dreams" / "recall-log.jsonl").read_text().splitlines()]
    first = traces[0]
    assert first["kind"] == "search" and first["query"] == "which editor do I use" and first["session"] is None
    assert first["hits"][0]["path"] == f"memory/{today().isoformat()}.md" and first["hits"][0]["startLine"] == 3
    assert "Helix" in first["hits"][0]["snippet"] and 0 < first["hits"][0]["score"] <= 1
    assert traces[1]["hits"] == []
    lane_two = [t for t in traces if t["session"] == sent.session_key]
    assert {t["kind"] for t in lane_two} == {"search", "recall"}  # the recall's own search and its trace


def test_transcripts_are_ingested_redacted_and_assistant_turns_ignored(home):
    with open_engine(home, CONFIG) as eng:
        eng.message("I switched to a standing desk this week. My api key is sk-abcdefghijklmnopqrstuvwx123456")
        eng.message("Standing desks are great!", role="assistant")
        eng.memory_remember("I prefer tea over coffee")
        report = eng.dream(phase="light").to_json()
    ws = home / "workspace"
    corpus = (ws / "memory" / ".dreams" / "session-corpus" / f"{today().isoformat()}.txt").read_text()
    assert "standing desk" in corpus and "sk-abcdef" not in corpus and "great!" not in corpus
    store = json.loads((ws / "memory" / ".dreams" / "short-term-recall.json").read_text())
    texts = {e["text"]: e for e in store["entries"].values()}
    desk = texts["I switched to a standing desk this week."]
    assert desk["source"] == "transcript" and desk["origin"] == "owner" and desk["path"].startswith("sessions/")
    assert report["light"]["transcripts"] == 1


def test_two_concurrent_sweeps_one_runs_one_reports_the_lock(home, month):
    import threading

    started, release = threading.Event(), threading.Event()

    def hold(event):
        if event.step == "started":
            started.set()
            release.wait(30)

    results = {}
    with open_engine(home, CONFIG) as first, open_engine(home, CONFIG) as second:
        first.subscribe(DreamingProgress, hold)
        runner = threading.Thread(target=lambda: results.update(first=first.dream().to_json()))
        runner.start()
        assert started.wait(30)
        blocked = second.dream().to_json()
        cli = run_cli(home, "memory", "dream", "--json")
        promote = run_cli(home, "memory", "promote", "--apply", "--json")
        status = second.dreaming_status().to_json()
        release.set()
        runner.join(60)
    assert blocked["status"] == "locked" and blocked["holder"]["owner"] == results["first"]["runId"]
    assert cli.code == 1 and cli.json()["status"] == "locked"
    assert promote.code == 1 and promote.json()["status"] == "locked"  # was exit 0: "nothing was done" hid
    assert status["lock"]["owner"] == results["first"]["runId"]
    assert results["first"]["status"] == "ok" and results["first"]["promoted"]


def test_rem_harness_with_nothing_to_promote_says_so(home):
    """QA: on a fresh home with a note or two, `memory rem-harness` printed nothing at all (exit 0):
    no theme, no decision, no preview. It now says what it saw and why nothing would be promoted."""
    assert run_cli(home, "memory", "dreaming", "on").code == 0
    assert run_cli(home, "memory", "remember", "next Tuesday I fly to Shanghai").code == 0
    harness = run_cli(home, "memory", "rem-harness")
    assert harness.code == 0, harness.stderr
    assert "REM: 0 theme(s)" in harness.stdout and "MEMORY.md would gain nothing" in harness.stdout
    assert "held back: Next Tuesday I fly to Shanghai (" in harness.stdout


def test_cli_verbs(home, month):
    config = home / "clawkeep.json5"
    config.write_text(json.dumps(CONFIG))
    explained = run_cli(home, "memory", "promote-explain", "favourite editor", "--json", config=config)
    assert explained.code == 0, explained.stderr
    assert any(c["text"] == "My favourite editor is Helix" for c in explained.json()["candidates"])
    harness = run_cli(home, "memory", "rem-harness", "--json", config=config)
    assert harness.code == 0 and "My favourite editor is Helix" in harness.json()["memoryPreview"]
    applied = run_cli(home, "memory", "promote", "--apply", "--limit", "2", "--json", config=config)
    assert applied.code == 0, applied.stderr
    assert len(applied.json()["promoted"]) == 2
    status = run_cli(home, "memory", "dreaming", "status", "--json", config=config).json()
    assert status["enabled"] is True and status["nextRun"] and status["lastRunId"] == applied.json()["runId"]
    undo = run_cli(home, "memory", "promote-undo", "--json", config=config)
    assert undo.code == 0 and undo.json()["restored"] == "byte-identical"
    assert (month.workspace / "MEMORY.md").read_text() == INITIAL_MEMORY
    for bad in (("memory", "dream", "--phase", "nap"), ("memory", "promote-undo", "m-nothere"),
                ("memory", "rem-backfill")):
        result = run_cli(home, *bad, config=config)
        assert result.code == 2, (bad, result.code, result.stderr)
        assert "Traceback" not in result.stderr and "error:" in result.stderr
    with open_engine(home, CONFIG) as eng:
        for call in (lambda: eng.memory_promote(limit=0), lambda: eng.rem_harness(grounded=True),
                     lambda: eng.memory_promote(min_score=2.0), lambda: eng.memory_promote_explain("  ")):
            with pytest.raises(InputError):
                call()


def test_dreaming_slash_command(home):
    with open_engine(home, {**CONFIG, "plugins": {}}) as eng:
        status = eng.message("/dreaming status").to_json()["status"]
        assert status["enabled"] is False and status["frequency"] == "0 3 * * *"
        switched = eng.message("/dreaming on").to_json()["status"]
        assert switched["enabled"] is True
        overrides = json.loads((home / "clawkeep.overrides.json").read_text())
        assert overrides["plugins"]["entries"]["memory-core"]["config"]["dreaming"]["enabled"] is True
        with pytest.raises(InputError, match="only accepted from the operator"):
            eng.message("/dreaming off", channel="telegram", sender="mallory")
        assert "help" in eng.message("/dreaming help").to_json()["status"]
        seen_by_chat = eng.message("/dreaming status", channel="telegram", sender="mallory").to_json()["status"]
        assert seen_by_chat["enabled"] is True and "dreamsFile" not in seen_by_chat and "lock" not in seen_by_chat
    with open_engine(home) as reopened:  # the overrides file is merged at load
        assert reopened.dreaming_status().to_json()["enabled"] is True


def test_deep_reads_transcript_candidates_from_the_live_message(home):
    """A statement recalled from an indexed transcript is promoted from the message itself."""
    config = {**CONFIG, "agents": {"defaults": {"memorySearch": {
        "provider": "none", "sources": ["memory", "sessions"], "experimental": {"sessionMemory": True}}}}}
    with open_engine(home, config) as eng:
        eng.message("My dog is a border collie named Pixel")
        for query in ("border collie", "my dog", "dog named pixel", "what breed is my dog"):
            assert eng.memory_search(query, corpus="sessions")["results"]
        report = eng.memory_promote(apply=True, min_score=0.3).to_json()
    assert [p["text"] for p in report["promoted"]] == ["My dog is a border collie named Pixel"]
    line = next(i for i in items.parse_items("MEMORY.md", (home / "workspace" / "MEMORY.md").read_text()))
    assert line.attrs["src"].startswith("sessions/") and line.attrs["session"] == "agent:main:main"


def test_store_survives_reload_and_folds_each_log_once(home, month):
    with open_engine(home, CONFIG) as eng:
        eng.dream(phase="light")
        dreams = DreamsDir(month.workspace)
        entries, folded = dreams.load_store()
        editor = next(e for e in entries.values() if e.text == "My favourite editor is Helix")
        assert editor.recall_count == 5 and len(editor.user_query_hashes) == 5 and len(folded) == 1
        assert not dreams.pending_logs() and not dreams.log_path.exists()
        eng.dream(phase="light")  # nothing new: the same counts
        entries, _ = dreams.load_store()
        assert next(e for e in entries.values() if e.key == editor.key).recall_count == 5


def test_dreaming_operations_are_in_the_registry_and_never_agent_tools(home, month):
    from clawkeep import api

    names = {"dreaming_status", "dreaming_enable", "dream", "memory_promote", "memory_promote_apply",
             "memory_promote_explain", "memory_promote_undo", "rem_harness", "rem_backfill"}
    assert names <= set(api.OPERATIONS) and not names & set(api.AGENT_TOOLS)
    with open_engine(home, CONFIG) as eng:
        explained = api.OPERATIONS["memory_promote_explain"].run(eng, {"query": "favourite editor"})
        assert isinstance(explained, api.ExplainReport) and explained["candidates"]
        swept = api.OPERATIONS["memory_promote_apply"].run(eng, {"limit": 1})
        assert isinstance(swept, api.SweepReport) and len(swept["promoted"]) == 1
        undone = api.OPERATIONS["memory_promote_undo"].run(eng, {})
        assert undone["restored"] == "byte-identical"


def test_each_message_is_ingested_once_and_checkpoints_stay_bounded(home):
    with open_engine(home, CONFIG) as eng:
        eng.message("I switched to a standing desk this week.")
        eng.dream(phase="light")
        eng.dream(phase="light")
        eng.message("My new chair is a Swedish kneeling chair.")
        eng.dream(phase="light")
    dreams = DreamsDir(home / "workspace")
    entries, _ = dreams.load_store()
    daily = {e.text: e.daily_count for e in entries.values()}
    assert daily == {"I switched to a standing desk this week.": 1, "My new chair is a Swedish kneeling chair.": 1}
    checkpoint = dreams.load_state()[3]
    (mark,) = checkpoint["sessions"].values()
    assert len(mark["ids"]) == 1 and mark["through"] > 0  # one high-water mark per session, not one key per message


def test_only_the_newest_promotion_records_keep_the_bytes_of_memory(home):
    from clawkeep.dreaming import promotions

    ws = home / "workspace"
    (ws / "memory").mkdir(parents=True)
    dreams = DreamsDir(ws)
    for n in range(promotions.KEEP_BYTES + 3):
        dreams.write_json(f"promotions/d-old-{n:03d}.json", {"runId": f"d-old-{n:03d}", "at": n, "status": "applied",
                                                            "before": "# Memory\n", "afterSha": "x", "items": []})
    plan = deep.DeepPlan("d-new", [], [], "# Memory\n", "# Memory\n\n- x <!-- ck:id=m-00000001 -->\n")
    promotions.begin(dreams, plan, 10_000)
    kept = [r for r in promotions.records(dreams) if r.get("before") is not None]
    assert len(kept) == promotions.KEEP_BYTES and kept[-1]["runId"] == "d-new"
    assert kept[0]["runId"] == "d-old-004"  # the four oldest gave their copy up


def test_huge_inputs_are_refused_or_skipped_quickly(home):
    import time as clock

    ws = home / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / f"{today().isoformat()}.md").write_text("- " + "上" * 300_000 + "\n- I like green tea\n")
    with open_engine(home, CONFIG) as eng:
        with pytest.raises(InputError, match="at most 4096"):
            eng.memory_promote_explain("上" * 5000)
        started = clock.monotonic()
        report = eng.dream(phase="light").to_json()
        assert clock.monotonic() - started < 20
    assert [s["text"] for s in report["light"]["staged"]] == ["I like green tea"]  # the blob is no claim


def test_a_title_or_an_initial_does_not_cut_a_claim_in_two():
    from clawkeep.dreaming.claims import statements

    said = ("I live at 12 Elm Street and my doctor is Dr. Hargreaves. My friend J. Smith moved to St. Louis. "
            "我现在住在杭州西湖边。")
    assert statements(said) == ["I live at 12 Elm Street and my doctor is Dr. Hargreaves.",
                                "My friend J. Smith moved to St. Louis.", "我现在住在杭州西湖边。"]
