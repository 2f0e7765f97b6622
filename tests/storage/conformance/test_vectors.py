"""Conformance: vector top-k behind MemoryStore.vector_search (exact nearest neighbours)."""

import numpy as np

from clawkeep.storage import ChunkRecord, FileRecord, VectorFilter


def unit(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(store, path, matrix, source="memory", key="model-a"):
    chunks = [ChunkRecord(path, source, i + 1, i + 1, f"chunk {i}", f"{path}-{i}", tokens=f"chunk {i}")
              for i in range(len(matrix))]
    store.replace_file(FileRecord(path, source, path, 1.0, 1), chunks, matrix, key)
    return [c.id for c in chunks]


def test_top_k_is_exact_and_sorted(memory_store):
    rng = np.random.default_rng(3)
    matrix = unit(rng.normal(size=(300, 16)))
    ids = fill(memory_store, "a.md", matrix)
    flt = VectorFilter("model-a", ("memory",))
    assert memory_store.vector_count(flt) == 300
    for row in (0, 123, 299):
        got = memory_store.vector_search(matrix[row], 10, flt)
        want = np.argsort(-(matrix @ matrix[row]))[:10]
        assert [cid for cid, _ in got] == [ids[i] for i in want]
        assert got[0][1] == np.float32(1.0) or abs(got[0][1] - 1.0) < 1e-4
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert len(memory_store.vector_search(matrix[0], 1000, flt)) == 300


def test_filter_by_source_and_vector_key(memory_store):
    base = unit(np.eye(4))
    mem = fill(memory_store, "a.md", base[:2])
    talk = fill(memory_store, "sessions/s", base[2:], source="sessions")
    fill(memory_store, "old.md", base[:1], key="model-old")
    both = VectorFilter("model-a", ("memory", "sessions"))
    assert memory_store.vector_count(both) == 4
    assert [c for c, _ in memory_store.vector_search(base[3], 1, both)] == [talk[1]]
    only_mem = VectorFilter("model-a", ("memory",))
    assert {c for c, _ in memory_store.vector_search(base[3], 10, only_mem)} == set(mem)
    assert memory_store.vector_count(VectorFilter("model-old", ("memory",))) == 1
    assert memory_store.vector_count(VectorFilter("model-none", ("memory",))) == 0
    assert memory_store.vector_search(base[0], 5, VectorFilter("model-none", ("memory",))) == []
    info = memory_store.describe_vectors(both)
    assert info["vectors"] == 4 and info["dims"] == 4 and info["backend"]


def test_search_follows_changes_to_the_index(memory_store):
    base = unit(np.eye(3))
    fill(memory_store, "a.md", base[:2])
    flt = VectorFilter("model-a", ("memory",))
    assert memory_store.vector_count(flt) == 2
    new = fill(memory_store, "a.md", base[2:])  # the file's chunks replaced
    assert memory_store.vector_count(flt) == 1
    assert [c for c, _ in memory_store.vector_search(base[2], 5, flt)] == new
    memory_store.remove_file("a.md")
    assert memory_store.vector_count(flt) == 0


def test_line_vectors_round_trip_and_go_with_their_chunk(memory_store):
    base = unit(np.eye(4))
    chunks = [ChunkRecord("a.md", "memory", 1, 2, "one\ntwo", "h-a", tokens="one two",
                          line_vectors=((0, base[0]), (1, base[1])))]
    memory_store.replace_file(FileRecord("a.md", "memory", "h", 1.0, 1), chunks, base[:1], "model-a")
    got = memory_store.line_vectors([chunks[0].id, 999_999], VectorFilter("model-a", ("memory",)))
    assert list(got) == [chunks[0].id]
    lines, matrix = got[chunks[0].id]
    assert list(lines) == [0, 1] and np.allclose(matrix, base[:2])
    assert memory_store.line_vectors([chunks[0].id], VectorFilter("model-b", ("memory",))) == {}
    memory_store.remove_file("a.md")
    assert memory_store.line_vectors([chunks[0].id], VectorFilter("model-a", ("memory",))) == {}
