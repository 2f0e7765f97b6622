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
older than the counter it is filed under. A refresh fetches only the vectors not held yet and
appends them (see _Matrix).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .connection import Migration, psycopg, translate

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
    except psycopg.OperationalError as exc:  # the server went away: no reason to settle for exact
        raise translate(store.url, exc) from None
    except psycopg.Error:  # the role may not create it (pgvector is not a trusted extension), or it is broken
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
    """One (schema, vector_key, dims) as this process holds it. Rows are in arrival order and
    never move while a search may read them: a refresh marks deleted rows dead and appends new
    ones into `buffer`'s spare rows (a fresh 150 MB array costs seconds of page faults here, a
    copy of it hundreds of ms), and compacts into a new buffer only when it is full or a
    quarter dead."""

    counter: tuple[int, int]  # (oid of the counter table, its value)
    ids: np.ndarray  # int64 chunk id per row
    sources: np.ndarray  # int16 per row, a code into source_names
    source_names: list[str]
    alive: np.ndarray  # bool per row: False once its chunk is gone
    buffer: np.ndarray  # float32 rows of unit length (a zero vector stays zero); rows past len(ids) are spare

    @property
    def unit(self) -> np.ndarray:
        return self.buffer[:len(self.ids)]

    def lookup(self, wanted: np.ndarray) -> np.ndarray:
        """For each id, its live row here, or -1."""
        if not len(self.ids) or not len(wanted):
            return np.full(len(wanted), -1, dtype=np.int64)
        order = np.argsort(self.ids, kind="stable")
        pos = np.searchsorted(self.ids, wanted, sorter=order).clip(0, len(order) - 1)
        rows = order[pos]
        return np.where((self.ids[rows] == wanted) & self.alive[rows], rows, -1)


_CACHE: dict[tuple[str, str, str, int], _Matrix] = {}
_CACHE_LOCK = threading.Lock()
_REFRESH_LOCKS: dict[tuple[str, str, str, int], threading.Lock] = {}
FETCH_BATCH = 20_000  # vectors per round trip of a full load (one bytea of ~30 MB at 384 dims)
SPARE = 0.25  # spare rows allocated on a full load, as a share of its rows


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
    usable = matrix.alive if len(wanted) == len(matrix.source_names) else matrix.alive & np.isin(matrix.sources, wanted)
    sims[~usable] = -np.inf
    k = min(k, int(usable.sum()))
    if k <= 0:
        return []
    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.flatnonzero(usable)
    top = top[np.lexsort((matrix.ids[top], -sims[top]))]  # most similar first, then by chunk id
    return [(int(matrix.ids[i]), float(sims[i])) for i in top]


def cached_count(store: Any, vector_key: str, dims: int) -> int:
    with _CACHE_LOCK:
        found = _CACHE.get((store.url, store.schema, vector_key, dims))
    return 0 if found is None else int(found.alive.sum())


def _current_matrix(store: Any, vector_key: str, dims: int) -> _Matrix:
    key = (store.url, store.schema, vector_key, dims)
    # read before the rows (see the module doc); the table's oid tells a dropped and re-made schema apart
    counter = tuple(int(v) for v in store._query("SELECT tableoid, n FROM {s}.vector_changes")[0])
    with _CACHE_LOCK:
        held = _CACHE.get(key)
        lock = _REFRESH_LOCKS.setdefault(key, threading.Lock())
    if held is not None and held.counter == counter:
        return held
    with lock:  # one refresh at a time: each appends after the rows of the one before
        with _CACHE_LOCK:
            held = _CACHE.get(key)
        if held is not None and held.counter[0] == counter[0] and held.counter[1] >= counter[1]:
            return held
        fresh = _refresh(store, vector_key, dims, counter, held if held and held.counter[0] == counter[0] else None)
        with _CACHE_LOCK:
            _CACHE[key] = fresh
        return fresh


def _refresh(store: Any, vector_key: str, dims: int, counter: tuple[int, int], held: _Matrix | None) -> _Matrix:
    """The matrix as the rows now are. Ids and vectors travel as a few big bytea values (int8send
    and the float32 bytes, concatenated server-side): decoding 100k rows one by one in Python
    costs more than the product itself. No ORDER BY inside an aggregate (it sorts megabytes,
    on disk past work_mem): two aggregates of one query see the rows in the same order."""
    with store._conn() as conn, conn.cursor(binary=True) as cur:
        cur.execute("SELECT source, string_agg(int8send(chunk_id), ''::bytea) "
                    f"FROM {store.s}.vectors WHERE vector_key = %s AND dims = %s GROUP BY source ORDER BY source",
                    (vector_key, dims))
        listing = {name: _ids(blob) for name, blob in cur.fetchall()}
        names = list(held.source_names) if held is not None else []
        names += [name for name in listing if name not in names]
        ids = np.concatenate(list(listing.values())) if listing else np.zeros(0, dtype=np.int64)
        codes = np.concatenate([np.full(len(v), names.index(n), dtype=np.int16) for n, v in listing.items()]
                               ) if listing else np.zeros(0, dtype=np.int16)
        order = np.argsort(ids, kind="stable")
        ids, codes = ids[order], codes[order]
        rows = held.lookup(ids) if held is not None else np.full(len(ids), -1, dtype=np.int64)
        new_ids = ids[rows < 0]
        alive = np.zeros(len(held.ids), dtype=bool) if held is not None else None
        if alive is not None:
            alive[rows[rows >= 0]] = True
        room = held is not None and len(held.ids) + len(new_ids) <= len(held.buffer)
        if held is None or not room or (len(held.ids) - len(ids) + len(new_ids)) > SPARE * len(held.buffer):
            return _full_load(cur, store.s, vector_key, dims, counter, ids, codes, names)
        fetched_ids, fetched = _fetch(cur, store.s, vector_key, dims, new_ids, everything=False,
                                      out=held.buffer[len(held.ids):])
    known = np.searchsorted(ids, fetched_ids).clip(0, max(len(ids) - 1, 0))
    new_codes = codes[known] if len(ids) else np.zeros(0, dtype=np.int16)
    listed = (ids[known] == fetched_ids) if len(ids) else np.zeros(0, dtype=bool)
    return _Matrix(counter, np.concatenate([held.ids, fetched_ids]), np.concatenate([held.sources, new_codes]),
                   names, np.concatenate([alive, listed]), held.buffer)


def _full_load(cur: Any, schema: str, vector_key: str, dims: int, counter: tuple[int, int], ids: np.ndarray,
               codes: np.ndarray, names: list[str]) -> _Matrix:
    buffer = np.empty((len(ids) + int(SPARE * len(ids)) + 64, dims), dtype=np.float32)
    fetched_ids, _ = _fetch(cur, schema, vector_key, dims, ids, everything=True, out=buffer)
    known = np.searchsorted(ids, fetched_ids).clip(0, max(len(ids) - 1, 0))
    listed = (ids[known] == fetched_ids) if len(ids) else np.zeros(0, dtype=bool)  # else: inserted meanwhile
    return _Matrix(counter, fetched_ids, codes[known] if len(ids) else np.zeros(0, dtype=np.int16), names,
                   listed, buffer)


def _ids(blob: bytes) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=">i8").astype(np.int64)


def _fetch(cur: Any, schema: str, vector_key: str, dims: int, wanted: np.ndarray, *, everything: bool,
           out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Writes the rows of the `wanted` ids (ascending), scaled to unit length, into the start of
    `out`; (their ids, those rows of `out`). FETCH_BATCH a round trip: by id range when all the
    key's vectors are wanted (a full load), else by id list (the few new ones after a change)."""
    select = "SELECT string_agg(int8send(chunk_id), ''::bytea), string_agg(vec, ''::bytea) FROM "
    found: list[np.ndarray] = []
    filled = 0
    for start in range(0, len(wanted), FETCH_BATCH):
        batch = wanted[start:start + FETCH_BATCH]
        if everything:
            cur.execute(select + f"{schema}.vectors WHERE chunk_id BETWEEN %s AND %s AND vector_key = %s "
                        "AND dims = %s", (int(batch[0]), int(batch[-1]), vector_key, dims))
        else:
            cur.execute(select + f"{schema}.vectors WHERE chunk_id = ANY(%s)", (batch.tolist(),))
        id_blob, vec_blob = cur.fetchone()
        if id_blob is None:
            continue
        got = _ids(id_blob)[:len(out) - filled]  # never past `out` (rows inserted in a range meanwhile)
        out[filled:filled + len(got)] = np.frombuffer(vec_blob, dtype=np.float32, count=len(got) * dims
                                                      ).reshape(len(got), dims)
        found.append(got)
        filled += len(got)
    rows = out[:filled]
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    norms[norms == 0] = 1  # a zero vector stays zero
    rows /= norms[:, None]
    return (np.concatenate(found) if found else np.zeros(0, dtype=np.int64)), rows


def describe_exact(store: Any, vector_key: str, dims: int | None, count: int) -> dict[str, Any]:
    return {"backend": "postgresql", "index": EXACT, "vectors": count, "dims": dims,
            "cachedInProcess": cached_count(store, vector_key, dims) if dims else 0}


__all__ = ["EXACT", "PGVECTOR", "bump_sql", "created_mode", "describe_exact", "encode", "exact_search",
           "migrations_for", "placeholder", "schema_mode"]
