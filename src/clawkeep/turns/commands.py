"""Slash commands: one registry, executed by the turn and never stored as chat text.

`/new` and `/reset` close the interval (the rest of the text starts the new one), `/status`
reports, `/compact [instructions]` compacts now, `/active-memory on|off|status [--global]`,
`/verbose on|off` and `/trace on|off` switch per-session settings. Bad arguments raise an
InputError naming what is allowed. A command that changes the configuration of every
conversation (`--global`) is accepted only from the operator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.active_memory import active_memory_config
from ..config.model import write_override
from ..errors import InputError
from ..runtime import Runtime
from ..sessions import service
from ..storage import SessionRecord
from .reply import run_compaction

ON_OFF = ("on", "off")


@dataclass
class CommandCall:
    """What a command handler gets: the session it runs in and who asked."""

    rt: Runtime
    session: SessionRecord
    rest: str
    at: int
    operator: bool


@dataclass
class CommandOutcome:
    label: str
    status: dict[str, Any] | None = None
    reset: str | None = None
    first_message: str | None = None  # /new <text>: recorded as the first message of the new interval


@dataclass(frozen=True)
class SlashCommand:
    name: str
    summary: str
    run: Callable[[CommandCall], CommandOutcome] | None  # None: not available in this version


def _reset(call: CommandCall) -> CommandOutcome:
    service.append_reset(call.rt, call.rt.store_for_key(call.session.key), call.session, call.at, reason="manual")
    return CommandOutcome("reset", reset="manual", first_message=call.rest or None)


def _status(call: CommandCall) -> CommandOutcome:
    return CommandOutcome("status", status=service.session_status(call.rt, call.session.key))


def _compact(call: CommandCall) -> CommandOutcome:
    store = call.rt.store_for_key(call.session.key)
    result = run_compaction(call.rt, store, call.session, call.rt.models.chat_model(), at=call.at,
                            reason="manual", instructions=call.rest or None)
    return CommandOutcome("compact", status=result.to_json())


def _toggle(setting: str) -> Callable[[CommandCall], CommandOutcome]:
    def run(call: CommandCall) -> CommandOutcome:
        args = call.rest.split()
        if len(args) != 1 or args[0].lower() not in ON_OFF:
            raise InputError(f"/{setting} takes one argument: on or off (got {call.rest!r})")
        _set_toggle(call.rt, call.session, setting, args[0].lower())
        return CommandOutcome(setting, status={setting: args[0].lower()})

    return run


def _active_memory(call: CommandCall) -> CommandOutcome:
    return CommandOutcome("active-memory", status=active_memory_command(call.rt, call.session, call.rest,
                                                                       operator=call.operator))


COMMANDS: dict[str, SlashCommand] = {c.name: c for c in (
    SlashCommand("/new", "close the interval; the rest of the text starts the new one", _reset),
    SlashCommand("/reset", "same as /new", _reset),
    SlashCommand("/status", "session status", _status),
    SlashCommand("/compact", "compact the conversation now, optionally with instructions", _compact),
    SlashCommand("/active-memory", "on | off | status, optionally --global (operator only)", _active_memory),
    SlashCommand("/verbose", "on | off: show what Active Memory did", _toggle("verbose")),
    SlashCommand("/trace", "on | off: show the recalled line", _toggle("trace")),
    SlashCommand("/dreaming", "Dreaming (not available in this version)", None),
)}
AVAILABLE = ", ".join(name for name, c in COMMANDS.items() if c.run is not None)


def parse_command(text: str) -> tuple[SlashCommand, str] | None:
    """(command, rest) for a slash command this engine executes; None for chat text."""
    head, _, rest = text.strip().partition(" ")
    command = COMMANDS.get(head.lower())
    if command is None:
        return None
    if command.run is None:
        raise InputError(f"{command.name} is not available in this version; available commands: {AVAILABLE}")
    return command, rest.strip()


def _set_toggle(rt: Runtime, session: SessionRecord, key: str, value: str) -> None:
    store = rt.store_for_key(session.key)
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        fresh.meta[key] = value
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)


def active_memory_command(rt: Runtime, session: SessionRecord, rest: str, *, operator: bool = True) -> dict[str, Any]:
    args = rest.split()
    is_global = "--global" in args
    if is_global and not operator:
        raise InputError("/active-memory --global changes the configuration of every conversation and is only "
                         "accepted from the operator (the CLI or a dashboard thread), not from chat participants; "
                         "nothing was changed")
    args = [a for a in args if a != "--global"]
    if len(args) != 1 or args[0].lower() not in ("on", "off", "status"):
        raise InputError(f"/active-memory takes on, off or status, optionally with --global (got {rest!r})")
    action = args[0].lower()
    if action == "status":
        enabled = active_memory_config(rt.config).enabled
        paused = session.meta.get("activeMemory") == "off"
        return {"enabled": enabled, "session": "off" if paused else "on"}
    if is_global:
        path = write_global_switch(rt, action == "on")
        return {"enabled": action == "on", "config": str(path)}
    _set_toggle(rt, session, "activeMemory", action)
    return {"session": action}


def write_global_switch(rt: Runtime, enabled: bool) -> Path:
    """--global sets plugins.entries.active-memory.enabled in the overrides file beside the config file
    (`clawkeep.overrides.json`), which the loader merges over it: the user's file is never rewritten."""
    path = write_override(rt.config_path or rt.home / "clawkeep.json5", ("plugins", "entries", "active-memory",
                                                                          "enabled"), enabled)
    active_memory_config(rt.config).enabled = enabled
    return path
