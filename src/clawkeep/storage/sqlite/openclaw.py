"""Reading OpenClaw's per-agent database (`openclaw-agent.sqlite`), read-only, for the importer.

Only the queries live here (SQL stays in the backend packages); which schema versions are
accepted and what a row means is `clawkeep.interop.sources`'. Rows are streamed, never fetched
whole, so a large transcript is read one event at a time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# what a damaged or foreign file raises while it is read; the importer names it per file
DatabaseError = sqlite3.DatabaseError


class OpenClawDatabase:
    def __init__(self, path: Path):
        self.path = path
        # mode=ro: never written; a WAL beside it is still read, so a running OpenClaw's last commits count
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> OpenClawDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def user_version(self) -> int:
        return self._conn.execute("PRAGMA user_version").fetchone()[0]

    def tables(self) -> dict[str, set[str]]:
        names = [name for (name,) in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: {row[1] for row in self._conn.execute(f'PRAGMA table_info("{name}")')} for name in names}

    def schema_meta(self) -> tuple[str, int, str | None] | None:
        """(role, schema_version, app_version) of the primary schema_meta row."""
        return self._conn.execute("SELECT role, schema_version, app_version FROM schema_meta "
                                  "WHERE meta_key = 'primary'").fetchone()

    def nodes(self) -> list[tuple[str, str, str]]:
        """(session key, current session id, entry JSON) per key."""
        return self._conn.execute("SELECT session_key, current_session_id, entry_json FROM session_nodes "
                                  "ORDER BY session_key").fetchall()

    def windows(self) -> list[tuple[str, str, str | None, int]]:
        """(session id, key, reason, created at) of every transcript, oldest first."""
        return self._conn.execute("SELECT session_id, session_key, reason, created_at FROM session_windows "
                                  "ORDER BY created_at, rowid").fetchall()

    def leaves(self) -> dict[str, str | None]:
        """Each transcript's active leaf event, where OpenClaw recorded it."""
        if "session_transcript_index_state" not in self.tables():
            return {}
        return dict(self._conn.execute("SELECT session_id, leaf_event_id FROM session_transcript_index_state"))

    def sizes(self) -> dict[str, int]:
        """Bytes of each transcript's events (for progress)."""
        return dict(self._conn.execute("SELECT session_id, sum(coalesce(event_utf8_bytes, length(event_json), "
                                       "length(event_zstd))) FROM transcript_events GROUP BY session_id"))

    def events(self, session_id: str) -> Iterator[tuple[int, str | None, bytes | None, int | None, Any]]:
        """(seq, event JSON, zstd body, body size, created at), in order, streamed."""
        yield from self._conn.execute("SELECT seq, event_json, event_zstd, event_utf8_bytes, created_at FROM "
                                      "transcript_events WHERE session_id = ? ORDER BY seq", (session_id,))

    def archived_transcripts(self) -> list[tuple[str, str, str]]:
        """(table, session id, archive name) of transcripts OpenClaw keeps as archive blobs or cold
        files instead of event rows (reset/delete archives, cold storage)."""
        tables = self.tables()
        found: list[tuple[str, str, str]] = []
        for table in ("session_transcript_archives", "session_transcript_cold_archives"):
            if {"session_id", "archive_name"} <= tables.get(table, set()):
                found += [(table, sid, name) for sid, name in self._conn.execute(
                    f'SELECT session_id, archive_name FROM "{table}" ORDER BY session_id')]
        return found
