"""clawkeep: sessions and memory for AI agents."""

from .engine import Engine
from .errors import ClawkeepError, ConflictError, InputError, NotFoundError, StorageError

__all__ = ["Engine", "ClawkeepError", "ConflictError", "InputError", "NotFoundError", "StorageError"]
__version__ = "0.1.0"
