"""Issue 29 (items 1, 3, 7): the Engine is a thin facade. The services build the api shapes the
Engine returns (no dict re-validated on the way out), engine.py defers its service imports in one
place, and the facade bugs stay fixed: memory_search's corpus is picked before its limit, status
names the storage backend and its version (PostgreSQL too), memory_bootstrap works with an
unusable model setting. Every test here also runs under --engine-backend postgres."""

from __future__ import annotations

import ast
from pathlib import Path

import clawkeep.engine
from clawkeep import api
from clawkeep.memory import service as memory
from clawkeep.sessions import search as session_search
from clawkeep.sessions import service as sessions
from tests.helpers.engine import open_engine

NO_EMBEDDINGS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
TRANSCRIPTS = {"agents": {"defaults": {"memorySearch": {
    "provider": "none", "sources": ["memory", "sessions"], "experimental": {"sessionMemory": True}}}}}


def test_memory_search_picks_the_corpus_before_the_limit(home: Path):
    with open_engine(home, TRANSCRIPTS) as eng:
        eng.memory_remember("The staging database runs on host db7")
        for n in range(6):  # transcripts that outrank the single memory line for this query
            eng.message(f"staging database staging database host db7 problem number {n}")
        assert eng.memory_search("staging database host", limit=3).results[0].origin == "sessions"
        [hit] = eng.memory_search("staging database host", corpus="memory", limit=1).results
        assert (hit.origin, hit.path) == ("memory", "MEMORY.md") and "db7" in hit.snippet
        [talk] = eng.memory_search("staging database host", corpus="sessions", limit=1).results
        assert talk.origin == "sessions" and talk.session_key == "agent:main:main"
        # min_score filters what the search found, and keeps the result's shape
        assert eng.memory_search("staging database host", corpus="memory", min_score=1.0).to_json() == {"results": []}


def test_status_names_the_storage_backend_and_its_server_version(home: Path):
    with open_engine(home, NO_EMBEDDINGS) as eng:
        eng.message("hello")
        eng.memory_remember("The build server is called hopper.")
        status, memory_status = eng.status(), eng.memory_status()
        url = eng.config.storage.url
    if url is None:
        import sqlite3

        expected = ("sqlite", f"SQLite {sqlite3.sqlite_version}")
    else:  # --engine-backend postgres: the server's own version, never "sqlite"
        import psycopg

        with psycopg.connect(url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        expected = ("postgres", f"PostgreSQL {version}")
    assert (status.storage, status.storage_version) == expected
    assert (memory_status.storage, memory_status.storage_version) == expected
    assert status.to_json()["storage"] == memory_status.to_json()["storage"] == expected[0]


def test_memory_bootstrap_with_a_model_that_cannot_be_used(home: Path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the model's provider has no key: chat_model() refuses
    config = {**NO_EMBEDDINGS, "agents": {"defaults": {**NO_EMBEDDINGS["agents"]["defaults"],
                                                       "model": {"primary": "openai/gpt-4o-mini"}}}}
    with open_engine(home, config) as eng:
        eng.memory_remember("My bike is a blue Brompton")
        files = eng.memory_bootstrap()
    assert [f.path for f in files] == ["MEMORY.md"] and all(isinstance(f, api.BootstrapFile) for f in files)
    assert "blue Brompton" in files[0].text and files[0].truncated is False


def test_the_services_build_the_shapes_the_engine_returns(home: Path):
    with open_engine(home, NO_EMBEDDINGS) as eng:
        sent = eng.message("the invoice INV-7 is due Friday")
        rt = eng.runtime
        listed = sessions.list_sessions(rt)
        assert [type(row) for row in listed] == [api.SessionInfo] and listed == eng.sessions_list()
        assert "incognito" not in listed[0].to_json()  # listed only when true, as before
        assert isinstance(sessions.session_status(rt, sent.session_key), api.SessionStatus)
        found = session_search.sessions_search(rt, "INV-7")
        assert isinstance(found, api.SearchResult) and found.hits[0].message_id == sent.message_id
        stored = memory.remember(rt, "I prefer window seats")
        assert isinstance(stored, api.RememberResult) and isinstance(stored.item, api.MemoryItem)
        assert "superseded" not in stored.to_json()  # nothing superseded: the key stays out
        assert memory.remember(rt, "I prefer window seats").status == "duplicate"
        assert isinstance(memory.search(rt, "window seats", mode="keyword"), api.MemorySearchResult)
        assert isinstance(memory.status(rt), api.MemoryStatus) and isinstance(memory.index(rt), api.IndexReport)
        assert [type(i) for i in memory.list_items(rt)] == [api.MemoryItem]
        opened = eng.sessions_create(key="agent:main:telegram:direct:bob")
        again = eng.sessions_create(key="agent:main:telegram:direct:bob")
        assert (opened.created, again.created) == (True, False) and opened.key == again.key


def test_engine_py_defers_its_service_imports_in_one_place():
    """No import statement inside a function of engine.py: the deferred service modules are
    named once at the top (_Deferred), so a method's body is its checks and its one call."""
    source = Path(clawkeep.engine.__file__).read_text(encoding="utf-8")
    functions = [fn for fn in ast.walk(ast.parse(source)) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    local = [node.lineno for fn in functions for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert local == [], f"function-local imports in engine.py at lines {local}"
    assert "model_validate" not in source.replace("api.MessageResult.model_validate", ""), \
        "a service returns a dict the Engine re-validates"
