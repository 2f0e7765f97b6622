"""Storage backends behind one interface (`AgentStore`, `MemoryStore`), opened by the factory.

Layout: base.py and memory_base.py (the interfaces and records), query.py (typed full-text
queries), journal.py (commit notes), factory.py (the only place stores are opened), and one
package per backend (sqlite/) holding all of its SQL.
"""

from __future__ import annotations

from .base import (  # noqa: I001
                   AgentStore,
                   AppliedMigration,
                   CredentialRecord,
                   EntryRecord,
                   SearchRow,
                   SessionFilter,
                   SessionRecord,
                   TextMatch,
)
from .documents_base import Document, DocumentConflict, DocumentStore
from .factory import (
                   agent_database_path,
                   agent_store_exists,
                   check_storage,
                   known_agent_ids,
                   move_aside,
                   open_agent_store,
                   open_agent_store_file,
                   open_in_memory_store,
                   open_memory_index,
)
from .journal import commit_journal
from .memory_base import ChunkRecord, FileRecord, MemoryStore, VectorFilter
from .query import TextQuery, TextTerm

__all__ = [
    "AgentStore",
    "AppliedMigration",
    "ChunkRecord",
    "CredentialRecord",
    "Document",
    "DocumentConflict",
    "DocumentStore",
    "EntryRecord",
    "FileRecord",
    "MemoryStore",
    "SearchRow",
    "SessionFilter",
    "SessionRecord",
    "TextMatch",
    "TextQuery",
    "TextTerm",
    "VectorFilter",
    "agent_database_path",
    "agent_store_exists",
    "check_storage",
    "known_agent_ids",
    "commit_journal",
    "move_aside",
    "open_agent_store",
    "open_agent_store_file",
    "open_in_memory_store",
    "open_memory_index",
]
