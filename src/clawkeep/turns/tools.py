"""The reply model's tools: which ones a session is offered, and running one call.

The tools are the agent operations of `api.operations` (SPEC §P "Agent tools"), run as the
calling session (`caller` = its key), so each honours that session's visibility exactly as
the CLI, HTTP and MCP surfaces do. Whatever goes wrong inside a call — unknown tool, arguments
that are not JSON or do not fit the schema, a refused input, a timeout, a crash — comes back as
an error *result* the model can read and act on; a tool never ends the turn.

The operations run on the engine object (`rt.tool_host`, set by `Engine`): this package sits
below the engine in the layering, so it receives it instead of importing it. A turn's calls run
on `Engine.for_turn(turn)`: the turn object rides along explicitly (the caller's credential
limit, the held session locks, the once-per-turn index check, the message being answered).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from typing import TYPE_CHECKING, Any

from ..api.operations import AGENT_TOOLS, OPERATIONS, result_json
from ..errors import ClawkeepError, InputError
from ..models.chat import ToolCall
from ..runtime import Runtime
from ..storage import SessionRecord

if TYPE_CHECKING:
    from .turn import Turn

WRITING_TOOLS = frozenset(name for name in AGENT_TOOLS if OPERATIONS[name].writes)


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool = False


@cache
def _schema(name: str) -> dict[str, Any]:
    return OPERATIONS[name].tool_schema()


def offered_tools(rt: Runtime, session: SessionRecord) -> list[dict[str, Any]]:
    """The function schemas this session's model is offered: the agent tools allowed by
    `agents.defaults.tools` (deny wins), without memory writes where nothing may be written
    (a read-only workspace, an incognito thread). None without an engine to run them on."""
    if getattr(rt, "tool_host", None) is None:
        return []
    settings = rt.config.agents.defaults.tools
    no_writes = rt.config.agents.defaults.workspace_access != "rw" or bool(session.meta.get("incognito"))
    return [_schema(name) for name in AGENT_TOOLS
            if _allowed(name, settings.allow, settings.deny) and not (no_writes and name in WRITING_TOOLS)]


def _why_withheld(rt: Runtime, session: SessionRecord, name: str) -> str:
    settings = rt.config.agents.defaults.tools
    if not _allowed(name, settings.allow, settings.deny):
        return "agents.defaults.tools allow/deny"
    if session.meta.get("incognito"):
        return "an incognito thread writes no memory"
    return "the workspace is read-only (agents.defaults.workspaceAccess)"


def _allowed(name: str, allow: list[str], deny: list[str]) -> bool:
    return any(fnmatchcase(name, p) for p in allow) and not any(fnmatchcase(name, p) for p in deny)


def run_tool(rt: Runtime, session: SessionRecord, call: ToolCall, offered: list[dict[str, Any]], *,
             turn: Turn | None = None) -> ToolOutcome:
    """Run one call as `session` and return its result (JSON text) or the error the model sees.
    `turn` is the turn the call belongs to (None: outside any turn, within `rt`'s limit): the
    message it answers (`turn.answering`) is never offered back by a search as its own answer."""
    names = [tool["name"] for tool in offered]
    if call.name not in names:
        available = f"available tools: {', '.join(names) or 'none'}"
        if call.name in AGENT_TOOLS:  # a real tool this session is not offered: say so, not "unknown"
            why = _why_withheld(rt, session, call.name)
            return ToolOutcome(f"tool {call.name!r} is not allowed in this session ({why}); {available}", True)
        return ToolOutcome(f"unknown tool {call.name[:100]!r}; {available}", True)
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError as exc:
        return ToolOutcome(f"the arguments of {call.name} are not valid JSON ({exc.msg} at character {exc.pos}); "
                           f"send one JSON object matching the tool's parameters", True)
    operation = OPERATIONS[call.name]
    try:
        parsed = operation.parse(arguments)
    except InputError as exc:
        return ToolOutcome(str(exc), True)
    settings = rt.config.agents.defaults.tools
    # a tool that waits by its own timeoutSeconds (sessions_send) gets that wait on top of the budget
    budget = settings.timeout_seconds + getattr(parsed, "timeout_seconds", 0)
    host = rt.tool_host.for_turn(turn) if turn is not None else rt.tool_host.limited(rt.limit)
    done, outcome = _within(budget, lambda: operation.run(host, parsed, session.key))
    if not done:
        return ToolOutcome(f"{call.name} did not finish within {budget:g} s "
                           "(agents.defaults.tools.timeoutSeconds); try a narrower request", True)
    if isinstance(outcome, ClawkeepError):
        return ToolOutcome(f"{call.name} failed: {outcome}", True)
    if isinstance(outcome, BaseException):
        rt.log_warning(f"tool {call.name} crashed: {type(outcome).__name__}: {outcome}")
        return ToolOutcome(f"{call.name} failed with an internal error ({type(outcome).__name__})", True)
    # sessions_search hits are whole messages: the pending one is simply left out
    answering = turn.answering if turn is not None else frozenset()
    if answering and isinstance(getattr(outcome, "hits", None), list):
        outcome.hits = [hit for hit in outcome.hits if hit.message_id not in answering]
    return ToolOutcome(cap(_as_json(outcome), settings.max_result_chars))


def _within(seconds: float, work: Any) -> tuple[bool, Any]:
    """(finished, value or exception) of `work()` run in a worker thread for at most `seconds`.
    A call that overruns is abandoned, not killed: it finishes in the background and its result
    is dropped (the stores are thread-safe, so a late write is still a whole write)."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back as the tool's outcome
            box.append(exc)

    worker = threading.Thread(target=target, name="clawkeep-tool", daemon=True)
    worker.start()
    worker.join(seconds)
    return (bool(box), box[0] if box else None)


def _as_json(result: Any) -> str:
    return json.dumps(result_json(result), ensure_ascii=False, default=str)


def cap(text: str, limit: int) -> str:
    """At most `limit` characters, saying how much was left out (a 10 MB result must not fill
    the window; the model can ask again more narrowly)."""
    if len(text) <= limit:
        return text
    note = f"\n[result cut: {len(text) - limit + 200} of {len(text)} characters left out; ask for less]"
    return text[: max(0, limit - 200)] + note
