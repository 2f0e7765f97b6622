"""A sweep killed with SIGKILL leaves MEMORY.md before or after, never half-written, and the
next sweep completes without promoting anything twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clawkeep.dreaming.store import DreamsDir
from clawkeep.memory import items
from tests.helpers.dreaming_month import EXPECTED_PROMOTED, INITIAL_MEMORY, MONTH, today, write_month
from tests.helpers.engine import open_engine

CHILD = Path(__file__).parents[1] / "helpers" / "dreaming_crash_child.py"
# without the note edits of the month test, the stale and deleted lines are still live and durable
DURABLE = EXPECTED_PROMOTED | {"My dentist is Dr. Weber on Lindenstrasse", "I keep my passport in the blue drawer"}


def start_child(home: Path, step: str, marker: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "CLAWKEEP_HOME"}
    env["PYTHONPATH"] = os.pathsep.join([str(CHILD.parents[2] / "src"), env.get("PYTHONPATH", "")])
    return subprocess.Popen([sys.executable, str(CHILD), str(home), json.dumps(MONTH), step, str(marker)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(marker: Path, child: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if child.poll() is not None:
            raise AssertionError(f"child ended early: {child.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, "the child never reached its step"
        time.sleep(0.01)


def dream_items(text: str) -> list[str]:
    return [i.text for i in items.parse_items("MEMORY.md", text) if i.attrs.get("dream")]


def assert_before_or_after(text: str) -> str:
    """MEMORY.md is the original bytes, or the original lines plus every promotion, complete."""
    if text == INITIAL_MEMORY:
        return "before"
    promoted = dream_items(text)
    assert sorted(promoted) == sorted(DURABLE), promoted
    assert text.endswith("\n") and "I live in Berlin" in text and "My sister is called Anna" in text
    for line in text.splitlines()[2:]:
        assert line == "" or items.parse_items("MEMORY.md", line), f"a broken line: {line!r}"
    return "after"


def finish_and_check(home: Path) -> None:
    with open_engine(home, MONTH) as eng:
        report = eng.dream().to_json()
    assert report["status"] == "ok"
    text = (home / "workspace" / "MEMORY.md").read_text()
    assert sorted(dream_items(text)) == sorted(DURABLE)  # each exactly once
    dreams = DreamsDir(home / "workspace")
    assert not dreams.pending_logs() and all(r["status"] != "pending" for r in _records(dreams))
    entries, _ = dreams.load_store()
    promoted = {e.text for e in entries.values() if e.promoted_at}
    assert {t for t in DURABLE} <= promoted


def _records(dreams: DreamsDir) -> list[dict]:
    from clawkeep.dreaming.promotions import records

    return records(dreams)


def kill_at_marker(child, marker):
    """SIGKILL the child as soon as it reaches its step (the marker file appears)."""
    try:
        wait_for(marker, child)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL

@pytest.mark.parametrize("step, expected", [("deep:planned", "before"), ("deep:written", "after")])
def test_kill_at_a_step_then_the_next_sweep_completes(home, step, expected):
    write_month(home / "workspace", today())
    marker = home / "marker"
    child = start_child(home, step, marker)
    kill_at_marker(child, marker)
    assert assert_before_or_after((home / "workspace" / "MEMORY.md").read_text()) == expected
    assert DreamsDir(home / "workspace").sweep_lock().holder() is None  # the kernel released the lock
    finish_and_check(home)


def test_kill_at_random_moments_never_leaves_memory_half_written(tmp_path):
    rng = random.Random(20261)
    seen = set()
    for attempt in range(5):
        home = tmp_path / f"home{attempt}"
        home.mkdir()
        write_month(home / "workspace", today())
        marker = home / "marker"
        child = start_child(home, "started-running", marker)
        try:
            wait_for(marker, child)
            time.sleep(rng.uniform(0.0, 0.4))
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        finally:
            if child.poll() is None:
                child.kill()
        seen.add(assert_before_or_after((home / "workspace" / "MEMORY.md").read_text()))
        finish_and_check(home)
    assert seen <= {"before", "after"}  # each attempt ended in one of the two states (which: the timing)
    print("states seen after the kills:", sorted(seen))


def write_unique_notes(workspace: Path, days: int = 5, per_day: int = 40) -> set[str]:
    """Dated notes whose every line is unique, so each claim's dailyCount must be exactly 1."""
    texts = set()
    for back in range(days):
        day = today().fromordinal(today().toordinal() - back).isoformat()
        lines = [f"Note {day} item {n}: the {n}th errand of day {back} was unique {n * 7919 + back}"
                 for n in range(per_day)]
        texts.update(lines)
        path = workspace / "memory" / f"{day}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {day}\n\n" + "".join(f"- {line}\n" for line in lines), encoding="utf-8")
    return texts


def test_kill_right_after_the_store_file_then_the_next_sweep_counts_each_line_once(home):
    """QA: killed once short-term-recall.json was renamed but before the phase signals and the
    checkpoint were (the old three-file save), the next sweep counted every note line twice."""
    texts = write_unique_notes(home / "workspace")
    marker = home / "marker"
    child = start_child(home, "after-rename:short-term-recall.json", marker)
    kill_at_marker(child, marker)
    dreams = DreamsDir(home / "workspace")
    assert dreams.path("short-term-recall.json").exists()  # the kill came after the store's save
    with open_engine(home, MONTH) as eng:
        assert eng.dream().to_json()["status"] == "ok"
    entries, _ = dreams.load_store()
    daily = {e.text: e.daily_count for e in entries.values() if e.source == "daily"}
    assert texts <= set(daily)
    assert {t: n for t, n in daily.items() if n != 1} == {}


def test_a_store_of_the_three_file_layout_is_read_once_and_not_counted_again(home):
    """A store saved by the old layout (signals and checkpoint in their own files) keeps its
    checkpoint: the next sweep re-counts nothing and leaves one file."""
    write_unique_notes(home / "workspace", days=2, per_day=5)
    with open_engine(home, MONTH) as eng:
        eng.dream()
    dreams = DreamsDir(home / "workspace")
    data = json.loads(dreams.path("short-term-recall.json").read_text())
    dreams.write_json("phase-signals.json", {"version": 1, "entries": data.pop("phaseSignals")})
    dreams.write_json("daily-ingestion.json", data.pop("ingestion"))
    dreams.write_json("short-term-recall.json", {**data, "version": 1})
    with open_engine(home, MONTH) as eng:
        eng.dream()
    entries, _ = dreams.load_store()
    assert entries and all(e.daily_count == 1 for e in entries.values())
    assert not dreams.path("phase-signals.json").exists() and not dreams.path("daily-ingestion.json").exists()
    assert dreams.load_state()[2]  # the Light reinforcements came over with the store
