"""The PostgreSQL backend (SPEC D1/D2): every SQL statement for PostgreSQL lives in this package.

- connection.py: the per-process connection pool, per-thread transactions, the schema of each
  store and its numbered migrations, error messages that name the server;
- sessions.py: `PgAgentStore` (sessions, transcripts, full-text index, advisory turn locks, leases);
- memory.py: `PgMemoryStore` (memory index: files, chunks, tsvector keyword index, pgvector HNSW);
- vectors.py: the vector mode of a memory schema (pgvector, or a plain column with an exact top-k
  on a server without it) and that exact top-k;
- fts.py: analysed tokens -> tsvector, `TextQuery` -> tsquery, ranking and document frequencies.

Needs the optional `postgres` extra (psycopg 3, psycopg_pool). Construct stores through
`clawkeep.storage` (the factory), never directly.
"""

from .connection import catalog_names, redact
from .memory import PgMemoryStore
from .sessions import PgAgentStore

__all__ = ["PgAgentStore", "PgMemoryStore", "catalog_names", "redact"]
