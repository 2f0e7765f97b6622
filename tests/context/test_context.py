"""Context assembly, pruning (S9), compaction (C1) and the memory flush (C2), without a model."""

import copy
from datetime import date

import pytest

from clawkeep.config import ContextPruningConfig
from clawkeep.context import compaction as comp
from clawkeep.context.flush import extract_notes, flush, flush_due
from clawkeep.context.pruning import CLEARED, IMAGE_REMOVED, MEDIA_REMOVED, image_replay_view, prune_tool_results
from clawkeep.sessions import compactions, transcript
from clawkeep.storage import EntryRecord
from clawkeep.timeutil import now_ms
from tests.helpers.engine import open_engine

MIN = 60_000


def msg(role, *blocks):
    return {"role": role, "content": list(blocks)}


def text(t):
    return {"type": "text", "text": t}


def tool_result(content):
    return {"type": "toolResult", "toolCallId": "c", "content": content, "isError": False}


def conversation(tool_size=10_000):
    return [
        msg("system", text("setup")),
        msg("user", text("q1")), msg("assistant", {"type": "toolCall", "id": "c", "name": "grep", "arguments": {}}),
        msg("tool", tool_result("A" * tool_size)), msg("assistant", text("a1")),
        msg("user", text("q2")), msg("assistant", text("a2")),
        msg("user", text("q3")), msg("assistant", text("a3")),
        msg("user", text("q4")), msg("assistant", text("a4")),
    ]


def test_soft_trim_old_tool_results_after_ttl():
    messages = conversation()
    before = copy.deepcopy(messages)
    pruned = prune_tool_results(messages, ContextPruningConfig(mode="cache-ttl"), now_ms=10 * MIN,
                                last_model_call_ms=0, context_tokens=50_000, window_tokens=100_000)
    trimmed = pruned[3]["content"][0]["content"]
    assert trimmed.startswith("A" * 1500) and "\n...\n" in trimmed and len(trimmed) == 1500 + 5 + 1500
    assert messages == before  # in memory only: the input (and the transcript) is untouched
    assert [m["content"] for m in pruned if m["role"] in ("user", "assistant")] == \
        [m["content"] for m in before if m["role"] in ("user", "assistant")]


def test_no_pruning_while_cache_is_warm_or_context_small():
    messages = conversation()
    settings = ContextPruningConfig(mode="cache-ttl")
    warm = prune_tool_results(messages, settings, now_ms=4 * MIN, last_model_call_ms=0,
                              context_tokens=90_000, window_tokens=100_000)
    small = prune_tool_results(messages, settings, now_ms=10 * MIN, last_model_call_ms=0,
                               context_tokens=10_000, window_tokens=100_000)
    assert warm is messages and small is messages


def test_hard_clear_when_large_and_last_assistant_turns_protected():
    messages = conversation(tool_size=60_000)
    messages.insert(9, msg("tool", tool_result("B" * 60_000)))  # inside the last 3 assistant turns
    pruned = prune_tool_results(messages, ContextPruningConfig(mode="cache-ttl"), now_ms=10 * MIN,
                                last_model_call_ms=0, context_tokens=60_000, window_tokens=100_000)
    assert pruned[3]["content"][0]["content"] == CLEARED
    assert pruned[9]["content"][0]["content"] == "B" * 60_000


def test_image_replay_keeps_last_three_completed_turns_identical():
    image = {"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}
    ref = {"type": "media", "ref": "file://cat.jpg"}
    messages = []
    for i in range(5):
        messages += [msg("user", text(f"look {i}"), dict(image)), msg("assistant", text(f"seen {i}"), dict(ref))]
    messages.append(msg("user", text("and this one"), dict(image)))  # the current turn
    view = image_replay_view(messages)
    assert view[0]["content"][1] == {"type": "text", "text": IMAGE_REMOVED}
    assert view[1]["content"][1] == {"type": "text", "text": MEDIA_REMOVED}
    assert view[3]["content"][1] == {"type": "text", "text": MEDIA_REMOVED}
    for i in range(4, 11):
        assert view[i] is messages[i]  # byte-identical: the same objects
    assert messages[0]["content"][1] == image  # the input is never rewritten


def add(store, session_id, role, content, seq_hint=None, entry_id=None):
    return transcript.append(store, EntryRecord(entry_id or transcript.new_entry_id(), session_id, "message",
                                                seq_hint or 1, role=role, content=content))


def test_split_never_separates_a_tool_call_from_its_result(home):
    eng = open_engine(home)
    first = eng.message("start")
    store = eng.runtime.store()
    sid = first.session_id
    for i in range(10):
        add(store, sid, "user", [text(f"question {i} " + "x" * 400)])
    add(store, sid, "assistant", [{"type": "toolCall", "id": "c1", "name": "grep", "arguments": {"q": "x"}}],
        entry_id="call")
    add(store, sid, "tool", [tool_result("r" * 100)], entry_id="result")
    add(store, sid, "assistant", [text("done")], entry_id="final")
    messages, _ = comp.active_messages(store, store.get_session(sid))
    for keep in range(1, 200, 7):
        cut = comp.split_point(messages, keep)
        assert messages[cut].role != "tool" if cut < len(messages) else True


def test_extractive_compaction_keeps_identifiers_tasks_and_last_intent(home):
    eng = open_engine(home)
    ids = ["INV-2024-0042", "https://example.com/runbook", "/srv/app/config.yaml", "3f9a2c1b7e",
           "v2.3.1", "ops@example.com", "2f0c6f3e-8d7a-4b52-9b1e-1c2d3e4f5a6b"]
    eng.message("I need to renew the TLS certificate before Friday")
    for i, ident in enumerate(ids):
        eng.message(f"turn {i}: please check {ident} " + "filler " * 200)
        eng.message(f"ok, noted {ident}", role="assistant")
    eng.message("last thing: draft the release notes for the launch")
    status = eng.session_status("agent:main:main")
    store = eng.runtime.store()
    session = store.get_session(status["sessionId"])
    result = comp.compact(store, session, [], at=now_ms(), keep_recent_tokens=200)
    assert result.compacted and result.summarizer == "extractive" and result.compacted_messages > 10
    # context computed it; nothing is written until the session layer writes it
    assert not list(store.iter_entries(session.session_id, types=("compaction",)))
    assert "compactionCount" not in store.get_session(session.session_id).meta
    compactions.record_compaction(store, session, result, at=eng.runtime.now())
    for ident in ids:
        assert ident in result.summary
    assert "renew the TLS certificate" in result.summary
    assert result.tokens_after < result.tokens_before
    # the transcript keeps everything; reads now see summary + kept messages
    assert sum(1 for e in store.iter_entries(session.session_id, types=("message",))) == 2 * len(ids) + 2
    assert "Last user intent" in result.summary
    kept, latest = comp.active_messages(store, session)
    assert latest.meta["summary"] == result.summary and len(kept) == result.kept_messages
    assert store.get_session(session.session_id).meta["compactionCount"] == 1


def test_compact_command_with_instructions_and_nothing_to_do(home):
    eng = open_engine(home)
    empty = eng.message("/compact")
    assert empty.command == "compact" and empty.status["compacted"] is False
    for i in range(30):
        eng.message(f"item {i} INV-{1000 + i} " + "word " * 2000)
    done = eng.message("/compact focus on invoices")
    assert done.status["compacted"] and done.status["summarizer"] == "extractive"
    kept, latest = comp.active_messages(eng.runtime.store(), eng.runtime.store().get_session(done.session_id))
    assert "Focus requested: focus on invoices" in latest.meta["summary"]
    assert "INV-1000" in latest.meta["summary"]


def test_automatic_compaction_near_the_window(home):
    eng = open_engine(home, {"agents": {"defaults": {"compaction": {"keepRecentTokens": 2000,
                                                                    "reserveTokensFloor": 20000}}}})
    results = []
    for i in range(40):  # ~4k tokens each: passes 128k - 20k
        results.append(eng.message(f"chapter {i} ID-{i:04d} " + "lorem ipsum dolor sit amet " * 600))
        if results[-1].compaction:
            break
    last = results[-1]
    assert last.compaction and last.compaction["compacted"] and last.compaction["reason"] == "threshold"
    flushes = [r.flush for r in results if r.flush]
    assert len(flushes) == 1  # the flush ran before compaction, once for this cycle
    assert results.index(next(r for r in results if r.flush)) <= len(results) - 1


def test_truncate_after_compaction_creates_a_successor_and_archives(home):
    eng = open_engine(home, {"agents": {"defaults": {"compaction": {"truncateAfterCompaction": True,
                                                                    "keepRecentTokens": 100}}}})
    first = eng.message("alpha ID-1 " + "x " * 500)
    for i in range(5):
        eng.message(f"beta {i} " + "y " * 500)
    result = eng.message("/compact")
    assert result.status["compacted"] and result.status["sessionId"] != first.session_id
    status = eng.session_status("agent:main:main")
    assert status["sessionId"] == result.status["sessionId"]
    old = eng.runtime.store().get_session(first.session_id)
    assert old.archived_at is not None  # archived, never deleted
    assert eng.sessions_search("alpha")["hits"][0]["messageId"] == first.message_id
    after = eng.message("gamma after compaction")
    assert after.session_id == status["sessionId"]


def test_crash_mid_compaction_leaves_the_transcript_complete(home):
    eng = open_engine(home)
    for i in range(20):
        eng.message(f"message {i} " + "z " * 300)
    store = eng.runtime.store()
    session = store.get_session(eng.session_status("agent:main:main")["sessionId"])

    class Exploding:
        name = "exploding"

        def summarize(self, *args, **kwargs):
            raise KeyboardInterrupt  # the process dies mid-summary

    with pytest.raises(KeyboardInterrupt):
        comp.compact(store, session, [Exploding()], at=now_ms(), keep_recent_tokens=100)
    history = eng.sessions_history("agent:main:main")["messages"]
    assert [m["text"].split()[1] for m in history] == [str(i) for i in range(20)]
    assert not list(store.iter_entries(session.session_id, types=("compaction",)))


def test_failing_summarizer_falls_back_to_extractive(home):
    from clawkeep.errors import ClawkeepError

    eng = open_engine(home)
    for i in range(10):
        eng.message(f"message {i} REF-{i}99 " + "z " * 300)
    store = eng.runtime.store()
    session = store.get_session(eng.session_status("agent:main:main")["sessionId"])

    class Broken:
        name = "broken-model"

        def summarize(self, *args, **kwargs):
            raise ClawkeepError("provider returned garbage")

    result = comp.compact(store, session, [Broken()], at=now_ms(), keep_recent_tokens=100)
    assert result.summarizer == "extractive" and "broken-model" in result.errors[0]


def test_flush_rules_extract_durable_notes():
    entries = [
        EntryRecord("1", "s", "message", 1, role="user", content=[text(
            "I prefer window seats. We decided to use Postgres for the ledger. Lol ok. "
            "I'll send the contract to Maria by 2026-12-05. My flight to Berlin is 14:30. the weather is nice")]),
        EntryRecord("2", "s", "message", 2, role="assistant", content=[text("I prefer tea myself")]),
    ]
    notes = extract_notes(entries, date(2026, 11, 30))
    assert "I prefer window seats." in notes and "We decided to use Postgres for the ledger." in notes
    assert any("contract to Maria" in n for n in notes) and any("Berlin" in n for n in notes)
    assert not any("weather" in n or "Lol" in n or "tea" in n for n in notes)


def test_rule_notes_keep_decimal_numbers_and_versions_whole():
    """QA: the rule-based flush noted "We decided to upgrade to PostgreSQL 16." out of "… 16.2 on
    Friday": any `.` ended a sentence, so versions, prices and times were cut."""
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[text(
        "We decided to upgrade to PostgreSQL 16.2 on Friday. The budget is 1.5 million euros.")])]
    notes = extract_notes(entries, date(2026, 11, 30))
    assert "We decided to upgrade to PostgreSQL 16.2 on Friday." in notes, notes
    assert not any(n.endswith("16.") for n in notes)


def test_flush_appends_only_to_todays_note_and_honours_filters(home, tmp_path):
    eng = open_engine(home)
    eng.message("seed")
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("- curated\n")
    session = eng.runtime.store().list_sessions()[0]
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[text(
        "I prefer aisle seats. My api key is sk-abc123def456ghi789jkl012. Next Tuesday I fly to Lisbon.")])]
    result = flush(ws, session, entries, today=date(2026, 11, 30))
    assert result.ran and result.path == "memory/2026-11-30.md" and result.refused
    note = (ws / "memory" / "2026-11-30.md").read_text()
    assert "aisle seats" in note and "Lisbon" in note and "sk-abc" not in note
    assert "expires=2026-12-08" in note
    assert (ws / "MEMORY.md").read_text() == "- curated\n"  # read-only in a flush
    again = flush(ws, session, entries, today=date(2026, 11, 30))
    assert (ws / "memory" / "2026-11-30.md").read_text().count("aisle seats") == 1 and again.ran


def test_flush_skip_rules(home, tmp_path):
    eng = open_engine(home)
    beat = eng.message("tick", channel="heartbeat")
    secret = eng.sessions_create(incognito=True)
    eng.message("hello", session=secret["key"])
    store = eng.runtime.store()
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[text("I prefer green tea")])]
    assert "heartbeat" in flush(tmp_path, store.get_session(beat.session_id), entries, today=date.today()).reason
    incognito = eng.runtime.incognito_store().list_sessions()[0]
    assert "incognito" in flush(tmp_path, incognito, entries, today=date.today()).reason
    main = eng.message("hi")
    session = store.get_session(main.session_id)
    assert "read-only" in flush(tmp_path, session, entries, today=date.today(), access="ro").reason
    assert not (tmp_path / "memory").exists()


def test_flush_due_once_per_cycle(home):
    eng = open_engine(home)
    session = eng.runtime.store().get_session(eng.message("x").session_id)
    kw = dict(threshold_tokens=100_000, soft_threshold=4000, transcript_bytes=0, force_bytes=2 * 1024 * 1024)
    assert not flush_due(context_tokens=95_000, session=session, **kw)
    assert flush_due(context_tokens=96_000, session=session, **kw)
    assert flush_due(context_tokens=10, session=session, **{**kw, "transcript_bytes": 3 * 1024 * 1024})
    session.meta["memoryFlushCompactionCount"] = 0
    assert not flush_due(context_tokens=99_000, session=session, **kw)  # already flushed this cycle
    session.meta["compactionCount"] = 1
    assert flush_due(context_tokens=99_000, session=session, **kw)


def test_identifiers_in_tool_blocks_relative_paths_and_long_numbers_survive(home):
    eng = open_engine(home)
    first = eng.message("please look at src/api/handlers/users.py and order 1947814")
    store = eng.runtime.store()
    add(store, first.session_id, "assistant", [{"type": "toolCall", "id": "c1", "name": "read",
                                                "arguments": {"path": "lib/core/engine.rs"}}])
    add(store, first.session_id, "tool", [tool_result("found ERR-7731 in build 88213")])
    eng.message("We decided to ship on Monday. " + "padding " * 300)
    session = store.get_session(first.session_id)
    result = comp.compact(store, session, [], at=now_ms(), keep_recent_tokens=10)
    for ident in ("src/api/handlers/users.py", "1947814", "lib/core/engine.rs", "ERR-7731", "88213"):
        assert ident in result.summary
    assert "Decisions:\n- We decided to ship on Monday." in result.summary


def test_versions_with_suffixes_and_branch_names_are_kept_whole():
    found = comp.extract_identifiers("build v3.14.159-rc2 and 1.2.3+build.5 on branch feat/quokka-77 or "
                                     "fix/issue-42-login; and/or yes/no are words")
    assert found == ["v3.14.159-rc2", "1.2.3+build.5", "feat/quokka-77", "fix/issue-42-login"]


def test_identifier_extraction_is_linear_on_long_runs_without_spaces():
    """A 400,000-character run (CJK, base64-like, a.a.a…) is scanned once, not from every
    character: the quadratic pattern took minutes per message and stalled the whole gateway.
    The bound is a complexity guard (the fixed pattern takes well under a second here)."""
    import threading

    runs = ["字" * 400_000, "a." * 200_000, "a-b" * 133_000, "ab/" * 133_000,
            "订单号" * 50_000 + " INV-2024-0042 and user@example.com " + "x" * 200_000]
    found: list[list[str]] = []
    worker = threading.Thread(target=lambda: found.extend(comp.extract_identifiers(r) for r in runs), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "identifier extraction is still running after 60 s"
    assert found[:4] == [[], [], [], []]
    assert found[4] == ["INV-2024-0042", "user@example.com"]


COMPACTOR = """
import sys, time
from clawkeep import Engine

class Slow:
    name = "slow"

    def summarize(self, messages, **kwargs):
        print("summarising", flush=True)
        time.sleep(60)
        return "never"

eng = Engine.open(home=sys.argv[1])
eng.register_compaction_provider(Slow())
eng.message("/compact")
"""


def test_kill_9_mid_compaction_leaves_the_transcript_complete(home, tmp_path):
    import signal
    import sqlite3
    import subprocess
    import sys

    (home / "clawkeep.json5").write_text("{agents: {defaults: {compaction: {keepRecentTokens: 100}}}}")
    eng = open_engine(home)
    for i in range(12):
        eng.message(f"message {i} " + "z " * 400)
    eng.close()
    script = tmp_path / "compactor.py"
    script.write_text(COMPACTOR)
    proc = subprocess.Popen([sys.executable, str(script), str(home)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "summarising"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    again = open_engine(home)
    history = again.sessions_history("agent:main:main")["messages"]
    assert [m["text"].split()[1] for m in history] == [str(i) for i in range(12)]
    with sqlite3.connect(home / "agents" / "main" / "agent.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM entries WHERE type = 'compaction'").fetchone()[0] == 0
    assert again.message("/compact").status["compacted"]  # and it can compact afterwards


def test_compaction_is_silent_by_default_and_notifies_when_asked(home):
    """Seed 003: compaction runs silently unless compaction.notifyUser is on."""
    for notify, expected in ((None, False), (True, True)):
        compaction = {"keepRecentTokens": 100, **({"notifyUser": notify} if notify is not None else {})}
        eng = open_engine(home / f"h{notify}", {"agents": {"defaults": {"compaction": compaction}}})
        for i in range(4):
            eng.message(f"note {i} " + "words " * 200)
        done = eng.message("/compact")
        assert done.status["compacted"] and ("notice" in done.status and bool(done.status["notice"])) == expected
