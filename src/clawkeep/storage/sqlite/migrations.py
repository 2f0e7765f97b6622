"""Numbered schema migrations, recorded in the database they changed.

Each store declares its migrations in order (`Migration(version, name, statements)`); opening a
database applies the ones it has not seen, in one write transaction, and records each in
`schema_migrations(version, name, applied_at)`. `PRAGMA user_version` always equals the highest
applied version, so a database written before the history table existed (versions 1-3 of the
agent store, 1 of the memory index) is recognised: its versions are recorded with
`applied_at` NULL ("before the history was kept") and only the newer steps run. A database
whose version is above the newest migration this build knows is refused, never changed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import StorageError
from ..base import AppliedMigration

HISTORY_TABLE = "schema_migrations"
_CREATE_HISTORY = (f"CREATE TABLE IF NOT EXISTS {HISTORY_TABLE} (version INTEGER PRIMARY KEY, "
                   "name TEXT NOT NULL, applied_at INTEGER)")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]  # run one at a time (executescript would commit early)


def latest_version(migrations: Sequence[Migration]) -> int:
    return migrations[-1].version if migrations else 0


def check_order(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise AssertionError(f"migrations must be numbered 1..n without gaps, got {versions}")


def refuse_newer(path: str, version: int, latest: int) -> None:
    if version > latest:
        raise StorageError(
            f"database {path} has schema version {version}, newer than this clawkeep understands "
            f"(up to {latest}); it was written by a newer clawkeep: upgrade clawkeep to open it. "
            "Nothing was changed")


def user_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def has_history(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (HISTORY_TABLE,)).fetchone() is not None


def needs_work(conn: sqlite3.Connection, path: str, migrations: Sequence[Migration]) -> bool:
    """Read-only look before any write: refuse a newer database; True when something is to do."""
    version, latest = user_version(conn), latest_version(migrations)
    refuse_newer(path, version, latest)
    return version < latest or not has_history(conn)


def apply(conn: sqlite3.Connection, path: str, migrations: Sequence[Migration]) -> list[int]:
    """Inside a write transaction: record the history of an older database and run the missing
    steps; returns the versions applied now."""
    version, latest = user_version(conn), latest_version(migrations)
    refuse_newer(path, version, latest)  # again: another process may have upgraded it meanwhile
    conn.execute(_CREATE_HISTORY)
    recorded = {row[0] for row in conn.execute(f"SELECT version FROM {HISTORY_TABLE}")}
    refuse_newer(path, max(recorded, default=0), latest)
    for m in migrations:
        if m.version <= version and m.version not in recorded:
            conn.execute(f"INSERT INTO {HISTORY_TABLE} (version, name, applied_at) VALUES (?, ?, NULL)",
                         (m.version, m.name))
    applied = []
    for m in migrations:
        if m.version <= version:
            continue
        for statement in m.statements:
            conn.execute(statement)
        conn.execute(f"INSERT OR REPLACE INTO {HISTORY_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",
                     (m.version, m.name, int(time.time() * 1000)))
        applied.append(m.version)
    conn.execute(f"PRAGMA user_version = {int(latest)}")
    return applied


def history(conn: sqlite3.Connection) -> list[AppliedMigration]:
    if not has_history(conn):
        return []
    rows = conn.execute(f"SELECT version, name, applied_at FROM {HISTORY_TABLE} ORDER BY version").fetchall()
    return [AppliedMigration(*row) for row in rows]
