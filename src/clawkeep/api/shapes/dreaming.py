"""Results of Dreaming (Dr1–Dr2): status, toggles, sweeps, promotions, the review, undo."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Shape


class DreamingStatus(Shape):
    enabled: bool
    frequency: str
    timezone: str | None = None
    model: str | None = None
    next_run: str | None = None  # ISO-8601 in the Dreaming zone
    last_sweep_at: int | None = None
    last_run_id: str | None = None
    phases: dict[str, Any] = Field(default_factory=dict)
    lock: dict[str, Any] | None = None  # who holds the sweep lock
    short_term: int = 0
    staged: int = 0
    grounded: int = 0
    promoted_today: int = 0
    pending_traces: int = 0
    dreams_file: str | None = None


class DreamingToggle(Shape):
    enabled: bool
    config: str  # the overrides file written


class SweepReport(Shape):
    """One sweep (`memory dream`, `memory promote --apply`, the schedule): each phase's report,
    what was promoted, the diary entry; `status: locked` with the `holder` when another runs."""

    status: Literal["ok", "locked", "no-workspace"]
    run_id: str
    at: int | None = None
    trigger: str | None = None
    phases: list[str] = Field(default_factory=list)
    light: dict[str, Any] | None = None
    rem: dict[str, Any] | None = None
    deep: dict[str, Any] | None = None
    promoted: list[dict[str, Any]] = Field(default_factory=list)
    diary: dict[str, Any] | None = None
    holder: dict[str, Any] | None = None
    applied: bool | None = None


class PromoteReport(Shape):
    """`memory promote` without --apply: the ranked candidates (each signal) and Deep's decisions."""

    applied: bool
    candidates: list[dict[str, Any]] = Field(default_factory=list)
    decisions: list[dict[str, Any]] = Field(default_factory=list)
    gates: dict[str, Any] | None = None


class ExplainReport(Shape):
    query: str
    weights: dict[str, float] = Field(default_factory=dict)
    gates: dict[str, Any] = Field(default_factory=dict)
    candidates: list[dict[str, Any]] = Field(default_factory=list)


class HarnessReport(Shape):
    """`memory rem-harness`: REM's themes, the candidates and Deep's would-be decisions, or (with
    --path) the grounded reading of historical notes; nothing is written."""

    grounded: bool
    days: list[dict[str, Any]] | None = None
    rem: dict[str, Any] | None = None
    candidates: list[dict[str, Any]] | None = None
    decisions: list[dict[str, Any]] | None = None
    memory_preview: str | None = None  # the MEMORY.md lines Deep would append


class BackfillReport(Shape):
    days: list[dict[str, Any]] = Field(default_factory=list)
    written: int = 0
    staged: int = 0
    removed_entries: int | None = None
    removed_short_term_entries: int | None = None
    restored: str | None = None
    dreams_file: str | None = None


class PromotedItem(Shape):
    """One line a Deep run added to MEMORY.md. `owner`: the conversation it was stated in (null:
    shared); `inMemory`: MEMORY.md still holds it (a person may have deleted it since)."""

    id: str
    text: str
    src: str | None = None  # the note line (or message) it was promoted from: path#Lline
    supersedes: list[str] = Field(default_factory=list)
    owner: str | None = None
    undone: bool = False
    in_memory: bool = False


class PromotionRun(Shape):
    run_id: str
    at: int | None = None
    status: Literal["applied", "undone"]
    mode: str | None = None  # how MEMORY.md was written: rewrite | append | recovered
    items: list[PromotedItem]


class DiaryEntry(Shape):
    heading: str
    text: str
    run_id: str | None = None  # the sweep that wrote it (none for a backfill entry)
    backfill: bool = False


class DreamsReview(Shape):
    """dreaming_review: what Dreaming did, newest first. The DREAMS.md blocks and the diary are
    the operator's (absent for a session caller, who sees only the promotions visible to it)."""

    enabled: bool
    runs: list[PromotionRun] = Field(default_factory=list)
    omitted_runs: int = 0
    dreams_file: str | None = None
    blocks: dict[str, str | None] | None = None  # light | rem | deep: the block's Markdown, null if none yet
    diary: list[DiaryEntry] | None = None
    omitted_diary: int = 0


class UndoReport(Shape):
    run_id: str
    restored: Literal["byte-identical", "lines removed"]
    items: list[dict[str, Any]] = Field(default_factory=list)
