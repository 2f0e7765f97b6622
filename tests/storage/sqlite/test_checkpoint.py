"""WAL checkpoints run off the commit path (connection.py `_Checkpointer`), and the WAL still
starts over: after a pause, and under a writer that never pauses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clawkeep.storage.sqlite import connection
from clawkeep.storage.sqlite.connection import SqliteConnection
from clawkeep.storage.sqlite.migrations import Migration

BLOB = 16 * 1024


class BlobStore(SqliteConnection):
    migrations = (Migration(1, "blobs", ("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)",)),)

    def add(self, data: bytes) -> None:
        with self.transaction():
            self._write("INSERT INTO blobs (data) VALUES (?)", (data,))

    def count(self) -> int:
        return self._query("SELECT count(*) FROM blobs")[0][0]


def wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


_SHM_HEADER = ("import struct, sys; h = open(sys.argv[1] + '-shm', 'rb').read(100); "
               "print(struct.unpack_from('=I', h, 16)[0], struct.unpack_from('=I', h, 96)[0])")


def wal_frames(path: Path) -> tuple[int, int]:
    """(frames in the WAL, frames of it copied into the database) from the wal-index header in
    the -shm file (mxFrame at byte 16, nBackfill at byte 96, native order), read by a child
    process: asking SQLite would checkpoint, and closing a descriptor of the -shm file in this
    process would drop the WAL locks SQLite holds on it here."""
    out = subprocess.run([sys.executable, "-c", _SHM_HEADER, str(path)], capture_output=True, text=True,
                         check=True, timeout=60)
    frames, copied = out.stdout.split()
    return int(frames), int(copied)


def wait_until(check, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_commits_leave_the_checkpoint_to_the_thread_and_a_pause_lets_the_wal_start_over(tmp_path: Path):
    path = tmp_path / "blobs.sqlite"
    store = BlobStore(path, synchronous="NORMAL", busy_timeout_ms=5_000)
    try:
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        for _ in range(100):
            store.add(os.urandom(BLOB))
        frames, _ = wal_frames(path)
        assert frames > 0
        # every committed frame reaches the database file without another commit
        assert wait_until(lambda: (lambda f: f[0] == f[1])(wal_frames(path)))
        size = wal_size(path)
        store.add(os.urandom(BLOB))
        assert wal_frames(path)[0] < frames  # the next write started the file over
        for _ in range(20):
            store.add(os.urandom(BLOB))
        assert wal_size(path) == size  # written from the start again, not appended
        assert store.count() == 121
    finally:
        store.close()
    assert not Path(f"{path}-wal").exists() or wal_size(path) == 0  # the last close checkpoints the rest
    reopened = BlobStore(path, synchronous="NORMAL", busy_timeout_ms=5_000)
    try:
        assert reopened.count() == 121
    finally:
        reopened.close()


def test_a_writer_that_never_pauses_keeps_the_wal_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # small limits so the test writes megabytes, not the defaults' tens of megabytes
    monkeypatch.setattr(connection, "CHECKPOINT_COMMITS", 4)
    monkeypatch.setattr(connection, "CHECKPOINT_HOLD_FRAMES", 256)  # ≈1 MB
    path = tmp_path / "blobs.sqlite"
    store = BlobStore(path, synchronous="NORMAL", busy_timeout_ms=5_000)
    try:
        largest = 0
        for _ in range(1_500):  # ≈24 MB written back to back
            store.add(os.urandom(BLOB))
            largest = max(largest, wal_size(path))
        assert largest < 12 * 1024 * 1024, largest
        assert store.count() == 1_500
    finally:
        store.close()


def test_under_full_sqlite_keeps_checkpointing_inside_the_commit(tmp_path: Path):
    # every FULL commit syncs the WAL already; a checkpoint beside them cost group commit throughput
    path = tmp_path / "blobs.sqlite"
    store = BlobStore(path, synchronous="FULL", busy_timeout_ms=5_000)
    try:
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert store._checkpointer is None
        for _ in range(300):  # ≈1,200 pages: past SQLite's threshold, so the WAL started over
            store.add(os.urandom(BLOB))
        frames, copied = wal_frames(path)
        assert frames < 1_000 and store.count() == 300
    finally:
        store.close()
