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
FACT_SET = Path(__file__).resolve().parent.parent / "bench" / "data" / "bilingual_facts.json"
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
    cosine + textWeight × its share of the query's words (none across languages), so moving it
    among other facts does not change its score."""
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
    assert scores[0] == scores[1] == pytest.approx(0.7 * cosine, abs=1e-4)
