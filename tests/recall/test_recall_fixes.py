"""Issue 9, recall: earlier questions are never the answer; no term is dropped as common in a tiny
corpus; expired plans come back marked stale with their day, or not at all when a later fact exists.

Real SQLite under a temp home, record mode (no model) unless a scripted recall model is passed.
Dates in 2020 are in the past whatever the clock says."""

from datetime import date
from pathlib import Path
from types import SimpleNamespace

import pytest

from clawkeep.recall.lanes import deterministic_summary
from clawkeep.recall.service import recall as recall_with_model
from clawkeep.text.query import parse_query
from tests.helpers.engine import open_engine

KEYWORD = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def engine(home):
    return open_engine(home, KEYWORD)


def workspace(eng) -> Path:
    ws = Path(eng.memory_status()["workspace"])
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    return ws


class ScriptedRecallModel:
    """A recall sub-agent that answers `reply` and keeps the prompt it was shown."""

    model = "scripted"

    def __init__(self, reply: str):
        self.reply = reply
        self.prompts: list[str] = []

    def complete(self, messages, *, system, max_tokens, timeout_s):
        self.prompts.append(messages[-1]["content"])
        return SimpleNamespace(text=self.reply)


def shown(model: ScriptedRecallModel) -> str:
    """The memory search results the recall model was shown (not the conversation context)."""
    return model.prompts[0].split("Memory search results:\n", 1)[1].split("\n\nConversation context", 1)[0]


# --- 1. the user's earlier questions are never the answer -----------------------------------------
ASKED_AGAIN = [
    ("下周三去上海出差", "我下周有什么安排", "我下周有什么安排", "上海"),
    ("Next Wednesday I fly to Shanghai for the Acme audit", "what are my plans for next week?",
     "what did I say about my plans for next week?", "Shanghai"),
    ("来週の水曜日に上海へ出張します", "来週の予定は何だったっけ", "来週の予定は何だったっけ", "上海"),
    ("다음 주 수요일에 상하이로 출장 가요", "다음 주 수요일에 뭐 한다고 했지?", "다음 주 수요일에 뭐 한다고 했지?",
     "상하이"),
]


@pytest.mark.parametrize(("fact", "asked", "again", "expected"), ASKED_AGAIN)
def test_question_asked_again_in_another_thread_recalls_the_fact_not_the_question(home, fact, asked, again,
                                                                                   expected):
    eng = engine(home)
    eng.message(fact, channel="telegram", sender="alice")
    first = eng.sessions_create()
    eng.message(asked, session=first["key"])  # recorded: the old question is now a transcript message
    second = eng.sessions_create()
    result = eng.recall(again, session=second["key"])
    assert result["status"] == "ok" and result["lane"] == 2
    assert expected in result["summary"] and asked not in result["summary"]


def test_only_earlier_questions_recall_nothing(home):
    eng = engine(home)
    first = eng.sessions_create()
    eng.message("我下周有什么安排", session=first["key"])
    eng.message("what are my plans for next week?", session=first["key"])
    second = eng.sessions_create()
    for question in ("我下周有什么安排", "what are my plans for next week?"):
        result = eng.recall(question, session=second["key"])
        assert result["status"] == "none" and result["summary"] is None


def test_question_lines_in_memory_windows_are_not_evidence(home):
    eng = engine(home)
    ws = workspace(eng)
    (ws / "memory" / "notes.md").write_text("# Notes\n\nUser: 我下周有什么安排\nUser: 下周三去上海出差\n")
    thread = eng.sessions_create()
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "ok" and "上海" in result["summary"] and "什么安排" not in result["summary"]


def test_model_never_sees_nor_returns_an_earlier_question(home):
    eng = engine(home)
    eng.message("下周三去上海出差", channel="telegram", sender="alice")
    first = eng.sessions_create()
    eng.message("我下周有什么安排", session=first["key"])
    second = eng.sessions_create()
    echo = ScriptedRecallModel("The user said: 我下周有什么安排")
    result = recall_with_model(eng.runtime, "我下周有什么安排", second["key"], model=echo)
    assert result.status == "none" and result.summary is None  # an echoed question is no answer
    results = shown(echo)
    assert "下周三去上海出差" in results and "有什么安排" not in results
    answer = ScriptedRecallModel("User is travelling to Shanghai next Wednesday.")
    ok = recall_with_model(eng.runtime, "我下周有什么安排", second["key"], model=answer)
    assert ok.status == "ok" and "Shanghai" in ok.summary


def test_the_recall_models_reasoning_is_never_shown_nor_injected(home):
    eng = engine(home)
    eng.message("下周三去上海出差", channel="telegram", sender="alice")
    thread = eng.sessions_create()
    thinking = ScriptedRecallModel("<think>the user asked; private chain SEKRIT99</think>"
                                   "User is travelling to Shanghai next Wednesday.")
    result = recall_with_model(eng.runtime, "我下周有什么安排", thread["key"], model=thinking)
    assert result.status == "ok" and result.summary == "User is travelling to Shanghai next Wednesday."
    assert "SEKRIT" not in repr(result) and "think>" not in repr(result)


QUESTIONS = ["我下周有什么安排", "我下週有什麼安排？", "还记得我的护照号吗", "我明天要做什么来着", "告诉我上次定的方案",
             "what are my plans for next week", "Did I tell you my flight number",
             "tell me what I planned for next week",
             "where do I live?", "User: what did we decide last time?",
             "来週の予定は何だったっけ", "明日の私の予定は？", "会議は何時ですか", "前回話したプラン覚えてる",
             "내일 내 일정 뭐야", "내가 다음주에 뭐 한다고 했지?", "지난번에 얘기한 계획 기억나"]
STATEMENTS = ["下周三去上海出差", "我什么都不吃", "过几天去北京", "我和几个同事去上海", "哪怕下雨也去",
              "我上次说的那个方案是A方案", "我们上次定的是周三", "提醒我周日给妈妈打电话",
              "When I was in Paris I met Anna", "What I want is a quiet week", "We decided to use Postgres last time",
              "Next Wednesday I fly to Shanghai", "User: my passport number is X1234",
              "来週の水曜日に上海へ出張します", "何でも食べられます", "いつも7時に起きます", "前回話したプランはAです",
              "다음 주 수요일에 상하이로 출장 가요", "뭐든지 잘 먹어요", "지난번에 얘기한 계획은 A야",
              "다음 달부터 부산 지사로 발령 나요"]


@pytest.mark.parametrize("text", QUESTIONS)
def test_question_shape_questions(text):
    from clawkeep.recall.detector.questions import is_question  # noqa: PLC0415 - new in this fix

    assert is_question(text)


@pytest.mark.parametrize("text", STATEMENTS)
def test_question_shape_statements(text):
    from clawkeep.recall.detector.questions import is_question  # noqa: PLC0415 - new in this fix

    assert not is_question(text)


def test_settle_keeps_the_statements_of_a_mixed_message():
    from clawkeep.recall.evidence import Evidence, settle  # noqa: PLC0415 - new in this fix

    evidence = [Evidence("下周三去上海出差。你能帮我订酒店吗？", 1.0, "transcript", "2999-01-01"),
                Evidence("我下周有什么安排", 0.9, "transcript", "2999-01-01")]
    settled = settle(evidence, "我下周有什么安排", date(2026, 1, 1))
    assert [e.text for e in settled] == ["下周三去上海出差。"]


# --- 2. no term is dropped as common in a corpus too small for df to mean anything ------------------
def test_select_keeps_a_frequent_term_in_a_tiny_corpus():
    counts = {"下周": 3, "安排": 1}
    query = parse_query("下周 安排").select(lambda toks: {t: counts.get(t, 0) for t in toks}, total=4)
    assert {t.surface for t in query.terms} == {"下周", "安排"}


def test_select_still_drops_common_terms_in_a_large_corpus():
    counts = {"下周": 600, "安排": 3}
    query = parse_query("下周 安排").select(lambda toks: {t: counts.get(t, 0) for t in toks}, total=1000)
    assert {t.surface for t in query.terms} == {"安排"}


def test_small_install_recalls_through_a_frequent_key_term(home):
    eng = engine(home)
    eng.message("下周三去上海出差", channel="telegram", sender="alice")
    for text in ("下周开会", "下周见", "下周放假"):  # the group makes 下周 frequent, and is never recalled
        eng.message(text, channel="telegram", chat_type="group", group="g1")
    thread = eng.sessions_create()
    eng.message("周末的安排随意", session=thread["key"])  # the rarer word only matches the current thread
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "ok" and "上海" in result["summary"]


def test_small_memory_index_searches_a_frequent_key_term(home):
    eng = engine(home)
    ws = workspace(eng)
    for day in range(1, 10):
        (ws / "memory" / f"2999-01-0{day}.md").write_text(f"- 下周例会第{day}次\n")
    (ws / "memory" / "2999-01-10.md").write_text("- 下周三去上海出差\n")
    (ws / "memory" / "2999-01-11.md").write_text("- 周末安排爬山\n")
    (ws / "memory" / "2999-01-12.md").write_text("- 买牛奶\n")
    hits = eng.memory_search("我下周有什么安排", limit=20)["results"]
    assert any("上海" in hit["snippet"] for hit in hits)


# --- 3. expired plans: marked stale with their day, or not at all when a later fact exists ----------
def test_expired_item_is_recalled_marked_stale_with_its_day(home):
    eng = engine(home)
    ws = workspace(eng)
    (ws / "memory" / "2020-11-10.md").write_text(
        "- 下周三去上海出差 <!-- ck:id=m-0a1b2c3d; at=2020-11-10; expires=2020-11-18 -->\n")
    thread = eng.sessions_create()
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "ok" and "上海" in result["summary"]
    assert result["summary"].endswith("(stale: planned for 2020-11-18, now past)")


def test_expired_item_is_not_recalled_when_a_later_fact_exists(home):
    eng = engine(home)
    ws = workspace(eng)
    (ws / "memory" / "trips.md").write_text(
        "- The Oslo trip is on Friday <!-- ck:id=m-0a1b2c3d; at=2020-01-01; expires=2020-01-03 -->\n"
        "- The Oslo trip moved to the spring <!-- ck:id=m-1b2c3d4e; at=2020-01-02 -->\n")
    thread = eng.sessions_create()
    result = eng.recall("what did I say about the Oslo trip?", session=thread["key"])
    assert result["status"] == "ok" and "spring" in result["summary"] and "stale" not in result["summary"]
    model = ScriptedRecallModel("The Oslo trip moved to the spring.")
    recall_with_model(eng.runtime, "what did I say about the Oslo trip?", thread["key"], model=model)
    assert "spring" in shown(model) and "Friday" not in shown(model)


def test_past_plan_said_in_a_transcript_is_marked_stale(home):
    eng = engine(home)
    eng.message("下周三去上海出差", channel="telegram", sender="alice", at="2020-11-10T09:00:00+00:00")
    thread = eng.sessions_create()
    result = eng.recall("我下周有什么安排", session=thread["key"])
    assert result["status"] == "ok"
    assert result["summary"] == ("The user said on 2020-11-10: 下周三去上海出差 "
                                 "(stale: planned for 2020-11-18, now past)")


def test_a_transcript_recall_never_credits_the_user_with_the_assistants_words(home):
    """QA: lane 2 answered "The user said on …: 好的, 方案B记下了" — the assistant's reply, the
    shorter of two equally matching messages, credited to the user."""
    eng = engine(home)
    eng.message("我们决定用 PostgreSQL 做主库, 方案B", channel="telegram", sender="alice")
    eng.message("好的, 方案B记下了", channel="telegram", sender="alice", role="assistant")
    eng.message("The staging database password rotates every Monday", channel="telegram", sender="alice",
                role="assistant")
    thread = eng.sessions_create()
    said = eng.recall("我上次说的那个方案是什么?", session=thread["key"])
    assert said["status"] == "ok" and said["summary"].startswith("The user said on "), said
    assert "PostgreSQL" in said["summary"]
    replied = eng.recall("what did you say about the staging database last time?", session=thread["key"])
    assert replied["status"] == "ok", replied
    assert replied["summary"].startswith("The assistant said on ") and "Monday" in replied["summary"]


def test_a_recalled_sentence_is_not_cut_at_a_decimal_point(home):
    """QA: lane 2 answered "…: The build server runs Python 3." — a sentence ended at any `.`, so
    "3.12" (and "example.com", "v2.1") was cut; the inline reasoning stays out of it too."""
    eng = engine(home)
    eng.message("<think>User hates build server.</think>The build server runs Python 3.12.",
                channel="telegram", sender="alice", role="assistant")
    thread = eng.sessions_create()
    result = eng.recall("what did you say about the build server last time?", session=thread["key"])
    assert result["status"] == "ok" and result["summary"].endswith("The build server runs Python 3.12."), result
    assert "hates" not in result["summary"]


def test_later_transcript_fact_replaces_a_stale_plan(home):
    eng = engine(home)
    eng.message("下周三去上海出差", channel="telegram", sender="alice", at="2020-11-10T09:00:00+00:00")
    eng.message("下周的出差改到北京了", channel="telegram", sender="alice", at="2020-11-12T09:00:00+00:00")
    thread = eng.sessions_create()
    model = ScriptedRecallModel("NONE")
    recall_with_model(eng.runtime, "我下周有什么安排", thread["key"], model=model)
    results = shown(model)
    assert "北京" in results and "上海" not in results


def test_superseded_items_are_not_lane_two_evidence(home):
    eng = engine(home)
    ws = workspace(eng)
    (ws / "memory" / "prefs.md").write_text(
        "- My editor for notes is Vim <!-- ck:id=m-0a1b2c3d; at=2020-01-01; supersededBy=m-1b2c3d4e -->\n")
    thread = eng.sessions_create()
    result = eng.recall("what did I say my editor for notes was?", session=thread["key"])
    assert result["status"] == "none" and result["summary"] is None


def test_stale_marker_survives_the_summary_cut():
    from clawkeep.recall.evidence import Evidence, settle  # noqa: PLC0415 - new in this fix

    long_plan = "Next Wednesday I fly to Shanghai " + "for the quarterly audit of the Pudong office " * 8
    evidence = [Evidence(long_plan.strip(), 1.0, "transcript", "2020-11-10")]
    settled = settle(evidence, "what did I say about Shanghai?", date(2026, 1, 1))
    summary = deterministic_summary(settled, "what did I say about Shanghai?", 220)
    assert len(summary) <= 220 and summary.endswith("(stale: planned for 2020-11-18, now past)")
    assert summary.startswith("The user said on 2020-11-10: Next Wednesday I fly to Shanghai")


# --- recall never covers the current session, also through transcripts indexed as memory ------
SESSION_MEMORY = {"agents": {"defaults": {"memorySearch": {
    "provider": "none", "sources": ["memory", "sessions"], "experimental": {"sessionMemory": True}}}}}
LOCKER_QUESTION = "what was my locker combination hint I told you last time?"


def test_lane_two_never_offers_the_current_sessions_turns_as_memory(home):
    eng = open_engine(home, SESSION_MEMORY)
    eng.message("my locker combination hint is the year my dog was born", channel="telegram", sender="bob")
    eng.message("also the locker is on the third floor", channel="telegram", sender="bob")
    key = "agent:main:main"
    model = ScriptedRecallModel("NONE")
    result = recall_with_model(eng.runtime, LOCKER_QUESTION, key, model=model)
    assert result.lane == 2
    results = shown(model)
    assert "dog was born" not in results and "third floor" not in results, results
    # without a model the deterministic lane 2 has nothing to condense either
    assert eng.recall(LOCKER_QUESTION, session=key)["summary"] is None


def test_lane_two_still_recalls_an_earlier_session_of_the_same_conversation(home):
    eng = open_engine(home, SESSION_MEMORY)
    eng.message("my locker combination hint is the year my dog was born", channel="telegram", sender="bob")
    eng.message("/new", channel="telegram", sender="bob")
    eng.message("the gym locker is on the third floor", channel="telegram", sender="bob")
    key = "agent:main:main"
    model = ScriptedRecallModel("NONE")
    recall_with_model(eng.runtime, LOCKER_QUESTION, key, model=model)
    results = shown(model)
    assert "dog was born" in results and "third floor" not in results, results
