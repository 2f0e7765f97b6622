"""Vector top-k for the SQLite memory index (M5): numpy (default) and sqlite-vec (optional).

The float32 vectors always live in the memory index database as BLOBs (the source of truth
for this layer). `numpy` loads them once per index generation and does a brute-force
matrix product (measured ~13 ms at 100k×384 here). `sqlite-vec` mirrors them into a `vec0`
table in a sidecar database, kept in step with the index by id diff; it needs an SQLite that
can load extensions (`pip install clawkeep[sqlite-vec]`, which brings sqlean.py), because
this Python's stdlib sqlite3 cannot.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...deferred import deferred_import
from ...errors import InputError, StorageError
from ..memory_base import VectorFilter

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: loads with the first vector read

BACKENDS = ("numpy", "sqlite-vec")
_CACHE: dict[tuple[str, str, int, tuple[str, ...], str], Any] = {}
_CACHE_LOCK = threading.Lock()


class NumpyVectors:
    name = "numpy"

    def __init__(self, ids: np.ndarray, matrix: np.ndarray):
        self.ids, self.matrix = ids, matrix

    def __len__(self) -> int:
        return len(self.ids)

    def top_k(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if not len(self.ids):
            return self.ids, np.zeros(0, dtype=np.float32)
        sims = self.matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
        if len(sims) > k:
            top = np.argpartition(-sims, k)[:k]
        else:
            top = np.arange(len(sims))
        order = top[np.argsort(-sims[top])]
        return self.ids[order], sims[order]

    def describe(self) -> dict[str, Any]:
        dims = int(self.matrix.shape[1]) if len(self.ids) else None
        return {"backend": self.name, "vectors": int(len(self.ids)), "dims": dims}


def _connect_with_vec(path: str) -> Any:
    try:
        import sqlean  # deferred: optional (clawkeep[sqlite-vec]), only for that vector store
        import sqlite_vec  # deferred: as sqlean
    except ImportError:
        raise InputError("memorySearch.vectorStore 'sqlite-vec' needs the optional packages sqlite-vec and "
                         "sqlean.py: pip install 'clawkeep[sqlite-vec]'; allowed without them: numpy") from None
    conn = sqlean.connect(path, check_same_thread=False)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


class SqliteVecVectors:
    """vec0 KNN over a mirror of the index's vectors (cosine distance)."""

    name = "sqlite-vec"

    def __init__(self, path: Path, vector_key: str, ids: np.ndarray, matrix: np.ndarray):
        self._lock = threading.Lock()
        self.path = path
        try:
            self._conn = _connect_with_vec(str(path))
            self._sync(vector_key, ids, matrix)
        except Exception as exc:  # noqa: BLE001 - any extension or SQL failure is a storage problem
            if isinstance(exc, InputError):
                raise
            raise StorageError(f"sqlite-vec store {path}: {exc}") from None

    def _sync(self, vector_key: str, ids: np.ndarray, matrix: np.ndarray) -> None:
        dims = int(matrix.shape[1]) if len(ids) else 0
        conn = self._conn
        conn.execute("CREATE TABLE IF NOT EXISTS mirror_meta (key TEXT PRIMARY KEY, value TEXT)")
        row = conn.execute("SELECT value FROM mirror_meta WHERE key = 'layout'").fetchone()
        layout = f"{vector_key}|{dims}"
        if row is None or row[0] != layout:
            conn.execute("DROP TABLE IF EXISTS vec_chunks")
            if dims:
                conn.execute(f"CREATE VIRTUAL TABLE vec_chunks USING vec0(chunk_id INTEGER PRIMARY KEY, "
                             f"embedding float[{dims}] distance_metric=cosine)")
            conn.execute("INSERT OR REPLACE INTO mirror_meta VALUES ('layout', ?)", (layout,))
        self.count, self.dims = 0, dims or None
        if not dims:
            conn.commit()
            return
        present = {r[0] for r in conn.execute("SELECT chunk_id FROM vec_chunks")}
        wanted = {int(i): n for n, i in enumerate(ids)}
        stale = present - wanted.keys()
        conn.executemany("DELETE FROM vec_chunks WHERE chunk_id = ?", [(i,) for i in stale])
        conn.executemany("INSERT INTO vec_chunks(chunk_id, embedding) VALUES (?, ?)",
                         [(i, matrix[n].astype(np.float32).tobytes()) for i, n in wanted.items() if i not in present])
        conn.commit()
        self.count = len(wanted)

    def __len__(self) -> int:
        return self.count

    def top_k(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if not self.count:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        with self._lock:
            rows = self._conn.execute(
                "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ?",
                (np.asarray(query, dtype=np.float32).tobytes(), int(min(k, self.count))),
            ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        sims = np.fromiter((1.0 - r[1] for r in rows), dtype=np.float32, count=len(rows))
        return ids, sims

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "vectors": self.count, "dims": self.dims, "path": str(self.path)}


def open_backend(name: str, *, sidecar: Path, vector_key: str, ids: np.ndarray, matrix: np.ndarray) -> Any:
    if name == "numpy":
        return NumpyVectors(ids, matrix)
    if name == "sqlite-vec":
        return SqliteVecVectors(sidecar, vector_key, ids, matrix)
    raise InputError(f"memorySearch.vectorStore {name!r} is not supported; allowed: {', '.join(BACKENDS)}")


def vector_backend(store: Any, flt: VectorFilter) -> Any:
    """The store's top-k backend over its vectors for `flt`, loaded once per index generation
    (per process: two store objects on one file share it)."""
    sources = tuple(sorted(flt.sources))
    cache_key = (store.path, flt.vector_key, store.generation(), sources, store.vector_store)
    with _CACHE_LOCK:
        cached = _CACHE.get(cache_key)
    if cached is None:
        ids, matrix = store.vectors(flt.vector_key, sources)
        store_path = Path(store.path or ".")
        sidecar = store_path.with_name(f"{store_path.stem}-vec-{'-'.join(sources)}.sqlite")
        cached = open_backend(store.vector_store, sidecar=sidecar, vector_key=flt.vector_key, ids=ids, matrix=matrix)
        with _CACHE_LOCK:
            for stale in [k for k in _CACHE if k[:2] == cache_key[:2]]:
                del _CACHE[stale]
            _CACHE[cache_key] = cached
    return cached
