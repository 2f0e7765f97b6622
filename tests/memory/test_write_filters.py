"""Write filters (M7): secrets, one-off operational instructions and pure venting never become
memory, in English, Chinese, Japanese and Korean; everything refused names its reason."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from clawkeep.context.flush import flush
from clawkeep.memory.filters import KINDS, classify
from clawkeep.storage import EntryRecord
from tests.helpers.engine import open_engine

DATA = Path(__file__).parents[1] / "data" / "write_filters.jsonl"
KEYWORD_ONLY = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}

# The issue's and seed 001's own examples: each landed in MEMORY.md before.
REFUSED = [
    ("my password is hunter2", "secret", "password"),
    ("我的密码是 abc12345", "secret", "password"),
    ("my card number is 4111 1111 1111 1111", "secret", "payment card number"),
    ("我的身份证号是11010519491231002X", "secret", "national ID number"),
    ("My SSN is 078-05-1120", "secret", "national ID number"),
    ("my IBAN is DE89 3704 0044 0532 0130 00", "secret", "IBAN"),
    ("パスワードはabc12345です", "secret", "password"),
    ("비밀번호는 qwerty123이야", "secret", "password"),
    ("验证码是 482913", "secret", "one-time code"),
    ("the stripe key is sk_live_4eC39HqLyjWDarjtT1zdp7dc", "secret", "API key"),
    ("把这份文档转成PDF发我邮箱", "operational", "operational"),
    ("send this file to my email now", "operational", "operational"),
    ("帮我订明天的会议室", "operational", "operational"),
    ("明日の会議室を予約して", "operational", "operational"),
    ("내일 회의실 예약해 줘", "operational", "operational"),
    ("这功能太烂了", "venting", "venting"),
    ("ugh this is so broken", "venting", "venting"),
    ("マジでムカつく", "venting", "venting"),
    ("아 진짜 짜증나", "venting", "venting"),
]
KEPT = [
    "I prefer TypeScript",
    "预算上限五万",
    "My order number was 1234567890123456",  # a long number that is not a card (Luhn)
    "I changed my password yesterday",
    "Always reply to me in British English",  # a standing instruction, not a one-off
    "以后文件都发到我的工作邮箱",
    "これからは日本語で返事してください",
    "앞으로는 한국어로 대답해 줘",
    "I hate cilantro",  # a preference, not venting
    "这个导出功能太烂了，希望能支持CSV格式",  # venting with a concrete request
    "Remind me to call my mom on Sunday",
]


def _rows() -> list[dict]:
    with DATA.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def workspace(eng) -> Path:
    return Path(eng.memory_status()["workspace"])


@pytest.fixture
def mem(home):
    eng = open_engine(home, KEYWORD_ONLY)
    yield eng
    eng.close()


@pytest.mark.parametrize(("text", "kind", "named"), REFUSED)
def test_refused_by_remember_with_a_reason(mem, text, kind, named):
    result = mem.memory_remember(text)
    assert result["status"] == "refused", result
    assert kind in result["reason"] and named in result["reason"]
    ws = workspace(mem)
    assert not (ws / "MEMORY.md").exists() and not list((ws / "memory").glob("*.md"))


@pytest.mark.parametrize("text", KEPT)
def test_kept_by_remember(mem, text):
    assert mem.memory_remember(text)["status"] == "stored"


def test_force_stores_operational_and_venting_but_never_secrets(mem):
    assert mem.memory_remember("帮我订明天的会议室", force=True)["status"] == "stored"
    assert mem.memory_remember("这功能太烂了", force=True)["status"] == "stored"
    refused = mem.memory_remember("my card number is 4111 1111 1111 1111", force=True)
    assert refused["status"] == "refused" and "payment card number" in refused["reason"]
    assert "4111" not in (workspace(mem) / "MEMORY.md").read_text()


def test_allowed_secrets_are_stored_redacted(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {
        "provider": "none", "writeFilters": {"allowSecrets": True}}}}})
    for text in ("my password is hunter2", "我的密码是 abc12345", "my card number is 4111 1111 1111 1111"):
        assert eng.memory_remember(text)["status"] == "stored"
    stored = (workspace(eng) / "MEMORY.md").read_text()
    assert "hunter2" not in stored and "abc12345" not in stored and "4111" not in stored
    assert "[REDACTED]" in stored


class _NotesModel:
    """A chat model whose flush answer is the given notes, one a line."""

    def __init__(self, notes: list[str]):
        self.notes = notes

    def complete(self, messages, system=None, **_):
        return type("Reply", (), {"text": "\n".join(f"- {n}" for n in self.notes)})()


def test_flush_refuses_the_same_notes(home, tmp_path):
    eng = open_engine(home, KEYWORD_ONLY)
    eng.message("seed")
    session = eng.runtime.store().list_sessions()[0]
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[{"type": "text", "text": "x"}])]
    notes = [text for text, _, _ in REFUSED] + ["I prefer aisle seats"]
    result = flush(tmp_path, session, entries, today=date(2026, 11, 30), model=_NotesModel(notes))
    assert result.notes == ["I prefer aisle seats"] and len(result.refused) == len(REFUSED)
    written = (tmp_path / "memory" / "2026-11-30.md").read_text()
    for text, _, _ in REFUSED:
        assert text not in written


def test_flush_with_allowed_secrets_writes_them_redacted(home, tmp_path):
    eng = open_engine(home, KEYWORD_ONLY)
    eng.message("seed")
    session = eng.runtime.store().list_sessions()[0]
    entries = [EntryRecord("1", "s", "message", 1, role="user", content=[{"type": "text", "text": "x"}])]
    result = flush(tmp_path, session, entries, today=date(2026, 11, 30), model=_NotesModel(
        ["the wifi password is Tr0ub4dor&3"]), allow_secrets=True)
    assert result.notes
    written = (tmp_path / "memory" / "2026-11-30.md").read_text()
    assert "Tr0ub4dor" not in written and "[REDACTED]" in written


def test_verdicts_name_their_cue():
    verdict = classify("send this file to my email now")
    assert verdict.kind == "operational" and verdict.cue == "send" and "send" in verdict.reason
    assert classify("I prefer TypeScript").reason is None


# --- the labelled set -------------------------------------------------------------------


def test_labelled_set_shape():
    rows = _rows()
    assert len(rows) >= 150
    for row in rows:
        assert set(row) >= {"text", "language", "expected", "split", "note"}
        assert row["language"] in {"en", "zh", "ja", "ko"} and row["expected"] in KINDS
        assert row["split"] in {"dev", "test"}
    texts = [row["text"] for row in rows]
    assert len(texts) == len(set(texts)), "duplicate sentences"
    for language in ("en", "zh", "ja", "ko"):
        for kind in KINDS:
            subset = [r for r in rows if r["language"] == language and r["expected"] == kind]
            assert {r["split"] for r in subset} == {"dev", "test"}, (language, kind)
    test_share = sum(row["split"] == "test" for row in rows) / len(rows)
    assert 0.2 <= test_share <= 0.4


@pytest.mark.parametrize("row", [r for r in _rows() if r["split"] == "dev"],
                         ids=lambda r: f"{r['language']}-{r['expected']}:{r['text'][:24]}")
def test_dev_sentences_classify_as_labelled(row):
    # Every dev sentence is a regression case; the held-out part is only measured
    # (bench/write_filters.py prints precision/recall per class and language for both).
    assert classify(row["text"]).kind == row["expected"], row["note"]


# --- what is refused never reaches an index or a memory file in clear ------------------------


def test_transcript_keeps_the_words_but_the_search_index_does_not(mem):
    result = mem.message("my password is hunter2 and my card is 4111 1111 1111 1111")
    store = mem.runtime.store()
    raw = [e for e in store.iter_entries(result.session_id) if e.type == "message"]
    assert "hunter2" in raw[0].content[0]["text"]  # the transcript keeps what the user said
    assert mem.sessions_search("hunter2").hits == []
    assert mem.sessions_search("4111").hits == []
    assert mem.sessions_search("password").hits  # the rest of the message is still found


def test_session_memory_excerpt_is_redacted(home):
    eng = open_engine(home, KEYWORD_ONLY)
    eng.message("我的密码是 abc12345，卡号 6217000012345670", at="2026-03-01T10:00:00Z")
    eng.message("/new", at="2026-03-01T10:10:00Z")
    excerpt = (home / "workspace" / "memory" / "2026-03-01-1010.md").read_text()
    assert "abc12345" not in excerpt and "6217000012345670" not in excerpt and "[REDACTED]" in excerpt
    assert eng.memory_search("abc12345")["results"] == []


def test_hand_written_secret_is_not_indexed_in_clear(mem):
    ws = workspace(mem)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- the wifi password is Tr0ub4dor&3\n- I prefer tea\n")
    hits = mem.memory_search("wifi password")["results"]
    assert hits and all("Tr0ub4dor" not in hit["snippet"] for hit in hits)
    assert mem.memory_search("Tr0ub4dor")["results"] == []


def test_an_edit_never_writes_a_secret_in_clear(mem, home):
    from clawkeep.errors import InputError

    item = mem.memory_remember("I prefer TypeScript")["item"]
    with pytest.raises(InputError, match="secret .password"):
        mem.memory_edit(item["id"], "my password is hunter2")
    assert "hunter2" not in (workspace(mem) / "MEMORY.md").read_text()
    mem.memory_edit(item["id"], "ugh this is so broken")  # a human edit is the editor's call otherwise
    allowed = open_engine(home, {"agents": {"defaults": {"memorySearch": {
        "provider": "none", "writeFilters": {"allowSecrets": True}}}}})
    allowed.memory_edit(item["id"], "my password is hunter2")
    assert "hunter2" not in (workspace(mem) / "MEMORY.md").read_text()


def test_secret_refusal_names_a_config_key_that_exists(tmp_path):
    """QA: the reason said `memory.writeFilters.allowSecrets`, a key the config warns is unknown."""
    import re  # noqa: PLC0415

    from clawkeep.config import config_from_dict  # noqa: PLC0415

    with open_engine(tmp_path / "home", KEYWORD_ONLY) as eng:
        refused = eng.memory_remember("my password is hunter2hunter2").to_json()
    assert refused["status"] == "refused"
    key = re.search(r"set (\S+) to store it redacted", refused["reason"]).group(1)
    assert key == "agents.defaults.memorySearch.writeFilters.allowSecrets"
    nested: dict = {}
    node = nested
    *parents, leaf = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = True
    cfg = config_from_dict(nested)
    assert cfg.warnings == [] and cfg.agents.defaults.memory_search.write_filters.allow_secrets is True
