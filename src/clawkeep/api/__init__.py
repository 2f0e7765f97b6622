"""The typed contract: results (`shapes`) and operations with typed arguments (`operations`).

The Engine returns these models; the CLI's `--json`, the HTTP gateway's OpenAPI, the MCP tool
schemas and the reply model's tool schemas are generated from them.
"""

from typing import TYPE_CHECKING

from . import shapes

__all__ = [
    "AGENT_TOOLS", "OPERATIONS", "SEND_TIMEOUT_DEFAULT_S", "SEND_TIMEOUT_MAX_S", "Args", "BootstrapFile",
    "Classification", "CleanupReport", "DeleteResult", "DoctorReport", "EngineStatus", "History", "HistoryMessage",
    "IndexReport", "MemoryChange", "MemoryFile", "MemoryHit", "MemoryItem", "MemorySearchResult", "MemoryStatus",
    "MessagePreview", "MessageResult", "Metrics", "Operation", "RecallResult", "RememberResult", "ResetResult",
    "SearchHit", "SearchResult", "SendResult", "SessionInfo", "SessionStatus", "StoreFile", "Shape", "SweepResult",
    "SystemEventResult", "Usage", "BackfillReport", "DreamingStatus", "DreamingToggle", "ExplainReport",
    "HarnessReport", "PromoteReport", "DiaryEntry", "DreamsReview", "PromotedItem", "PromotionRun", "SweepReport",
    "UndoReport", "ArchivedTranscript", "CompactionMark", "Interval", "Refusal", "Timeline",
]

if TYPE_CHECKING:
    from .operations import AGENT_TOOLS, OPERATIONS, Args, Operation
    from .shapes import (  # every result model, imported on first use (__getattr__)
        SEND_TIMEOUT_DEFAULT_S,
        SEND_TIMEOUT_MAX_S,
        ArchivedTranscript,
        BackfillReport,
        BootstrapFile,
        Classification,
        CleanupReport,
        CompactionMark,
        DeleteResult,
        DiaryEntry,
        DoctorReport,
        DreamingStatus,
        DreamingToggle,
        DreamsReview,
        EngineStatus,
        ExplainReport,
        HarnessReport,
        History,
        HistoryMessage,
        IndexReport,
        Interval,
        MemoryChange,
        MemoryFile,
        MemoryHit,
        MemoryItem,
        MemorySearchResult,
        MemoryStatus,
        MessagePreview,
        MessageResult,
        Metrics,
        PromotedItem,
        PromoteReport,
        PromotionRun,
        RecallResult,
        Refusal,
        RememberResult,
        ResetResult,
        SearchHit,
        SearchResult,
        SendResult,
        SessionInfo,
        SessionStatus,
        Shape,
        StoreFile,
        SweepReport,
        SweepResult,
        SystemEventResult,
        Timeline,
        UndoReport,
        Usage,
    )

_OPERATIONS_NAMES = ("AGENT_TOOLS", "OPERATIONS", "Args", "Operation")


def __getattr__(name: str) -> object:
    # The operation registry (every argument model) loads on first use: the HTTP gateway, the
    # MCP server and the tool loop need it, a one-shot CLI command does not. So does each
    # result model (shapes: a command builds the few it returns).
    if name in _OPERATIONS_NAMES:
        from . import operations  # deferred: every argument model; see the comment above

        return getattr(operations, name)
    if name in shapes.__all__:
        value = getattr(shapes, name)
        globals()[name] = value  # asked once: each call that returns a result names its model
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
