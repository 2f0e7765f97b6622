"""The refusal log: what the write filters (M7) kept out of memory, and why, for the operator.

One JSON object a line in `agents/<id>/memory-refusals.jsonl`: time, source (`remember`,
`tool`, `chat`, `flush`), the filter's reason, the conversation it came from, and a short
excerpt with every credential redacted first — the secret a filter refused is never written
here in clear. Incognito threads leave nothing (they are never stored). Lines older than
RETENTION_DAYS are dropped when the file is rewritten (whenever it passes MAX_BYTES); appends
and the rewrite hold an advisory lock, so a CLI and a gateway on one home can both write.
This is a per-host diagnostic, like a log file: with a shared database each host keeps its own.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import api
from ..events import MemoryRefused
from ..redact import redact_secrets
from ..routing.keys import parse_key
from ..runtime import Runtime
from ..storage import agent_database_path
from ..timeutil import to_iso

FILE_NAME = "memory-refusals.jsonl"
RETENTION_DAYS = 30
MAX_BYTES = 512 * 1024  # past this the file is rewritten without lines older than RETENTION_DAYS
MAX_LINES = 5000  # …and with at most this many of the newest
EXCERPT_CHARS = 160
DAY_MS = 86_400_000


def log_path(rt: Runtime) -> Path:
    return agent_database_path(rt.home, rt.agent_id).parent / FILE_NAME


def excerpt(text: str) -> str:
    """One line of at most EXCERPT_CHARS, credentials redacted before anything is cut."""
    flat = " ".join(redact_secrets(text)[0].split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "\u2026"


def record(rt: Runtime, event: MemoryRefused) -> None:
    """Append one refusal (nothing for an incognito thread)."""
    if event.session_key is not None and parse_key(event.session_key).incognito:
        return
    line = {"at": to_iso(event.at), "atMs": event.at, "source": event.source,
            "reason": redact_secrets(event.reason)[0], "excerpt": excerpt(event.text)}
    if event.session_key is not None:
        line["sessionKey"] = event.session_key
    path = log_path(rt)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path) as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() and not _ends_with_newline(handle):
            handle.write(b"\n")  # a line cut by a crash mid-append stays alone (and is skipped)
        handle.write((json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))
        handle.flush()
        if handle.tell() > MAX_BYTES:
            _prune(handle, event.at)


def recent(rt: Runtime, days: int, now: int) -> list[api.Refusal]:
    """Refusals of the last `days` days, newest first (an unreadable line is skipped)."""
    path = log_path(rt)
    if not path.is_file():
        return []
    since = now - days * DAY_MS
    found = [row for row in _rows(path.read_bytes()) if row.get("atMs", 0) >= since]
    found.sort(key=lambda row: row.get("atMs", 0), reverse=True)
    # the log's rows, read back from disk: checked against the shape as they are read
    return [api.Refusal.model_validate({k: v for k, v in row.items() if k != "atMs"}) for row in found]


def _rows(data: bytes) -> Iterator[dict[str, Any]]:
    for raw in data.splitlines():
        try:
            row = json.loads(raw)
        except ValueError:
            continue  # a line cut by a crash mid-append
        if isinstance(row, dict) and isinstance(row.get("atMs"), int):
            yield row


@contextmanager
def _locked(path: Path) -> Iterator[Any]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "r+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _ends_with_newline(handle: Any) -> bool:
    handle.seek(-1, os.SEEK_END)
    return handle.read(1) == b"\n"


def _prune(handle: Any, now: int) -> None:
    """Keep the lines of the last RETENTION_DAYS (at most MAX_LINES), in place, under the lock."""
    handle.seek(0)
    since = now - RETENTION_DAYS * DAY_MS
    kept = [row for row in _rows(handle.read()) if row["atMs"] >= since][-MAX_LINES:]
    handle.seek(0)
    handle.truncate()
    handle.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in kept).encode("utf-8"))
    handle.flush()
