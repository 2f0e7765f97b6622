"""Slash commands of the reply pipeline: /compact, /active-memory, /verbose, /trace.

They are executed, never stored as chat text. Bad arguments raise InputError naming what
is allowed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import json5

from .errors import InputError
from .runtime import Runtime
from .storage import SessionRecord

ON_OFF = ("on", "off")


def _set_toggle(rt: Runtime, session: SessionRecord, key: str, value: str) -> None:
    store = rt.store_for_key(session.key)
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        fresh.meta[key] = value
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)


def run_turn_command(rt: Runtime, session: SessionRecord, name: str, rest: str, at: int, *,
                     operator: bool = True) -> tuple[str, dict[str, Any]]:
    if name == "/compact":
        from . import turn  # noqa: PLC0415 - turn imports the pipeline's collaborators

        store = rt.store_for_key(session.key)
        result = turn.run_compaction(rt, store, session, turn.chat_model(rt), at=at, reason="manual",
                                     instructions=rest or None)
        return "compact", result.to_json()
    if name == "/active-memory":
        return "active-memory", active_memory_command(rt, session, rest, operator=operator)
    setting = name.lstrip("/")
    args = rest.split()
    if len(args) != 1 or args[0].lower() not in ON_OFF:
        raise InputError(f"{name} takes one argument: on or off (got {rest!r})")
    _set_toggle(rt, session, setting, args[0].lower())
    return setting, {setting: args[0].lower()}


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
    from .recall.settings import active_memory_config  # noqa: PLC0415

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
    """--global writes plugins.entries.active-memory.enabled into the config file (comments are not kept)."""
    path = Path(getattr(rt, "config_path", None) or rt.home / "clawkeep.json5")
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json5.loads(path.read_text(encoding="utf-8")) or {}
        except ValueError as exc:
            raise InputError(f"config file {path} is not valid JSON5, not changed: {exc}") from None
    entry = data.setdefault("plugins", {}).setdefault("entries", {}).setdefault("active-memory", {})
    entry["enabled"] = enabled
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    rt.config.plugins.setdefault("entries", {}).setdefault("active-memory", {})["enabled"] = enabled
    return path
