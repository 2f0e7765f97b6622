"""The newest generation of a table as announced by LISTEN/NOTIFY (storage.searchFreshness "notify").

Every commit that moves a store's generation announces the new number on the store's channel
(its schema name) in the statement that moves it (`bump_sql`: no round trip of its own). A
`GenerationWatch` keeps one connection per store listening there; a search whose cached matches
are at the announced generation answers without asking the server (fts.Ranker). A daemon thread
reads the socket so announcements never pile up on the server, and each search first takes what
has already arrived (a non-blocking read on its own thread), so a write acknowledged to another
instance just before is very likely seen. What the watch cannot vouch for it does not claim:
`known()` is None until the listener is connected and has read the generation once, after the
connection is lost (until a new one has read it again), and when it went unconfirmed longer than
CONFIRM_S. Then searches take the checked path (one round trip).
"""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Any

from .connection import psycopg

PING_S = 5.0  # the listener's connection is checked (one empty query) this often
CONFIRM_S = 3 * PING_S  # unconfirmed longer than this (a ping overdue): not trusted
RETRY_S = (1.0, 10.0)  # first and longest wait before connecting again (a lost connection, an away server)
APPLICATION = "clawkeep listen "  # application_name of a listening connection: this, then the schema


def channel_literal(schema: str) -> str:
    """The store's channel (its schema name) as a SQL string literal."""
    return "'" + schema.replace("'", "''") + "'"


def bump_sql(sequence: str, schema: str) -> str:
    """Move the generation `sequence` and announce the new number; one row: that number."""
    return f"SELECT g, pg_notify({channel_literal(schema)}, g::text) FROM nextval('{sequence}') AS g"


class GenerationWatch:
    """The newest generation announced on `schema`'s channel (`generation_sql` reads it)."""

    def __init__(self, url: str, schema: str, generation_sql: str) -> None:
        self._url, self._schema, self._generation_sql = url, schema, generation_sql
        self._lock = threading.RLock()
        self._conn: Any = None
        self._known: int | None = None
        self._confirmed = 0.0  # when the connection last answered
        self._closed = False
        self._wake_read, self._wake_write = os.pipe()  # close() wakes the thread
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"clawkeep listen {schema}")
        self._thread.start()

    # --- what searches ask ----------------------------------------------------------------
    def known(self) -> int | None:
        """The newest generation announced (what arrived so far taken first), or None."""
        with self._lock:
            if self._conn is None or self._known is None:
                return None
            try:
                self._drain()
            except psycopg.Error:
                self._lose()
                return None
            if time.monotonic() - self._confirmed > CONFIRM_S:
                return None
            return self._known

    def wrote(self, generation: int) -> None:
        """This process moved the generation to `generation` (read-your-writes without waiting)."""
        with self._lock:
            if self._known is not None:
                self._known = max(self._known, generation)

    @property
    def listening(self) -> bool:
        with self._lock:
            return self._conn is not None and self._known is not None

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            os.write(self._wake_write, b"x")
            self._lose()
        self._thread.join(timeout=2.0)
        os.close(self._wake_read)
        os.close(self._wake_write)

    # --- the listener -----------------------------------------------------------------------
    def _heard(self, generation: Any) -> None:
        try:
            value = int(generation)
        except (TypeError, ValueError):
            return  # not a generation (someone else's notification on this channel)
        self._known = value if self._known is None else max(self._known, value)

    def _drain(self) -> None:
        """Read what arrived on the socket (never waits) and take its notifications."""
        pgconn = self._conn.pgconn
        pgconn.consume_input()
        while (note := pgconn.notifies()) is not None:
            self._heard(note.extra.decode(errors="replace"))
            self._confirmed = time.monotonic()  # the server spoke: the connection is alive

    def _lose(self) -> None:
        conn, self._conn, self._known = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already gone
                pass

    def _connect(self) -> None:
        conn = psycopg.connect(self._url, autocommit=True, application_name=(APPLICATION + self._schema)[:63])
        try:
            conn.add_notify_handler(lambda note: self._heard(note.payload))  # those arriving during a query
            # listening first, then the generation: nothing announced after the read is missed
            conn.execute(f'LISTEN "{self._schema.replace(chr(34), chr(34) * 2)}"')
            generation = conn.execute(self._generation_sql).fetchone()[0]
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._closed:
                conn.close()
                return
            self._conn, self._known, self._confirmed = conn, None, time.monotonic()
            self._heard(generation)

    def _run(self) -> None:
        wait = RETRY_S[0]
        while not self._closed:
            if self._conn is None:
                try:
                    self._connect()
                    wait = RETRY_S[0]
                except Exception:  # noqa: BLE001 - the server is away: searches check meanwhile
                    self._pause(wait)
                    wait = min(wait * 2, RETRY_S[1])
                continue
            self._listen_once()

    def _pause(self, seconds: float) -> None:
        select.select([self._wake_read], [], [], seconds)

    def _listen_once(self) -> None:
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            fd = conn.pgconn.socket
        try:
            ready, _, _ = select.select([fd, self._wake_read], [], [], PING_S)
        except (OSError, ValueError):  # the connection was closed meanwhile
            return
        with self._lock:
            if self._closed or self._conn is not conn:
                return
            try:
                if fd in ready:
                    self._drain()
                if time.monotonic() - self._confirmed >= PING_S:
                    conn.execute("SELECT 1")  # a lost peer shows here (notifications read meanwhile are kept)
                    self._confirmed = time.monotonic()
            except psycopg.Error:
                self._lose()
