"""Results of the memory tools: items, refusals, remember, get, delete, sweep, index, status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Shape


class MemoryItem(Shape):
    """A remembered bullet; its state attributes (at, expires, supersededBy, …) ride along."""

    id: str
    path: str
    line: int
    text: str
    status: Literal["active", "superseded", "expired", "forgotten"]


class Refusal(Shape):
    """A would-be memory a write filter refused (the refusal log): the excerpt is redacted."""

    at: str
    source: Literal["remember", "tool", "chat", "flush"]
    reason: str
    excerpt: str
    session_key: str | None = None


class RememberResult(Shape):
    status: Literal["stored", "duplicate", "refused", "failed"]  # failed: the write itself failed (reason)
    item: MemoryItem | None = None
    reason: str | None = None
    superseded: list[str] | None = None


class MemoryChange(Shape):
    """What a correction did (memory_edit, memory_forget, memory_undo as a session): the line now
    standing (`item`), the one it retired (`previous`, kept as the trail) and the id to pass to
    memory_undo (`undo`). `refused`: a write filter kept the new text out (`reason`)."""

    status: Literal["edited", "forgotten", "undone", "unchanged", "refused"]
    item: MemoryItem | None = None
    previous: MemoryItem | None = None
    reason: str | None = None
    superseded: list[str] | None = None
    undo: str | None = None


class MemoryFile(Shape):
    path: str
    from_line: int = Field(alias="from")
    to_line: int = Field(alias="to")
    total_lines: int
    text: str
    truncated: bool = False


class StoreFile(Shape):
    """A file of memory/store/ (an adapter's key/value store, e.g. a LangGraph namespace), read whole."""

    path: str
    text: str
    sha256: str  # of the text; "" while the file does not exist
    exists: bool


class DeleteResult(Shape):
    deleted: str
    path: str
    text: str


class SweepResult(Shape):
    removed: list[dict[str, Any]]


class IndexReport(Shape):
    indexed: list[str]
    removed: list[str]
    skipped: dict[str, str]
    rebuilt: bool
    embedding_error: str | None = None
    chunks: int


class MemoryStatus(Shape):
    workspace: str
    workspace_exists: bool
    files: int
    sources: list[str]
    index: dict[str, Any]
    provider: dict[str, Any]
    vector_store: dict[str, Any]
    storage: str | None = None  # the backend: "sqlite" or "postgres" (None: no memory yet)
    storage_version: str | None = None  # "SQLite 3.45.1", "PostgreSQL 16.2"


class BootstrapFile(Shape):
    path: str
    text: str
    truncated: bool
    original_chars: int
