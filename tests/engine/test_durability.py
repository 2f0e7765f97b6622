"""Concurrent writers, kill -9 mid-write, corrupt and locked databases (SPEC: bad input & safety)."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine

WRITER = textwrap.dedent("""
    import sys
    from clawkeep import Engine
    home, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Engine.open(home=home) as eng:
        for i in range(count):
            result = eng.message(f"writer {tag} message {i} about parcel{tag}x{i}", channel="telegram",
                                 sender=f"user{tag}", message_id=f"{tag}-{i}")
            print(result.message_id, flush=True)  # acknowledged: durable before this line
""")


def db_path(home: Path) -> Path:
    return home / "agents" / "main" / "agent.sqlite"


def check_consistent(home: Path) -> set[str]:
    with sqlite3.connect(db_path(home)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
        messages = conn.execute("SELECT count(*) FROM entries WHERE type = 'message'").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM entries_fts").fetchone()[0]
        assert messages == indexed
        counted = conn.execute("SELECT sum(message_count) FROM sessions").fetchone()[0] or 0
        assert counted == messages
        return {row[0] for row in conn.execute("SELECT entry_id FROM entries WHERE type = 'message'")}


def test_concurrent_cli_processes_lose_nothing(home):
    def send(i):
        return run_cli(home, "message", f"cli writer {i}", "--message-id", f"cli-{i}", "--json")

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(send, range(12)))
    assert all(r.code == 0 for r in results), [r.stderr for r in results if r.code]
    assert check_consistent(home) == {f"cli-{i}" for i in range(12)}


def test_kill_9_mid_write_loses_no_acknowledged_message(home, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    steady = [
        subprocess.Popen([sys.executable, str(script), str(home), tag, "150"], stdout=subprocess.PIPE, text=True)
        for tag in ("a", "b")
    ]
    victim = subprocess.Popen(
        [sys.executable, str(script), str(home), "k", "100000"], stdout=subprocess.PIPE, text=True
    )
    acknowledged = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        acknowledged.append(victim.stdout.readline().strip())
    os.kill(victim.pid, signal.SIGKILL)
    acknowledged += [line.strip() for line in victim.stdout.read().splitlines() if line.strip()]
    victim.wait()
    outputs = [p.communicate(timeout=120)[0].split() for p in steady]
    assert all(p.returncode == 0 for p in steady)
    stored = check_consistent(home)
    assert set(acknowledged) <= stored
    assert {m for out in outputs for m in out} <= stored
    assert len(acknowledged) >= 40
    # the database still works for new writes and searches afterwards
    eng = open_engine(home)
    eng.message("after the crash", message_id="after")
    assert eng.sessions_search("parcelkx0")["hits"][0]["messageId"] == "k-0"


def test_corrupt_database_gives_clear_error_and_is_not_touched(home, cli):
    cli("message", "precious")
    path = db_path(home)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is definitely not sqlite" * 100)
    before = path.read_bytes()
    result = cli("sessions", "list")
    assert result.code == 1
    assert "corrupt or not a clawkeep database" in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == before


def test_locked_database_gives_clear_error_and_keeps_data(home, tmp_path):
    eng = open_engine(home)
    eng.message("kept safe", message_id="safe-1")
    eng.close()
    config = tmp_path / "c.json5"
    config.write_text("{storage: {busyTimeoutMs: 200}}")
    holder = sqlite3.connect(db_path(home), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = run_cli(home, "message", "blocked", config=config)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.code == 1 and "locked" in result.stderr and "Traceback" not in result.stderr
    assert check_consistent(home) == {"safe-1"}


def test_unreadable_home_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    result = run_cli(blocker, "status")
    assert result.code == 1 and "cannot be created" in result.stderr and "Traceback" not in result.stderr
