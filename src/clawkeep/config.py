"""Typed configuration: the one source of truth for every default.

The file is JSON5 (`clawkeep.json5` in the home, or `--config FILE`) and uses OpenClaw's key
names where they exist. Loading validates every value; an invalid value raises `InputError`
naming the key, the bad value and what is allowed. Unknown keys are collected as warnings.
Sections owned by later subsystems (memory search, compaction, plugins, …) are accepted as
free-form objects until their typed models exist, so they never warn.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import json5
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import InputError

DmScope = Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"]
Visibility = Literal["self", "tree", "agent", "all"]
ResetMode = Literal["daily", "idle", "none"]

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: str | int | float, *, default_unit: str = "s") -> timedelta:
    """Parse `30d`, `5m`, `90s`, `1500ms` or a bare number (in `default_unit`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(seconds=float(value) * _UNIT_SECONDS[default_unit])
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration; use a number with a unit such as 30d, 12h, 5m, 90s")
    number, unit = match.groups()
    return timedelta(seconds=int(number) * _UNIT_SECONDS[unit or default_unit])


class _Model(BaseModel):
    # populate_by_name lets Python callers use snake_case; files use the camelCase aliases.
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)


class ResetPolicy(_Model):
    mode: ResetMode = "daily"
    at_hour: int = Field(4, alias="atHour", ge=0, le=23)
    idle_minutes: int | None = Field(None, alias="idleMinutes", ge=0)


class ResetConfig(ResetPolicy):
    """`session.reset`; `resetByType` / `resetByChannel` override it per chat type / channel."""

    timezone: str | None = None  # IANA name; None = the gateway host's local time

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}; use an IANA name such as Europe/Berlin") from None
        return value


class MaintenanceConfig(_Model):
    mode: Literal["warn", "enforce"] = "warn"
    prune_after: str = Field("30d", alias="pruneAfter")
    max_entries: int = Field(500, alias="maxEntries", ge=1)
    # Writes may overshoot maxEntries by this many rows before a batch cleanup runs.
    high_water_entries: int = Field(25, alias="highWaterEntries", ge=0)

    @field_validator("prune_after")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def prune_after_delta(self) -> timedelta:
        return parse_duration(self.prune_after)


class AgentToAgentConfig(_Model):
    max_ping_pong_turns: int = Field(5, alias="maxPingPongTurns", ge=0, le=20)


class SessionConfig(_Model):
    dm_scope: DmScope = Field("main", alias="dmScope")
    main_key: str = Field("main", alias="mainKey", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    identity_links: dict[str, list[str]] = Field(default_factory=dict, alias="identityLinks")
    reset: ResetConfig = Field(default_factory=ResetConfig)
    reset_by_type: dict[Literal["direct", "group", "thread"], ResetPolicy] = Field(
        default_factory=dict, alias="resetByType"
    )
    reset_by_channel: dict[str, ResetPolicy] = Field(default_factory=dict, alias="resetByChannel")
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    agent_to_agent: AgentToAgentConfig = Field(default_factory=AgentToAgentConfig, alias="agentToAgent")
    # Largest accepted message text, in characters; larger input is refused, not cut.
    max_message_chars: int = Field(200_000, alias="maxMessageChars", ge=1)


class SessionToolsConfig(_Model):
    visibility: Visibility = "tree"


class ToolsConfig(_Model):
    sessions: SessionToolsConfig = Field(default_factory=SessionToolsConfig)


class SandboxConfig(_Model):
    # "spawned" clamps sandboxed callers to `tree` visibility (S8).
    session_tools_visibility: Literal["spawned", "all"] = Field("spawned", alias="sessionToolsVisibility")


class DecayConfig(_Model):
    enabled: bool = False  # off: an always-on decay drops LoCoMo recall from 0.72 to 0.19
    half_life_days: float = Field(30.0, alias="halfLifeDays", gt=0)


class MmrConfig(_Model):
    enabled: bool = False
    lambda_: float = Field(0.7, alias="lambda", ge=0, le=1)


class HybridConfig(_Model):
    enabled: bool = True
    vector_weight: float = Field(0.7, alias="vectorWeight", ge=0, le=1)
    text_weight: float = Field(0.3, alias="textWeight", ge=0, le=1)
    candidate_multiplier: int = Field(4, alias="candidateMultiplier", ge=1, le=50)
    temporal_decay: DecayConfig = Field(default_factory=DecayConfig, alias="temporalDecay")
    mmr: MmrConfig = Field(default_factory=MmrConfig)


class MemoryQueryConfig(_Model):
    max_results: int = Field(6, alias="maxResults", ge=1, le=50)
    min_score: float = Field(0.35, alias="minScore", ge=0, le=1)
    snippet_max_chars: int = Field(700, alias="snippetMaxChars", ge=80)
    hybrid: HybridConfig = Field(default_factory=HybridConfig)


class ChunkingConfig(_Model):
    tokens: int = Field(400, ge=32, le=8192)
    overlap: int = Field(80, ge=0, le=4096)


class MemorySyncConfig(_Model):
    watch: bool = True
    watch_debounce_ms: int = Field(1500, alias="watchDebounceMs", ge=0)
    sessions_debounce_ms: int = Field(5000, alias="sessionsDebounceMs", ge=0)


class MemoryExperimental(_Model):
    session_memory: bool = Field(False, alias="sessionMemory")


class WriteFilterConfig(_Model):
    allow_secrets: bool = Field(False, alias="allowSecrets")


class MemorySearchConfig(_Model):
    """`agents.defaults.memorySearch`: the memory index and memory_search (M2–M6)."""

    enabled: bool = True
    # local = bundled offline model; none = keyword only; auto = first remote provider with a key.
    provider: str = "local"
    model: str | None = None
    remote: dict[str, Any] = Field(default_factory=dict)
    batch_size: int | None = Field(None, alias="batchSize", ge=1)
    timeout_ms: int | None = Field(None, alias="timeoutMs", ge=1)
    sources: list[Literal["memory", "sessions"]] = Field(default_factory=lambda: ["memory"])
    extra_paths: list[str] = Field(default_factory=list, alias="extraPaths")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    query: MemoryQueryConfig = Field(default_factory=MemoryQueryConfig)
    sync: MemorySyncConfig = Field(default_factory=MemorySyncConfig)
    experimental: MemoryExperimental = Field(default_factory=MemoryExperimental)
    vector_store: Literal["numpy", "sqlite-vec"] = Field("numpy", alias="vectorStore")
    max_file_bytes: int = Field(2 * 1024 * 1024, alias="maxFileBytes", ge=1024)
    write_filters: WriteFilterConfig = Field(default_factory=WriteFilterConfig, alias="writeFilters")


class MemoryConfig(_Model):
    citations: Literal["auto", "on", "off"] = "auto"


class ModelRefConfig(_Model):
    primary: str | None = None  # "<provider>/<model>" from `models.providers`; None = record mode
    fallbacks: list[str] = Field(default_factory=list)


class MemoryFlushConfig(_Model):
    enabled: bool = True
    soft_threshold_tokens: int = Field(4000, alias="softThresholdTokens", ge=0)
    force_flush_transcript_bytes: int = Field(2 * 1024 * 1024, alias="forceFlushTranscriptBytes", ge=0)
    model: str | None = None


class CompactionConfig(_Model):
    reserve_tokens_floor: int = Field(20_000, alias="reserveTokensFloor", ge=0)
    keep_recent_tokens: int = Field(20_000, alias="keepRecentTokens", ge=0)
    identifier_policy: Literal["strict", "off", "custom"] = Field("strict", alias="identifierPolicy")
    identifier_instructions: str | None = Field(None, alias="identifierInstructions")
    model: str | None = None
    truncate_after_compaction: bool = Field(False, alias="truncateAfterCompaction")
    max_active_transcript_bytes: int | None = Field(None, alias="maxActiveTranscriptBytes", ge=1024)
    notify_user: bool = Field(True, alias="notifyUser")
    memory_flush: MemoryFlushConfig = Field(default_factory=MemoryFlushConfig, alias="memoryFlush")


class SoftTrimConfig(_Model):
    max_chars: int = Field(4000, alias="maxChars", ge=100)
    head_chars: int = Field(1500, alias="headChars", ge=0)
    tail_chars: int = Field(1500, alias="tailChars", ge=0)


class ContextPruningConfig(_Model):
    # None = automatic: cache-ttl for Anthropic models, off otherwise (S9)
    mode: Literal["cache-ttl", "off"] | None = None
    ttl: str = "5m"
    keep_last_assistants: int = Field(3, alias="keepLastAssistants", ge=0)
    soft_trim_ratio: float = Field(0.3, alias="softTrimRatio", ge=0, le=1)
    hard_clear_ratio: float = Field(0.5, alias="hardClearRatio", ge=0, le=1)
    min_prunable_tool_chars: int = Field(50_000, alias="minPrunableToolChars", ge=0)
    soft_trim: SoftTrimConfig = Field(default_factory=SoftTrimConfig, alias="softTrim")

    @field_validator("ttl")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value


class AgentDefaults(_Model):
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    workspace: str | None = None  # main agent's workspace; default <home>/workspace
    # ro / none: the agent may read but never write memory files (flush skipped, remember refused)
    workspace_access: Literal["rw", "ro", "none"] = Field("rw", alias="workspaceAccess")
    # MEMORY.md is injected at DM session start up to this many characters (the file is never cut).
    bootstrap_max_chars: int = Field(20_000, alias="bootstrapMaxChars", ge=1000)
    memory_search: MemorySearchConfig = Field(default_factory=MemorySearchConfig, alias="memorySearch")
    model: ModelRefConfig = Field(default_factory=ModelRefConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    context_pruning: ContextPruningConfig = Field(default_factory=ContextPruningConfig, alias="contextPruning")


class AgentsConfig(_Model):
    defaults: AgentDefaults = Field(default_factory=AgentDefaults)
    agents_list: list[dict[str, Any]] = Field(default_factory=list, alias="list")


class StorageConfig(_Model):
    # None = embedded SQLite under the home; "postgresql://…" selects PostgreSQL (SPEC D1).
    url: str | None = None
    # NORMAL (WAL): an acknowledged message survives a crash of the process (kill -9, tested);
    # FULL also fsyncs every commit, so it survives power loss too, at ~60% of the throughput.
    synchronous: Literal["FULL", "NORMAL"] = "NORMAL"
    busy_timeout_ms: int = Field(30_000, alias="busyTimeoutMs", ge=0)


class HookEntry(_Model):
    enabled: bool = True
    messages: int = Field(15, ge=1, le=200)  # session-memory: how many messages the excerpt keeps
    llm_slug: bool = Field(False, alias="llmSlug")


class InternalHooks(_Model):
    entries: dict[str, HookEntry] = Field(default_factory=dict)


class HooksConfig(_Model):
    internal: InternalHooks = Field(default_factory=InternalHooks)

    def entry(self, name: str) -> HookEntry:
        return self.internal.entries.get(name) or HookEntry()


class Config(_Model):
    session: SessionConfig = Field(default_factory=SessionConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    plugins: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, Any] = Field(default_factory=dict)

    # Filled by `load_config`; not part of the file.
    warnings: list[str] = Field(default_factory=list, exclude=True)


def _unknown_keys(model: BaseModel, prefix: str = "") -> list[str]:
    found = [f"{prefix}{key}" for key in (model.model_extra or {}) if key != "warnings"]
    for name in type(model).model_fields:
        value = getattr(model, name)
        alias = type(model).model_fields[name].alias or name
        if isinstance(value, BaseModel):
            found += _unknown_keys(value, f"{prefix}{alias}.")
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, BaseModel):
                    found += _unknown_keys(item, f"{prefix}{alias}.{key}.")
    return found


def _describe_error(error: dict[str, Any]) -> str:
    key = ".".join(str(part) for part in error["loc"])
    value = error.get("input")
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "literal_error":
        allowed = error.get("ctx", {}).get("expected", "")
        return f"{key} = {value!r} is not allowed; allowed values: {allowed}"
    return f"{key} = {value!r}: {message}"


def config_from_dict(data: dict[str, Any], *, source: str = "config") -> Config:
    if not isinstance(data, dict):
        raise InputError(f"{source}: the top level must be an object, got {type(data).__name__}")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe_error(err) for err in exc.errors())
        raise InputError(f"{source}: invalid configuration: {problems}") from None
    unknown = _unknown_keys(config)
    try:
        from .recall.settings import active_memory_config  # noqa: PLC0415 - the plugin's own typed section

        plugin = active_memory_config(config)
    except ValidationError as exc:
        prefix = ("plugins", "entries", "active-memory")
        problems = "; ".join(_describe_error({**err, "loc": prefix + tuple(err["loc"])}) for err in exc.errors())
        raise InputError(f"{source}: invalid configuration: {problems}") from None
    unknown += _unknown_keys(plugin, "plugins.entries.active-memory.")
    config.warnings = [f"{source}: unknown key {key!r} ignored" for key in unknown]
    return config


def load_config(path: str | os.PathLike[str] | None) -> Config:
    """Read and validate a JSON5 config file; a missing default file means all defaults."""
    if path is None:
        return Config()
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"config file {file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"config file {file} cannot be read: {exc}") from None
    try:
        data = json5.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InputError(f"config file {file} is not valid JSON5: {exc}") from None
    return config_from_dict(data, source=str(file))
