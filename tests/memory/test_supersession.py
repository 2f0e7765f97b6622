"""Supersession and merging (M8): a new value for the same subject supersedes the old line (kept,
linked), a restated fact merges, unrelated facts stay side by side — en, zh, ja, ko."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawkeep.memory import facts
from tests.helpers.engine import open_engine

KEYWORD_ONLY = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


@pytest.fixture
def mem(home):
    eng = open_engine(home, KEYWORD_ONLY)
    yield eng
    eng.close()


def memory_md(eng) -> str:
    return (Path(eng.memory_status()["workspace"]) / "MEMORY.md").read_text()


SUPERSEDED = [
    ("预算上限五万", "预算不设限"),  # seed 001 §5.2
    ("My favourite color is blue", "Actually my favourite color is green"),
    ("I drink coffee every morning", "I quit coffee, now I drink tea"),
    ("I prefer JavaScript", "I prefer TypeScript"),
    ("I live in Beijing", "I moved to Hangzhou"),
    ("I don't eat meat", "I eat meat again"),
    ("My budget for the trip is 3000 euros", "The trip budget is now 5000 euros"),
    ("我住在北京", "我住在上海"),
    ("我最喜欢的颜色是蓝色", "其实我最喜欢的颜色是绿色"),
    ("我每天早上喝咖啡", "我不再喝咖啡了，现在喝茶"),
    ("我用Vim写代码", "我现在改用VS Code写代码"),
    ("好きな色は青です", "実は好きな色は緑です"),
    ("毎朝コーヒーを飲みます", "コーヒーはやめて、今は紅茶を飲んでいます"),
    ("東京に住んでいます", "大阪に引っ越しました"),
    ("제가 좋아하는 색은 파란색이에요", "사실 제가 좋아하는 색은 초록색이에요"),
    ("매일 아침 커피를 마셔요", "커피 끊었어요, 이제 차를 마셔요"),
    ("서울에 살아요", "부산으로 이사했어요"),
]


@pytest.mark.parametrize(("old_text", "new_text"), SUPERSEDED)
def test_new_value_supersedes_old_line_kept_and_linked(mem, old_text, new_text):
    old = mem.memory_remember(old_text)["item"]
    new = mem.memory_remember(new_text)
    assert new["status"] == "stored" and new["superseded"] == [old["id"]], new
    assert new["item"]["supersedes"] == old["id"]
    listed = {i["id"]: i for i in mem.memory_items()}
    assert listed[old["id"]]["status"] == "superseded" and listed[old["id"]]["supersededBy"] == new["item"]["id"]
    assert old_text in memory_md(mem)  # kept, never silently deleted


KEPT_SIDE_BY_SIDE = [
    ("I like hiking", "I like jazz"),  # several things can be liked
    ("My sister's name is Lina", "My brother's name is Tom"),
    ("I drink coffee every morning", "I drink tea in the evening"),
    ("I live in Lisbon", "I work in Porto"),
    ("我喜欢爬山", "我喜欢听爵士乐"),
    ("我的猫叫咪咪", "我的狗叫旺财"),
    ("コーヒーが好きです", "ジャズが好きです"),
    ("저는 커피를 좋아해요", "저는 재즈를 좋아해요"),
    ("I live in Beijing", "我住在北京"),  # one fact in two languages is not a contradiction
]


@pytest.mark.parametrize(("first", "second"), KEPT_SIDE_BY_SIDE)
def test_different_subjects_or_extra_values_do_not_supersede(mem, first, second):
    mem.memory_remember(first)
    result = mem.memory_remember(second)
    assert result["status"] == "stored" and not result.get("superseded"), result
    assert {i["status"] for i in mem.memory_items()} == {"active"}


MERGED = [
    ("I prefer TypeScript", "I really prefer TypeScript."),
    ("My favourite colour is green", "my favorite color is green"),
    ("I live in Lisbon", "I still live in Lisbon!"),
    ("我喜欢喝美式", "我真的很喜欢喝美式。"),
    ("コーヒーが好きです", "コーヒーが本当に好きです"),
    ("저는 커피를 좋아해요", "저는 커피를 정말 좋아해요"),
]


@pytest.mark.parametrize(("first", "again"), MERGED)
def test_near_duplicates_merge(mem, first, again):
    item = mem.memory_remember(first)["item"]
    result = mem.memory_remember(again)
    assert result["status"] == "duplicate" and result["item"]["id"] == item["id"], result
    assert len(mem.memory_items()) == 1


def test_only_active_items_are_superseded(mem):
    first = mem.memory_remember("My favourite color is blue")["item"]
    second = mem.memory_remember("My favourite color is green")["item"]
    third = mem.memory_remember("My favourite color is red")
    assert third["superseded"] == [second["id"]]  # the blue line is already superseded by green
    statuses = {i["id"]: i["status"] for i in mem.memory_items()}
    assert statuses[first["id"]] == statuses[second["id"]] == "superseded"


def test_embeddings_link_differently_worded_subjects():
    # "job" and "occupation" share no word; a similarity function (the embedding model) links them
    assert not facts.conflicts("My occupation is nurse", "My job is teacher")
    assert facts.conflicts("My occupation is nurse", "My job is teacher", similar=lambda a, b: 0.9)
    assert not facts.conflicts("My occupation is nurse", "My job is teacher", similar=lambda a, b: 0.2)
    assert not facts.conflicts("My occupation is nurse", "My job is teacher", similar=lambda a, b: None)


def test_with_the_local_embedding_model(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "local"}}}})
    old = eng.memory_remember("My job is teacher")["item"]
    new = eng.memory_remember("My occupation is nurse")
    assert new["superseded"] == [old["id"]]
    assert not eng.memory_remember("My cat is called Miso").get("superseded")
    # "prefer" holds one value, but preferences of unrelated kinds stand side by side when the
    # model can tell (without a model, the newer preference supersedes)
    eng.memory_remember("I prefer TypeScript")
    assert not eng.memory_remember("I prefer window seats").get("superseded")
    assert eng.memory_remember("I prefer JavaScript").get("superseded")
    eng.close()


def test_a_merge_refreshes_when_the_fact_was_last_said(mem):
    ws = Path(mem.memory_status()["workspace"])
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- I prefer TypeScript <!-- ck:id=m-00000001; at=2020-01-01 -->\n")
    result = mem.memory_remember("I really prefer TypeScript.")
    assert result["status"] == "duplicate" and result["item"]["id"] == "m-00000001"
    line = memory_md(mem).splitlines()[2]
    assert line.startswith("- I prefer TypeScript <!-- ck:id=m-00000001; at=2020-01-01; seen=")


SEARCHED_AFTER_A_CHANGE = [
    (SUPERSEDED[0], "预算是多少"),
    (SUPERSEDED[1], "favourite color"),
    (SUPERSEDED[2], "what do I drink in the morning"),
]


def test_search_ranks_the_current_value_first_and_never_shows_a_session_the_old_one(home):
    """A fact line is scored on its own (its vector, its words), so the ×0.3 of a superseded item
    and the ×0.5 of an expired one must reach that score too; a session (the model) never gets a
    superseded item, and an expired plan comes marked (M8)."""
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "local"}}}})
    session = eng.message("hello").session_key
    ws = Path(eng.memory_status()["workspace"])
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "memory" / "2026-11-01.md").write_text(
        "# 2026-11-01\n\n- Tomorrow I have a dentist appointment at 9 "
        "<!-- ck:id=m-aaaa1111; at=2026-11-01; expires=2026-11-02 -->\n")
    for (old_text, new_text), _query in SEARCHED_AFTER_A_CHANGE:
        eng.memory_remember(old_text)
        assert eng.memory_remember(new_text)["superseded"]
    for (old_text, new_text), query in SEARCHED_AFTER_A_CHANGE:
        snippets = [r["snippet"] for r in eng.memory_search(query)["results"]]
        new_at = next(i for i, s in enumerate(snippets) if new_text.lower() in s.lower())
        old_at = next((i for i, s in enumerate(snippets) if old_text.lower() in s.lower()), len(snippets))
        assert new_at < old_at, (query, snippets)
        assert "# Memory" not in snippets  # a lone heading holding none of the question answers nothing
        as_session = [r["snippet"] for r in eng.memory_search(query, caller=session)["results"]]
        assert any(new_text.lower() in s.lower() for s in as_session), (query, as_session)
        assert not any(old_text.lower() in s.lower() for s in as_session), (query, as_session)
    dentist = "when is my dentist appointment"
    for caller in (None, session):  # weighted, and marked so nobody takes a past plan as current
        found = [r for r in eng.memory_search(dentist, caller=caller)["results"] if "dentist" in r["snippet"]]
        assert found and found[0]["expired"] == "2026-11-02"
    assert all("expired" not in r for r in eng.memory_search("favourite color")["results"])
    eng.close()
