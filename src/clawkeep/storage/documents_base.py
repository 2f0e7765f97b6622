"""Memory documents in the database (SPEC D4): the shared copy of each Markdown memory file.

In PostgreSQL mode the documents (path, text, version) live in the database and every instance
mirrors them into its workspace directory (clawkeep.memory.documents). Every write is a
compare-and-set on `version`: a writer that read an older version gets ConflictError and must
re-read, so no instance can overwrite what another wrote without seeing it. A deleted document
stays as a tombstone (its version keeps counting) so mirrors learn of the deletion. `seq` grows
with every write across all documents: a mirror asks for what changed after the last `seq` it saw.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    path: str  # workspace-relative, "/" separated
    text: str
    version: int
    seq: int
    deleted: bool = False
    updated_by: str | None = None


@dataclass(frozen=True)
class DocumentConflict:
    path: str
    kept_as: str  # where the losing version was kept (another document)
    base_version: int | None
    current_version: int | None
    holder: str
    at: int


class DocumentStore(abc.ABC):
    @abc.abstractmethod
    def doc_get(self, path: str) -> Document | None:
        """The document (a tombstone when deleted), None if it never existed."""

    @abc.abstractmethod
    def doc_put(self, path: str, text: str, expected_version: int | None, holder: str) -> Document:
        """Write if the stored version is still `expected_version` (None: the document must not
        exist, or be deleted); ConflictError otherwise."""

    @abc.abstractmethod
    def doc_delete(self, path: str, expected_version: int, holder: str) -> Document:
        """Tombstone the document if its version is still `expected_version`; ConflictError otherwise."""

    @abc.abstractmethod
    def doc_head(self) -> int:
        """The highest `seq` so far (0: no document)."""

    @abc.abstractmethod
    def doc_changes(self, after_seq: int) -> list[Document]:
        """Documents written after `after_seq`, oldest write first (tombstones included)."""

    @abc.abstractmethod
    def doc_record_conflict(self, conflict: DocumentConflict) -> None: ...

    @abc.abstractmethod
    def doc_conflicts(self, limit: int = 50) -> list[DocumentConflict]:
        """The most recent conflicts, newest first."""
