"""Whole-file replacement that a crash cannot leave half done: the old file or the new one,
never a torn mix, and the new one on disk before the rename makes it visible. Used by Dreaming's
store and the importer's notes (memory/documents.py keeps its own, which the read-only-workspace
tests simulate through Path.write_text)."""

from __future__ import annotations

import os
from pathlib import Path


def replace_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file beside it, fsynced, then one rename.
    Raises OSError (callers name the file in their own words); no temporary is left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass
        raise
