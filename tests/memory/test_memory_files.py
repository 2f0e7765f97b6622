"""Memory files (M1), chunking (M2), remember/items/filters/supersession/expiry (M7-M9), memory_get (M4)."""

import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from clawkeep.errors import ConflictError, InputError, NotFoundError
from clawkeep.memory import items
from clawkeep.memory.chunking import chunk_lines, estimate_tokens
from clawkeep.memory.timeparse import event_day
from clawkeep.memory.workspace import bootstrap_files
from tests.helpers.engine import open_engine

KEYWORD_ONLY = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


@pytest.fixture
def mem(home):
    eng = open_engine(home, KEYWORD_ONLY)
    yield eng
    eng.close()


def workspace(eng) -> Path:
    return Path(eng.memory_status()["workspace"])


def test_workspace_defaults_inside_home_and_is_reported(mem, home):
    assert workspace(mem) == home / "workspace"
    other = open_engine(home, KEYWORD_ONLY, agent="ops")
    assert Path(other.memory_status()["workspace"]) == home / "workspace-ops"


def test_remember_durable_fact_goes_to_memory_md(mem):
    result = mem.memory_remember("Remember that I prefer TypeScript")
    assert result["status"] == "stored" and result["item"]["path"] == "MEMORY.md"
    assert result["item"]["text"] == "I prefer TypeScript"
    text = (workspace(mem) / "MEMORY.md").read_text()
    assert "- I prefer TypeScript <!-- ck:id=" in text


def test_remember_time_bound_fact_goes_to_todays_note_with_expiry(mem):
    result = mem.memory_remember("下周二我去上海出差")
    today = date.today().isoformat()
    assert result["item"]["path"] == f"memory/{today}.md"
    assert result["item"]["expires"] > today


def test_duplicate_is_not_written_twice(mem):
    first = mem.memory_remember("I live in Lisbon")
    again = mem.memory_remember("i live in lisbon")
    assert again["status"] == "duplicate" and again["item"]["id"] == first["item"]["id"]
    assert (workspace(mem) / "MEMORY.md").read_text().count("Lisbon") == 1


@pytest.mark.parametrize("text, why", [
    ("my OpenAI key is sk-proj-abc123def456ghi789jkl012", "secret"),
    ("password=hunter2isnotsafe9", "secret"),
    ("restart the staging server now", "operational"),
    ("ugh I hate mondays so annoying", "venting"),
    ("烦死了", "venting"),
    ("马上帮我重启服务器", "operational"),
])
def test_write_filters_refuse(mem, text, why):
    result = mem.memory_remember(text)
    assert result["status"] == "refused" and why in result["reason"]
    assert not (workspace(mem) / "MEMORY.md").exists()


def test_force_overrides_filters_but_never_secrets(mem):
    assert mem.memory_remember("restart the staging server now", force=True)["status"] == "stored"
    assert mem.memory_remember("token=abc123secretvalue99", force=True)["status"] == "refused"


def test_secrets_stored_redacted_when_configured(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {
        "provider": "none", "writeFilters": {"allowSecrets": True}}}}})
    result = eng.memory_remember("the staging db password=hunter2isnotsafe9")
    assert result["status"] == "stored" and "hunter2" not in result["item"]["text"]
    assert "hunter2" not in (workspace(eng) / "MEMORY.md").read_text()


def test_contradiction_supersedes_old_fact_kept_and_linked(mem):
    old = mem.memory_remember("I prefer JavaScript")["item"]
    new = mem.memory_remember("I prefer TypeScript")
    assert new["superseded"] == [old["id"]] and new["item"]["supersedes"] == old["id"]
    listed = {i["id"]: i for i in mem.memory_items()}
    assert listed[old["id"]]["status"] == "superseded" and listed[old["id"]]["supersededBy"] == new["item"]["id"]
    assert "JavaScript" in (workspace(mem) / "MEMORY.md").read_text()  # kept, never silently deleted
    hits = mem.memory_search("prefer JavaScript TypeScript", limit=5)["results"]
    assert "TypeScript" in hits[0]["snippet"]  # the superseded fact is down-weighted below the new one


def test_chinese_contradiction_supersedes(mem):
    old = mem.memory_remember("我住在北京")["item"]
    new = mem.memory_remember("我住在上海")
    assert new["superseded"] == [old["id"]]


def test_edit_and_delete_go_to_markdown_and_reindex(mem):
    item = mem.memory_remember("My dentist is Dr. Alvarez")["item"]
    assert mem.memory_search("dentist")["results"]
    mem.memory_edit(item["id"], "My dentist is Dr. Okafor")
    assert "Okafor" in (workspace(mem) / "MEMORY.md").read_text()
    assert "Okafor" in mem.memory_search("dentist")["results"][0]["snippet"]
    mem.memory_delete(item["id"])
    assert "Okafor" not in (workspace(mem) / "MEMORY.md").read_text()
    assert mem.memory_search("dentist Okafor")["results"] == []
    with pytest.raises(NotFoundError, match="not found"):
        mem.memory_delete(item["id"])


def test_an_edit_from_a_stale_text_is_refused_not_written_over_the_newer_one(mem):
    """Two editors opened the same item; the second save names the text it started from, which
    is no longer the item's: refused (409 over HTTP), the first edit stays."""
    item = mem.memory_remember("My dentist is Dr. Alvarez")["item"]
    mem.memory_edit(item["id"], "My dentist is Dr. Okafor", base_text="My dentist is Dr. Alvarez")
    # SQLite: nothing is written; PostgreSQL (shared documents): the stale edit is kept aside as a conflict copy
    with pytest.raises(ConflictError, match="changed (or removed )?by another writer meanwhile; (nothing was written|"
                                            "your edit was not applied to MEMORY.md but kept as)"):
        mem.memory_edit(item["id"], "My dentist is Dr. Ng", base_text="My dentist is Dr. Alvarez")
    text = (workspace(mem) / "MEMORY.md").read_text()
    assert "Okafor" in text and "Ng" not in text
    same = mem.memory_edit(item["id"], "My dentist is Dr. Okafor", base_text="My dentist is Dr. Alvarez")
    assert same["text"] == "My dentist is Dr. Okafor"  # the same edit twice is no conflict
    assert (workspace(mem) / "MEMORY.md").read_text() == text


def test_hand_written_bullets_are_items_too(mem):
    ws = workspace(mem)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("# Notes\n\n- Cat is called Miso\n* Allergic to peanuts\n")
    listed = mem.memory_items()
    assert [i["text"] for i in listed] == ["Cat is called Miso", "Allergic to peanuts"]
    mem.memory_delete(listed[0]["id"])
    assert (ws / "MEMORY.md").read_text() == "# Notes\n\n* Allergic to peanuts\n"


def test_expired_items_are_down_weighted_then_swept_after_grace(mem):
    ws = workspace(mem)
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "memory" / "2020-01-01.md").write_text(
        "- Flight to Oslo on Friday <!-- ck:id=m-old00001; at=2020-01-01; expires=2020-01-03 -->\n"
        "- Flight to Oslo next month maybe <!-- ck:id=m-new00001; at=2020-01-01; expires=2999-01-01 -->\n")
    statuses = {i["id"]: i["status"] for i in mem.memory_items()}
    assert statuses == {"m-old00001": "expired", "m-new00001": "active"}
    hits = mem.memory_search("flight oslo", limit=5)["results"]
    assert "next month" in hits[0]["snippet"]
    swept = mem.memory_sweep()["removed"]
    assert [i["id"] for i in swept] == ["m-old00001"]
    assert "Friday" not in (ws / "memory" / "2020-01-01.md").read_text()
    assert "Friday" in (ws / "memory" / ".archive" / "expired.md").read_text()
    assert mem.memory_sweep()["removed"] == []


@pytest.mark.parametrize("text, expected", [
    ("next Tuesday I fly to Shanghai", date(2026, 12, 8)),
    ("I fly on Friday", date(2026, 12, 4)),
    ("tomorrow is the dentist", date(2026, 12, 1)),
    ("下周二我去上海", date(2026, 12, 8)),
    ("明天开会", date(2026, 12, 1)),
    ("3天后出发", date(2026, 12, 3)),
    ("12月24日聚餐", date(2026, 12, 24)),
    ("来週の火曜日に東京へ行きます", date(2026, 12, 8)),
    ("다음주 화요일에 서울에 가요", date(2026, 12, 8)),
    ("the launch is on 2027-01-15", date(2027, 1, 15)),
    ("meet on 8 May", date(2027, 5, 8)),
    ("I prefer TypeScript", None),
])
def test_event_day(text, expected):
    assert event_day(text, date(2026, 11, 30)) == expected  # a Monday


def test_token_estimate_counts_cjk_as_one_token_each():
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("上海" * 50) == 100


def test_chunks_are_about_400_tokens_with_80_overlap():
    lines = [f"line {i} " + "word " * 30 for i in range(200)]  # ~40 tokens a line
    chunks = chunk_lines(lines)
    assert len(chunks) > 5
    for chunk in chunks[:-1]:
        assert 300 <= estimate_tokens(chunk.text) <= 440
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        overlap = prev.end_line - nxt.start_line + 1
        assert overlap >= 2  # at least 80 tokens of trailing lines carried over
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 200


def test_long_cjk_line_is_sliced_within_budget():
    chunks = chunk_lines(["上海出差" * 300], chunk_tokens=400, overlap_tokens=0)
    assert len(chunks) == 3 and all(estimate_tokens(c.text) <= 400 for c in chunks)
    assert "".join(c.text for c in chunks) == "上海出差" * 300


def test_bootstrap_loads_memory_at_dm_session_start_with_budget(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    big = "\n".join(f"- fact {i} " + "x" * 50 for i in range(1000))
    (ws / "MEMORY.md").write_text(big)
    (ws / "memory" / "2026-11-29.md").write_text("yesterday note")
    (ws / "memory" / "2026-11-30.md").write_text("today note")
    (ws / "memory" / "2026-11-28.md").write_text("older note")
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    files = bootstrap_files(ws, now, chat_type="direct", new_session=True, max_chars=5000)
    assert [f.path for f in files] == ["MEMORY.md", "memory/2026-11-29.md", "memory/2026-11-30.md"]
    assert files[0].truncated and len(files[0].text) < 5200 and "truncated" in files[0].text
    assert (ws / "MEMORY.md").read_text() == big  # the file on disk is never cut
    group = bootstrap_files(ws, now, chat_type="group", new_session=True, max_chars=5000)
    assert [f.path for f in group] == ["memory/2026-11-29.md", "memory/2026-11-30.md"]
    later = bootstrap_files(ws, now, chat_type="direct", new_session=False, max_chars=5000)
    assert "MEMORY.md" not in [f.path for f in later]


@pytest.mark.parametrize("path", ["../secrets.md", "/etc/passwd", "memory/../../x.md", "~/.ssh/id_rsa"])
def test_memory_get_refuses_paths_outside(mem, path):
    mem.memory_remember("I prefer tea")
    with pytest.raises(InputError, match="outside the workspace|not a Markdown"):
        mem.memory_get(path)


def test_memory_get_refuses_symlink_escape(mem, tmp_path):
    mem.memory_remember("I prefer tea")
    secret = tmp_path / "outside.md"
    secret.write_text("top secret")
    (workspace(mem) / "memory" / "link.md").symlink_to(secret)
    with pytest.raises(InputError, match="outside the workspace"):
        mem.memory_get("memory/link.md")


def test_memory_get_line_ranges(mem):
    ws = workspace(mem)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("\n".join(f"line {i}" for i in range(1, 11)))
    got = mem.memory_get("MEMORY.md", from_line=3, lines=2)
    assert got["text"] == "line 3\nline 4" and got["from"] == 3 and got["to"] == 4 and got["totalLines"] == 10
    with pytest.raises(NotFoundError):
        mem.memory_get("memory/nope.md")
    with pytest.raises(InputError, match="from_line"):
        mem.memory_get("MEMORY.md", from_line=0)


def test_item_marker_round_trip():
    text, attrs = items.parse_marker("- x <!-- ck:id=m-1; at=2026-01-01; expires=2026-02-01 -->")
    assert text == "- x" and attrs == {"id": "m-1", "at": "2026-01-01", "expires": "2026-02-01"}
    assert items.parse_marker(text + items.render_marker(attrs)) == (text, attrs)


# --- expiry: dated past events are durable facts, only future plans expire (M8) ---------------


@pytest.mark.parametrize("text", [
    "I was born on 1990-03-12",
    "I moved to Hangzhou on {today}",
    "我1990年3月12日出生",
    "我{today_zh}搬到了杭州",
    "1990年3月12日に生まれました",
    "{today_zh}に引っ越しました",
    "저는 1990년 3월 12일에 태어났어요",
    "{today_ko}에 이사했어요",
])
def test_dated_past_event_is_a_durable_fact(mem, text):
    from clawkeep.memory.service import today as service_today

    day = service_today(mem.runtime)
    text = text.format(today=day.isoformat(), today_zh=f"{day.year}年{day.month}月{day.day}日",
                       today_ko=f"{day.year}년 {day.month}월 {day.day}일")
    result = mem.memory_remember(text)
    assert result["status"] == "stored"
    assert result["item"]["path"] == "MEMORY.md" and "expires" not in result["item"], result
    assert result["item"]["status"] == "active"


@pytest.mark.parametrize("text", [
    "next Tuesday I fly to Shanghai",
    "下周二我去上海出差",
    "来週の火曜日に大阪へ出張します",
    "다음 주 화요일에 부산으로 출장 가요",
])
def test_future_plan_expires_on_its_day(mem, text):
    result = mem.memory_remember(text)
    today = date.today().isoformat()
    assert result["item"]["path"] == f"memory/{today}.md" and result["item"]["expires"] > today


@pytest.mark.parametrize("text, expected", [
    ("I was born on 1990-03-12", None),
    ("I was born on 12 March", None),
    ("I moved to Hangzhou on 2026-11-30", None),
    ("I moved to Hangzhou yesterday", None),
    ("I flew to Oslo on Friday", None),  # "Friday" alone reads forward; the verb says it is past
    ("My birthday is on 12 March", None),  # recurring, never expires
    ("I go swimming every Friday", None),
    ("I'll move to Hangzhou on 2026-12-15", date(2026, 12, 15)),
    ("I booked a table for tomorrow", date(2026, 12, 1)),
    ("I fly to Oslo on Friday", date(2026, 12, 4)),
    ("next Tuesday I fly to Shanghai", date(2026, 12, 8)),
    ("Remind me to call my mom on Sunday", date(2026, 12, 6)),
    ("我1990年3月12日出生", None),
    ("我上周二搬到了杭州", None),
    ("我昨天到了上海", None),
    ("我今天搬到了杭州", None),
    ("下周二我去上海出差", date(2026, 12, 8)),
    ("明天我就走了", date(2026, 12, 1)),
    ("公司的年会定在12月20日", date(2026, 12, 20)),
    ("我女儿的生日是5月3日", None),
    ("1990年3月12日に生まれました", None),
    ("先週の金曜日に歯医者を予約した", None),
    ("金曜日に東京へ行きました", None),
    ("金曜日に東京へ行きます", date(2026, 12, 4)),
    ("来週の火曜日に大阪へ出張します", date(2026, 12, 8)),
    ("妻の誕生日は5月3日です", None),
    ("저는 1990년 3월 12일에 태어났어요", None),
    ("어제 치과 예약했어요", None),
    ("금요일에 서울에 갔어요", None),
    ("금요일에 서울에 가요", date(2026, 12, 4)),
    ("다음 주 화요일에 부산으로 출장 가요", date(2026, 12, 8)),
    ("아내 생일은 5월 3일이에요", None),
])
def test_only_future_plans_are_time_bound(text, expected):
    assert items.is_time_bound(text, date(2026, 11, 30)) == expected  # a Monday


def test_flush_gives_past_events_no_expiry(home, tmp_path):
    from clawkeep.context.flush import flush
    from clawkeep.storage import EntryRecord

    eng = open_engine(home, KEYWORD_ONLY)
    eng.message("seed")
    session = eng.runtime.store().list_sessions()[0]
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[{"type": "text", "text":
               "I moved to Hangzhou on 2026-11-30. Next Tuesday I fly to Lisbon."}])]
    flush(tmp_path, session, entries, today=date(2026, 11, 30))
    lines = (tmp_path / "memory" / "2026-11-30.md").read_text().splitlines()
    moved = next(line for line in lines if "Hangzhou" in line)
    lisbon = next(line for line in lines if "Lisbon" in line)
    assert "expires=" not in moved and "expires=2026-12-08" in lisbon


@pytest.mark.parametrize("text, fact", [
    ("Remember that I prefer TypeScript", "I prefer TypeScript"),
    ("记住我对花生过敏", "我对花生过敏"),
    ("帮我记一下：我老婆不吃辣", "我老婆不吃辣"),
    ("覚えておいて、妻の誕生日は5月3日です", "妻の誕生日は5月3日です"),
    ("기억해 줘, 딸은 매주 수요일에 피아노 학원에 가", "딸은 매주 수요일에 피아노 학원에 가"),
])
def test_the_memory_request_is_not_part_of_the_fact(text, fact):
    assert items.strip_request(text) == fact


def test_concurrent_writers_in_several_processes_lose_nothing(home):
    """Read-modify-write of MEMORY.md under the workspace's write lock: 4 processes × 3 threads
    remembering at once, every fact lands (without the lock, writers overwrote each other)."""
    script = (
        "import sys, threading\n"
        "from clawkeep import Engine\n"
        "engine = Engine.open(home=sys.argv[1],\n"
        "                     config={'agents': {'defaults': {'memorySearch': {'provider': 'none'}}}})\n"
        "def write(t):\n"
        "    for n in range(5):\n"
        "        who = sys.argv[2]\n"
        "        engine.memory_remember(f'colleague {who}-{t}-{n} is called Name{who}x{t}x{n}', force=True)\n"
        "threads = [threading.Thread(target=write, args=(t,)) for t in range(3)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(home), str(p)]) for p in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    with open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as engine:
        texts = {i.text for i in engine.memory_items()}
    assert len([t for t in texts if t.lower().startswith("colleague ")]) == 60


def test_the_staleness_walk_stats_what_memory_files_lists(tmp_path):
    """`memory_file_stats` (the one walk before each search) names the same files in the same
    order as `memory_files`, each with the stat of the file itself (a link: of its target)."""
    import os

    from clawkeep.memory.documents import memory_file_stats, memory_files

    ws = tmp_path / "ws"
    (ws / "memory" / "deep").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("- bees\n")
    (ws / "memory" / "2026-01-02.md").write_text("- walk\n")
    (ws / "memory" / "deep" / "a.md").write_text("- nested note\n" * 3)
    (ws / "memory" / ".hidden.md").write_text("- not indexed\n")
    (ws / "memory" / "notes.txt").write_text("- not markdown\n")
    (ws / "memory" / "link.md").symlink_to(ws / "memory" / "deep" / "a.md")
    outside = tmp_path / "outside.md"
    outside.write_text("- secret\n")
    (ws / "memory" / "out.md").symlink_to(outside)
    stats = memory_file_stats(ws)
    assert [rel for rel, _ in stats] == memory_files(ws) == [
        "MEMORY.md", "memory/2026-01-02.md", "memory/deep/a.md", "memory/link.md"]
    for rel, st in stats:
        assert (st.st_mtime, st.st_size, st.st_ino) == ((o := os.stat(ws / rel)).st_mtime, o.st_size, o.st_ino)


def test_every_bootstrap_file_is_budgeted_per_file_and_together(tmp_path):
    from clawkeep.text.estimate import estimate_tokens

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("".join(f"- fact {i}: " + "y" * 60 + "\n" for i in range(400)))
    (ws / "memory" / "2026-11-29.md").write_text("- yesterday: a small note\n")
    today = "".join(f"- 会议记录 {i}: 讨论了季度路线图\n" for i in range(3000))  # CJK: a token a character
    (ws / "memory" / "2026-11-30.md").write_text(today)
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    files = bootstrap_files(ws, now, chat_type="direct", new_session=True, max_chars=20_000, max_tokens=4000)
    by = {f.path: f for f in files}
    assert sum(estimate_tokens(f.text) for f in files) <= 4000
    assert all(len(f.text) <= 20_000 for f in files)
    # a small note is whole; the big ones share what is left, evenly
    assert by["memory/2026-11-29.md"].text == "- yesterday: a small note\n" and not by["memory/2026-11-29.md"].truncated
    memory_md, note = by["MEMORY.md"], by["memory/2026-11-30.md"]
    assert memory_md.truncated and memory_md.text.startswith("- fact 0: ") and "truncated" in memory_md.text
    assert note.truncated and note.original_chars == len(today)
    assert note.text.startswith("[… memory/2026-11-30.md is cut for this prompt") and "memory_get" in note.text
    kept = note.text.split("…]\n\n", 1)[1]
    assert today.endswith(kept) and kept.startswith("- 会议记录 ")
    assert kept.endswith("- 会议记录 2999: 讨论了季度路线图\n")
    assert estimate_tokens(memory_md.text) > 1500 and estimate_tokens(note.text) > 1500  # no budget left unused


def test_a_daily_note_over_bootstrap_max_chars_keeps_its_newest_lines(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = "".join(f"- line {i}\n" for i in range(5000))
    (ws / "memory" / "2026-11-30.md").write_text(note)
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    [today] = bootstrap_files(ws, now, chat_type="group", new_session=True, max_chars=5000)
    assert today.truncated and len(today.text) <= 5000
    assert today.text.rstrip().endswith("- line 4999") and "- line 0\n" not in today.text
