"""Conformance: the memory index store (files, chunks, keyword search, meta, embedding cache)."""

import numpy as np
import pytest

from clawkeep.errors import ConflictError
from clawkeep.storage import ChunkRecord, FileRecord, TextQuery
from clawkeep.text.analyzer import analyze_document


def chunk(path, text, source="memory", line=1, **kw):
    return ChunkRecord(path, source, line, line, text, f"h-{path}-{line}", tokens=analyze_document(text), **kw)


def put(store, path, *texts, source="memory", vectors=None, key=None):
    chunks = [chunk(path, t, source, i + 1) for i, t in enumerate(texts)]
    store.replace_file(FileRecord(path, source, f"hash-{path}", 1.0, 10), chunks, vectors, key)
    return chunks


def test_files_chunks_and_keyword_search_by_source(memory_store):
    notes = put(memory_store, "MEMORY.md", "I prefer TypeScript", "kayak trip to Lofoten")
    talk = put(memory_store, "sessions/s1", "we talked about the kayak", source="sessions")
    assert all(c.id for c in notes + talk)
    assert set(memory_store.files()) == {"MEMORY.md", "sessions/s1"}
    assert set(memory_store.files("sessions")) == {"sessions/s1"}
    assert memory_store.chunk_count() == 3
    got = memory_store.chunks([notes[1].id, talk[0].id, 999_999])
    assert got[notes[1].id].text == "kayak trip to Lofoten" and got[talk[0].id].source == "sessions"
    # a search reads its candidates without their text, then the text of the few it shows
    bare = memory_store.chunks([notes[1].id, talk[0].id, 999_999], text=False)
    assert set(bare) == set(got) and all(c.text == "" for c in bare.values())
    assert [(c.path, c.source, c.start_line, c.end_line, c.hash, c.weight, c.day, c.meta) for c in bare.values()] == [
        (c.path, c.source, c.start_line, c.end_line, c.hash, c.weight, c.day, c.meta) for c in got.values()]
    assert memory_store.chunk_texts([talk[0].id, 999_999]) == {talk[0].id: "we talked about the kayak"}
    assert memory_store.chunk_texts([]) == {}
    rows = memory_store.keyword_search(TextQuery.words("kayak"), sources=["memory", "sessions"], limit=10)
    assert {r[0] for r in rows} == {notes[1].id, talk[0].id}
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
    only = memory_store.keyword_search(TextQuery.words("kayak"), sources=["memory"], limit=10)
    assert [r[0] for r in only] == [notes[1].id] and "kayak" in only[0][2].split()
    assert memory_store.document_frequency(["kayak", "typescript", "zzz"]) == {"kayak": 2, "typescript": 1, "zzz": 0}


def test_replace_touch_remove_clear_and_generation(memory_store):
    g0 = memory_store.generation()
    put(memory_store, "a.md", "alpha one")
    g1 = memory_store.generation()
    assert g1 > g0
    put(memory_store, "a.md", "alpha two", "beta")  # swapped atomically
    assert memory_store.chunk_count() == 2
    assert memory_store.keyword_search(TextQuery.words("one"), sources=["memory"], limit=5) == []
    memory_store.touch_file(FileRecord("a.md", "memory", "hash-a.md", 2.0, 20))
    assert memory_store.files()["a.md"].mtime == 2.0 and memory_store.chunk_count() == 2
    memory_store.remove_file("a.md")
    assert memory_store.files() == {} and memory_store.chunk_count() == 0
    put(memory_store, "b.md", "gamma")
    memory_store.cache_embeddings("k", {"h1": np.ones(3, dtype=np.float32)})
    memory_store.clear()
    assert memory_store.chunk_count() == 0 and memory_store.generation() > g1
    assert set(memory_store.cached_embeddings("k", ["h1"])) == {"h1"}  # the cache survives a rebuild


def test_meta_and_the_fingerprint_guard(memory_store):
    assert memory_store.get_meta("fingerprint") is None
    memory_store.set_meta("fingerprint", "cfg-1")
    memory_store.fingerprint_guard = "cfg-1"
    put(memory_store, "a.md", "fine")
    memory_store.set_meta("fingerprint", "cfg-2")  # another writer rebuilt it differently
    with pytest.raises(ConflictError):
        put(memory_store, "b.md", "refused")
    assert set(memory_store.files()) == {"a.md"}


def test_embedding_cache_round_trips(memory_store):
    vec = np.arange(4, dtype=np.float32)
    memory_store.cache_embeddings("model-a", {"h1": vec, "h2": vec * 2})
    got = memory_store.cached_embeddings("model-a", ["h1", "h2", "h3", "h1"])
    assert set(got) == {"h1", "h2"} and np.array_equal(got["h2"], vec * 2)
    assert memory_store.cached_embeddings("model-b", ["h1"]) == {}


def test_a_second_handle_sees_every_committed_change(backend):
    """The SQLite store keeps file records, document frequencies and its list of sources between
    calls until something is committed, by itself or by another connection (another process):
    each read below follows a write through the other handle or through itself."""
    mine, other = backend.memory_store(), backend.memory_store()
    assert mine.files() == {} and mine.document_frequency(["kayak"]) == {"kayak": 0}
    put(other, "a.md", "kayak trip", "bees")
    assert set(mine.files()) == {"a.md"} and mine.document_frequency(["kayak"]) == {"kayak": 1}
    other.touch_file(FileRecord("a.md", "memory", "hash-a.md", 7.0, 70))
    assert (mine.files()["a.md"].mtime, mine.files("memory")["a.md"].size) == (7.0, 70)
    put(mine, "b.md", "kayak club")
    assert set(other.files()) == set(mine.files()) == {"a.md", "b.md"}
    assert mine.document_frequency(["kayak"]) == {"kayak": 2}
    answer = mine.files()
    answer.pop("a.md")  # the caller's copy: the store's next answer is whole
    assert set(mine.files()) == {"a.md", "b.md"}
    mine.remove_file("a.md")
    assert set(other.files()) == set(mine.files()) == {"b.md"}
    # a session chunk arriving through the other handle ends the "memory only" shortcut
    talk = put(other, "sessions/s1", "kayak in the chat", source="sessions")
    rows = mine.keyword_search(TextQuery.words("kayak"), sources=["memory"], limit=10)
    assert talk[0].id not in {r[0] for r in rows} and len(rows) == 1
    both = mine.keyword_search(TextQuery.words("kayak"), sources=["memory", "sessions"], limit=10)
    assert talk[0].id in {r[0] for r in both} and len(both) == 2


def test_keyword_search_after_the_index_grew_past_what_was_counted(memory_store):
    """A backend may keep the chunk count between searches (PostgreSQL does, for minutes): a
    term now in more chunks than that count still ranks (no error), rarest-first as before."""
    first = put(memory_store, "a.md", "kayak trip to Lofoten")
    assert [r[0] for r in memory_store.keyword_search(TextQuery.words("kayak"), sources=["memory"], limit=5)] == [
        first[0].id]
    grown = put(memory_store, "b.md", *[f"kayak day {i}" for i in range(12)])
    assert memory_store.document_frequency(["kayak"]) == {"kayak": 13}  # as memory search asks first
    rows = memory_store.keyword_search(TextQuery.words("kayak", "lofoten"), sources=["memory"], limit=20)
    assert rows[0][0] == first[0].id  # the only chunk holding the rarer word comes first
    assert {r[0] for r in rows} == {first[0].id} | {c.id for c in grown}
