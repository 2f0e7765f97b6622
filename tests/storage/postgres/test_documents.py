"""Memory documents on PostgreSQL (SPEC D4): mirrors pull every write after the highest `seq`
they have seen, so a write must never become visible after one with a higher seq."""

from __future__ import annotations

import threading

from clawkeep.config import StorageConfig
from clawkeep.storage import open_agent_store


def test_a_document_write_waits_for_an_uncommitted_one(pg_url, prefix):
    """Instance a writes MEMORY.md and has not committed yet; instance b's write of another
    document waits for it, so it draws a higher seq and commits later. Without that, b's seq
    (drawn second, committed first) is what a mirror's pull sees, the pull moves past a's lower
    seq, and a's write never reaches that mirror."""
    config = StorageConfig(url=pg_url, schema=prefix)
    a, b, reader = (open_agent_store(None, "main", config) for _ in range(3))
    done: dict[str, object] = {}
    try:
        with a.transaction():
            first = a.doc_put("MEMORY.md", "- the boat is called Heron\n", None, "a")
            other = threading.Thread(target=lambda: done.update(doc=b.doc_put("memory/note.md", "- x\n", None, "b")))
            other.start()
            other.join(1.0)
            assert other.is_alive(), "b's write went ahead of a's uncommitted one"
            assert reader.doc_changes(0) == []  # nothing visible yet: a has not committed
        other.join(30)
        second = done["doc"]
        assert second.seq > first.seq
        assert [d.path for d in reader.doc_changes(0)] == ["MEMORY.md", "memory/note.md"]
    finally:
        for store in (a, b, reader):
            store.close()
