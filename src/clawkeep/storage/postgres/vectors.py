"""Where a PostgreSQL memory index keeps its vectors: pgvector (HNSW, see memory.py) when the
server has the extension, else a plain column with an exact top-k computed in this process.

The mode is chosen once, when a schema is created: `CREATE EXTENSION vector` is tried and, if
the server has no pgvector (not installed, or the role may not create it), the schema gets a
`bytea` column of float32 instead. The column's type remembers the choice, so a schema made
with pgvector stays pgvector and one made without stays exact even if pgvector arrives later.

Exact mode: each process holds the vectors of a (schema, vector_key, dims) as one unit-length
matrix and answers a top-k with one matrix-vector product. A transactional change counter (a
one-row table bumped in the same statement as the index generation) tells whether another
writer changed the vectors; the counter is read before the rows, so a cached matrix is never
older than the counter it is filed under. A refresh fetches only the vectors not held yet.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .connection import Migration

try:
    from psycopg import Error as DriverError
except ImportError:  # pragma: no cover - the driver is checked before any store opens
    DriverError = Exception  # type: ignore[assignment,misc]

PGVECTOR = "pgvector-hnsw"
EXACT = "exact (no pgvector)"

_MODES: dict[tuple[str, str], str] = {}  # (url, schema) -> mode, checked once per process
_MODES_LOCK = threading.Lock()


# --- the mode of a schema -------------------------------------------------------------------
def schema_mode(store: Any) -> tuple[str, bool]:
    """(PGVECTOR or EXACT, whether the schema already has its vectors table) for `store`: the
    type of an existing vectors column, else whether pgvector can be had on this server
    (creating the extension if the role may)."""
    with _MODES_LOCK:
        known = _MODES.get((store.url, store.schema))
    if known is not None:
        return known, True
    found = _column_mode(store)
    if found is not None:
        return found, True
    return (PGVECTOR if _pgvector_available(store) else EXACT), False


def created_mode(store: Any) -> str:
    """The mode of the schema as created (another process may have created it first), kept
    for the rest of the process."""
    mode = _column_mode(store)
    assert mode is not None, "the vectors table exists once migrated"
    with _MODES_LOCK:
        _MODES[(store.url, store.schema)] = mode
    return mode


def _column_mode(store: Any) -> str | None:
    rows = store._query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                        "AND attname = 'vec' AND NOT attisdropped", (f"{store.s}.vectors",))
    if not rows:
        return None
    mode = EXACT if rows[0][0] == "bytea" else PGVECTOR
    with _MODES_LOCK:
        _MODES[(store.url, store.schema)] = mode
    return mode


def _pgvector_available(store: Any) -> bool:
    installed, available = store._query(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'), "
        "EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')")[0]
    if installed:
        return True
    if not available:
        return False
    try:  # its own transaction: a refusal (no permission) must not abort the migration's
        with store.db.pool.connection() as conn, conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return True
    except DriverError:
        return False


def migrations_for(mode: str, migrations: Sequence[Migration]) -> tuple[Migration, ...]:
    """The memory index's migrations for `mode`: in exact mode, pgvector's statements become a
    plain float32 column and the change counter of the in-process cache."""
    if mode == PGVECTOR:
        return tuple(migrations)
    first, *rest = migrations
    statements = []
    swapped = False
    for statement in first.statements:
        if statement.startswith("CREATE EXTENSION"):
            continue
        if " vec vector NOT NULL" in statement:
            statement = statement.replace(" vec vector NOT NULL", " vec BYTEA NOT NULL")
            swapped = True
        statements.append(statement)
    assert swapped, "migration 1 no longer creates the vectors column this module expects"
    statements += ["CREATE TABLE {s}.vector_changes (n BIGINT NOT NULL)",
                   "INSERT INTO {s}.vector_changes (n) VALUES (0)"]
    name = first.name.replace("pgvector vectors", "float32 vectors (no pgvector)")
    return (Migration(first.version, name, tuple(statements)), *rest)


def bump_sql(mode: str) -> str:
    """One statement that moves the index generation (and, in exact mode, the change counter,
    inside the writer's transaction so readers see it together with the rows)."""
    if mode == PGVECTOR:
        return "SELECT nextval('{s}.generation')"
    return "WITH c AS (UPDATE {s}.vector_changes SET n = n + 1) SELECT nextval('{s}.generation')"


# --- writing --------------------------------------------------------------------------------
def placeholder(mode: str) -> str:
    return "%s::vector" if mode == PGVECTOR else "%s"


def encode(mode: str, vec: np.ndarray) -> str | bytes:
    flat = np.asarray(vec, dtype=np.float32).reshape(-1)
    if mode == PGVECTOR:
        return "[" + ",".join(repr(float(x)) for x in flat) + "]"
    return flat.tobytes()


# --- exact top-k ----------------------------------------------------------------------------
@dataclass
class _Matrix:
    counter: tuple[int, int]  # (oid of the counter table, its value)
    ids: np.ndarray  # int64, ascending
    sources: np.ndarray  # int16 codes into source_names
    source_names: list[str]
    unit: np.ndarray  # float32 rows of unit length (a zero vector stays zero)


_CACHE: dict[tuple[str, str, str, int], _Matrix] = {}
_CACHE_LOCK = threading.Lock()


def exact_search(store: Any, query_vec: np.ndarray, k: int, vector_key: str, sources: Sequence[str],
                 dims: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the k nearest stored vectors, ties by chunk id."""
    matrix = _current_matrix(store, vector_key, dims)
    allowed = set(sources)
    wanted = [i for i, name in enumerate(matrix.source_names) if name in allowed]
    if k <= 0 or not len(matrix.ids) or not wanted:
        return []
    query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(query))
    sims = matrix.unit @ (query / norm if norm else query)
    if len(wanted) < len(matrix.source_names):
        sims[~np.isin(matrix.sources, wanted)] = -np.inf
    k = min(k, int(np.isfinite(sims).sum()))
    if k <= 0:
        return []
    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    top = top[np.lexsort((matrix.ids[top], -sims[top]))]  # most similar first, then by chunk id
    return [(int(matrix.ids[i]), float(sims[i])) for i in top]


def cached_count(store: Any, vector_key: str, dims: int) -> int:
    with _CACHE_LOCK:
        found = _CACHE.get((store.url, store.schema, vector_key, dims))
    return 0 if found is None else len(found.ids)


def _current_matrix(store: Any, vector_key: str, dims: int) -> _Matrix:
    key = (store.url, store.schema, vector_key, dims)
    # read before the rows (see the module doc); the table's oid tells a dropped and re-made schema apart
    counter = tuple(int(v) for v in store._query("SELECT tableoid, n FROM {s}.vector_changes")[0])
    with _CACHE_LOCK:
        held = _CACHE.get(key)
    if held is not None and held.counter == counter:
        return held
    fresh = _refresh(store, vector_key, dims, counter, held)
    with _CACHE_LOCK:
        current = _CACHE.get(key)
        if current is None or current.counter[0] != fresh.counter[0] or current.counter <= fresh.counter:
            _CACHE[key] = fresh
    return fresh


def _refresh(store: Any, vector_key: str, dims: int, counter: tuple[int, int], held: _Matrix | None) -> _Matrix:
    with store._conn() as conn, conn.cursor(binary=True) as cur:
        cur.execute(f"SELECT chunk_id, source FROM {store.s}.vectors WHERE vector_key = %s AND dims = %s "
                    "ORDER BY chunk_id", (vector_key, dims))
        listed = cur.fetchall()
        ids = np.fromiter((r[0] for r in listed), dtype=np.int64, count=len(listed))
        names = sorted({r[1] for r in listed})
        codes = {name: i for i, name in enumerate(names)}
        sources = np.fromiter((codes[r[1]] for r in listed), dtype=np.int16, count=len(listed))
        held_rows = _rows_held(held, ids)
        missing = ids[held_rows < 0]
        fetched: dict[int, bytes] = {}
        if len(missing):
            if len(missing) > len(ids) // 2:  # most are new: one scan beats a long id list
                cur.execute(f"SELECT chunk_id, vec FROM {store.s}.vectors WHERE vector_key = %s AND dims = %s",
                            (vector_key, dims))
            else:
                cur.execute(f"SELECT chunk_id, vec FROM {store.s}.vectors WHERE chunk_id = ANY(%s)",
                            (missing.tolist(),))
            fetched = {int(cid): bytes(blob) for cid, blob in cur.fetchall()}
    unit = np.zeros((len(ids), dims), dtype=np.float32)
    have = held_rows >= 0
    if held is not None and have.any():
        unit[have] = held.unit[held_rows[have]]
    new_rows = np.flatnonzero(~have)
    keep = np.ones(len(ids), dtype=bool)
    for row in new_rows:
        blob = fetched.get(int(ids[row]))
        if blob is None or len(blob) != 4 * dims:  # deleted since the listing: the counter moved, next call refreshes
            keep[row] = False
            continue
        unit[row] = np.frombuffer(blob, dtype=np.float32)
    if len(new_rows):
        block = unit[new_rows]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        unit[new_rows] = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
    if not keep.all():
        ids, sources, unit = ids[keep], sources[keep], unit[keep]
    return _Matrix(counter, ids, sources, names, unit)


def _rows_held(held: _Matrix | None, ids: np.ndarray) -> np.ndarray:
    """For each id, its row in the held matrix, or -1."""
    if held is None or not len(held.ids) or not len(ids):
        return np.full(len(ids), -1, dtype=np.int64)
    pos = np.searchsorted(held.ids, ids).clip(0, len(held.ids) - 1)
    return np.where(held.ids[pos] == ids, pos, -1)


def describe_exact(store: Any, vector_key: str, dims: int | None, count: int) -> dict[str, Any]:
    return {"backend": "postgresql", "index": EXACT, "vectors": count, "dims": dims,
            "cachedInProcess": cached_count(store, vector_key, dims) if dims else 0}


__all__ = ["EXACT", "PGVECTOR", "bump_sql", "created_mode", "describe_exact", "encode", "exact_search",
           "migrations_for", "placeholder", "schema_mode"]
