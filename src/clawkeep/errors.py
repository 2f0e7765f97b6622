"""Error types shared by every surface.

`InputError` is a user mistake (bad flag, bad key, bad config): the CLI prints its message
and exits 2, the HTTP API answers 4xx. Anything else is an internal failure (exit 1).
"""

from __future__ import annotations


class ClawkeepError(Exception):
    """Base class for errors clawkeep raises on purpose."""

    code = "internal"
    http_status = 500


class InputError(ClawkeepError):
    """The caller gave something invalid; the message names it and what is allowed."""

    code = "invalid_input"
    http_status = 400


class NotFoundError(InputError):
    """A session, message or file does not exist, or is hidden from the caller (S8)."""

    code = "not_found"
    http_status = 404


class ForbiddenError(InputError):
    """The request is the operator's to make: it was sent as a calling session."""

    code = "forbidden"
    http_status = 403


class UnauthorizedError(InputError):
    """The gateway refused the token (or needs one and none was sent)."""

    code = "unauthorized"
    http_status = 401


class StorageSettingsError(InputError):
    """The storage settings name a server that refuses them (login, rights, database): the CLI
    exits 2 (the settings need fixing); a server answers 503, since its client did nothing wrong."""

    code = "storage"
    http_status = 503


class ConflictError(ClawkeepError):
    """A concurrent writer changed the row first (optimistic concurrency)."""

    code = "conflict"
    http_status = 409


class StorageError(ClawkeepError):
    """The database cannot be opened, read or written (corrupt, locked, unreadable)."""

    code = "storage"
    http_status = 503


class UnavailableError(ClawkeepError):
    """A gateway cannot be reached, timed out, or answered something that is not its API (the Python client)."""

    code = "unavailable"
    http_status = 503


class CorruptDatabaseError(StorageError):
    """A database file is damaged or is not SQLite (SQLITE_CORRUPT / SQLITE_NOTADB).

    `committed` is what the failing call had already made durable before the damage was hit
    (None: unknown). The memory index rebuilds itself; the durable store never does.
    """

    code = "corrupt"

    def __init__(self, path: str, detail: str, committed: list[str] | None = None):
        super().__init__(path, detail)
        self.path, self.detail, self.committed = path, detail, committed

    def __str__(self) -> str:
        if self.committed is None:
            changed = "the step that failed was rolled back"
        elif not self.committed:
            changed = "nothing was changed"
        else:
            changed = ("before the damage was hit this call had already committed: " + "; ".join(self.committed)
                       + " (nothing after that was written)")
        return (f"database {self.path} is corrupt or not a clawkeep database ({self.detail}); {changed}. "
                "Run `clawkeep doctor` to check every database and `clawkeep doctor --repair` to salvage what "
                "is readable into a new file (the damaged original is kept beside it).")


class DuplicateError(ConflictError):
    """An entry with this id already exists (idempotent re-delivery)."""

    code = "duplicate"
