"""The reply model's tool loop (`agents.defaults.tools`): which tools it is offered and its limits.

One source of truth for these defaults; `turns.tools` reads them.
"""

from pydantic import Field, field_validator

from .base import _Model


class AgentToolsConfig(_Model):
    """`allow` / `deny` pick among the agent tools of `api.operations.AGENT_TOOLS`."""

    # Tool names or shell-style patterns ("memory_*", "*"); deny wins over allow.
    allow: list[str] = Field(default_factory=lambda: ["*"])
    deny: list[str] = Field(default_factory=list)
    # Model calls that may ask for tools in one turn; the call after the last step offers no tools,
    # so the model has to answer with what it has.
    max_steps: int = Field(8, alias="maxSteps", ge=0, le=100)
    # A tool still running after this long is answered with a timeout error (the turn goes on).
    timeout_seconds: float = Field(30.0, alias="timeoutSeconds", gt=0, le=3600)
    # A tool result longer than this is cut (with a note saying how much was left out).
    max_result_chars: int = Field(20_000, alias="maxResultChars", ge=500, le=10_000_000)

    @field_validator("allow", "deny")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not isinstance(name, str) or not name.strip() or len(name) > 100:
                raise ValueError(f"{name!r} is not a tool name or pattern; use names such as memory_search or "
                                 f"patterns such as memory_*")
        return [n.strip() for n in value]
