"""The memory index is derived data: a damaged `memory.sqlite` rebuilds itself.

When opening or using the index hits SQLite corruption ("file is not a database",
"database disk image is malformed"), the file and its -wal/-shm are moved aside as
`memory.sqlite.corrupt-<UTC time>` (the newest KEEP_CORRUPT sets are kept), a fresh index is
created in its place and the operation is retried once, which re-indexes the Markdown files.
The durable `agent.sqlite` is never handled this way (see `clawkeep doctor`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import CorruptDatabaseError, StorageError
from ..runtime import Runtime
from ..storage import MemoryStore, move_aside, open_memory_index
from ..timeutil import to_iso

KEEP_CORRUPT = 3
META_KEY = "corruptRebuild"
T = TypeVar("T")


def _open(rt: Runtime, path: Path) -> MemoryStore:
    return open_memory_index(path, rt.config.storage, name=rt.agent_id,
                             vector_store=rt.config.agents.defaults.memory_search.vector_store)


def open_store(rt: Runtime, path: Path) -> tuple[MemoryStore, dict[str, Any] | None]:
    """The index store at `path`; (fresh store, what happened) when the file was corrupt."""
    try:
        return _open(rt, path), None
    except CorruptDatabaseError as exc:
        return replace_corrupt(rt, path, exc.detail)


def replace_corrupt(rt: Runtime, path: Path, detail: str) -> tuple[MemoryStore, dict[str, Any]]:
    """Move the corrupt index aside and create an empty one; StorageError if either is impossible
    (never a retry loop)."""
    try:
        moved = move_aside(path, keep=KEEP_CORRUPT)
    except OSError as exc:
        raise StorageError(
            f"memory index {path} is corrupt ({detail}) and cannot be moved aside to rebuild it: {exc}. "
            f"Make {path.parent} writable, or delete {path.name} (it is rebuilt from the Markdown files)"
        ) from None
    # The sqlite-vec mirror is keyed by chunk ids, which restart in a new index.
    for sidecar in path.parent.glob(f"{path.stem}-vec-*.sqlite*"):
        sidecar.unlink(missing_ok=True)
    try:
        store = _open(rt, path)
    except CorruptDatabaseError as exc:
        raise StorageError(f"memory index {path} is still unreadable after the corrupt file was moved aside to "
                           f"{moved} ({exc.detail}); check the disk") from None
    info = {"reason": "corrupt", "error": detail, "movedTo": str(moved), "at": to_iso(rt.now())}
    store.set_meta(META_KEY, json.dumps(info))
    # In-process caches (vectors, counts) are keyed by (path, generation): never reuse an old one.
    store.set_meta("generation", str(rt.now()))
    rt.on_close(store.close)
    return store, info


def last_rebuild(store: Any) -> dict[str, Any] | None:
    raw = store.get_meta(META_KEY)
    return json.loads(raw) if raw else None


def guarded(rt: Runtime, index: Any, op: Callable[[Any], T]) -> T:
    """`op(index)`; if the index file turns out to be corrupt, rebuild it and run `op` once more."""
    try:
        return op(index)
    except CorruptDatabaseError as exc:
        path = Path(index.store.path)
        if Path(exc.path) != path:
            raise  # the durable agent.sqlite (transcripts source): never rebuilt
        index.store.close()
        index.store, index.recovered = replace_corrupt(rt, path, exc.detail)
    try:
        return op(index)
    except CorruptDatabaseError as exc:
        if Path(exc.path) != path:
            raise
        raise StorageError(f"memory index {path} was rebuilt but is corrupt again ({exc.detail}); "
                           "check the disk") from None
