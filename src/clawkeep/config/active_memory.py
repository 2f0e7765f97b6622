"""Active Memory settings: `plugins.entries.active-memory` (A1–A5), typed and validated."""

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from .base import _Model

if TYPE_CHECKING:
    from .model import Config

SEARCH_TOOL = "memory_search"  # lane 2's evidence tool (memory index and, across conversations, transcripts)
MEMORY_TOOLS = ("memory_search", "memory_get")  # the default toolsAllow
PROMPT_STYLES = ("balanced", "strict", "contextual", "recall-heavy", "precision-heavy", "preference-only")
DEFAULT_STYLE = {"message": "strict", "recent": "balanced", "full": "contextual"}
CORE_TOOLS_IGNORED = ("exec", "write", "message", "web", "browser")


class CircuitBreakerConfig(_Model):
    max_timeouts: int = Field(3, alias="maxTimeouts", ge=1, le=20)
    cooldown_ms: int = Field(60_000, alias="cooldownMs", ge=5_000, le=600_000)


class LaneOneConfig(_Model):
    min_score: float = Field(0.65, alias="minScore", ge=0, le=1)
    max_entries: int = Field(3, alias="maxEntries", ge=1, le=10)
    max_chars: int = Field(1800, alias="maxChars", ge=100, le=10_000)


class ActiveMemoryOptions(_Model):
    agents: list[str] = Field(default_factory=list)  # empty: every agent
    allowed_chat_types: list[Literal["direct", "group", "channel", "explicit"]] = Field(
        default_factory=lambda: ["direct"], alias="allowedChatTypes")
    allowed_chat_ids: list[str] = Field(default_factory=list, alias="allowedChatIds")
    denied_chat_ids: list[str] = Field(default_factory=list, alias="deniedChatIds")
    mode: Literal["escalate", "always", "off"] = "escalate"
    query_mode: Literal["message", "recent", "full"] = Field("recent", alias="queryMode")
    prompt_style: Literal[PROMPT_STYLES] | None = Field(None, alias="promptStyle")  # type: ignore[valid-type]
    model: str | None = None
    model_fallback: str | None = Field(None, alias="modelFallback")
    timeout_ms: int = Field(15_000, alias="timeoutMs", ge=250, le=120_000)
    max_summary_chars: int = Field(220, alias="maxSummaryChars", ge=40, le=1000)
    # The memory tools lane 2 may use; only memory_search gathers evidence today (recall.service).
    tools_allow: list[str] = Field(default_factory=lambda: list(MEMORY_TOOLS), alias="toolsAllow")
    persist_transcripts: bool = Field(False, alias="persistTranscripts")
    remember_across_conversations: bool | None = Field(None, alias="rememberAcrossConversations")
    circuit_breaker: CircuitBreakerConfig = Field(default_factory=CircuitBreakerConfig, alias="circuitBreaker")
    recent_user_turns: int = Field(2, alias="recentUserTurns", ge=0, le=4)
    recent_assistant_turns: int = Field(1, alias="recentAssistantTurns", ge=0, le=3)
    lane_one: LaneOneConfig = Field(default_factory=LaneOneConfig, alias="laneOne")

    @property
    def style(self) -> str:
        return self.prompt_style or DEFAULT_STYLE[self.query_mode]

    def allowed_tools(self) -> list[str]:
        """Only memory tools: wildcards and core tools are ignored (A3)."""
        return [t for t in self.tools_allow if t.startswith("memory_") and "*" not in t
                and t not in CORE_TOOLS_IGNORED]

    def ignored_tools(self) -> list[str]:
        """toolsAllow entries that are not memory tools (reported as config warnings)."""
        allowed = self.allowed_tools()
        return [t for t in self.tools_allow if t not in allowed]


class ActiveMemoryConfig(_Model):
    enabled: bool = True
    config: ActiveMemoryOptions = Field(default_factory=ActiveMemoryOptions)


def active_memory_config(config: "Config") -> ActiveMemoryConfig:
    """`plugins.entries.active-memory`, typed (validated when the config loaded)."""
    return config.plugins.entries.active_memory


def remember_across_conversations(config: "Config") -> bool:
    """A5: on by default only when DMs all share the main session; an explicit value wins (here or
    at OpenClaw 2026.9's memory.search.rememberAcrossConversations: the config refuses the two disagreeing)."""
    explicit = active_memory_config(config).config.remember_across_conversations
    if explicit is None:
        explicit = config.memory.search.remember_across_conversations
    if explicit is not None:
        return explicit
    return config.session.dm_scope == "main"
