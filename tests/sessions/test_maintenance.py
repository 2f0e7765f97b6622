"""Maintenance (S4): warn/enforce, pruneAfter, maxEntries with high water, --fix-dm-scope."""

import gzip
import json

from clawkeep.timeutil import now_ms
from tests.helpers.engine import open_engine

DAY = 86_400_000


def make_sessions(eng, now):
    old = now - 40 * DAY
    eng.message("nightly job ran", channel="cron", sender="nightly", at=old)
    eng.message("hook fired", channel="hook", sender="gh", at=old)
    eng.message("old group talk", channel="telegram", chat_type="group", group="g1", at=old)
    eng.message("recent cron", channel="cron", sender="hourly", at=now - DAY)


def test_warn_mode_reports_and_changes_nothing(home):
    eng = open_engine(home)
    make_sessions(eng, now_ms())
    report = eng.sessions_cleanup()
    assert report["applied"] is False and report["mode"] == "warn"
    assert {r["key"] for r in report["stale"]} == {"agent:main:cron:nightly", "agent:main:hook:gh"}
    assert report["sessions"] == 4


def test_enforce_archives_then_removes_stale_synthetic_sessions(home):
    eng = open_engine(home)
    make_sessions(eng, now_ms())
    dry = eng.sessions_cleanup(dry_run=True, enforce=True)
    assert dry["applied"] is False and dry["archives"] == []
    report = eng.sessions_cleanup(enforce=True)
    assert report["applied"] is True and len(report["archives"]) == 2
    left = {r["key"] for r in eng.sessions_list()}
    assert left == {"agent:main:telegram:group:g1", "agent:main:cron:hourly"}  # groups are durable
    with gzip.open(report["archives"][0], "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh]
    assert lines[0]["type"] == "sessionRow"
    assert any(line.get("content") == [{"type": "text", "text": "nightly job ran"}] for line in lines) or \
        any(line.get("content") == [{"type": "text", "text": "hook fired"}] for line in lines)
    assert eng.sessions_search("nightly")["hits"] == []  # index rows went with the session


def test_max_entries_evicts_oldest_unprotected_first(home):
    eng = open_engine(home, {"session": {"maintenance": {"maxEntries": 3, "highWaterEntries": 0}}})
    now = now_ms()
    for i in range(4):
        eng.message(f"job {i}", channel="cron", sender=f"job{i}", at=now - (10 - i) * 60_000)
    eng.message("dm", at=now)
    report = eng.sessions_cleanup(enforce=True)
    assert [r["key"] for r in report["overCap"]] == ["agent:main:cron:job0", "agent:main:cron:job1"]
    assert len(eng.sessions_list()) == 3


def test_high_water_batches_cleanup_on_create_in_enforce_mode(home):
    eng = open_engine(home, {"session": {"maintenance": {"mode": "enforce", "maxEntries": 3, "highWaterEntries": 2}}})
    now = now_ms()
    counts = []
    for i in range(7):
        eng.message(f"job {i}", channel="cron", sender=f"job{i}", at=now + i)
        counts.append(len(eng.sessions_list()))
    # grows past the cap until the high-water mark, then drops back to the cap in one batch
    assert counts == [1, 2, 3, 4, 5, 3, 4]


def test_reads_never_prune(home):
    eng = open_engine(home, {"session": {"maintenance": {"mode": "enforce", "maxEntries": 1, "highWaterEntries": 0}}})
    eng2 = open_engine(home, {"session": {"maintenance": {"mode": "warn"}}})
    now = now_ms()
    eng2.message("a", channel="cron", sender="a", at=now - 5)
    eng2.message("b", channel="cron", sender="b", at=now - 4)
    eng.sessions_list()
    eng.sessions_search("a")
    assert len(eng.sessions_list()) == 2


def test_fix_dm_scope_retires_per_peer_rows_after_switching_back_to_main(home):
    peer = open_engine(home, {"session": {"dmScope": "per-channel-peer"}})
    alice = peer.message("alice's private note", channel="telegram", sender="alice")
    peer.message("group stays", channel="telegram", chat_type="group", group="g")
    peer.close()
    main = open_engine(home, {"session": {"dmScope": "main"}})
    main.message("now everything goes to main")
    report = main.sessions_cleanup(fix_dm_scope=True)
    assert [r["key"] for r in report["wrongDmScope"]] == [alice.session_key]
    assert report["applied"] and len(report["archives"]) == 1
    keys = {r["key"] for r in main.sessions_list()}
    assert keys == {"agent:main:main", "agent:main:telegram:group:g"}


def test_one_instance_at_a_time_runs_maintenance(home):
    """D2: cleanup holds the store's maintenance lease; while another instance holds it, an
    enforced cleanup changes nothing and says why, and the lease is free again afterwards."""
    import pytest

    from clawkeep.errors import ConflictError
    from clawkeep.sessions.maintenance import MAINTENANCE_LEASE

    eng, other = open_engine(home), open_engine(home)
    make_sessions(eng, now_ms())
    assert other.runtime.store().try_lease(MAINTENANCE_LEASE, "another-instance", 60_000)
    with pytest.raises(ConflictError, match="another instance is running session maintenance"):
        eng.sessions_cleanup(enforce=True)
    assert eng.sessions_cleanup()["sessions"] == 4  # nothing was removed
    other.runtime.store().release_lease(MAINTENANCE_LEASE, "another-instance")
    assert eng.sessions_cleanup(enforce=True)["applied"] is True
    assert eng.runtime.store().try_lease(MAINTENANCE_LEASE, "another-instance", 60_000)  # released after use


def test_one_instance_at_a_time_runs_the_reset_clock(home):
    """D2: the reset clock runs where the reset-clock lease is held; the other instance skips."""
    from clawkeep.sessions.service import RESET_CLOCK_LEASE

    eng, other = open_engine(home), open_engine(home)
    now = now_ms()
    eng.message("talked two days ago", sender="alice", at=now - 2 * DAY)
    eng.message("so did the group", chat_type="group", group="g1", at=now - 2 * DAY)
    assert other.runtime.store().try_lease(RESET_CLOCK_LEASE, other.runtime.instance_id, 60_000)
    assert eng.sessions_roll_over(at=now) == []  # the other instance holds the clock
    assert sorted(other.sessions_roll_over(at=now)) == ["agent:main:cli:group:g1", "agent:main:main"]
    assert other.sessions_roll_over(at=now) == []  # nothing is reset twice


def test_enforce_counts_the_sessions_it_looked_at(home):
    """QA: the dry run said `would archive 1 of 1`, enforce said `archived 1 of 0` (the count
    was taken after the removal)."""
    from tests.helpers.cli import run_cli

    eng = open_engine(home)
    eng.message("nightly job ran", channel="cron", sender="nightly", at=now_ms() - 40 * DAY)
    eng.close()
    dry = run_cli(home, "sessions", "cleanup", "--dry-run")
    assert "would archive 1 of 1 sessions" in dry.stdout
    done = run_cli(home, "sessions", "cleanup", "--enforce")
    assert done.code == 0 and "archived 1 of 1 sessions" in done.stdout, done.stdout
    report = run_cli(home, "sessions", "cleanup", "--enforce", "--json").json()
    assert report["sessions"] == 0 and report["remaining"] == 0
