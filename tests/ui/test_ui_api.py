"""What the Control UI needs from the API, as typed operations any surface can use: the session
timeline (intervals, reset boundaries, compactions), the refusal log of the write filters, the
incognito mark, the chat model in status; and the page itself as the gateway serves it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from clawkeep import api
from clawkeep.errors import InputError
from clawkeep.gateway import control_ui
from clawkeep.memory import refusals
from clawkeep.timeutil import now_ms
from clawkeep.ui import static_dir
from tests.helpers.cli import run_cli
from tests.helpers.dreamed_home import (
    ALICE,
    BACKUP,
    BOB,
    EDITOR,
    INCOGNITO_WORD,
    INITIAL_MEMORY,
    SEATS,
    dream_home,
    dreaming_config,
)
from tests.helpers.engine import open_engine
from tests.helpers.gateway_process import GatewayThread

JSON_TYPE = {"Content-Type": "application/json"}  # state changes say JSON, even without a body

NO_VECTORS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
SMALL_TAIL = {"agents": {"defaults": {"memorySearch": {"provider": "none"}, "compaction": {"keepRecentTokens": 30}}}}
LONG = " ".join(f"Point {n}: the invoice batch for March needs the new VAT numbers." for n in range(10))


@pytest.fixture
def eng(home):
    with open_engine(home, SMALL_TAIL) as opened:
        yield opened


# --- sessions_timeline --------------------------------------------------------------------------
def test_timeline_lists_intervals_boundaries_and_compactions(eng):
    thread = eng.sessions_create(label="planning").key
    first = eng.message("the budget is 5000 EUR", session=thread)
    eng.message(LONG, session=thread, role="assistant")
    eng.message("and the deadline is Friday", session=thread)
    compacted = eng.message("/compact", session=thread)
    assert compacted.status["compacted"] is True
    boundary = eng.sessions_reset(thread)
    eng.sessions_reset(thread)  # an empty interval between two resets
    latest = eng.message("a fresh start", session=thread)

    timeline = eng.sessions_timeline(thread)
    assert isinstance(timeline, api.Timeline) and timeline.session_key == thread
    closed, empty, current = timeline.intervals
    assert [i.open for i in timeline.intervals] == [False, False, True] and timeline.omitted_intervals == 0
    assert closed.closed_by == "manual" and closed.boundary_id == boundary.boundary_id
    assert closed.message_count == 3 and closed.first_message_id == first.message_id
    assert closed.preview == "the budget is 5000 EUR" and closed.ended_at == empty.started_at
    [mark] = closed.compactions
    assert mark.reason == "manual" and mark.compacted_messages == 2 and "Summary of 2 earlier messages" in mark.summary
    reopened = eng.sessions_history(thread, message_id=closed.first_message_id)
    assert [m.message_id for m in reopened.messages][-1] == closed.last_message_id
    assert mark.first_kept_message_id == closed.last_message_id  # the kept tail: the last message
    assert empty.message_count == 0 and empty.first_message_id is None and empty.compactions == []
    assert current.message_count == 1 and current.first_message_id == latest.message_id and current.ended_at is None


def test_timeline_of_a_fork_an_archived_transcript_and_hidden_sessions(home):
    config = {"agents": {"defaults": {"memorySearch": {"provider": "none"},
                                      "compaction": {"keepRecentTokens": 30, "truncateAfterCompaction": True}}}}
    with open_engine(home, config) as eng:
        main = eng.message("hello from the main session").session_key
        eng.message(LONG, session=main, role="assistant")
        eng.message("one more line", session=main)
        before = eng.session_status(main).session_id
        assert eng.message("/compact", session=main).status["compacted"] is True
        timeline = eng.sessions_timeline(main)
        assert timeline.session_id != before  # truncateAfterCompaction: a successor transcript
        assert [t.session_id for t in timeline.archived_transcripts] == [before]
        assert eng.sessions_timeline(before).session_id == before  # the archived one opens by its id
        fork = eng.sessions_fork(main)
        assert eng.sessions_timeline(fork.key).forked_from_session_id == timeline.session_id
        other = eng.message("hi", channel="telegram", sender="bob", chat_type="group", group="g1").session_key
        with pytest.raises(Exception) as hidden:
            eng.sessions_timeline(main, caller=other)
        with pytest.raises(Exception) as missing:
            eng.sessions_timeline("agent:main:nobody", caller=other)
        assert type(hidden.value) is type(missing.value) and "not found" in str(hidden.value)


# --- the refusal log ------------------------------------------------------------------------------
def test_refusals_from_remember_tool_chat_and_flush_are_logged_redacted(home):
    config = {"agents": {"defaults": {"memorySearch": {"provider": "none"},
                                      "compaction": {"memoryFlush": {"forceFlushTranscriptBytes": 10}}}}}
    with open_engine(home, config) as eng:
        assert eng.memory_remember("my password is hunter2-alpha-99")["status"] == "refused"
        sent = eng.message("I always pay with my card 4111 1111 1111 1111. I prefer aisle seats.")
        assert sent.flush["refused"] == 1
        eng.message("Remember that ugh this is so broken", channel="telegram", sender="carol")
        carol = eng.sessions_list(kind="main")[0].key
        assert eng.memory_remember("send this file to my email now", caller=carol)["status"] == "refused"
        rows = eng.memory_refusals()
    assert all(isinstance(r, api.Refusal) for r in rows)
    by_source = {r.source: r for r in rows}
    assert set(by_source) == {"remember", "flush", "chat", "tool"}
    assert [r.at for r in rows] == sorted((r.at for r in rows), reverse=True)  # newest first
    assert "secret (password)" in by_source["remember"].reason and "[REDACTED]" in by_source["remember"].excerpt
    assert "payment card" in by_source["flush"].reason and by_source["flush"].session_key == "agent:main:main"
    assert "venting" in by_source["chat"].reason and by_source["tool"].session_key == carol
    log = (home / "agents" / "main" / refusals.FILE_NAME).read_text()
    assert "hunter2-alpha-99" not in log and "4111" not in log  # never in clear
    cli = run_cli(home, "memory", "refusals", "--json")
    assert cli.code == 0 and cli.json() == [r.to_json() for r in rows]
    assert run_cli(home, "memory", "refusals", "--days", "0").code == 2


def test_refusal_log_drops_old_lines_when_it_grows_and_skips_incognito(eng, home):
    path = refusals.log_path(eng.runtime)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = now_ms() - 40 * refusals.DAY_MS
    line = json.dumps({"at": "old", "atMs": old, "source": "remember", "reason": "x", "excerpt": "y" * 200})
    path.write_text((line + "\n") * (refusals.MAX_BYTES // len(line) + 10) + "{cut by a cra")
    assert eng.memory_remember("ugh this is so broken")["status"] == "refused"
    kept = path.read_text().splitlines()
    assert len(kept) == 1 and json.loads(kept[0])["source"] == "remember"  # old and broken lines gone
    assert eng.memory_refusals(days=30)[0].excerpt == "Ugh this is so broken"
    incognito = eng.sessions_create(incognito=True).key
    with pytest.raises(InputError, match="incognito"):
        eng.memory_remember("my favourite tea is oolong", caller=incognito)  # nothing of it is stored
    assert len(path.read_text().splitlines()) == 1
    with pytest.raises(InputError, match="days"):
        eng.memory_refusals(days=31)


def test_an_incognito_thread_leaves_no_trace_with_dreaming_on(home):
    config = {**NO_VECTORS, "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": True}}}}}}
    with open_engine(home, config) as eng:
        eng.memory_remember("I like quokkas on Rottnest")
        eng.memory_search("quokkas", caller=eng.sessions_create().key)  # a durable thread's search is a trace
        incognito = eng.sessions_create(incognito=True).key
        assert eng.memory_search("quokkazanzibar quokkas", caller=incognito).results
        eng.recall("what did I say about quokkazanzibar last time?", session=incognito)
    traces = list((home / "workspace" / "memory" / ".dreams").rglob("*"))
    assert any(p.is_file() and b"quokkas" in p.read_bytes() for p in traces)
    assert not [p for p in home.rglob("*") if p.is_file() and b"quokkazanzibar" in p.read_bytes()]


# --- small additions to existing shapes ------------------------------------------------------------
def test_listing_marks_incognito_and_status_names_the_chat_model(home):
    with open_engine(home, NO_VECTORS) as eng:
        quiet = eng.sessions_create(incognito=True)
        loud = eng.sessions_create()
        rows = {r.key: r.to_json() for r in eng.sessions_list()}
        assert rows[quiet.key]["incognito"] is True and "incognito" not in rows[loud.key]
        assert eng.status().to_json()["chatModel"] is None  # record mode
    config = {"models": {"providers": {"local": {"api": "openai", "baseUrl": "http://127.0.0.1:9/v1",
                                                 "models": {"m1": {"contextWindow": 8000}}}}},
              "agents": {"defaults": {"model": {"primary": "local/m1"}, "memorySearch": {"provider": "none"}}}}
    with open_engine(home, config) as eng:
        assert eng.status().chat_model == "local/m1"


# --- over HTTP, and the page itself ---------------------------------------------------------------
def test_gateway_routes_for_timeline_and_refusals(home):
    running = GatewayThread(home, SMALL_TAIL)
    try:
        with running.client() as http:
            thread = http.post("/v1/sessions", json={}).json()["key"]
            http.post("/v1/messages", json={"text": "hello there", "session": thread})
            http.post(f"/v1/sessions/{thread}/reset", json={})
            timeline = http.get(f"/v1/sessions/{thread}/timeline").json()
            assert [i["open"] for i in timeline["intervals"]] == [False, True]
            assert timeline == running.engine.sessions_timeline(thread).to_json()
            other = http.post("/v1/sessions", json={}).json()["key"]
            hidden = http.get(f"/v1/sessions/{thread}/timeline", headers={"X-Clawkeep-Session": other})
            assert hidden.status_code == 404
            http.post("/v1/memory/remember", json={"text": "my api key is sk-abcdefghijklmnopqrstuvwx99"})
            rows = http.get("/v1/memory/refusals", params={"days": 1}).json()
            assert rows[0]["source"] == "remember" and "sk-abcdef" not in json.dumps(rows)
            assert http.get("/v1/memory/refusals", params={"days": 0}).status_code == 422
            as_session = http.get("/v1/memory/refusals", headers={"X-Clawkeep-Session": thread})
            assert as_session.status_code == 403  # the operator's view, like listing items
    finally:
        running.stop()


def test_the_page_is_served_with_a_strict_policy_and_outside_the_token(home):
    running = GatewayThread(home, {**NO_VECTORS, "gateway": {"auth": {"token": "a-token-of-sixteen-plus"}}})
    try:
        with running.client() as http:
            page = http.get("/")
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            assert page.headers["content-security-policy"] == control_ui.POLICY
            assert "default-src 'self'" in control_ui.POLICY and "http" not in control_ui.POLICY
            script = http.get("/ui/js/main.js")
            assert script.status_code == 200 and "javascript" in script.headers["content-type"]
            assert http.get("/v1/status").status_code == 401  # the data stays behind the token
            signed = {"Authorization": "Bearer a-token-of-sixteen-plus"}
            assert http.get("/v1/status", headers=signed).status_code == 200
            assert http.get("/ui/nothing-here.js").status_code == 404
    finally:
        running.stop()


def test_static_files_reference_only_themselves_and_ship_in_the_wheel():
    root = static_dir()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    text = {p: p.read_text() for p in files}
    for path, body in text.items():
        assert "http://" not in body.replace("http://www.w3.org/2000/svg", "") and "https://" not in body, path
    index = text[root / "index.html"]
    for ref in ("/ui/app.css", "/ui/js/main.js", "/ui/icon.svg"):
        assert ref in index and (root / ref.removeprefix("/ui/")).is_file()
    for path in (p for p in files if p.suffix == ".js"):
        for imported in (line.split('"')[1] for line in text[path].splitlines() if line.startswith("import ")):
            assert (path.parent / imported).is_file(), (path, imported)
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["clawkeep.ui"]
    shipped = {p for pattern in patterns for p in root.parent.glob(pattern)}
    assert set(files) <= shipped  # every static file is package data, so the wheel carries it


# --- the Dreams tab: dreaming_review and the /v1/dreaming routes -----------------------------------
def test_dreaming_review_lists_blocks_diary_and_runs_and_hides_other_peoples_items(home):
    dreamed = dream_home(home)
    with open_engine(home, dreaming_config()) as eng:
        review = eng.dreaming_review()
        assert isinstance(review, api.DreamsReview) and review.enabled is True
        (run,) = review.runs
        assert run.run_id == dreamed.run_id and run.status == "applied"
        by_text = {item.text: item for item in run.items}
        assert set(by_text) == {EDITOR, SEATS} and all(i.in_memory and not i.undone for i in run.items)
        assert by_text[SEATS].owner == ALICE and by_text[EDITOR].owner is None
        assert by_text[EDITOR].src.startswith("memory/") and by_text[EDITOR].src.endswith("#L3")
        assert set(review.blocks) == {"light", "rem", "deep"} and f"promoted “{SEATS}”" in review.blocks["deep"]
        (entry,) = review.diary
        assert entry.run_id == dreamed.run_id and "I kept 2 thing(s)" in entry.text and not entry.backfill
        everything = json.dumps(review.to_json())
        assert BACKUP not in everything  # a cron job's line is never a candidate …
        assert INCOGNITO_WORD not in everything  # … and an incognito thread left nothing to review

        as_alice = eng.dreaming_review(caller=ALICE).to_json()
        assert {i["text"] for i in as_alice["runs"][0]["items"]} == {EDITOR, SEATS}  # hers and the shared one
        as_bob = eng.dreaming_review(caller=BOB).to_json()
        assert [i["text"] for i in as_bob["runs"][0]["items"]] == [EDITOR]  # shared, never alice's
        assert "blocks" not in as_bob and "diary" not in as_bob and "dreamsFile" not in as_bob
        with pytest.raises(InputError, match="limit"):
            eng.dreaming_review(limit=0)

        eng.memory_promote_undo(dreamed.promoted[SEATS])
        after = {i.text: i for i in eng.dreaming_review().runs[0].items}
        assert after[SEATS].undone and not after[SEATS].in_memory and not after[EDITOR].undone
        alice_items = eng.dreaming_review(caller=ALICE).runs[0].items
        assert {i.text: i.undone for i in alice_items} == {SEATS: True, EDITOR: False}
    cli = run_cli(home, "memory", "dreams", "--json", "--as", BOB, config=dreamed.config)
    assert cli.code == 0 and [i["text"] for i in cli.json()["runs"][0]["items"]] == [EDITOR]


def test_dreaming_routes_status_toggle_sweep_review_undo(home):
    dreamed = dream_home(home)
    running = GatewayThread(home, dreaming_config())
    try:
        with running.client() as http:
            status = http.get("/v1/dreaming").json()
            assert status["enabled"] is True and status["lastRunId"] == dreamed.run_id
            review = http.get("/v1/dreaming/review", params={"limit": 5}).json()
            assert review == running.engine.dreaming_review(limit=5).to_json()
            as_bob = http.get("/v1/dreaming/review", headers={"X-Clawkeep-Session": BOB}).json()
            assert SEATS not in json.dumps(as_bob)
            assert http.get("/v1/dreaming/review", params={"limit": 0}).status_code == 422
            for method, path, body in (("GET", "/v1/dreaming", None), ("PUT", "/v1/dreaming", {"enabled": False}),
                                       ("POST", "/v1/dreaming/sweep", {}), ("POST", "/v1/dreaming/undo", {})):
                refused = http.request(method, path, json=body, headers={"X-Clawkeep-Session": BOB})
                assert refused.status_code == 403, (method, path)  # the operator's controls
            undone = http.post("/v1/dreaming/undo", json={"target": dreamed.promoted[EDITOR]}).json()
            assert undone["restored"] == "lines removed" and EDITOR not in dreamed.memory_md.read_text()
            assert http.post("/v1/dreaming/undo", json={"target": "m-nothere0"}).status_code == 404
            swept = http.post("/v1/dreaming/sweep", headers=JSON_TYPE).json()  # no body: every phase
            assert swept["status"] == "ok" and swept["phases"] == ["light", "rem", "deep"]
            assert swept["promoted"] == []  # an undone claim stays out
            last = http.post("/v1/dreaming/undo", headers=JSON_TYPE).json()  # no body: what is left of the last run
            assert last["runId"] == dreamed.run_id and [i["text"] for i in last["items"]] == [SEATS]
            assert dreamed.memory_md.read_text().rstrip("\n") == INITIAL_MEMORY.rstrip("\n")
            assert http.post("/v1/dreaming/sweep", json={"phase": "nap"}).status_code == 422
            off = http.put("/v1/dreaming", json={"enabled": False}).json()
            assert off["enabled"] is False and http.get("/v1/dreaming").json()["enabled"] is False
            assert json.loads(Path(off["config"]).read_text())["plugins"]["entries"]["memory-core"]["config"][
                "dreaming"]["enabled"] is False
    finally:
        running.stop()
