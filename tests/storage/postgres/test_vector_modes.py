"""Where the memory index keeps its vectors: pgvector (HNSW) when the server has it, else a plain
column with an exact top-k; chosen when the schema is created and kept afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
import pytest

import clawkeep
from clawkeep.config import StorageConfig
from clawkeep.storage import ChunkRecord, FileRecord, VectorFilter, open_memory_index

EXACT, HNSW = "exact (no pgvector)", "pgvector-hnsw"


def unit(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(store, path, matrix, source="memory"):
    chunks = [ChunkRecord(path, source, i + 1, i + 1, f"chunk {i}", f"{path}-{i}", tokens=f"chunk {i}")
              for i in range(len(matrix))]
    store.replace_file(FileRecord(path, source, path, 1.0, 1), chunks, matrix, "model-a")
    return [c.id for c in chunks]


def open_index(url, prefix, tmp_path):
    return open_memory_index(tmp_path / "main" / "memory.sqlite", StorageConfig(url=url, schema=prefix))


@pytest.fixture
def pgvector_prefix(pgvector_url):
    name = "v" + uuid.uuid4().hex[:10]
    yield name
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                      (name + "%",)).fetchall():
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def test_a_server_without_pgvector_keeps_vectors_in_a_plain_column(pg_url, prefix, tmp_path):
    store = open_index(pg_url, prefix, tmp_path)
    try:
        assert store.vector_index == EXACT
        matrix = unit(np.random.default_rng(5).normal(size=(50, 8)))
        ids = fill(store, "a.md", matrix)
        flt = VectorFilter("model-a", ("memory",))
        got = store.vector_search(matrix[7], 5, flt)
        assert [c for c, _ in got] == [ids[i] for i in np.argsort(-(matrix @ matrix[7]))[:5]]
        info = store.describe_vectors(flt)
        assert info["index"] == EXACT and info["vectors"] == 50 and info["dims"] == 8
        assert info["cachedInProcess"] == 50  # the search above loaded them
    finally:
        store.close()
    with psycopg.connect(pg_url) as conn:
        column = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                              "to_regclass(%s) AND attname = 'vec'", (f'"{prefix}_memory_main".vectors',)).fetchone()
    assert column == ("bytea",)


def test_a_server_with_pgvector_uses_it(pgvector_url, pgvector_prefix, tmp_path):
    store = open_index(pgvector_url, pgvector_prefix, tmp_path)
    try:
        assert store.vector_index == HNSW
        fill(store, "a.md", unit(np.eye(4)))
        assert store.describe_vectors(VectorFilter("model-a", ("memory",)))["backend"] == "pgvector"
    finally:
        store.close()


def test_another_writer_changes_what_a_cached_search_finds(pg_url, prefix, tmp_path):
    reader, writer = open_index(pg_url, prefix, tmp_path), open_index(pg_url, prefix, tmp_path)
    try:
        base = unit(np.eye(4))
        first = fill(writer, "a.md", base[:2])
        flt = VectorFilter("model-a", ("memory", "sessions"))
        assert [c for c, _ in reader.vector_search(base[0], 1, flt)] == [first[0]]
        talk = fill(writer, "sessions/s", base[2:], source="sessions")  # only the new rows are fetched
        assert [c for c, _ in reader.vector_search(base[3], 1, flt)] == [talk[1]]
        assert [c for c, _ in reader.vector_search(base[3], 1, VectorFilter("model-a", ("memory",)))] != [talk[1]]
        writer.remove_file("a.md")
        assert {c for c, _ in reader.vector_search(base[0], 10, flt)} == set(talk)
        writer.clear()
        assert reader.vector_search(base[0], 10, flt) == []
    finally:
        reader.close()
        writer.close()


def _as(url: str, user: str, database: str) -> str:
    parts = urlsplit(url)
    netloc = f"{user}:@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, "/" + database, parts.query, ""))


def test_a_role_that_may_not_create_pgvector_gets_exact_vectors_and_the_schema_keeps_them(pgvector_url, tmp_path):
    """pgvector is not a trusted extension: a role that is no superuser may not create it. The
    index falls back; once the extension is there, that schema still reads its plain column."""
    tag = "ck" + uuid.uuid4().hex[:8]
    with psycopg.connect(pgvector_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {tag} LOGIN")
        admin.execute(f"CREATE DATABASE {tag} OWNER {tag}")
    url = _as(pgvector_url, tag, tag)
    try:
        store = open_index(url, "p", tmp_path)
        assert store.vector_index == EXACT
        ids = fill(store, "a.md", unit(np.eye(3)))
        store.close()
        with psycopg.connect(_as(pgvector_url, "postgres", tag), autocommit=True) as admin:
            admin.execute("CREATE EXTENSION vector")
        # a fresh process (no cached mode): the schema says which it is
        env = {**os.environ, "CLAWKEEP_TEST_URL": url, "PYTHONPATH": str(Path(clawkeep.__file__).parents[1])}
        code = ("import os, pathlib, numpy as np; from clawkeep.config import StorageConfig; "
                "from clawkeep.storage import VectorFilter, open_memory_index; "
                "s = open_memory_index(pathlib.Path('x/main/memory.sqlite'), "
                "StorageConfig(url=os.environ['CLAWKEEP_TEST_URL'], schema='p')); "
                "print(s.vector_index); print([c for c, _ in s.vector_search(np.eye(3, dtype=np.float32)[2], 1, "
                "VectorFilter('model-a', ('memory',)))]); s.close()")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                              cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        mode, found = proc.stdout.strip().splitlines()
        assert mode == EXACT and json.loads(found) == [ids[2]]
        fresh = open_index(url, "q", tmp_path)  # a new schema on the same database now gets pgvector
        assert fresh.vector_index == HNSW
        fresh.close()
    finally:
        with psycopg.connect(pgvector_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {tag} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {tag}")


def test_a_cached_exact_search_stays_exact_through_many_changes(pg_url, prefix, tmp_path):
    """Files replaced (rows die, new ones are appended to the held matrix), removed, and once
    more rows than the held matrix has room for (a full reload): after every change the top-k
    is numpy's over what the index now holds."""
    reader, writer = open_index(pg_url, prefix, tmp_path), open_index(pg_url, prefix, tmp_path)
    rng = np.random.default_rng(8)
    current: dict[str, tuple[list[int], np.ndarray]] = {}
    flt = VectorFilter("model-a", ("memory",))
    try:
        for step in range(24):
            path = f"f{rng.integers(0, 6)}.md"
            if step == 12:
                path, size = "big.md", 150  # past the spare rows of the held matrix
            else:
                size = int(rng.integers(0, 12))
            if size == 0 and path in current:
                writer.remove_file(path)
                del current[path]
            elif size:
                matrix = unit(rng.normal(size=(size, 8)))
                current[path] = (fill(writer, path, matrix), matrix)
            if not current:
                assert reader.vector_search(unit(rng.normal(size=(1, 8)))[0], 5, flt) == []
                continue
            ids = [i for found, _ in current.values() for i in found]
            matrix = np.vstack([m for _, m in current.values()])
            query = unit(rng.normal(size=(1, 8)))[0]
            want = [ids[i] for i in np.argsort(-(matrix @ query), kind="stable")[:5]]
            assert [c for c, _ in reader.vector_search(query, 5, flt)] == want, f"step {step}"
            assert reader.describe_vectors(flt)["cachedInProcess"] == len(ids)
    finally:
        reader.close()
        writer.close()
