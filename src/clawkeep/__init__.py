"""clawkeep: sessions and memory for AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    ClawkeepError,
    ConflictError,
    ForbiddenError,
    InputError,
    NotFoundError,
    StorageError,
    UnauthorizedError,
    UnavailableError,
)

if TYPE_CHECKING:
    from .api.shapes import *  # noqa: F403 - the result models, as `clawkeep.MessageResult` etc.
    from .client import AsyncClient, Client
    from .engine import Engine

__all__ = ["AsyncClient", "Client", "Engine", "ClawkeepError", "ConflictError", "ForbiddenError", "InputError",
           "NotFoundError", "StorageError", "UnauthorizedError", "UnavailableError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `Engine` and the client are imported on first use, so a process that needs only part of the
    # package (a cold CLI search, a storage tool) does not pay for every service at import.
    if name == "Engine":
        from .engine import Engine  # deferred: every service; see the comment above

        return Engine
    if name in ("Client", "AsyncClient"):
        from . import client  # deferred: httpx, for the HTTP client only

        return getattr(client, name)
    from .api import shapes  # deferred: the result models, asked for by name

    if name in shapes.__all__:  # the result models (api shapes) the Engine and the clients return
        return getattr(shapes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
