"""The SQLite memory index's vector top-k (M5): numpy by default, the sqlite-vec mirror optional; same answers."""

import numpy as np
import pytest

from clawkeep.errors import InputError
from clawkeep.storage.sqlite.vectors import NumpyVectors, SqliteVecVectors, open_backend


def unit(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def data(n=500, dims=16, seed=7):
    rng = np.random.default_rng(seed)
    return np.arange(10, 10 + n, dtype=np.int64), unit(rng.normal(size=(n, dims)))


def test_numpy_top_k_is_exact_and_sorted():
    ids, matrix = data()
    query = matrix[42]
    found, sims = NumpyVectors(ids, matrix).top_k(query, 5)
    assert found[0] == ids[42] and sims[0] == pytest.approx(1.0, abs=1e-5)
    assert list(sims) == sorted(sims, reverse=True)
    brute = np.argsort(-(matrix @ query))[:5]
    assert list(found) == list(ids[brute])


def test_sqlite_vec_agrees_with_numpy(tmp_path):
    ids, matrix = data()
    backend = SqliteVecVectors(tmp_path / "vec.sqlite", "key-a", ids, matrix)
    for row in (0, 99, 321):
        got, sims = backend.top_k(matrix[row], 10)
        want, want_sims = NumpyVectors(ids, matrix).top_k(matrix[row], 10)
        assert list(got) == list(want)
        assert np.allclose(sims, want_sims, atol=1e-4)


def test_sqlite_vec_mirror_follows_the_index_by_diff(tmp_path):
    ids, matrix = data(n=50)
    path = tmp_path / "vec.sqlite"
    SqliteVecVectors(path, "key-a", ids, matrix)
    kept = ids[10:]  # 10 chunks removed, 1 new one added
    new_ids = np.append(kept, 999)
    new_matrix = np.vstack([matrix[10:], unit([np.ones(matrix.shape[1])])])
    mirror = SqliteVecVectors(path, "key-a", new_ids, new_matrix)
    assert len(mirror) == 41
    assert mirror.top_k(new_matrix[-1], 1)[0][0] == 999
    assert ids[0] not in set(mirror.top_k(matrix[0], 41)[0])
    resized = SqliteVecVectors(path, "key-b", new_ids, unit(np.ones((41, 4))))  # new model: rebuilt
    assert len(resized) == 41 and resized.describe()["backend"] == "sqlite-vec"


def test_unknown_backend_is_refused():
    ids, matrix = data(n=3)
    with pytest.raises(InputError, match="vectorStore 'faiss'.*numpy, sqlite-vec"):
        open_backend("faiss", sidecar=None, vector_key="k", ids=ids, matrix=matrix)
