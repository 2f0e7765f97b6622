"""PostgreSQL memory index (schema `<prefix>_memory_<id>`): files, chunks with a tsvector of the
same analysed tokens as SQLite, vectors in pgvector (on a server without it: a plain column with
an exact top-k in this process, see vectors.py; the schema's creation chose which).

Vectors of every embedding configuration share one `vector` column (no fixed width); each
(vector_key, dims) gets its own partial HNSW index over `vec::vector(dims)` (cosine), made the
first time such vectors are written. Top-k is exact below EXACT_LIMIT vectors (a scan of a few
thousand rows is milliseconds and never misses) and HNSW above it, with `hnsw.ef_search` at
least 2k; when a source filter leaves fewer than k of HNSW's candidates, the exact scan answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...errors import ConflictError
from ..memory_base import ChunkRecord, FileRecord, MemoryStore, VectorFilter
from ..query import TextQuery
from .connection import Migration, PgConnection, clean_text, lock_id, pg_errors, quote
from .fts import Ranker, tsvector_literal
from .notify import GenerationWatch
from .notify import bump_sql as bump_generation
from .vectors import (
    PGVECTOR,
    bump_sql,
    created_mode,
    describe_exact,
    encode,
    exact_search,
    migrations_for,
    placeholder,
    schema_mode,
)

EXACT_LIMIT = 20_000
MAX_EF_SEARCH = 1000

MIGRATIONS = (
    Migration(1, "files, chunks, keyword index, pgvector vectors and the embedding cache", (
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE {s}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE SEQUENCE {s}.generation",
        "CREATE TABLE {s}.files (path TEXT PRIMARY KEY, source TEXT NOT NULL, hash TEXT NOT NULL, "
        "mtime DOUBLE PRECISION NOT NULL, size BIGINT NOT NULL)",
        """CREATE TABLE {s}.chunks (
    id BIGSERIAL PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL,
    weight DOUBLE PRECISION NOT NULL DEFAULT 1, day TEXT, meta TEXT NOT NULL DEFAULT '{}',
    tokens TEXT NOT NULL, tsv TSVECTOR NOT NULL)""",
        "CREATE INDEX chunks_path ON {s}.chunks(path)",
        "CREATE INDEX chunks_tsv ON {s}.chunks USING gin (tsv)",
        "CREATE TABLE {s}.vectors (chunk_id BIGINT PRIMARY KEY REFERENCES {s}.chunks(id) ON DELETE CASCADE, "
        "vector_key TEXT NOT NULL, source TEXT NOT NULL, dims INTEGER NOT NULL, vec vector NOT NULL)",
        # kept inline and uncompressed (floats do not compress): a scan never detoasts a vector
        "ALTER TABLE {s}.vectors ALTER COLUMN vec SET STORAGE MAIN",
        "CREATE INDEX vectors_key ON {s}.vectors(vector_key, source)",
        "CREATE TABLE {s}.vector_indexes (vector_key TEXT NOT NULL, dims INTEGER NOT NULL, index_name TEXT NOT NULL, "
        "PRIMARY KEY (vector_key, dims))",
        "CREATE TABLE {s}.embedding_cache (key TEXT NOT NULL, hash TEXT NOT NULL, vec BYTEA NOT NULL, "
        "PRIMARY KEY (key, hash))",
    )),
    Migration(2, "line vectors: one per line of a chunk (fact-level vector search)", (
        "CREATE TABLE {s}.line_vectors (chunk_id BIGINT NOT NULL REFERENCES {s}.chunks(id) ON DELETE CASCADE, "
        "line INTEGER NOT NULL, vector_key TEXT NOT NULL, vec BYTEA NOT NULL, PRIMARY KEY (chunk_id, line))",
    )),
)

_CHUNK_COLUMNS = "id, path, source, start_line, end_line, hash, text, weight, day, meta"
_CHUNK_COLUMNS_NO_TEXT = _CHUNK_COLUMNS.replace(" text,", " '',")


def _vector_text(vec: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vec, dtype=np.float32).reshape(-1)) + "]"


class PgMemoryStore(PgConnection, MemoryStore):
    migrations = MIGRATIONS
    kind = "memory"
    vector_store = "pgvector"
    vector_index = PGVECTOR  # or EXACT: chosen when the schema is created (vectors.py)
    remote = True

    def __init__(self, url: str, name: str, *, prefix: str = "clawkeep", pool_size: int = 8,
                 connect_timeout_ms: int = 10_000, search_freshness: str = "notify"):
        self.search_freshness = search_freshness  # storage.searchFreshness
        self._watch: GenerationWatch | None = None
        PgConnection.__init__(self, url, prefix=prefix, name=name, pool_size=pool_size,
                              connect_timeout_ms=connect_timeout_ms)

    def _migrate(self) -> None:
        mode, existed = schema_mode(self)
        self.migrations = migrations_for(mode, MIGRATIONS)
        super()._migrate()
        self.vector_index = mode if existed else created_mode(self)
        if self.vector_index != PGVECTOR:
            self.vector_store = "postgresql"
            self.migrations = migrations_for(self.vector_index, MIGRATIONS)

    def _check_guard(self) -> None:
        guard = getattr(self, "fingerprint_guard", None)
        if guard is None:
            return
        # FOR SHARE: a concurrent rebuild (which rewrites the fingerprint) waits for this write
        rows = self._write("SELECT value FROM {s}.meta WHERE key = 'fingerprint' FOR SHARE").fetchall()
        if not rows or rows[0][0] != guard:
            raise ConflictError(f"memory index {self.path} was rebuilt by a writer with another configuration")

    def _bump(self) -> None:
        self._write(bump_sql(self.vector_index))
        # and again once the rows are committed: a search that read the generation this write
        # moved to before then (and the old rows) sees it move again (fts.PostingCache)
        self._after_commit(bump_generation("{s}.generation", self.schema), self._moved)

    def _moved(self, row: Sequence[Any]) -> None:
        if self._watch is not None:  # this process's own write is known at once
            self._watch.wrote(int(row[0]))

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        PgConnection.close(self)

    # --- meta -------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM {s}.meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._write("INSERT INTO {s}.meta(key, value) VALUES (%s, %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, clean_text(value)))
            if key == "generation":
                self._bump()

    def generation(self) -> int:
        rows = self._query("SELECT last_value, is_called FROM {s}.generation")
        return int(rows[0][0]) if rows[0][1] else 0

    def generation_and_fingerprint(self) -> tuple[int, str | None]:
        (last, called, fingerprint), = self._query(
            "SELECT g.last_value, g.is_called, (SELECT value FROM {s}.meta WHERE key = 'fingerprint') "
            "FROM {s}.generation g")
        return (int(last) if called else 0), fingerprint

    # --- files and chunks -------------------------------------------------------
    def files(self, source: str | None = None) -> dict[str, FileRecord]:
        where, params = ("WHERE source = %s", (source,)) if source else ("", ())
        rows = self._query(f"SELECT path, source, hash, mtime, size FROM {{s}}.files {where}", params)
        return {r[0]: FileRecord(*r) for r in rows}

    def _ensure_vector_index(self, vector_key: str, dims: int) -> None:
        known = self._write("SELECT 1 FROM {s}.vector_indexes WHERE vector_key = %s AND dims = %s",
                            (vector_key, dims)).fetchall()
        if known:
            return
        self._write("SELECT pg_advisory_xact_lock(%s)", (lock_id("vector-index", self.schema),))
        count = self._write("SELECT count(*) FROM {s}.vector_indexes").fetchone()[0]
        name = f"vectors_hnsw_{count + 1}"
        self._write(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {{s}}.vectors USING hnsw "
                    f"((vec::vector({int(dims)})) vector_cosine_ops) WHERE vector_key = {_literal(vector_key)} "
                    f"AND dims = {int(dims)}")
        self._write("INSERT INTO {s}.vector_indexes (vector_key, dims, index_name) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING", (vector_key, dims, name))

    def replace_file(self, record: FileRecord, chunks: Sequence[ChunkRecord],
                     vectors: np.ndarray | None, vector_key: str | None) -> None:
        with self.transaction():
            self._check_guard()
            self._write("DELETE FROM {s}.chunks WHERE path = %s", (record.path,))
            with_vectors = vectors is not None and vector_key and len(chunks)
            if with_vectors:
                dims = int(np.asarray(vectors).shape[1])
                if self.vector_index == PGVECTOR:
                    self._ensure_vector_index(vector_key, dims)
            for i, chunk in enumerate(chunks):
                chunk.id = self._write(
                    "INSERT INTO {s}.chunks (path, source, start_line, end_line, hash, text, weight, day, meta, "
                    "tokens, tsv) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (chunk.path, chunk.source, chunk.start_line, chunk.end_line, chunk.hash, clean_text(chunk.text),
                     chunk.weight, chunk.day, json.dumps(chunk.meta, ensure_ascii=False), chunk.tokens or "",
                     tsvector_literal(chunk.tokens or ""))).fetchone()[0]
                if with_vectors:
                    self._write("INSERT INTO {s}.vectors (chunk_id, vector_key, source, dims, vec) "
                                f"VALUES (%s, %s, %s, %s, {placeholder(self.vector_index)})",
                                (chunk.id, vector_key, chunk.source, dims, encode(self.vector_index, vectors[i])))
                if chunk.line_vectors and vector_key:
                    with self._current().cursor() as cur:
                        cur.executemany(f"INSERT INTO {self.s}.line_vectors (chunk_id, line, vector_key, vec) "
                                        "VALUES (%s, %s, %s, %s)",
                                        [(chunk.id, line, vector_key, np.asarray(vec, dtype=np.float32).tobytes())
                                         for line, vec in chunk.line_vectors])
            self._write("INSERT INTO {s}.files (path, source, hash, mtime, size) VALUES (%s, %s, %s, %s, %s) "
                        "ON CONFLICT (path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
                        "mtime = excluded.mtime, size = excluded.size",
                        (record.path, record.source, record.hash, record.mtime, record.size))
            self._bump()

    def touch_file(self, record: FileRecord) -> None:
        with self.transaction():
            self._check_guard()
            self._write("UPDATE {s}.files SET mtime = %s, size = %s WHERE path = %s",
                        (record.mtime, record.size, record.path))

    def remove_file(self, path: str) -> None:
        with self.transaction():
            self._check_guard()
            self._write("DELETE FROM {s}.chunks WHERE path = %s", (path,))
            self._write("DELETE FROM {s}.files WHERE path = %s", (path,))
            self._bump()

    def clear(self) -> None:
        with self.transaction():
            self._write("TRUNCATE {s}.line_vectors, {s}.vectors, {s}.chunks, {s}.files")
            self._bump()

    @staticmethod
    def _chunk(row: tuple) -> ChunkRecord:
        cid, path, source, start, end, digest, text, weight, day, meta = row
        return ChunkRecord(path, source, start, end, text, digest, weight=weight, day=day,
                           meta=json.loads(meta), id=cid)

    def chunks(self, ids: Iterable[int], *, text: bool = True) -> dict[int, ChunkRecord]:
        columns = _CHUNK_COLUMNS if text else _CHUNK_COLUMNS_NO_TEXT
        return {row[0]: self._chunk(row) for row in self._by_ids(f"SELECT {columns} FROM {{s}}.chunks", ids)}

    def read_candidates(self, ids: Iterable[int], *, text: bool, line_ids: Sequence[int] = (),
                        flt: VectorFilter | None = None
                        ) -> tuple[dict[int, ChunkRecord], dict[int, tuple[np.ndarray, np.ndarray]]]:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        lines = list(dict.fromkeys(int(i) for i in line_ids)) if flt is not None else []
        statements = []
        if wanted:
            columns = _CHUNK_COLUMNS if text else _CHUNK_COLUMNS_NO_TEXT
            statements.append((f"SELECT {columns} FROM {{s}}.chunks WHERE id = ANY(%s)", (wanted,)))
        if lines:
            statements.append((_LINE_VECTORS_SQL, (flt.vector_key, lines)))
        found = self._queries(statements)
        chunks = {row[0]: self._chunk(row) for row in found.pop(0)} if wanted else {}
        return chunks, (_grouped_line_vectors(found[0]) if lines else {})

    def chunk_texts(self, ids: Iterable[int]) -> dict[int, str]:
        return dict(self._by_ids("SELECT id, text FROM {s}.chunks", ids))

    def _by_ids(self, select: str, ids: Iterable[int]) -> list[Any]:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        return self._query(f"{select} WHERE id = ANY(%s)", (wanted,)) if wanted else []

    def chunk_count(self) -> int:
        return int(self._query("SELECT count(*) FROM {s}.chunks")[0][0])

    # --- search -----------------------------------------------------------------
    def _ranker(self) -> Ranker:
        ranker = self.__dict__.get("_text_ranker")
        if ranker is None:
            # N: a count of the chunks (kept, re-read every few minutes; it moves only on reindexing)
            # generation: the matches searched are kept in memory while it stays (fts.PostingCache);
            # a sources scope takes them when no file (each chunk's file) is outside it
            if self.search_freshness == "notify" and self._watch is None:  # started by the first search
                self._watch = GenerationWatch(self.url, self.schema, _GENERATION_SQL.replace("{s}", self.s))
            ranker = self.__dict__["_text_ranker"] = Ranker(
                "{s}.chunks", self._query, "SELECT count(*) FROM {s}.chunks", total_kept=True,
                generation_sql=_GENERATION_SQL, scope_sql=_ALL_SOURCES_SQL, watch=self._watch)
        return ranker

    def keyword_search(self, query: TextQuery, *, sources: Sequence[str], limit: int,
                       rows: dict[int, ChunkRecord] | None = None) -> list[tuple[int, float, str]]:
        # sources: nearly every chunk is in a searched one, so not a narrowing scope; the
        # chunks come along when the candidates are few (`rows`: the statement that reads them saved)
        ranked = self._ranker().rank(query, limit, " AND m.source = ANY(%s)", (list(sources),),
                                     _ALONG if rows is not None else None, narrow=False)
        if rows is not None and ranked.extra is not None:
            rows.update((cid, self._chunk((cid, *ranked.extra[cid]))) for cid, _, _ in ranked.rows)
        return ranked.rows

    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        return self._ranker().document_frequency(tokens)

    # --- vectors ----------------------------------------------------------------
    def _dims(self, flt: VectorFilter) -> int | None:
        rows = self._query("SELECT dims FROM {s}.vectors WHERE vector_key = %s AND source = ANY(%s) LIMIT 1",
                           (flt.vector_key, list(flt.sources)))
        return int(rows[0][0]) if rows else None

    def vector_search(self, query_vec: np.ndarray, k: int, flt: VectorFilter, *,
                      total: int | None = None) -> list[tuple[int, float]]:
        if self.vector_index != PGVECTOR:  # the query's own width: no round trip for the stored one
            return exact_search(self, query_vec, k, flt.vector_key, flt.sources, int(np.size(query_vec)))
        if total is None:
            dims = self._dims(flt)
            total = self.vector_count(flt) if dims is not None else 0
        else:  # vectors of one key share the query's width (one embedding configuration)
            dims = int(np.size(query_vec)) if total else None
        if dims is None or k <= 0:
            return []
        vec = _vector_text(query_vec)
        if total > EXACT_LIMIT and k <= MAX_EF_SEARCH:
            found = self._hnsw(vec, dims, k, flt)
            if len(found) >= min(k, total):
                return found
        rows = self._query("SELECT chunk_id, 1 - (vec <=> %s::vector) AS sim FROM {s}.vectors "
                           "WHERE vector_key = %s AND source = ANY(%s) ORDER BY vec <=> %s::vector, chunk_id LIMIT %s",
                           (vec, flt.vector_key, list(flt.sources), vec, int(k)))
        return [(int(r[0]), float(r[1])) for r in rows]

    def _hnsw(self, vec: str, dims: int, k: int, flt: VectorFilter) -> list[tuple[int, float]]:
        cast = f"vector({int(dims)})"
        with self.transaction():  # SET LOCAL lives as long as this transaction
            self._write(f"SET LOCAL hnsw.ef_search = {max(2 * k, 100) if 2 * k <= MAX_EF_SEARCH else MAX_EF_SEARCH}")
            rows = self._write(
                f"SELECT chunk_id, 1 - ((vec::{cast}) <=> %s::{cast}) AS sim, source FROM {{s}}.vectors "
                # literals, not parameters: the planner must see the partial index's own predicate
                f"WHERE vector_key = {_literal(flt.vector_key)} AND dims = {int(dims)} "
                f"ORDER BY (vec::{cast}) <=> %s::{cast} LIMIT %s",
                (vec, vec, max(2 * k, 100))).fetchall()
        wanted = set(flt.sources)
        return [(int(r[0]), float(r[1])) for r in rows if r[2] in wanted][:k]

    def line_vectors(self, chunk_ids: Sequence[int], flt: VectorFilter) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        wanted = list(dict.fromkeys(int(i) for i in chunk_ids))
        if not wanted:
            return {}
        return _grouped_line_vectors(self._query(_LINE_VECTORS_SQL, (flt.vector_key, wanted)))

    def vector_count(self, flt: VectorFilter) -> int:
        rows = self._query("SELECT count(*) FROM {s}.vectors WHERE vector_key = %s AND source = ANY(%s)",
                           (flt.vector_key, list(flt.sources)))
        return int(rows[0][0])

    def describe_vectors(self, flt: VectorFilter) -> dict[str, Any]:
        if self.vector_index != PGVECTOR:
            return describe_exact(self, flt.vector_key, self._dims(flt), self.vector_count(flt))
        version = self._query("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        return {"backend": "pgvector", "vectors": self.vector_count(flt), "dims": self._dims(flt),
                "version": version[0][0] if version else None, "index": "hnsw (cosine)",
                "exactBelow": EXACT_LIMIT}

    # --- embedding cache --------------------------------------------------------
    def cached_embeddings(self, key: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(hashes))
        if not unique:
            return {}
        rows = self._query("SELECT hash, vec FROM {s}.embedding_cache WHERE key = %s AND hash = ANY(%s)",
                           (key, unique))
        return {digest: np.frombuffer(bytes(blob), dtype=np.float32) for digest, blob in rows}

    def cache_embeddings(self, key: str, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        with self.transaction():
            conn = self._current()
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self.s}.embedding_cache (key, hash, vec) VALUES (%s, %s, %s) "
                    "ON CONFLICT (key, hash) DO UPDATE SET vec = excluded.vec",
                    [(key, digest, np.asarray(vec, dtype=np.float32).tobytes()) for digest, vec in items.items()])


_GENERATION_SQL = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {s}.generation"
_ALL_SOURCES_SQL = "NOT EXISTS (SELECT 1 FROM {s}.files WHERE source <> ALL(%s))"
_LINE_VECTORS_SQL = ("SELECT chunk_id, line, vec FROM {s}.line_vectors WHERE vector_key = %s AND chunk_id = ANY(%s) "
                     "ORDER BY chunk_id, line")
# a chunk's columns after its id, read with the keyword candidates (fts.Ranker's `with_rows`)
_ALONG = (", ".join("i." + c.strip() for c in _CHUNK_COLUMNS.split(",")[1:]), "")


def _grouped_line_vectors(rows: Iterable[Any]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    grouped: dict[int, tuple[list[int], list[bytes]]] = {}
    for cid, line, blob in rows:
        lines, blobs = grouped.setdefault(int(cid), ([], []))
        lines.append(int(line))
        blobs.append(bytes(blob))
    return {cid: (np.asarray(lines, dtype=np.int64),
                  np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(lines), -1))
            for cid, (lines, blobs) in grouped.items()}


def _literal(text: str) -> str:
    """A SQL string literal (index predicates cannot take parameters)."""
    return "'" + text.replace("'", "''") + "'"


__all__ = ["PgMemoryStore", "pg_errors"]
