"""Recall quality regressions (issue 14): one fact inside a small MEMORY.md, across languages.

Real engine, real SQLite index, the default bundled embedding model (USE multilingual v3).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clawkeep import Engine

SIXTEEN_FACTS = """# Memory

- 用户对花生过敏
- 网关运行在一台叫 atlas 的 Mac mini 上
- 销售数据属于机密，不得发给公司以外的任何人
- The user drives a blue 2019 Subaru Outback
- The user lives in Hangzhou, near West Lake
- The user's daughter Mia is 7 years old
- The user prefers TypeScript over Python for frontend work
- The user's dentist appointment is every six months at Bright Smile Clinic
- The user is a backend engineer at Initech
- The user's wife is called Laura and works as a nurse
- The user runs 10 km every Sunday morning
- The user's favourite restaurant is a Sichuan place called Chili House
- The user's laptop is a ThinkPad X1 Carbon
- The user plays the cello in a community orchestra
- The user's cat is named Miso
- The user's birthday is on March 12
"""


@pytest.fixture(scope="module")
def facts_engine(tmp_path_factory):
    home = tmp_path_factory.mktemp("recall-quality")
    eng = Engine.open(home=home)
    workspace = Path(eng.memory_status()["workspace"])
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "MEMORY.md").write_text(SIXTEEN_FACTS, encoding="utf-8")
    eng.memory_index()
    yield eng
    eng.close()


def _line(fact: str) -> int:
    return SIXTEEN_FACTS.splitlines().index(f"- {fact}") + 1


@pytest.mark.parametrize(("query", "fact"), [
    ("peanut allergy", "用户对花生过敏"),  # English question, Chinese fact
    ("运行网关的机器是什么", "网关运行在一台叫 atlas 的 Mac mini 上"),  # Chinese paraphrase
    ("销售数据能外传吗", "销售数据属于机密，不得发给公司以外的任何人"),
    ("what car does the user have", "The user drives a blue 2019 Subaru Outback"),
    ("where does the user live", "The user lives in Hangzhou, near West Lake"),
])
def test_the_fact_line_itself_comes_first(facts_engine, query, fact):
    results = facts_engine.memory_search(query)["results"]
    assert results, f"{query!r} found nothing"
    first = results[0]
    assert first["snippet"] == f"- {fact}", (query, [r["snippet"] for r in results])
    assert first["startLine"] == first["endLine"] == _line(fact)
    assert first["source"] == f"Source: MEMORY.md#L{_line(fact)}-L{_line(fact)}"


def test_no_result_is_a_whole_file_window(facts_engine):
    for query in ("what car does the user have", "用户住在哪里", "peanut allergy"):
        for hit in facts_engine.memory_search(query)["results"]:
            assert hit["endLine"] - hit["startLine"] <= 1, (query, hit["snippet"])


def test_a_chinese_question_finds_the_english_answer_line(facts_engine):
    results = facts_engine.memory_search("用户住在哪里")["results"]
    lines = [r["startLine"] for r in results[:2]]
    assert _line("The user lives in Hangzhou, near West Lake") in lines, [r["snippet"] for r in results]


def test_line_vectors_are_stored_per_line_and_replaced_with_the_file(facts_engine):
    db = Path(facts_engine.memory_status()["index"]["path"])
    with sqlite3.connect(db) as conn:
        count = conn.execute("SELECT count(*) FROM line_vectors").fetchone()[0]
    assert count == 17  # the heading and 16 facts; the blank line has none
    workspace = Path(facts_engine.memory_status()["workspace"])
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The user owns a red bicycle\n", encoding="utf-8")
    facts_engine.memory_index()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM line_vectors").fetchone()[0] == 2
    hit = facts_engine.memory_search("自行车是什么颜色")["results"][0]
    assert hit["snippet"] == "- The user owns a red bicycle"
    (workspace / "MEMORY.md").write_text(SIXTEEN_FACTS, encoding="utf-8")
    facts_engine.memory_index()


# --- the bilingual fact set (bench/data/bilingual_facts.json), a fixed sample -----------------
FACT_SET = Path(__file__).resolve().parents[2] / "bench" / "data" / "bilingual_facts.json"
SAMPLE = (  # (query, the line's text): en->zh, zh->en, en->ja, ja->en, zh->ko, ko->zh, paraphrase
    ("What food allergy do I have?", "用户对花生过敏，吃了会起荨麻疹。"),
    ("Can the sales figures be shared outside the company?", "销售数据属于机密，不得发给公司以外的任何人。"),
    ("我对什么药物过敏？", "The user is allergic to penicillin."),
    ("一番好きなバンドは？", "The user's favourite band is Radiohead."),
    ("What do I eat for breakfast?", "ユーザーは毎朝納豆ご飯を食べる。"),
    ("판매 데이터를 회사 밖으로 보내도 돼?", "销售数据属于机密，不得发给公司以外的任何人。"),
    ("我的猫叫什么名字？", "사용자의 고양이 이름은 나비이고 흰색이다."),
    ("闺女在大学念什么专业？", "用户的女儿小雨在杭州读大学，学的是建筑。"),
)


@pytest.fixture(scope="module")
def fact_set_engine(tmp_path_factory):
    import json

    data = json.loads(FACT_SET.read_text(encoding="utf-8"))
    home = tmp_path_factory.mktemp("bilingual-facts")
    eng = Engine.open(home=home)
    workspace = Path(eng.memory_status()["workspace"])
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- {fact}\n" for fact, _ in data["memory"]),
                                         encoding="utf-8")
    for day, lines, _ in data["notes"]:
        (workspace / "memory" / f"{day}.md").write_text(f"# {day}\n\n" + "".join(f"- {x}\n" for x in lines),
                                                        encoding="utf-8")
    eng.memory_index()
    yield eng
    eng.close()


@pytest.mark.parametrize(("query", "fact"), SAMPLE)
def test_bilingual_fact_set_sample_finds_the_line_in_the_top_3(fact_set_engine, query, fact):
    hits = fact_set_engine.memory_search(query)["results"][:3]
    assert any(h["snippet"] == f"- {fact}" for h in hits), (query, [h["snippet"] for h in hits])


# Lost before fact lines were scored on their own and the chunks of the query's nearest lines
# were kept below minScore (the right line's chunk ranked by its other facts, or was cut).
LOST_BEFORE = (  # en->zh, en->ja, zh->en, zh->ko, ko->zh, ja->en, a daily note
    ("我姐姐住在哪个城市？", "The user's sister Emma lives in Vancouver and works as an architect."),
    ("母の誕生日はいつですか？", "The user's mother's birthday is on July 3."),
    ("What shoe size do I wear?", "用户的鞋码是四十二码。"),
    ("내 생일은 언제야?", "用户的生日是农历八月十五。"),
    ("我不喝咖啡喝什么？", "사용자는 커피 대신 보리차를 마신다."),
    ("What laptop did my company give me?", "ユーザーのパソコンは会社から支給されたThinkPadだ。"),
    ("What did my wife and I go to see?", "用户和林晓去看了一场话剧。"),
)


@pytest.mark.parametrize(("query", "fact"), LOST_BEFORE)
def test_a_cross_language_fact_below_min_score_is_found_as_its_own_line(fact_set_engine, query, fact):
    hits = fact_set_engine.memory_search(query)["results"][:3]
    assert any(h["snippet"] == f"- {fact}" and h["startLine"] == h["endLine"] for h in hits), \
        (query, [h["snippet"] for h in hits])


def test_a_fact_line_scores_on_its_own_whatever_its_neighbours(tmp_path):
    """A list item with its own vector is scored like a one-line document: vectorWeight × its
    cosine + textWeight × its share of the query's words — across scripts, where it can hold
    none of them, its cosine squared stands for that share — so moving it among other facts does
    not change its score."""
    from clawkeep.models.embeddings.local import LocalEmbeddingProvider

    fact, query = "The user's sister Emma lives in Vancouver", "我姐姐住在哪个城市？"
    eng = Engine.open(home=tmp_path)
    workspace = Path(eng.memory_status()["workspace"])
    workspace.mkdir(parents=True, exist_ok=True)
    scores = []
    for neighbours in (SIXTEEN_FACTS.splitlines()[2:], ["- 用户住在杭州", "- 用户的姐姐很喜欢城市生活"]):
        (workspace / "MEMORY.md").write_text("\n".join(["# Memory", "", *neighbours, f"- {fact}", ""]),
                                             encoding="utf-8")
        eng.memory_index()
        hit = next(h for h in eng.memory_search(query)["results"] if h["snippet"] == f"- {fact}")
        scores.append(hit["score"])
    eng.close()
    provider = LocalEmbeddingProvider()
    cosine = float(provider.embed_documents([fact])[0] @ provider.embed_query(query))
    assert scores[0] == scores[1] == pytest.approx(0.7 * cosine + 0.3 * cosine * cosine, abs=1e-4)


CROSS_SCRIPT_FACTS = """# Memory

- 晚饭做了红烧肉，孩子们很喜欢。
- 用户的岳母不能吃辣，家庭聚餐要点清淡的菜。
- 用户不吃香菜，点外卖时要备注。
- 公司年会定在四月二十号。
- 用户在上海的公司做数据分析师。
- The user is vegetarian and does not eat fish either.
- 사용자의 회사 사무실은 강남역 근처에 있다.
- The user's cat is named Miso
"""


@pytest.mark.parametrize("query, answer", [
    ("我吃肉吗？", "- The user is vegetarian and does not eat fish either."),
    ("我的公司在哪里？", "- 사용자의 회사 사무실은 강남역 근처에 있다."),
])
def test_a_fact_in_another_script_is_not_outranked_by_a_shared_word(tmp_path, query, answer):
    """A Chinese question whose answer is written in English (or Korean): the Chinese facts that
    merely share a word with it (肉, 公司) must not push the answer out of the first results —
    the answer cannot hold the question's words, so its similarity stands in for them."""
    eng = Engine.open(home=tmp_path)
    workspace = Path(eng.memory_status()["workspace"])
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "MEMORY.md").write_text(CROSS_SCRIPT_FACTS, encoding="utf-8")
    eng.memory_index()
    snippets = [h["snippet"] for h in eng.memory_search(query)["results"]]
    eng.close()
    assert answer in snippets[:2], snippets


def test_a_heading_is_no_result_beside_the_lines_under_it(tmp_path):
    """`# Memory` or a daily note's `# 2026-03-22` names what follows and answers nothing: the
    lines under it are the results; a heading that alone matches still points at its section."""
    eng = Engine.open(home=tmp_path)
    eng.memory_remember("Remember that the boat is called Heron")
    for query in ("boat", "what is in my memory about the boat?"):
        snippets = [h["snippet"] for h in eng.memory_search(query)["results"]]
        assert "- The boat is called Heron" in snippets, (query, snippets)
        assert not any(s.lstrip().startswith("#") for s in snippets), (query, snippets)
    workspace = Path(eng.memory_status()["workspace"])
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "projects.md").write_text("# Project Kestrel\n\n- deadline is May 3\n- budget 40k\n",
                                                    encoding="utf-8")
    eng.memory_index()
    snippets = [h["snippet"] for h in eng.memory_search("Kestrel", mode="keyword")["results"]]
    assert snippets and "Kestrel" in snippets[0], snippets
    eng.close()


@pytest.mark.parametrize("ask", ["What did I buy on {d} {month}?", "{m}月{d}日我买了什么？"])
def test_a_day_named_without_its_year_finds_that_days_note(tmp_path, ask):
    """Daily notes hold near-identical lines; the question names one day without a year (the
    last such day, as a note-taker means it): that day's line comes first."""
    from datetime import date, timedelta

    eng = Engine.open(home=tmp_path)
    notes = Path(eng.memory_status()["workspace"]) / "memory"
    notes.mkdir(parents=True, exist_ok=True)
    bought = ["Bought new running shoes.", "Bought a new kettle.", "Bought a desk lamp."]
    days = [date.today() - timedelta(days=9 + k) for k in range(3)]
    for day, line in zip(days, bought, strict=True):
        (notes / f"{day.isoformat()}.md").write_text(f"# {day.isoformat()}\n\n- {line}\n", encoding="utf-8")
    eng.memory_index()
    for day, line in zip(days, bought, strict=True):
        query = ask.format(d=day.day, m=day.month, month=day.strftime("%B"))
        first = eng.memory_search(query)["results"][0]
        assert (first["path"], first["snippet"]) == (f"memory/{day.isoformat()}.md", f"- {line}"), query
    eng.close()


def test_yearless_days_are_the_last_such_day():
    from datetime import date

    from clawkeep.text.dialogue import yearless_days

    today = date(2026, 12, 4)
    assert yearless_days("What did I buy on 2 March?", today) == [(date(2026, 3, 2), date(2026, 3, 2))]
    assert yearless_days("on December 24th", today) == [(date(2025, 12, 24), date(2025, 12, 24))]
    assert yearless_days("3月2日我买了什么", today) == [(date(2026, 3, 2), date(2026, 3, 2))]
    assert yearless_days("3월 2일", today) == [(date(2026, 3, 2), date(2026, 3, 2))]
    # a day with its year is a named period, not a yearless one; an impossible day names nothing
    assert yearless_days("on 8 May 2023", today) == yearless_days("May 8, 2023", today) == []
    assert yearless_days("2026年3月2日", today) == yearless_days("on 31 February", today) == []
    assert yearless_days("on 29 February", today) == [(date(2024, 2, 29), date(2024, 2, 29))]
