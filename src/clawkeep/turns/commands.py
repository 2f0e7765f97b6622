"""Slash commands: one registry, executed by the turn and never stored as chat text.

`/new` and `/reset` close the interval (`/new <model> [text]`: a configured model switches the
session to it, `meta.modelOverride`; the rest of the text starts the new one), `/status`
reports, `/compact [instructions]` compacts now, `/active-memory on|off|status [--global]`,
`/verbose on|off` and `/trace on|off` switch per-session settings, `/dreaming status|on|off|help`
reports on or switches the Dreaming sweep. Bad arguments raise an
InputError naming what is allowed. A command that changes the configuration of every
conversation (`--global`) is accepted only from the operator.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.active_memory import active_memory_config
from ..config.model import write_override
from ..dreaming import service as dreaming_service
from ..errors import InputError
from ..runtime import Runtime
from ..sessions import service, transcript
from ..storage import EntryRecord, SessionRecord
from .reply import run_compaction, session_model

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


def _reset(name: str) -> Callable[[CommandCall], CommandOutcome]:
    def run(call: CommandCall) -> CommandOutcome:
        model, first = split_model(call.rt, name, call.rest)  # an unknown model fails before any change
        store = call.rt.store_for_key(call.session.key)
        service.append_reset(call.rt, store, call.session, call.at, reason="manual")
        if model is not None:
            set_model_override(call.rt, store, call.session, model, call.at, source=name)
        return CommandOutcome("reset", status={"modelOverride": model} if model else None, reset="manual",
                              first_message=first or None)

    return run


# "<provider>/<model>" as people type it: a provider-like head, a model id; not a URL, a path
# ("./a/b", "/etc/x") or a fraction ("50/50")
_MODEL_LIKE = re.compile(r"(?=[^/]*[A-Za-z])[A-Za-z0-9][\w.-]*/[\w.:@+-][\w.:@+/-]*")


def configured_models(rt: Runtime) -> list[str]:
    """Every "<provider>/<model>" the configuration names: the models listed under
    `models.providers` and the agent's primary and fallbacks."""
    models = rt.config.models
    found = [f"{name}/{model}" for name, settings in models.providers.items() for model in settings.models]
    chain = rt.config.agents.defaults.model
    for ref in (chain.primary, *chain.fallbacks):
        if ref and ref.strip():
            try:
                found.append("/".join(models.resolve(ref)))
            except InputError:
                continue
    return list(dict.fromkeys(found))


def split_model(rt: Runtime, command: str, rest: str) -> tuple[str | None, str]:
    """(model override, first message) of `/new <model> [text]`: the first word is a model when
    it is a configured "<provider>/<model>" or a model key of exactly one configured provider
    (then written out as "<provider>/<key>"), or "<provider>/<model>" of a known provider that
    lists no models. A first word that looks like a model reference but is none of these is an
    InputError naming it and the configured models (nothing is changed); anything else is text."""
    head, tail = _first_word(rest)
    if not head:
        return None, rest
    models = rt.config.models
    known = configured_models(rt)
    if head in known:
        return head, tail.strip()
    owners = [name for name, settings in models.providers.items() if head in settings.models]
    if len(owners) == 1:
        return f"{owners[0]}/{head}", tail.strip()
    listing = ", ".join(known) if known else "none (models.providers lists no models)"
    if len(owners) > 1:
        raise InputError(f"{command} {head!r}: several providers list a model {head!r} ({', '.join(owners)}); "
                         f"write it as '<provider>/{head}'. Configured models: {listing}; nothing was changed")
    if not _MODEL_LIKE.fullmatch(head):
        return None, rest
    provider, _, model = head.partition("/")
    lists = models.providers.get(provider)
    if provider in models.names() and not (lists and lists.models):
        return f"{provider}/{model}", tail.strip()  # a known provider without a model list takes any id
    open_ids = [name for name in models.names() if not (models.providers.get(name) and models.providers[name].models)]
    any_id = f"; a provider without a model list takes any id: {', '.join(p + '/<model>' for p in open_ids)}" \
        if open_ids else ""
    raise InputError(f"{command} {head!r}: not a configured model; configured models: {listing}{any_id}. Give one "
                     f"of them (or write the text without it); nothing was changed")


def _first_word(text: str) -> tuple[str, str]:
    words = text.strip().split(maxsplit=1)
    return (words[0], words[1] if len(words) > 1 else "") if words else ("", "")


def set_model_override(rt: Runtime, store: Any, session: SessionRecord, model: str, at: int, *, source: str) -> None:
    """The session's model from now on (`meta.modelOverride`, read by the reply), with a
    `model_change` entry in the transcript (S2)."""
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        fresh.meta["modelOverride"] = model
        store.update_session(fresh)
        transcript.append(store, EntryRecord(transcript.new_entry_id(), session.session_id, "model_change", at,
                                             meta={"model": model, "source": source}))
    session.__dict__.update(fresh.__dict__)


def _status(call: CommandCall) -> CommandOutcome:
    return CommandOutcome("status", status=service.session_status(call.rt, call.session.key).to_json())


def _compact(call: CommandCall) -> CommandOutcome:
    store = call.rt.store_for_key(call.session.key)
    result = run_compaction(call.rt, store, call.session, session_model(call.rt, call.session), at=call.at,
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


DREAMING_HELP = ("/dreaming status: schedule, next run, last sweep and counts; /dreaming on | off: switch the "
                 "sweep (and its recall recording) on or off for every conversation (operator only). Run a sweep "
                 "now with `clawkeep memory dream`; review DREAMS.md; undo with `clawkeep memory promote-undo`.")


def _dreaming(call: CommandCall) -> CommandOutcome:
    args = call.rest.lower().split()
    action = args[0] if args else "status"
    if len(args) > 1 or action not in ("status", "on", "off", "help"):
        raise InputError(f"/dreaming takes status, on, off or help (got {call.rest!r})")
    if action == "help":
        return CommandOutcome("dreaming", status={"help": DREAMING_HELP})
    if action == "status":
        status = dreaming_service.status(call.rt).to_json()
        if not call.operator:  # chat participants see the schedule, not paths or process ids
            status = {k: v for k, v in status.items() if k not in ("lock", "dreamsFile", "model")}
        return CommandOutcome("dreaming", status=status)
    if not call.operator:
        raise InputError("/dreaming on|off changes the configuration of every conversation and is only accepted "
                         "from the operator (the CLI or a dashboard thread), not from chat participants; nothing "
                         "was changed")
    return CommandOutcome("dreaming", status=dreaming_service.set_enabled(call.rt, action == "on").to_json())


COMMANDS: dict[str, SlashCommand] = {c.name: c for c in (
    SlashCommand("/new", "close the interval; a configured model first switches the session to it, the rest of "
                 "the text starts the new interval", _reset("/new")),
    SlashCommand("/reset", "same as /new", _reset("/reset")),
    SlashCommand("/status", "session status", _status),
    SlashCommand("/compact", "compact the conversation now, optionally with instructions", _compact),
    SlashCommand("/active-memory", "on | off | status, optionally --global (operator only)", _active_memory),
    SlashCommand("/verbose", "on | off: show what Active Memory did", _toggle("verbose")),
    SlashCommand("/trace", "on | off: show the recalled line", _toggle("trace")),
    SlashCommand("/dreaming", "status | on | off | help: the Dreaming sweep (on/off: operator only)", _dreaming),
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
