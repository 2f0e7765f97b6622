"""The memory-index storage interface (M2): files, chunks, keyword index, vectors, cache.

The Markdown files are the source of truth; everything behind this interface can be
rebuilt from them (and from transcripts, for the `sessions` source).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import AppliedMigration
from .query import TextQuery

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)  # the SQLite store hands the same records out again (files())
class FileRecord:
    path: str  # workspace-relative, "/" separated; transcripts use "sessions/<sessionId>"
    source: str  # "memory" | "sessions"
    hash: str
    mtime: float
    size: int


@dataclass
class ChunkRecord:
    path: str
    source: str
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    hash: str
    tokens: str = ""  # analysed text for the keyword index
    weight: float = 1.0  # < 1 for superseded or expired facts (M8)
    day: str | None = None  # YYYY-MM-DD the content belongs to (temporal decay); None = evergreen
    meta: dict = field(default_factory=dict)
    id: int = 0
    # fact-level vectors: (offset of the line in `text.split("\n")`, its unit vector), written
    # with the chunk's vector by `replace_file`; a backend without line vectors ignores them
    line_vectors: tuple[tuple[int, np.ndarray], ...] = ()


@dataclass(frozen=True)
class VectorFilter:
    """Which stored vectors a vector search considers: those made by one embedding
    configuration (`vector_key`) for chunks of these `sources`."""

    vector_key: str
    sources: tuple[str, ...]


class MemoryStore(abc.ABC):
    """One agent's memory index.

    `fingerprint_guard`: when set, every file write first checks (in its transaction) that the
    index's stored fingerprint still equals it, and raises ConflictError otherwise — so a sync
    never mixes chunks of two configurations.
    """

    fingerprint_guard: str | None = None
    # Each read is a round trip to a server (PostgreSQL): a search then reads the texts of a few
    # candidates with them, not after, and keeps counts per index generation (memory/search).
    remote = False

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[None]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def applied_migrations(self) -> list[AppliedMigration]: ...

    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abc.abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    @abc.abstractmethod
    def files(self, source: str | None = None) -> dict[str, FileRecord]: ...

    @abc.abstractmethod
    def replace_file(self, record: FileRecord, chunks: Sequence[ChunkRecord],
                     vectors: np.ndarray | None, vector_key: str | None) -> None:
        """Swap a file's chunks (and their vectors) atomically."""

    @abc.abstractmethod
    def touch_file(self, record: FileRecord) -> None:
        """Update a file's stat data without touching its chunks."""

    @abc.abstractmethod
    def remove_file(self, path: str) -> None: ...

    @abc.abstractmethod
    def clear(self) -> None:
        """Drop every file, chunk and vector (full rebuild); the embedding cache survives."""

    @abc.abstractmethod
    def chunks(self, ids: Iterable[int], *, text: bool = True) -> dict[int, ChunkRecord]:
        """The chunks of these ids that exist; `text=False` leaves each record's text empty (a
        search reads the text of the few it shows with `chunk_texts`, not of every candidate)."""

    @abc.abstractmethod
    def chunk_texts(self, ids: Iterable[int]) -> dict[int, str]: ...

    @abc.abstractmethod
    def chunk_count(self) -> int: ...

    @abc.abstractmethod
    def keyword_search(self, query: TextQuery, *, sources: Sequence[str], limit: int,
                       rows: dict[int, ChunkRecord] | None = None) -> list[tuple[int, float, str]]:
        """(chunk id, bm25 rank — lower is better, analysed tokens) of chunks of `sources`, best first.
        `rows`: where a store may put the chunks (with text) it read along with the ranking, so
        the search need not read them again (a server's round trip); any subset, or none."""

    @abc.abstractmethod
    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]: ...

    @abc.abstractmethod
    def vector_search(self, query_vec: np.ndarray, k: int, flt: VectorFilter, *,
                      total: int | None = None) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the `k` stored vectors nearest `query_vec` (unit
        length, like the stored ones), most similar first. `total`: `vector_count(flt)` when the
        caller knows it (a store that needs it need not count again)."""

    def line_vectors(self, chunk_ids: Sequence[int], flt: VectorFilter) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """{chunk id: (line offsets, float32 matrix of their unit vectors)} of the given chunks,
        made with `flt.vector_key`. A backend that keeps no line vectors answers {} and search
        falls back to chunk vectors alone."""
        return {}

    @abc.abstractmethod
    def vector_count(self, flt: VectorFilter) -> int:
        """How many stored vectors `vector_search` considers (0: skip embedding the query)."""

    @abc.abstractmethod
    def describe_vectors(self, flt: VectorFilter) -> dict[str, Any]:
        """For status: {"backend", "vectors", "dims", ...}; ClawkeepError when the vector backend
        cannot run."""

    @abc.abstractmethod
    def generation(self) -> int:
        """Bumped on every change, so in-process caches know when to reload."""

    def generation_and_fingerprint(self) -> tuple[int, str | None]:
        """`generation()` and the stored "fingerprint" meta value: what a search's staleness
        check compares (one round trip on a server)."""
        return self.generation(), self.get_meta("fingerprint")

    def read_candidates(self, ids: Iterable[int], *, text: bool, line_ids: Sequence[int] = (),
                        flt: VectorFilter | None = None
                        ) -> tuple[dict[int, ChunkRecord], dict[int, tuple[np.ndarray, np.ndarray]]]:
        """`chunks(ids, text=text)` and `line_vectors(line_ids, flt)` (none without `flt`):
        a search's candidates and the line vectors of its best ones, together (one round trip
        on a server)."""
        found = self.chunks(ids, text=text)
        return found, (self.line_vectors(list(line_ids), flt) if flt is not None and line_ids else {})

    @abc.abstractmethod
    def cached_embeddings(self, key: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    @abc.abstractmethod
    def cache_embeddings(self, key: str, items: dict[str, np.ndarray]) -> None: ...
