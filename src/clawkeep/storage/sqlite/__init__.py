"""The embedded SQLite backend: every SQL statement of clawkeep lives in this package.

- connection.py: the shared WAL connection (nested transactions, write-path probes, errors,
  moving a damaged file aside) and migrations.py, the numbered, recorded schema migrations;
- sessions.py: `SqliteAgentStore` (sessions, transcripts, FTS5 over them);
- memory.py: `SqliteMemoryStore` (memory index: files, chunks, FTS5, vectors, embedding cache);
- fts.py: `TextQuery` -> FTS5 MATCH, fts5vocab document frequencies;
- vectors.py: vector top-k (numpy brute force, the optional sqlite-vec mirror);
- salvage.py and repair.py: what `clawkeep doctor --repair` reads from a damaged file and how
  it writes the recovered one.

Construct stores through `clawkeep.storage` (the factory), never directly.
"""

from .memory import SqliteMemoryStore
from .sessions import SqliteAgentStore

__all__ = ["SqliteAgentStore", "SqliteMemoryStore"]
