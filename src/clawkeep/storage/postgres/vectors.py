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
    statements += ["CREATE INDEX vectors_listing ON {s}.vectors(vector_key, dims, source, chunk_id)",  # index-only
                   "CREATE TABLE {s}.vector_changes (n BIGINT NOT NULL)",
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
    if k <= 0 or not dims:
        return []
    matrix = _current_matrix(store, vector_key, dims)
    allowed = set(sources)
    wanted = [i for i, name in enumerate(matrix.source_names) if name in allowed]
    if not len(matrix.ids) or not wanted:
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


FETCH_BATCH = 20_000  # vectors per round trip of a full load (one bytea of ~30 MB at 384 dims)


def _refresh(store: Any, vector_key: str, dims: int, counter: tuple[int, int], held: _Matrix | None) -> _Matrix:
    """The matrix as the rows now are. Ids and vectors travel as a few big bytea values (int8send
    and the float32 bytes, concatenated server-side): decoding 100k rows one by one in Python
    costs more than the product itself."""
    with store._conn() as conn, conn.cursor(binary=True) as cur:
        cur.execute("SELECT source, string_agg(int8send(chunk_id), ''::bytea ORDER BY chunk_id) "
                    f"FROM {store.s}.vectors WHERE vector_key = %s AND dims = %s GROUP BY source ORDER BY source",
                    (vector_key, dims))
        listed = [(name, _ids(blob)) for name, blob in cur.fetchall()]
        names = [name for name, _ in listed]
        ids = np.concatenate([found for _, found in listed]) if listed else np.zeros(0, dtype=np.int64)
        sources = np.concatenate([np.full(len(found), code, dtype=np.int16) for code, (_, found) in enumerate(listed)]
                                 ) if listed else np.zeros(0, dtype=np.int16)
        order = np.argsort(ids, kind="stable")
        ids, sources = ids[order], sources[order]
        held_rows = _rows_held(held, ids)
        missing = ids[held_rows < 0]
        fetched_ids, fetched = _fetch(cur, store.s, vector_key, dims, missing, everything=len(missing) > len(ids) // 2)
    unit = np.zeros((len(ids), dims), dtype=np.float32)
    have = held_rows >= 0
    if held is not None and have.any():
        unit[have] = held.unit[held_rows[have]]
    new_rows = np.flatnonzero(~have)
    pos = np.searchsorted(fetched_ids, ids[new_rows]).clip(0, max(len(fetched_ids) - 1, 0))
    found = (fetched_ids[pos] == ids[new_rows]) if len(fetched_ids) else np.zeros(len(new_rows), dtype=bool)
    block = fetched[pos[found]] if len(fetched_ids) else np.zeros((0, dims), dtype=np.float32)
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    unit[new_rows[found]] = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
    keep = np.ones(len(ids), dtype=bool)
    keep[new_rows[~found]] = False  # deleted since the listing: the counter moved, the next search refreshes
    if not keep.all():
        ids, sources, unit = ids[keep], sources[keep], unit[keep]
    return _Matrix(counter, ids, sources, names, unit)


def _ids(blob: bytes) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=">i8").astype(np.int64)


def _fetch(cur: Any, schema: str, vector_key: str, dims: int, wanted: np.ndarray,
           everything: bool) -> tuple[np.ndarray, np.ndarray]:
    """(ascending chunk ids, their float32 rows): every vector of the key in batches of
    FETCH_BATCH, or only `wanted` (a few new ones after a change)."""
    select = ("SELECT string_agg(int8send(chunk_id), ''::bytea ORDER BY chunk_id), "
              "string_agg(vec, ''::bytea ORDER BY chunk_id) FROM ")
    parts_ids, parts_vecs = [], []
    if not len(wanted):
        return np.zeros(0, dtype=np.int64), np.zeros((0, dims), dtype=np.float32)
    if not everything:
        for start in range(0, len(wanted), FETCH_BATCH):
            cur.execute(select + f"{schema}.vectors WHERE chunk_id = ANY(%s)",
                        (wanted[start:start + FETCH_BATCH].tolist(),))
            parts_ids, parts_vecs = _append(cur.fetchone(), parts_ids, parts_vecs)
    else:
        after = -(2 ** 63)
        while True:
            cur.execute(select + f"(SELECT chunk_id, vec FROM {schema}.vectors WHERE vector_key = %s AND dims = %s "
                        "AND chunk_id > %s ORDER BY chunk_id LIMIT %s) batch", (vector_key, dims, after, FETCH_BATCH))
            parts_ids, parts_vecs = _append(cur.fetchone(), parts_ids, parts_vecs)
            if not parts_ids or len(parts_ids[-1]) < FETCH_BATCH or parts_ids[-1][-1] == after:
                break
            after = int(parts_ids[-1][-1])
    if not parts_ids:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dims), dtype=np.float32)
    found = np.concatenate(parts_ids)
    matrix = np.frombuffer(b"".join(parts_vecs), dtype=np.float32).reshape(len(found), dims)
    order = np.argsort(found, kind="stable")
    return found[order], matrix[order]


def _append(row: Any, parts_ids: list, parts_vecs: list) -> tuple[list, list]:
    if row is None or row[0] is None:
        return parts_ids, parts_vecs
    return [*parts_ids, _ids(row[0])], [*parts_vecs, bytes(row[1])]


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
