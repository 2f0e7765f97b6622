"""The typed contract: every result the engine returns, defined once (SPEC §P shapes).

Fields are snake_case in Python and camelCase in JSON. `to_json()` gives the documented JSON
(a key the service left out — `reply` in record mode, say — stays out; a key it set to null
stays null); the CLI's `--json`, the HTTP gateway, the MCP server and the model's tool results
all print exactly that. A result also reads like its JSON — `result["hits"][0]["messageId"]` —
so callers that think in the documented shapes need no second vocabulary.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

SEND_TIMEOUT_DEFAULT_S = 30  # sessions_send waits this long for the reply unless told (OpenClaw's default)
SEND_TIMEOUT_MAX_S = 3600


class Shape(BaseModel):
    """Base of every contract model: camelCase aliases, extra keys kept, JSON-like reads."""

    # defer_build: a model's validator is built when it is first used, so a process that
    # returns one kind of result does not build the schema of every other one at import.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    # --- reading a result like its JSON --------------------------------------------------
    def _field_for(self, key: str) -> str | None:
        for name, field in type(self).model_fields.items():
            if key in (field.alias, name):
                return name
        extra = self.__pydantic_extra__ or {}
        return key if key in extra else None

    def __getitem__(self, key: str) -> Any:
        name = self._field_for(key)
        if name is None or name not in self.model_fields_set and name in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, name)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> list[str]:
        return list(self.to_json())

    def __iter__(self) -> Any:  # iterates its JSON keys, like the dict it documents
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dict):
            return self.to_json() == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


# --- messages and recall ----------------------------------------------------------------------
class RecallResult(Shape):
    status: Literal["ok", "none", "skipped", "timeout", "error"]
    lane: int | None = None
    past_question: bool
    summary: str | None = None
    elapsed_ms: int
    reason: str | None = None


class Classification(Shape):
    past_question: bool
    language: str


class MessageResult(Shape):
    """One inbound message through the turn (`message --json`, `POST /v1/messages`)."""

    session_key: str
    session_id: str
    message_id: str | None = None
    role: str
    client_message_id: str | None = None
    command: str | None = None
    duplicate: bool = False
    reset: str | None = None
    status: dict[str, Any] | None = None
    reply: str | None = None
    active_memory: RecallResult | None = None
    mode: Literal["record"] | None = None
    note: str | None = None
    compaction: dict[str, Any] | None = None
    flush: dict[str, Any] | None = None
    verbose: str | None = None
    trace: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # [{"name", "isError"}] the tools the model ran
    remembered: RememberResult | None = None  # record mode: what "remember …" in chat wrote


class SystemEventResult(Shape):
    session_key: str
    session_id: str
    event_id: str
    pending_notices: int


# --- sessions ---------------------------------------------------------------------------------
class MessagePreview(Shape):
    message_id: str
    role: str | None = None
    text: str
    timestamp: str | None = None


class SessionInfo(Shape):
    """A row of `sessions list`, and what create/fork return."""

    key: str
    session_id: str
    agent_id: str
    kind: str
    chat_type: str | None = None
    channel: str | None = None
    label: str | None = None
    session_started_at: str | None = None
    last_interaction_at: str | None = None
    updated_at: str | None = None
    message_count: int
    title: str | None = None
    preview: str | None = None
    recent_messages: list[MessagePreview] | None = None
    incognito: bool = False  # kept in memory only (listed only when true)


class Usage(Shape):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class SessionStatus(SessionInfo):
    model: str | None = None
    origin: str | None = None
    parent_session_id: str | None = None
    current: bool = False
    reset_count: int = 0
    compaction_count: int = 0
    pending_notices: int = 0
    next_reset_at: str | None = None
    usage: Usage | None = None


class HistoryMessage(Shape):
    message_id: str | None = None
    role: str | None = None
    text: str
    timestamp: str | None = None
    client_message_id: str | None = None
    # a message another session sent (sessions_send): {"kind": "inter_session", "sourceSessionKey", "sourceTool"}
    provenance: dict[str, Any] | None = None


class History(Shape):
    session_key: str
    session_id: str
    messages: list[HistoryMessage]
    truncated: bool
    dropped_messages: int
    content_truncated: bool
    content_redacted: bool
    bytes: int


class CompactionMark(Shape):
    """A compaction inside an interval: the messages before `firstKeptMessageId` were summarised."""

    id: str
    at: str | None = None
    reason: str | None = None
    compacted_messages: int
    tokens_before: int | None = None
    tokens_after: int | None = None
    first_kept_message_id: str | None = None
    summarizer: str | None = None
    summary: str
    summary_truncated: bool = False


class Interval(Shape):
    """One interval of a transcript: from a reset boundary (or the start) to the next (or now)."""

    index: int
    open: bool
    started_at: str | None = None
    ended_at: str | None = None
    closed_by: str | None = None  # the closing reset's reason: manual | daily | idle
    boundary_id: str | None = None
    message_count: int
    first_message_id: str | None = None  # sessions_history messageId=… re-opens the interval
    last_message_id: str | None = None
    first_message_at: str | None = None
    last_message_at: str | None = None
    preview: str | None = None
    compactions: list[CompactionMark]


class ArchivedTranscript(Shape):
    session_id: str
    archived_at: str | None = None
    message_count: int


class Timeline(Shape):
    """sessions_timeline: the intervals of a session, oldest first (the open one last)."""

    session_key: str
    session_id: str
    intervals: list[Interval]
    omitted_intervals: int = 0
    forked_from_session_id: str | None = None
    archived_transcripts: list[ArchivedTranscript] | None = None


class SendResult(Shape):
    """sessions_send: what became of a message delivered into another session. `accepted`: sent
    without waiting; `ok`: the target replied (`reply`); `timeout`: no reply in time (the target
    still answers, into its own history); `no_reply`: its turn ended without visible text (or
    record mode: `mode`, `note`); `error`: its turn failed (`error`)."""

    session_key: str
    status: Literal["accepted", "ok", "timeout", "no_reply", "error"]
    message_id: str | None = None  # the message's id in the target's transcript
    reply: str | None = None
    error: str | None = None
    mode: Literal["record"] | None = None
    note: str | None = None
    ping_pong_turns: int | None = None  # at most this many alternating turns follow in the background


class SearchHit(Shape):
    session_key: str
    session_id: str
    message_id: str
    role: str | None = None
    timestamp: str | None = None
    snippet: str
    client_message_id: str | None = None


class SearchResult(Shape):
    hits: list[SearchHit]


class ResetResult(Shape):
    session_key: str
    session_id: str
    boundary_id: str
    memory_file: str | None = None


class CleanupReport(Shape):
    applied: bool
    mode: str
    sessions: int
    stale: list[Any] = Field(default_factory=list)
    over_cap: list[Any] = Field(default_factory=list)
    wrong_dm_scope: list[Any] = Field(default_factory=list)
    archives: list[Any] = Field(default_factory=list)


# --- memory -----------------------------------------------------------------------------------
class MemoryItem(Shape):
    """A remembered bullet; its state attributes (at, expires, supersededBy, …) ride along."""

    id: str
    path: str
    line: int
    text: str
    status: Literal["active", "superseded", "expired"]


class Refusal(Shape):
    """A would-be memory a write filter refused (the refusal log): the excerpt is redacted."""

    at: str
    source: Literal["remember", "tool", "chat", "flush"]
    reason: str
    excerpt: str
    session_key: str | None = None


class RememberResult(Shape):
    status: Literal["stored", "duplicate", "refused", "failed"]  # failed: the write itself failed (reason)
    item: MemoryItem | None = None
    reason: str | None = None
    superseded: list[str] | None = None


class MemoryHit(Shape):
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str | None = None
    origin: str | None = None
    session_key: str | None = None
    message_ids: list[str] | None = None


class MemorySearchResult(Shape):
    results: list[MemoryHit]


class MemoryFile(Shape):
    path: str
    from_line: int = Field(alias="from")
    to_line: int = Field(alias="to")
    total_lines: int
    text: str
    truncated: bool = False


class DeleteResult(Shape):
    deleted: str
    path: str
    text: str


class SweepResult(Shape):
    removed: list[dict[str, Any]]


class IndexReport(Shape):
    indexed: list[str]
    removed: list[str]
    skipped: dict[str, str]
    rebuilt: bool
    embedding_error: str | None = None
    chunks: int


class MemoryStatus(Shape):
    workspace: str
    workspace_exists: bool
    files: int
    sources: list[str]
    index: dict[str, Any]
    provider: dict[str, Any]
    vector_store: dict[str, Any]


class BootstrapFile(Shape):
    path: str
    text: str
    truncated: bool
    original_chars: int


# --- the engine -------------------------------------------------------------------------------
class Metrics(Shape):
    """G5 (seed 001 §6.2): the memory system's health, from running totals (hooks.metrics)."""

    turns: int
    compactions_per100_turns: float | None = Field(None, alias="compactionsPer100Turns")
    recall_hit_rate: float | None = None
    supersession_rate: float | None = None
    adoption_rate: float | None = None
    tool_calls_per_turn: float | None = None
    counters: dict[str, int] = Field(default_factory=dict)


class EngineStatus(Shape):
    home: str
    agent_id: str
    agents: list[str]
    database: str | None = None
    storage: str
    sessions: int
    messages: int
    indexed_messages: int
    dm_scope: str
    visibility: str
    reset_mode: str
    maintenance_mode: str
    config_warnings: list[str] = Field(default_factory=list)
    metrics: Metrics | None = None
    chat_model: str | None = None  # agents.defaults.model.primary; null: record mode


class DoctorReport(Shape):
    """Per-file health of every agent database and memory index (and what a repair did)."""

    ok: bool | None = None


# --- Dreaming (Dr1–Dr2) -------------------------------------------------------------------------
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
