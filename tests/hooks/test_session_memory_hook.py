"""session-memory hook (C3): every reset path writes an excerpt of the closed interval."""

from pathlib import Path

import pytest

from clawkeep.sessions import transcript
from clawkeep.storage import EntryRecord
from tests.helpers.engine import open_engine


def notes(home: Path) -> dict[str, str]:
    folder = home / "workspace" / "memory"
    return {p.name: p.read_text() for p in sorted(folder.glob("*.md"))} if folder.is_dir() else {}


def test_manual_reset_writes_the_last_messages(home):
    eng = open_engine(home)
    eng.message("we picked the blue logo", at="2026-03-01T10:00:00Z")
    eng.message("Great, blue it is. I will update the brand guide, the website header and the slides today."
                " <think>they like blue</think>", role="assistant", at="2026-03-01T10:01:00Z")
    eng.message("/status", at="2026-03-01T10:02:00Z")
    result = eng.message("/reset", at="2026-03-01T10:05:00Z")
    assert result.command == "reset"
    written = notes(home)
    assert list(written) == ["2026-03-01-1005.md"]
    body = written["2026-03-01-1005.md"]
    assert "# Session: 2026-03-01 10:05:00 UTC" in body
    assert "user: we picked the blue logo" in body and "assistant: Great, blue it is." in body
    assert "they like blue" not in body and "/status" not in body


def test_keeps_only_the_last_15_and_filters_tools_and_no_reply(home):
    eng = open_engine(home)
    first = eng.message("message 0", at="2026-03-01T10:00:00Z")
    for i in range(1, 20):
        eng.message(f"message {i}", at=f"2026-03-01T10:{i:02d}:00Z")
    store = eng.runtime.store()
    transcript.append(store, EntryRecord("tool-1", first.session_id, "message", 1, role="tool", content=[
        {"type": "toolResult", "toolCallId": "c", "content": "tool output", "isError": False}]))
    eng.message("NO_REPLY", role="assistant", at="2026-03-01T10:30:00Z")
    eng.sessions_reset(first.session_key, at="2026-03-01T11:00:00Z")
    body = notes(home)["2026-03-01-1100.md"]
    lines = [line for line in body.splitlines() if line.startswith(("user:", "assistant:"))]
    assert lines == [f"user: message {i}" for i in range(5, 20)]
    assert "tool output" not in body and "NO_REPLY" not in body


def test_automatic_daily_reset_fires_the_hook(home):
    eng = open_engine(home, {"session": {"reset": {"timezone": "UTC"}}})
    eng.message("evening plans: cinema", at="2026-03-01T20:00:00Z")
    assert eng.message("good morning", at="2026-03-02T08:00:00Z").reset == "daily"
    body = notes(home)["2026-03-02-0800.md"]
    assert "cinema" in body and "good morning" not in body and "daily reset" in body


def test_nothing_written_for_empty_intervals_or_when_disabled(home):
    eng = open_engine(home)
    eng.message("/reset", at="2026-03-01T10:00:00Z")
    assert notes(home) == {}
    off = open_engine(home, {"hooks": {"internal": {"entries": {"session-memory": {"enabled": False}}}}})
    off.message("hello", at="2026-03-01T11:00:00Z")
    off.message("/new", at="2026-03-01T11:05:00Z")
    assert notes(home) == {}


def test_excerpts_are_searchable_memory(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    eng.message("the boat is moored at pier 7", at="2026-03-01T10:00:00Z")
    eng.message("/new", at="2026-03-01T10:10:00Z")
    hits = eng.memory_search("where is the boat moored")["results"]
    assert hits and hits[0]["path"] == "memory/2026-03-01-1010.md"


def test_same_minute_resets_get_distinct_files(home):
    eng = open_engine(home)
    eng.message("one", at="2026-03-01T10:00:00Z")
    eng.message("/reset", at="2026-03-01T10:00:10Z")
    eng.message("two", at="2026-03-01T10:00:20Z")
    eng.message("/reset", at="2026-03-01T10:00:30Z")
    assert sorted(notes(home)) == ["2026-03-01-1000-2.md", "2026-03-01-1000.md"]


def test_mostly_scaffolding_reply_is_elided(home):
    eng = open_engine(home)
    eng.message("hi", at="2026-03-01T10:00:00Z")
    eng.message("ok <tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"a long query text\"}}</tool_call>",
                role="assistant", at="2026-03-01T10:01:00Z")
    eng.message("/reset", at="2026-03-01T10:02:00Z")
    body = notes(home)["2026-03-01-1002.md"]
    assert "assistant: [malformed turn elided]" in body and "tool_call" not in body


def test_a_short_answer_after_long_reasoning_is_kept_not_elided(home):
    """QA: an assistant text "<think>…long musing…</think>We ship on Friday" was written to the
    excerpt as "[malformed turn elided]": the reasoning counted as scaffolding, the answer was lost."""
    eng = open_engine(home)
    eng.message("when do we ship?", at="2026-03-01T10:00:00Z")
    eng.message("<think>" + "weighing the release calendar and the open bugs " * 4 + "</think>We ship on Friday",
                role="assistant", at="2026-03-01T10:01:00Z")
    eng.message("/reset", at="2026-03-01T10:02:00Z")
    body = notes(home)["2026-03-01-1002.md"]
    assert "assistant: We ship on Friday" in body and "weighing" not in body and "elided" not in body


def test_reset_excerpts_are_not_memory_items(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    eng.message("- a user line that looks like a bullet", at="2026-03-01T10:00:00Z")
    eng.message("/reset", at="2026-03-01T10:10:00Z")
    assert "2026-03-01-1010.md" in notes(home)
    eng.memory_remember("I prefer TypeScript")
    listed = eng.memory_items()
    assert [i["text"] for i in listed] == ["I prefer TypeScript"]  # no "Session key: …", "Reason: manual reset"
    assert not any(i["path"].startswith("memory/2026-03-01-") for i in listed)
    assert eng.memory_search("bullet")["results"]  # the excerpt is still searchable memory


@pytest.mark.parametrize("access", ["ro", "none"])
def test_a_read_only_workspace_gets_no_excerpt(home, access):
    """workspaceAccess ro/none: nothing is written to the workspace, the reset excerpt included."""
    eng = open_engine(home, {"agents": {"defaults": {"workspaceAccess": access}}})
    eng.message("we picked the blue logo", at="2026-03-01T10:00:00Z")
    result = eng.message("/reset", at="2026-03-01T10:05:00Z")
    assert result.command == "reset"
    assert not list((home / "workspace").rglob("*.md"))
    assert eng.sessions_search("blue logo")["hits"]  # the transcript itself is kept
