"""The typed contract: every result the engine returns, defined once (SPEC §P shapes).

Fields are snake_case in Python and camelCase in JSON. `to_json()` gives the documented JSON
(a key the service left out — `reply` in record mode, say — stays out; a key it set to null
stays null); the CLI's `--json`, the HTTP gateway, the MCP server and the model's tool results
all print exactly that. A result also reads like its JSON — `result["hits"][0]["messageId"]` —
so callers that think in the documented shapes need no second vocabulary.

The models live in one module per surface (base, turn, sessions, search, memory, engine,
dreaming) and are imported from this package on first use: defining a pydantic model costs
~2.5 M instructions, so a cold `sessions search` that builds the 3 it returns instead of all 46
saves ~10% of the process.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Where each name is defined.
_HOMES: dict[str, str] = {
    "Shape": "base", "SEND_TIMEOUT_DEFAULT_S": "base", "SEND_TIMEOUT_MAX_S": "base",
    "RecallResult": "turn", "Classification": "turn", "MessageResult": "turn", "SystemEventResult": "turn",
    "MessagePreview": "sessions", "SessionInfo": "sessions", "Usage": "sessions", "SessionStatus": "sessions",
    "HistoryMessage": "sessions", "History": "sessions", "CompactionMark": "sessions", "Interval": "sessions",
    "ArchivedTranscript": "sessions", "Timeline": "sessions", "SendResult": "sessions", "ResetResult": "sessions",
    "CleanupReport": "sessions",
    "SearchHit": "search", "SearchResult": "search", "MemoryHit": "search", "MemorySearchResult": "search",
    "MemoryItem": "memory", "Refusal": "memory", "RememberResult": "memory", "MemoryFile": "memory",
    "DeleteResult": "memory", "SweepResult": "memory", "IndexReport": "memory", "MemoryStatus": "memory",
    "BootstrapFile": "memory", "MemoryChange": "memory", "StoreFile": "memory",
    "Metrics": "engine", "EngineStatus": "engine", "DoctorReport": "engine",
    "DreamingStatus": "dreaming", "DreamingToggle": "dreaming", "SweepReport": "dreaming",
    "PromoteReport": "dreaming", "ExplainReport": "dreaming", "HarnessReport": "dreaming",
    "BackfillReport": "dreaming", "PromotedItem": "dreaming", "PromotionRun": "dreaming", "DiaryEntry": "dreaming",
    "DreamsReview": "dreaming", "UndoReport": "dreaming",
}
__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    from .base import (
        SEND_TIMEOUT_DEFAULT_S,
        SEND_TIMEOUT_MAX_S,
        Shape,
    )
    from .dreaming import (
        BackfillReport,
        DiaryEntry,
        DreamingStatus,
        DreamingToggle,
        DreamsReview,
        ExplainReport,
        HarnessReport,
        PromotedItem,
        PromoteReport,
        PromotionRun,
        SweepReport,
        UndoReport,
    )
    from .engine import (
        DoctorReport,
        EngineStatus,
        Metrics,
    )
    from .memory import (
        BootstrapFile,
        DeleteResult,
        IndexReport,
        MemoryChange,
        MemoryFile,
        MemoryItem,
        MemoryStatus,
        Refusal,
        RememberResult,
        StoreFile,
        SweepResult,
    )
    from .search import (
        MemoryHit,
        MemorySearchResult,
        SearchHit,
        SearchResult,
    )
    from .sessions import (
        ArchivedTranscript,
        CleanupReport,
        CompactionMark,
        History,
        HistoryMessage,
        Interval,
        MessagePreview,
        ResetResult,
        SendResult,
        SessionInfo,
        SessionStatus,
        Timeline,
        Usage,
    )
    from .turn import (
        Classification,
        MessageResult,
        RecallResult,
        SystemEventResult,
    )


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
