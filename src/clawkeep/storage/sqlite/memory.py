"""SQLite memory index: `agents/<id>/memory.sqlite` (WAL), vectors as float32 BLOBs.

Vector top-k runs in process with numpy by default (measured ~4.5x faster than sqlite-vec at
100k×384 here, and stdlib sqlite3 on this Python cannot load extensions anyway); `vector_store =
"sqlite-vec"` answers from a vec0 mirror instead (vectors.py).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...deferred import deferred_import
from ...errors import ConflictError
from ..memory_base import ChunkRecord, FileRecord, MemoryStore, VectorFilter
from ..query import TextQuery
from . import bm25
from .connection import SqliteConnection, storage_error
from .fts import match_expression, vocab_sql
from .migrations import Migration
from .vectors import vector_backend

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: a keyword search never loads vectors

# numpy loads with the first vector operation (vectors.py defers it too): a keyword-only
# search in a short-lived process never pays for it.

# Released migrations are never edited: a schema change is a new entry at the end.
_INITIAL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS files (
        path TEXT PRIMARY KEY, source TEXT NOT NULL, hash TEXT NOT NULL, mtime REAL NOT NULL, size INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, source TEXT NOT NULL,
        start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL,
        weight REAL NOT NULL DEFAULT 1, day TEXT, meta TEXT NOT NULL DEFAULT '{}')""",
    "CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(tokens, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts_vocab USING fts5vocab(chunks_fts, 'row')",
    """CREATE TABLE IF NOT EXISTS vectors (
        chunk_id INTEGER PRIMARY KEY, vector_key TEXT NOT NULL, source TEXT NOT NULL, vec BLOB NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS embedding_cache (
        key TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (key, hash))""",
)
_LINE_VECTORS = (
    """CREATE TABLE IF NOT EXISTS line_vectors (
        chunk_id INTEGER NOT NULL, line INTEGER NOT NULL, vector_key TEXT NOT NULL, vec BLOB NOT NULL,
        PRIMARY KEY (chunk_id, line))""",
)
MIGRATIONS = (Migration(1, "files, chunks, keyword index, vectors and the embedding cache", _INITIAL),
              Migration(2, "line vectors: one per line of a chunk (fact-level vector search)", _LINE_VECTORS))

_CHUNK_COLUMNS = "id, path, source, start_line, end_line, hash, text, weight, day, meta"
_CHUNK_COLUMNS_NO_TEXT = _CHUNK_COLUMNS.replace(" text,", " '',")
# The keyword ranking of every chunk (bm25 of each match, then the best `limit` with their tokens);
# `{rows}` restricts it to a range of chunk ids.
_RANKED = ("SELECT t.id, t.score, f.tokens FROM (SELECT rowid AS id, bm25(chunks_fts) AS score FROM chunks_fts "
           "WHERE chunks_fts MATCH ? {rows} ORDER BY 2, 1 LIMIT ?) t JOIN chunks_fts f ON f.rowid = t.id "
           "ORDER BY t.score, t.id")
# From this many chunks on, a keyword ranking runs as two halves of the chunk ids at once, one on a
# second connection in another thread (SQLite leaves the GIL while it ranks): bm25 of every match is
# the cost (10k chunks: 2,000-7,000 matches, ~1.5 µs each), and the halves' best rows merged are
# exactly the whole ranking's (idf and average length are the table's, whatever rows are ranked).
SPLIT_FROM_CHUNKS = 4000
MMAP_BYTES = 256 << 20  # the memory index is read through a map of at most this much (see _configure)
_HALVES: list[Any] = []  # [(pid, executor)]: a forked child starts its own thread
_HALVES_LOCK = threading.Lock()


def _halves_pool() -> ThreadPoolExecutor:
    with _HALVES_LOCK:
        if not _HALVES or _HALVES[0][0] != os.getpid():
            _HALVES[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="clawkeep-fts"))]
        return _HALVES[0][1]


# the per-connection table of each token's (row, position) instances the in-memory ranking reads
_INSTANCES_TABLE = ("CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_fts_instances "
                    "USING fts5vocab(main, chunks_fts, instance)")


def _meta(rows: Any, key: str) -> str | None:
    """A meta value read through `rows` (this store's connection or its second one)."""
    found = rows("SELECT value FROM meta WHERE key = ?", (key,))
    return found[0][0] if found else None


def _generation(rows: Any) -> str | None:
    """The index's change counter (meta 'generation'): every write of chunks moves it."""
    return _meta(rows, "generation")


class SqliteMemoryStore(SqliteConnection, MemoryStore):
    """`vector_store`: "numpy" (brute force in process) or "sqlite-vec" (a vec0 mirror in a
    sidecar file beside the index); checked when vectors are first searched."""

    migrations = MIGRATIONS

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL", busy_timeout_ms: int = 30_000,
                 vector_store: str = "numpy"):
        # The index can always be rebuilt from Markdown, so it does not pay for FULL fsyncs.
        self.vector_store = vector_store
        self._busy_timeout_ms = busy_timeout_ms
        self._reader: sqlite3.Connection | None = None  # the second connection of a split ranking
        self._reader_lock = threading.Lock()
        self._closing = threading.Event()  # stops a background posting-list load
        SqliteConnection.__init__(self, path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)

    def close(self) -> None:
        self._closing.set()
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        SqliteConnection.close(self)

    def _check_guard(self) -> None:
        """Inside a write: refuse if another writer switched the index to another configuration."""
        guard = getattr(self, "fingerprint_guard", None)
        if guard is None:
            return
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        if row is None or row[0] != guard:
            raise ConflictError(f"memory index {self.path} was rebuilt by a writer with another configuration")

    _rows = SqliteConnection._query

    def _configure(self, conn: sqlite3.Connection) -> None:
        # Reads through a memory map: a search reads ~100 chunk rows (text and tokens) spread over
        # the file, and copying each page through SQLite's 2 MB cache cost ≈25% more (90 random
        # rows of a 10k-chunk index: 1.81 → 1.33 ms). Only for the index, which Markdown rebuilds:
        # an I/O error on a mapped page cannot be handled as an error, so the transcripts keep reads.
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    def _bump(self) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    # --- meta -------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        return _meta(self._rows, key)

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    # --- files and chunks -------------------------------------------------------
    def files(self, source: str | None = None) -> dict[str, FileRecord]:
        """Every indexed file's record, read again only after a commit: the staleness check
        before each search asks for all of them (1,700 rows took 2-3 ms to decode)."""
        def read() -> dict[str, FileRecord]:
            where, params = ("WHERE source = ?", (source,)) if source else ("", ())
            rows = self._rows(f"SELECT path, source, hash, mtime, size FROM files {where}", params)
            return {r[0]: FileRecord(*r) for r in rows}

        return dict(self._committed_read(("files", source), read))

    def _delete_chunks(self, path: str) -> None:
        ids = [r[0] for r in self._conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        for start in range(0, len(ids), 500):
            batch = ids[start:start + 500]
            marks = ", ".join("?" for _ in batch)
            self._conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", batch)
            self._conn.execute(f"DELETE FROM vectors WHERE chunk_id IN ({marks})", batch)
            self._conn.execute(f"DELETE FROM line_vectors WHERE chunk_id IN ({marks})", batch)
        self._conn.execute("DELETE FROM chunks WHERE path = ?", (path,))

    def replace_file(self, record: FileRecord, chunks: Sequence[ChunkRecord],
                     vectors: np.ndarray | None, vector_key: str | None) -> None:
        with self.transaction():
            self._check_guard()
            self._delete_chunks(record.path)
            for i, chunk in enumerate(chunks):
                cursor = self._conn.execute(
                    "INSERT INTO chunks (path, source, start_line, end_line, hash, text, weight, day, meta) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (chunk.path, chunk.source, chunk.start_line, chunk.end_line, chunk.hash, chunk.text,
                     chunk.weight, chunk.day, json.dumps(chunk.meta, ensure_ascii=False)),
                )
                chunk.id = cursor.lastrowid
                self._conn.execute("INSERT INTO chunks_fts(rowid, tokens) VALUES (?, ?)", (chunk.id, chunk.tokens))
                if vectors is not None and vector_key:
                    self._conn.execute(
                        "INSERT INTO vectors(chunk_id, vector_key, source, vec) VALUES (?, ?, ?, ?)",
                        (chunk.id, vector_key, chunk.source, np.asarray(vectors[i], dtype=np.float32).tobytes()),
                    )
                if chunk.line_vectors and vector_key:
                    self._conn.executemany(
                        "INSERT INTO line_vectors(chunk_id, line, vector_key, vec) VALUES (?, ?, ?, ?)",
                        [(chunk.id, line, vector_key, np.asarray(vec, dtype=np.float32).tobytes())
                         for line, vec in chunk.line_vectors])
            self._conn.execute(
                "INSERT OR REPLACE INTO files(path, source, hash, mtime, size) VALUES (?, ?, ?, ?, ?)",
                (record.path, record.source, record.hash, record.mtime, record.size),
            )
            self._bump()

    def touch_file(self, record: FileRecord) -> None:
        with self.transaction():
            self._check_guard()
            self._conn.execute("UPDATE files SET mtime = ?, size = ? WHERE path = ?",
                               (record.mtime, record.size, record.path))

    def remove_file(self, path: str) -> None:
        with self.transaction():
            self._check_guard()
            self._delete_chunks(path)
            self._conn.execute("DELETE FROM files WHERE path = ?", (path,))
            self._bump()

    def clear(self) -> None:
        with self.transaction():
            for table in ("chunks_fts", "vectors", "line_vectors", "chunks", "files"):
                self._conn.execute(f"DELETE FROM {table}")
            self._bump()

    @staticmethod
    def _chunk(row: tuple) -> ChunkRecord:
        cid, path, source, start, end, digest, text, weight, day, meta = row
        return ChunkRecord(path, source, start, end, text, digest, weight=weight, day=day,
                           meta=json.loads(meta) if meta != "{}" else {}, id=cid)  # most notes: no meta

    def chunks(self, ids: Iterable[int], *, text: bool = True) -> dict[int, ChunkRecord]:
        columns = _CHUNK_COLUMNS if text else _CHUNK_COLUMNS_NO_TEXT
        return {row[0]: self._chunk(row) for row in self._by_ids(f"SELECT {columns} FROM chunks WHERE id IN", ids)}

    def chunk_texts(self, ids: Iterable[int]) -> dict[int, str]:
        return dict(self._by_ids("SELECT id, text FROM chunks WHERE id IN", ids))

    def _by_ids(self, select: str, ids: Iterable[int]) -> list[Any]:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        rows: list[Any] = []
        for start in range(0, len(wanted), 500):
            batch = wanted[start:start + 500]
            rows += self._rows(f"{select} ({', '.join('?' for _ in batch)})", batch)
        return rows

    def chunk_count(self) -> int:
        return self._rows("SELECT count(*) FROM chunks")[0][0]

    # --- search -----------------------------------------------------------------
    def keyword_search(self, query: TextQuery, *, sources: Sequence[str], limit: int,
                       rows: dict[int, ChunkRecord] | None = None) -> list[tuple[int, float, str]]:
        """(chunk id, bm25 rank, analysed tokens) of the best `limit` matches, best first, ties
        by id (the order FTS5's own `ORDER BY rank` gives)."""
        if set(self._sources()) <= set(sources):
            # every chunk qualifies: rank the matches alone (no row of chunks read per match) and
            # read the tokens of the kept ones only — bm25 over 3,000 matches is the cost here
            ranked = self._ranked_from_memory(query, int(limit))
            if ranked is not None:
                return ranked
            expression, split = match_expression(query), self._split_id()
            if split is not None:
                return self._ranked_in_halves(expression, split, int(limit))
            return self._rows(_RANKED.format(rows=""), [expression, int(limit)])
        marks = ", ".join("?" for _ in sources)
        return self._rows(
            "SELECT f.rowid, f.rank, f.tokens FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
            f"WHERE chunks_fts MATCH ? AND c.source IN ({marks}) ORDER BY f.rank LIMIT ?",
            [match_expression(query), *sources, int(limit)],
        )

    def _ranked_from_memory(self, query: TextQuery, limit: int) -> list[tuple[int, float, str]] | None:
        """The same rows as `_RANKED`, scored from the posting lists this process keeps (`bm25.py`);
        None when FTS5 should rank (a phrase or prefix term, the first search after a commit)."""
        phrases = bm25.phrases(query)
        if phrases is None:
            return None
        with self._lock:  # no commit of this process between the token check and the reads
            if self._depth or self._conn.in_transaction:  # uncommitted rows the cache does not hold
                return None
            cache = self._committed_read("bm25", lambda: bm25.Bm25Cache("chunks_fts", "temp.chunks_fts_instances",
                                                                         _generation))
            if not cache.wanted():
                return None
            if not self.__dict__.get("_instances_table"):  # once per connection, not per search
                self._rows(_INSTANCES_TABLE)
                self._instances_table = True
            best = cache.top(self._rows, phrases, limit)
            if cache.take_warm_start(self._warm_allowed):
                threading.Thread(target=cache.warm, args=(self._snapshot, self._closing), daemon=True,
                                 name="clawkeep-bm25-warm").start()
            if not best:
                return best
            marks = ", ".join("?" for _ in best)
            # the tokens straight from FTS5's content table (`chunks_fts_content`, column c0: its
            # documented layout for a table that stores its own content) — through the virtual
            # table a lookup by rowid cost twice as much (96 rows: 0.40 → 0.20 ms)
            stored = dict(self._rows(f"SELECT id, c0 FROM chunks_fts_content WHERE id IN ({marks})",
                                     [d for d, _ in best]))
        return [(d, score, stored[d]) for d, score in best if d in stored]

    def _split_id(self) -> int | None:
        """The median chunk id when a ranking is worth splitting in two (SPLIT_FROM_CHUNKS, and
        a second core to run the other half on); read again after a commit."""
        if (os.cpu_count() or 1) < 2:
            return None

        def read() -> int | None:
            count = self.chunk_count()
            if count < SPLIT_FROM_CHUNKS:
                return None
            return self._rows("SELECT id FROM chunks ORDER BY id LIMIT 1 OFFSET ?", (count // 2,))[0][0]

        return self._committed_read("split", read)

    def _ranked_in_halves(self, expression: str, split: int, limit: int) -> list[tuple[int, float, str]]:
        """`_RANKED` over the chunk ids below `split` here and the others on the second
        connection at the same time, merged: the same rows as one ranking of all of them."""
        with self._lock:  # no write of this process commits between the two halves
            if self._depth or self._conn.in_transaction:  # rows the other connection cannot see yet
                return self._rows(_RANKED.format(rows=""), [expression, limit])
            upper = _halves_pool().submit(self._reader_rows, _RANKED.format(rows="AND rowid >= ?"),
                                          [expression, split, limit])
            rows = self._rows(_RANKED.format(rows="AND rowid < ?"), [expression, split, limit])
            rows += upper.result()
        rows.sort(key=lambda row: (row[1], row[0]))
        return rows[:limit]

    def _warm_allowed(self) -> bool:
        """At most one load ahead per WARM_EVERY_S: an index that commits often (a gateway
        indexing transcripts every few seconds) would otherwise spend a core re-loading the same
        lists; after the first, words are loaded when a search asks for them."""
        now = time.monotonic()
        last = self.__dict__.get("_warmed_at")
        if last is not None and now - last < bm25.WARM_EVERY_S:
            return False
        self._warmed_at = now
        return True

    def _reader_connection(self) -> sqlite3.Connection:
        """The second, read-only connection (call with `_reader_lock` held)."""
        if self._reader is None:
            if self._closing.is_set():
                raise sqlite3.ProgrammingError("the memory index is closed")
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                     timeout=self._busy_timeout_ms / 1000)
            self._configure(reader)
            reader.execute(_INSTANCES_TABLE)  # before query_only, which refuses temp tables too
            reader.execute("PRAGMA query_only = ON")
            self._reader = reader
        return self._reader

    def _reader_rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._reader_lock:
            try:
                return self._reader_connection().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(self.path, exc) from None

    def _snapshot(self, work: Any) -> Any:
        """`work(rows)` in one read transaction of the second connection: every query it makes
        sees the same committed state (raises sqlite3.Error once the store is closed)."""
        with self._reader_lock:
            reader = self._reader_connection()
            reader.execute("BEGIN")
            try:
                return work(lambda sql, params=(): reader.execute(sql, params).fetchall())
            finally:
                reader.execute("COMMIT")

    def _sources(self) -> tuple[str, ...]:
        """The sources the index holds chunks of (read again after a commit)."""
        return self._committed_read("sources", lambda: tuple(
            r[0] for r in self._rows("SELECT DISTINCT source FROM chunks")))

    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        unique = list(dict.fromkeys(tokens))
        if not unique:
            return {}

        def read() -> dict[str, int]:
            found = dict(self._rows(vocab_sql("chunks_fts_vocab", len(unique)), unique))
            return {t: found.get(t, 0) for t in unique}

        return dict(self._committed_read(("df", tuple(unique)), read))

    # --- vectors ----------------------------------------------------------------
    def vector_search(self, query_vec: np.ndarray, k: int, flt: VectorFilter, *,
                      total: int | None = None) -> list[tuple[int, float]]:
        ids, sims = vector_backend(self, flt).top_k(query_vec, k)
        return [(int(i), float(s)) for i, s in zip(ids, sims, strict=True)]

    def line_vectors(self, chunk_ids: Sequence[int], flt: VectorFilter) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        wanted = list(dict.fromkeys(int(i) for i in chunk_ids))
        grouped: dict[int, tuple[list[int], list[bytes]]] = {}
        for start in range(0, len(wanted), 500):
            batch = wanted[start:start + 500]
            marks = ", ".join("?" for _ in batch)
            for cid, line, blob in self._rows(
                    f"SELECT chunk_id, line, vec FROM line_vectors WHERE vector_key = ? AND chunk_id IN ({marks}) "
                    "ORDER BY chunk_id, line", [flt.vector_key, *batch]):
                lines, blobs = grouped.setdefault(cid, ([], []))
                lines.append(line)
                blobs.append(blob)
        return {cid: (np.asarray(lines, dtype=np.int64),
                      np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(lines), -1))
                for cid, (lines, blobs) in grouped.items()}

    def vector_count(self, flt: VectorFilter) -> int:
        return len(vector_backend(self, flt))

    def describe_vectors(self, flt: VectorFilter) -> dict[str, Any]:
        return vector_backend(self, flt).describe()

    def vectors(self, vector_key: str, sources: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, float32 matrix) of every stored vector made with `vector_key` (what the
        top-k backends load; SQLite only)."""
        marks = ", ".join("?" for _ in sources)
        rows = self._rows(f"SELECT chunk_id, vec FROM vectors WHERE vector_key = ? AND source IN ({marks})",
                          [vector_key, *sources])
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return ids, matrix

    # --- embedding cache --------------------------------------------------------
    def cached_embeddings(self, key: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            batch = unique[start:start + 500]
            marks = ", ".join("?" for _ in batch)
            for digest, blob in self._rows(
                f"SELECT hash, vec FROM embedding_cache WHERE key = ? AND hash IN ({marks})", [key, *batch]
            ):
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cache_embeddings(self, key: str, items: dict[str, np.ndarray]) -> None:
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache(key, hash, vec) VALUES (?, ?, ?)",
                [(key, digest, np.asarray(vec, dtype=np.float32).tobytes()) for digest, vec in items.items()],
            )
