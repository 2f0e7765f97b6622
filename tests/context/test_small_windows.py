"""Small context windows (issue 9): every window from 4k tokens up works with the default settings.

A scripted OpenAI-compatible model over real HTTP that behaves like a provider with a small
window (it refuses a request larger than its window with the documented overflow error), real
SQLite in a temporary home."""

import json
import re
from pathlib import Path

import pytest

from clawkeep.config import CompactionConfig
from clawkeep.context import compaction as comp
from clawkeep.text.estimate import estimate_tokens
from clawkeep.turns import reply as reply_mod
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import Reply, ScriptedServer

FLUSH_PROMPT = "Pre-compaction memory flush"
SUMMARY_PROMPT = "Summarise the conversation"


def completion(text):
    return Reply(json={"id": "x", "object": "chat.completion", "model": "scripted-1",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": 10}})


def request_tokens(request):
    body = request.json()
    tokens = sum(estimate_tokens(m.get("content") or "") + 4 for m in body["messages"])
    return tokens + sum(estimate_tokens(json.dumps(t, ensure_ascii=False)) for t in body.get("tools") or [])


def system_of(request):
    return next((m["content"] for m in request.json()["messages"] if m["role"] == "system"), "")


class SmallWindowModel:
    """Answers like a provider whose window is `window` tokens: a larger request is refused
    with the overflow error; flush and summary requests get short, plausible answers."""

    def __init__(self, window, summary="The user sent numbered notes with ticket ids; nothing is open.",
                 notes="NO_REPLY"):
        self.window, self.summary, self.notes = window, summary, notes
        self.kinds = []

    def __call__(self, request):
        system = system_of(request)
        kind = "flush" if FLUSH_PROMPT in system else "summary" if SUMMARY_PROMPT in system else "reply"
        self.kinds.append(kind)
        if request_tokens(request) > self.window:
            return Reply(status=400, json={"error": {
                "message": f"This model's maximum context length is {self.window} tokens. However, you requested "
                           f"{request_tokens(request)} tokens", "code": "context_length_exceeded"}})
        return completion({"flush": self.notes, "summary": self.summary}.get(kind, "Noted."))


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def model_config(server, window, **compaction):
    return {
        "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": 5000,
                                           "retries": 0, "models": {"scripted-1": {"contextWindow": window}}}}},
        "agents": {"defaults": {"model": {"primary": "local/scripted-1"}, "memorySearch": {"provider": "none"},
                                **({"compaction": compaction} if compaction else {})}},
    }


def note(i):
    return f"note {i} ticket T-{i:04d}: " + "the quick brown fox jumps over the lazy dog " * 25  # ~300 tokens


def active_tokens(eng, session_id):
    store = eng.runtime.store()
    kept, latest = comp.active_messages(store, store.get_session(session_id))
    summary = latest.meta["summary"] if latest else ""
    return estimate_tokens(summary) + sum(comp.message_tokens(m) for m in kept), summary, kept


# --- one rule for the budgets -----------------------------------------------------------------


def test_budget_scales_every_size_to_the_window_and_honours_what_fits():
    from clawkeep.context.budget import Budget

    defaults = CompactionConfig()
    big = Budget.for_window(128_000, defaults)
    assert (big.reserve, big.keep_recent, big.flush_soft, big.threshold) == (20_000, 20_000, 4_000, 108_000)
    for window in (4096, 8192, 32_000):
        budget = Budget.for_window(window, defaults)
        assert budget.reserve == budget.keep_recent == window // 4 and budget.flush_soft == window // 10
        assert budget.threshold == window - window // 4 and 0 < budget.flush_at < budget.threshold
        # after a compaction (summary + kept tail) the context is well below the flush point
        assert budget.summary + budget.keep_recent < budget.flush_at
    explicit = CompactionConfig.model_validate({"keepRecentTokens": 1500, "reserveTokensFloor": 1000,
                                                "memoryFlush": {"softThresholdTokens": 500}})
    fits = Budget.for_window(8192, explicit)
    assert (fits.keep_recent, fits.reserve, fits.flush_soft) == (1500, 1000, 500)  # used as configured
    assert Budget.for_window(4096, explicit).keep_recent == 1024  # too big for 4k: capped
    # the bootstrap files take at most a quarter: with the kept tail and a summary that is 5/8,
    # below the threshold, and after an overflow the other quarter of the half aimed at is left
    assert [Budget.for_window(w, defaults).bootstrap for w in (4096, 32_768, 128_000)] == [1024, 8192, 32_000]


# --- automatic compaction and the flush before it -------------------------------------------


@pytest.mark.parametrize("window", [4096, 8192])
def test_automatic_compaction_fires_near_a_small_window_with_default_settings(home, server, window):
    model = SmallWindowModel(window)
    server.set_script(model)
    eng = open_engine(home, model_config(server, window))
    results = [eng.message(note(i)) for i in range(40)]
    compactions = [r.compaction for r in results if r.compaction]
    assert compactions and all(c["compacted"] and c["reason"] == "threshold" for c in compactions)
    assert all(c["tokensAfter"] < c["tokensBefore"] for c in compactions)
    # nothing was refused: every request the model got fits its window, and every turn got a reply
    assert all(r.reply == "Noted." for r in results)
    assert max(request_tokens(r) for r in server.requests) <= window
    # each cycle's flush ran before that cycle's compaction, once
    order = " ".join(k for k in model.kinds if k != "reply")
    assert re.fullmatch(r"(flush summary ?)+(flush)?", order), order
    assert order.count("summary") == len(compactions)


@pytest.mark.parametrize("window", [4096, 8192])
def test_manual_compact_compacts_in_a_small_window(home, server, window):
    server.set_script(SmallWindowModel(window))
    eng = open_engine(home, model_config(server, window))
    first = eng.message(note(0))
    # more than the kept tail, less than the threshold (the tool schemas count too: stop short)
    sent = [eng.message(note(i)) for i in range(1, window // 700)]
    assert not any(r.compaction for r in sent)  # the premise: nothing compacted automatically yet
    before, _, _ = active_tokens(eng, first.session_id)
    done = eng.message("/compact")
    assert done.status["compacted"], done.status
    after, summary, kept = active_tokens(eng, first.session_id)
    assert after < before and done.status["tokensAfter"] == after
    assert summary.startswith("The user sent numbered notes") and kept[-1].role == "assistant"


def test_flush_runs_before_a_compaction_forced_by_transcript_size(home):
    """maxActiveTranscriptBytes makes compaction due long before forceFlushTranscriptBytes
    (2 MiB) or the token threshold: the flush still runs first in that cycle, on the messages
    about to be summarised (before: it ran a cycle late, after them)."""
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}, "compaction": {
        "maxActiveTranscriptBytes": 16_384, "keepRecentTokens": 500}}}})
    results = [eng.message("I prefer window seats on long flights.")]
    for i in range(12):
        results.append(eng.message(f"log line {i} " + "status nominal " * 100))
        if results[-1].compaction:
            break
    turn = results[-1]
    assert turn.compaction and turn.compaction["compacted"], "compaction was forced by size"
    assert turn.flush and "I prefer window seats on long flights." in turn.flush["notes"]
    assert all(r.flush is None for r in results[:-1])
    status = eng.session_status("agent:main:main")
    session = eng.runtime.store().get_session(status["sessionId"])
    assert session.meta["memoryFlushCompactionCount"] == 0 and session.meta["compactionCount"] == 1


# --- /compact never grows the context ------------------------------------------------------


def test_manual_compact_with_a_small_kept_tail_never_grows_the_context(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"},
                                                     "compaction": {"keepRecentTokens": 30}}}})
    first = eng.message("We decided to use order 1904781 for the INV-2024-000 batch, I need to ship it by Friday.")
    for i in range(1, 6):
        eng.message(f"We decided to use order 19{i}4781 for the INV-2024-00{i} batch, I need to ship it by Friday.")
    before, _, _ = active_tokens(eng, first.session_id)
    done = eng.message("/compact")
    after, summary, _ = active_tokens(eng, first.session_id)
    assert done.status["compacted"] and done.status["tokensAfter"] < done.status["tokensBefore"]
    assert after < before  # was 156 → 478 before the fix
    assert "INV-2024-000" in summary and "Last user intent" in summary


def test_compact_with_nothing_to_gain_leaves_the_transcript_untouched(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"},
                                                     "compaction": {"keepRecentTokens": 0}}}})
    first = eng.message("hi")
    eng.message("ok", role="assistant")
    done = eng.message("/compact")
    assert done.status["compacted"] is False and done.status["reason"] == "not compacted: nothing to gain"
    store = eng.runtime.store()
    assert not list(store.iter_entries(first.session_id, types=("compaction",)))
    assert done.status["tokensAfter"] == done.status["tokensBefore"]


def test_a_verbose_model_summary_is_replaced_by_one_that_fits(home, server):
    """The model answers with a summary longer than what it replaces: the extractive summary,
    written to the budget, is used instead, and the context still shrinks."""
    server.set_script(SmallWindowModel(8192, summary="A long-winded recap of everything said. " * 200))
    eng = open_engine(home, model_config(server, 8192, keepRecentTokens=200))
    first = eng.message("Ship order 1947814 to ops@example.com by Friday. " + "context " * 100)
    for i in range(4):
        eng.message(f"update {i} REF-{i}77 " + "details " * 100)
    done = eng.message("/compact")
    assert done.status["compacted"] and done.status["summarizer"] == "extractive"
    assert "over the budget" in done.status["errors"][0]
    assert done.status["tokensAfter"] < done.status["tokensBefore"]
    _, summary, _ = active_tokens(eng, first.session_id)
    assert "1947814" in summary and "ops@example.com" in summary


# --- overflow: compact hard so the context fits ----------------------------------------------


def test_compact_for_overflow_fits_a_huge_old_message_into_the_window(home, server):
    window = 8192
    paste = " ".join(f"row {i}: value {i * 7} in the quarterly export" for i in range(4200))  # ~48k tokens
    assert 45_000 < estimate_tokens(paste) and len(paste) <= 200_000
    with open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as recorder:
        first = recorder.message("Here is the export: " + paste)  # record mode: stored as is
        recorder.message("Thanks, I have the export.", role="assistant")
        recorder.message("Also, my flight is on 2026-03-14.")
        recorder.message("Noted.", role="assistant")
        recorder.message("Which row has the largest value?")  # the turn the provider refused
    model = SmallWindowModel(window, notes="- The user's flight is on 2026-03-14.")
    server.set_script(model)
    eng = open_engine(home, model_config(server, window))
    rt = eng.runtime
    store = rt.store()
    session = store.get_session(first.session_id)
    before, _, _ = active_tokens(eng, first.session_id)
    result = reply_mod.compact_for_overflow(rt, store, session, rt.models.chat_model(), at=rt.now())
    assert result.compacted and result.reason == "overflow" and result.summarizer == "model"
    assert not any("does not fit" in e for e in result.errors)
    assert result.flush and result.flush["ran"]  # the flush ran first, on the messages about to go
    assert model.kinds == ["flush", "summary"]
    assert all(request_tokens(r) <= window for r in server.requests)  # both inputs were cut to fit
    after, summary, kept = active_tokens(eng, first.session_id)
    assert before > 45_000 and after <= window // 2
    assert result.compacted_messages == 1 and "quarterly export" not in "".join(m.content[0]["text"] for m in kept)
    assert kept[-1].content[0]["text"] == "Which row has the largest value?"
    assert summary.startswith("The user sent numbered notes") and "left out for length" in summary
    # the next turn's context fits the window: the provider accepts it
    answer = eng.message("And the smallest?")
    assert answer.reply == "Noted." and request_tokens(server.requests[-1]) <= window


def test_compact_for_overflow_reports_a_pending_turn_that_alone_exceeds_the_window(home, server):
    window = 4096
    with open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as recorder:
        first = recorder.message("hello")
        recorder.message("hi", role="assistant")
        recorder.message("please read: " + "lorem ipsum dolor sit amet " * 2000)  # ~13k tokens, pending
    server.set_script(SmallWindowModel(window))
    eng = open_engine(home, model_config(server, window))
    rt = eng.runtime
    store = rt.store()
    result = reply_mod.compact_for_overflow(rt, store, store.get_session(first.session_id),
                                            rt.models.chat_model(), at=rt.now())
    assert any("does not fit the 4096-token window" in e for e in result.errors)
    _, _, kept = active_tokens(eng, first.session_id)
    assert kept[-1].content[0]["text"].startswith("please read:")  # the pending turn is never summarised away


def test_the_models_reasoning_never_reaches_memory_or_a_summary(home, server):
    """A model that thinks aloud (`<think>…</think>`) in its flush notes and its summary: the
    notes written to memory and the stored summary hold only the answer (QA: the flush wrote
    `- <think>` and the reasoning as active items, re-sent in every later prompt)."""
    model = SmallWindowModel(4096, summary="<think>deliberating SEKRITSUM</think>The user sent numbered notes.",
                             notes="<think>\nI think the user likes Rust SEKRITFLUSH\n</think>\n"
                                   "- The user works on project ORION-7731")
    server.set_script(model)
    eng = open_engine(home, model_config(server, 4096))
    results = [eng.message(note(i)) for i in range(40)]
    compactions = [r.compaction for r in results if r.compaction and r.compaction["compacted"]]
    assert compactions and "flush" in model.kinds and "summary" in model.kinds
    notes = "".join(p.read_text() for p in (home / "workspace" / "memory").glob("*.md"))
    assert "ORION-7731" in notes
    assert "SEKRIT" not in notes and "think>" not in notes
    store = eng.runtime.store()
    summaries = [e.meta["summary"] for e in store.iter_entries(results[0].session_id, types=("compaction",))]
    assert summaries and all(s.startswith("The user sent numbered notes") for s in summaries)
    assert not any("SEKRIT" in system_of(r) for r in server.requests)  # never re-sent to the model


def test_manual_compact_uses_the_sessions_own_model(home, server):
    """`/new local/tiny-2` then `/compact`: the summary is asked of tiny-2 (its window sets the
    budget), not of the agent's primary model."""
    server.set_script(SmallWindowModel(32768))
    config = model_config(server, 32768, keepRecentTokens=20)
    config["models"]["providers"]["local"]["models"]["tiny-2"] = {"contextWindow": 4096}
    eng = open_engine(home, config)
    eng.message("/new local/tiny-2")
    for i in range(4):
        eng.message(note(i))
    done = eng.message("/compact keep the ticket ids")
    assert done.status["compacted"], done.status
    asked = [r.json()["model"] for r in server.requests if SUMMARY_PROMPT in system_of(r)]
    assert asked == ["tiny-2"]


# --- bootstrap files within the window -------------------------------------------------------


def big_note():
    # QA's repro: 2,500 appended lines, ~208 KB — about 52k tokens, beyond a 32k window on its own
    return "".join(f"- meeting note {i}: discussed the quarterly roadmap item number {i} with the team\n"
                   for i in range(2500))


def todays_note(eng):
    from clawkeep.memory import service as memory

    ws = Path(eng.memory_status()["workspace"])
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    return ws / "memory" / f"{memory.today(eng.runtime):%Y-%m-%d}.md"


def test_a_large_daily_note_is_cut_to_its_newest_lines_and_every_turn_fits(home, server):
    window = 32_768
    server.set_script(SmallWindowModel(window))
    eng = open_engine(home, model_config(server, window))
    path = todays_note(eng)
    path.write_text(big_note())
    first = eng.message("hello")
    assert first.reply == "Noted."
    assert eng.message("and again").reply == "Noted."
    eng.message("/new")
    fresh = eng.message("hello after /new")
    assert fresh.reply == "Noted."
    replies = [r for r in server.requests if FLUSH_PROMPT not in system_of(r) and SUMMARY_PROMPT not in system_of(r)]
    assert len(replies) == 3 and max(request_tokens(r) for r in server.requests) <= window
    system = system_of(replies[0])
    budget = comp.Budget.for_window(window, CompactionConfig()).bootstrap
    assert estimate_tokens(system) <= budget + 50  # the note within the window's share (+ headings)
    # the newest lines are what a note is for; the prompt says it was cut and how to read the rest
    assert "- meeting note 2499: discussed" in system and "- meeting note 0:" not in system
    assert f"{path.relative_to(path.parent.parent).as_posix()} is cut for this prompt" in system
    assert "memory_get" in system
    kept = system.split("…]\n\n", 1)[1]
    assert kept.startswith("- meeting note ") and big_note().endswith(kept + "\n")  # whole lines only
    assert path.read_text() == big_note()  # the file on disk is never cut


def test_a_small_daily_note_is_injected_whole(home, server):
    server.set_script(SmallWindowModel(4096))
    eng = open_engine(home, model_config(server, 4096))
    path = todays_note(eng)
    path.write_text("- booked the dentist for Friday\n- the kayak needs a new paddle\n")
    assert eng.message("hello").reply == "Noted."
    system = system_of(server.requests[-1])
    assert f"## memory/{path.name}\n\n- booked the dentist for Friday\n- the kayak needs a new paddle" in system
    assert "cut for this prompt" not in system and "truncated" not in system
