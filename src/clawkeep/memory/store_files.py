"""Whole Markdown files under memory/store/: the key/value stores adapters keep (the LangGraph
store: one file per namespace). Read and written whole, with optimistic concurrency (the writer
names the sha256 it started from), atomically (fileio.replace_text), and indexed like every other
memory file, so hybrid search finds their lines and people can read them."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .. import api
from ..errors import ConflictError, InputError
from ..fileio import replace_text
from ..runtime import Runtime
from .items import STORE_ROOT as ROOT
from .service import workspace

MAX_FILE_BYTES = 4 * 1024 * 1024
_PART = re.compile(r"[A-Za-z0-9._%+=-]+")


def _target(rt: Runtime, path: str) -> Path:
    """`path` (memory/store/<parts>.md) inside the workspace; anything else is refused."""
    if not isinstance(path, str) or not path.startswith(ROOT + "/") or not path.endswith(".md"):
        raise InputError(f"store path {path!r}: must be {ROOT}/<name>.md (folders allowed)")
    parts = path[len(ROOT) + 1:-3].split("/")
    if any(not _PART.fullmatch(part) or part in (".", "..") for part in parts):
        raise InputError(f"store path {path!r}: each part may use letters, digits and . _ % + = - only")
    return workspace(rt) / path


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read(rt: Runtime, path: str) -> api.StoreFile:
    target = _target(rt, path)
    text = target.read_text(encoding="utf-8") if target.is_file() else ""
    return api.StoreFile(path=path, text=text, sha256=_digest(text) if target.is_file() else "",
                         exists=target.is_file())


def write(rt: Runtime, path: str, text: str, base_sha256: str | None) -> api.StoreFile:
    """Replace the file (empty text: delete it). `base_sha256`: the version the caller read ("" for
    a file that did not exist); if the file changed since, nothing is written (409)."""
    target = _target(rt, path)
    if len(text.encode()) > MAX_FILE_BYTES:
        raise InputError(f"store file text is over {MAX_FILE_BYTES} bytes; split the namespace")
    current = _digest(target.read_text(encoding="utf-8")) if target.is_file() else ""
    if base_sha256 is not None and base_sha256 != current:
        raise ConflictError(f"store file {path} changed since it was read (another writer); read it again and retry")
    if text:
        replace_text(target, text)
    elif target.is_file():
        target.unlink()
    return api.StoreFile(path=path, text=text, sha256=_digest(text) if text else "", exists=bool(text))


def listing(rt: Runtime, prefix: str = ROOT) -> list[api.StoreFile]:
    """Every store file under `prefix` (a folder or a file path without .md) with its text, by path."""
    if not prefix.startswith(ROOT):
        raise InputError(f"store prefix {prefix!r}: must start with {ROOT}")
    base = workspace(rt, reading=True)
    root = base / ROOT
    if not root.is_dir():
        return []
    found = []
    for file in sorted(root.rglob("*.md")):
        relative = file.relative_to(base).as_posix()
        if relative.startswith(prefix.rstrip("/") + "/") or relative == prefix.rstrip("/") + ".md" \
                or prefix.rstrip("/") == ROOT:
            text = file.read_text(encoding="utf-8")
            found.append(api.StoreFile(path=relative, text=text, sha256=_digest(text), exists=True))
    return found
