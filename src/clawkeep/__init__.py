"""clawkeep: sessions and memory for AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import ClawkeepError, ConflictError, InputError, NotFoundError, StorageError

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["Engine", "ClawkeepError", "ConflictError", "InputError", "NotFoundError", "StorageError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `Engine` is imported on first use, so a process that needs only part of the package
    # (a cold CLI search, a storage tool) does not pay for every service at import.
    if name == "Engine":
        from .engine import Engine

        return Engine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
