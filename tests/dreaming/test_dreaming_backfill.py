"""Grounded replay of historical notes (rem-harness --path, rem-backfill and its rollbacks) and
the schedule the gateway runs sweeps on."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from clawkeep.config import config_from_dict
from clawkeep.dreaming import dreams_file, is_due, next_run, previous_run
from clawkeep.dreaming.store import DreamsDir
from tests.helpers.cli import run_cli
from tests.helpers.dreaming_month import CONFIG
from tests.helpers.engine import open_engine

HISTORY = {
    "2026-03-02.md": "# 2026-03-02\n\n- I started learning the cello\n- My bank PIN is 4821\n"
                     "- Send the slides to Marta now\n",
    "2026-03-05.md": "# 2026-03-05\n\n- The cello teacher is called Ines\n- I practise cello every evening\n"
                     "- This traffic is so damn annoying\n",
    "notes/2026-03-09-trip.md": "# trip\n\n- Next Friday I fly to Lisbon\n- I prefer window seats on planes\n",
}


@pytest.fixture
def history(tmp_path):
    root = tmp_path / "history"
    for name, text in HISTORY.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "README.md").write_text("not a dated note\n")
    return root


def test_grounded_harness_reads_each_note_as_its_day_and_writes_nothing(home, history):
    with open_engine(home, CONFIG) as eng:
        report = eng.rem_harness(path=str(history), grounded=True).to_json()
    days = {d["day"]: d for d in report["days"]}
    assert list(days) == ["2026-03-02", "2026-03-05", "2026-03-09"]
    assert days["2026-03-02"]["facts"] == ["I started learning the cello"]
    assert {a["reason"].split(" (")[0] for a in days["2026-03-02"]["setAside"]} == {
        "it contains a secret", "it is a one-off operational instruction, not a durable fact"}
    assert all("4821" not in a["text"] for a in days["2026-03-02"]["setAside"])
    assert days["2026-03-09"]["facts"] == ["I prefer window seats on planes"]
    assert days["2026-03-09"]["setAside"][0]["reason"].startswith("time-bound")
    assert [t["title"] for t in days["2026-03-05"]["themes"]] == ["cello"]  # two notes about the cello
    assert not (home / "workspace").exists()  # a preview creates nothing


def test_backfill_entries_roll_back_byte_identical_or_surgically(home, history):
    with open_engine(home, CONFIG) as eng:
        (home / "workspace" / "memory").mkdir(parents=True)
        (home / "workspace" / "DREAMS.md").write_text("# Dreams\n\nMy own notes about dreaming.\n")
        eng.dream()  # a live diary entry the rollback must keep
        before = (home / "workspace" / "DREAMS.md").read_bytes()
        written = eng.rem_backfill(path=str(history)).to_json()
        assert written["written"] == 3 and written["staged"] == 0
        text = (home / "workspace" / "DREAMS.md").read_text()
        assert text.count(dreams_file.BACKFILL_START) == 3 and "4821" not in text
        assert "grounded backfill of" in text and "My own notes about dreaming." in text
        rolled = eng.rem_backfill(rollback=True).to_json()
        assert rolled["restored"] == "byte-identical" and rolled["removedEntries"] == 3
        assert (home / "workspace" / "DREAMS.md").read_bytes() == before

        eng.rem_backfill(path=str(history))
        path = home / "workspace" / "DREAMS.md"
        path.write_text(path.read_text().replace("My own notes about dreaming.", "My edited notes."))
        rolled = eng.rem_backfill(rollback=True).to_json()
        assert rolled["restored"] == "backfill entries removed" and rolled["removedEntries"] == 3
        text = path.read_text()
        assert dreams_file.BACKFILL_START not in text and "My edited notes." in text
        assert dreams_file.block(text, "diary").startswith("### ")  # the live entry is still there


def test_stage_short_term_adds_grounded_candidates_and_its_rollback_removes_them(home, history):
    with open_engine(home, CONFIG) as eng:
        (home / "workspace" / "memory").mkdir(parents=True)
        staged = eng.rem_backfill(path=str(history), stage_short_term=True).to_json()
        assert staged["staged"] == 4  # three lines about the cello, the window seats
        entries, _ = DreamsDir(home / "workspace").load_store()
        assert all(e.grounded_only and e.grounded_count == 1 and e.source == "grounded" for e in entries.values())
        preview = eng.memory_promote().to_json()
        assert preview["decisions"] == []  # grounded alone never promotes: no one asked about them yet
        assert preview["candidates"] and all("minRecallCount" in c["rejected"] for c in preview["candidates"])
        cleared = eng.rem_backfill(rollback_short_term=True).to_json()
        assert cleared["removedShortTermEntries"] == 4
        assert DreamsDir(home / "workspace").load_store()[0] == {}


def test_backfill_cli_and_bad_paths(home, history):
    config = home / "clawkeep.json5"
    config.write_text(json.dumps(CONFIG))
    (home / "workspace" / "memory").mkdir(parents=True)
    ok = run_cli(home, "memory", "rem-backfill", "--path", str(history), "--stage-short-term", "--json",
                 config=config)
    assert ok.code == 0, ok.stderr
    assert ok.json()["written"] == 3
    back = run_cli(home, "memory", "rem-backfill", "--rollback", "--rollback-short-term", "--json", config=config)
    assert back.code == 0 and back.json()["removedShortTermEntries"] == 4
    missing = run_cli(home, "memory", "rem-backfill", "--path", str(home / "nope"), config=config)
    assert missing.code == 2 and "does not exist" in missing.stderr


# --- the schedule ---------------------------------------------------------------------------------
def _config(**dreaming):
    return config_from_dict({"session": {"reset": {"timezone": "Europe/Berlin"}},
                             "plugins": {"entries": {"memory-core": {"config": {"dreaming": dreaming}}}}})


def test_next_run_follows_the_cron_in_the_dreaming_time_zone():
    at = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # 14:00 in Berlin
    default = _config(enabled=True)
    assert next_run(default, at).isoformat() == "2026-06-02T03:00:00+02:00"  # session.reset.timezone
    la = _config(enabled=True, timezone="America/Los_Angeles", frequency="0 */6 * * *")
    assert next_run(la, at).isoformat() == "2026-06-01T06:00:00-07:00"
    assert previous_run(la, at).isoformat() == "2026-06-01T00:00:00-07:00"
    assert next_run(default, int(at.timestamp() * 1000)) == next_run(default, at)


def test_a_sweep_is_due_once_per_scheduled_time():
    cfg = _config(enabled=True)
    three = int(datetime(2026, 6, 2, 1, 0, tzinfo=UTC).timestamp() * 1000)  # 03:00 Berlin
    assert is_due(cfg, None, three)
    assert not is_due(cfg, three + 1000, three + 60_000)  # swept at 03:00:01: not again at 03:01
    assert is_due(cfg, three - 3_600_000, three + 60_000)  # last swept before 03:00
    assert not is_due(_config(enabled=False), None, three)


def test_run_due_sweeps_when_due_and_not_twice(home):
    with open_engine(home, CONFIG) as eng:
        (home / "workspace" / "memory").mkdir(parents=True)
        first = eng.dream_if_due()
        assert first is not None and first["trigger"] == "schedule" and first["status"] == "ok"
        assert eng.dream_if_due() is None  # the next run is at the next 03:00
        state = DreamsDir(home / "workspace").read_json("state.json", {})
        assert state["lastRunId"] == first["runId"]
