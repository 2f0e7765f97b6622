"""What committed transactions wrote, per thread, while a `commit_journal()` block runs.

A call that hits a damaged page after some of its steps committed can say exactly which ones
did. Backend-neutral: every store reports the notes of the transactions it commits through
`record_committed`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

_journals = threading.local()


@contextmanager
def commit_journal() -> Iterator[list[str]]:
    """Collect the notes of every transaction this thread commits inside the block."""
    stack = _journals.__dict__.setdefault("stack", [])
    mine: list[str] = []
    stack.append(mine)
    try:
        yield mine
    finally:
        del stack[next(i for i, j in enumerate(stack) if j is mine)]  # by identity: empty lists are equal


def current_journal() -> object:
    """The innermost open journal of this thread (None outside any `commit_journal()` block)."""
    stack = _journals.__dict__.get("stack") or []
    return stack[-1] if stack else None


def record_committed(notes: Sequence[str]) -> None:
    """Add the notes of a committed transaction to every open journal of this thread."""
    for journal in _journals.__dict__.get("stack") or []:
        journal.extend(n for n in dict.fromkeys(notes) if n not in journal)
