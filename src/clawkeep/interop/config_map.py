"""OpenClaw's `openclaw.json` → `clawkeep.json5`, wherever a key maps, and a report of every
key that does not (with what to use instead where there is something).

clawkeep uses OpenClaw's key names, so most keys map as they are. Renamed ones are rewritten
(OpenClaw 2026.9 moved `agents.defaults.memorySearch` to `memory.search`; older files have
`session.idleMinutes` and `resetByType.dm`; Active Memory's flat circuit-breaker keys are one
object here). A key is kept only when clawkeep's own config model knows it and accepts its
value; every other key — unknown to clawkeep, or a value clawkeep refuses — is reported with
the reason and left out of the written file. Nothing is silently ignored.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import json5
from pydantic import ValidationError

from ..config.model import Config, _describe_error, _unknown_keys
from ..config.providers import BUILTIN_PROVIDERS
from ..errors import InputError

# (OpenClaw path, clawkeep path): a prefix rewrite, applied in order
RENAMES = (
    ("memory.search.rememberAcrossConversations", "plugins.entries.active-memory.config.rememberAcrossConversations"),
    ("memory.search", "agents.defaults.memorySearch"),
    ("session.idleMinutes", "session.reset.idleMinutes"),
    ("session.resetByType.dm", "session.resetByType.direct"),
    ("plugins.entries.active-memory.config.circuitBreakerMaxTimeouts",
     "plugins.entries.active-memory.config.circuitBreaker.maxTimeouts"),
    ("plugins.entries.active-memory.config.circuitBreakerCooldownMs",
     "plugins.entries.active-memory.config.circuitBreaker.cooldownMs"),
)
# Why a key has no clawkeep equivalent, by longest matching prefix (and what to use instead).
REASONS = (
    ("channels", "clawkeep has no channel connectors; deliver messages with `clawkeep message --channel …` "
                 "or the Python API"),
    ("auth", "OpenClaw's credential store; give chat providers apiKey / apiKeyEnv under models.providers"),
    ("session.store", "clawkeep keeps sessions in agents/<id>/agent.sqlite under its home (storage.url selects "
                      "another backend)"),
    ("session.resetTriggers", "clawkeep resets on /new and /reset only"),
    ("session.groupScope", "clawkeep keeps one session per group (per-group); there is no setting"),
    ("session.sendPolicy", "delivery policy is OpenClaw's; clawkeep does not deliver replies to channels"),
    ("session.threadBindings", "thread bindings belong to OpenClaw's channel runtime"),
    ("session.maintenance.maxDiskBytes", "clawkeep caps sessions by count: session.maintenance.maxEntries"),
    ("session.maintenance.highWaterBytes", "clawkeep caps sessions by count: session.maintenance.highWaterEntries"),
    ("agents.defaults.memorySearch.store.vector", "use agents.defaults.memorySearch.vectorStore (numpy | sqlite-vec)"),
    ("agents.defaults.memorySearch.store", "clawkeep's memory index is SQLite FTS5 with its own CJK analysis; "
                                           "agents.defaults.memorySearch.vectorStore picks the vector store"),
    ("agents.defaults.memorySearch.local", "clawkeep's local embedding model is bundled: provider local (or "
                                           "local-e5)"),
    ("agents.defaults.memorySearch.multimodal", "clawkeep indexes Markdown text only"),
    ("agents.defaults.memorySearch.cache", "clawkeep caches embeddings in the memory index itself"),
    ("agents.defaults.compaction.mode", "clawkeep's compaction always keeps identifiers (identifierPolicy) and "
                                        "tool pairs; Engine.register_compaction_provider plugs a summariser in"),
    ("agents.defaults.compaction.provider", "register a summariser with Engine.register_compaction_provider"),
    ("agents.defaults.compaction.qualityGuard", "clawkeep checks identifiers itself (identifierPolicy: strict)"),
    ("agents.defaults.contextPruning.tools", "clawkeep prunes every tool result the same way"),
    ("agents.defaults.contextPruning.hardClear", "use agents.defaults.contextPruning.hardClearRatio and "
                                                 "minPrunableToolChars"),
    ("agents.defaults.memorySearch.sync.embeddingBatchTimeoutSeconds",
     "use agents.defaults.memorySearch.timeoutMs (per embedding request)"),
    ("agents.defaults.memorySearch.documentInputType", "clawkeep's embedding providers choose their input types"),
    ("agents.defaults.memorySearch.queryInputType", "clawkeep's embedding providers choose their input types"),
    ("agents.defaults.memorySearch.inputType", "clawkeep's embedding providers choose their input types"),
    ("agents.defaults.memorySearch.fallback", "clawkeep falls back to keyword search by itself when embedding "
                                              "fails; provider auto picks among remote providers"),
    ("memory.qmd", "the QMD memory backend is OpenClaw's; clawkeep's index is built in: use "
                   "agents.defaults.memorySearch (provider, sources, extraPaths, query.*)"),
    ("memory.dreamDiary", "clawkeep's Dreaming always writes its diary to DREAMS.md; configure it under "
                          "plugins.entries.memory-core.config.dreaming"),
    ("memory.backend", "clawkeep's memory index is built in (SQLite); storage.url selects the database"),
    ("plugins.entries.memory-core.subagent", "clawkeep has no sub-agent model permissions; Active Memory's model is "
                                             "plugins.entries.active-memory.config.model"),
    ("plugins.entries.active-memory.subagent", "clawkeep has no sub-agent model permissions; Active Memory's model "
                                               "is plugins.entries.active-memory.config.model"),
    ("plugins.slots", "clawkeep's memory is built in: there is one memory implementation, no slot to choose"),
    ("tools.profile", "clawkeep's model tools are chosen with agents.defaults.tools.allow / deny"),
    ("models.mode", "clawkeep always merges its built-in providers with models.providers"),
    ("models.providers", "provider or model metadata clawkeep does not use (it needs api, baseUrl, apiKey, models "
                         "with contextWindow / maxTokens)"),
    ("plugins.entries", "a plugin clawkeep does not have (it has active-memory and memory-core)"),
    ("plugins", "OpenClaw's plugin loader settings"),
    ("hooks", "clawkeep's only hook is hooks.internal.entries.session-memory"),
    ("tools", "clawkeep's tools are configured under agents.defaults.tools (and tools.sessions.visibility)"),
    ("agents.list", "clawkeep agents take id and workspace"),
    ("meta", "OpenClaw's own bookkeeping of the file"),
    ("wizard", "OpenClaw's own bookkeeping of the file"),
    ("skills", "clawkeep has no skills"),
)
# Keys clawkeep has too, but whose OpenClaw value means something else here: never carried over.
NOT_CARRIED = {
    "agents.defaults.workspace": "clawkeep keeps its own workspace (<home>/workspace); OpenClaw's memory files were "
                                 "merged into it, and pointing clawkeep at OpenClaw's would let both write the "
                                 "same files",
    "storage": "where clawkeep keeps its data is chosen here, never by an imported file (an archive could name "
               "a database of its own): set storage.url yourself",
    "gateway": "OpenClaw's gateway (its WebSocket protocol, channels, auth) is not clawkeep's HTTP gateway; "
               "clawkeep's listens on 18790 so both can run side by side: set gateway.port / gateway.auth.token "
               "yourself if you want others",
}
# Keys that choose where prompts (and memory text) are sent and with which credential: an imported
# file applies them only with --accept-models; otherwise they are reported with the command that does.
MODEL_KEYS = (
    "models",
    "agents.defaults.model",
    "agents.defaults.compaction.model",
    "agents.defaults.compaction.memoryFlush.model",
    "agents.defaults.memorySearch.provider",
    "agents.defaults.memorySearch.model",
    "agents.defaults.memorySearch.remote",
    "plugins.entries.active-memory.config.model",
    "plugins.entries.active-memory.config.modelFallback",
    "plugins.entries.memory-core.config.dreaming.model",
)
_SECRET_WORDS = ("key", "token", "secret", "password")
DEFAULT_REASON = "no clawkeep equivalent (an OpenClaw runtime setting outside sessions and memory)"
TARGET_SUFFIX = ".openclaw-import.json5"


def _get(data: dict[str, Any], path: list[str]) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _pop(data: dict[str, Any], path: list[str]) -> Any:
    """Remove a key (and objects it leaves empty); returns its value."""
    parent = _get(data, path[:-1]) if len(path) > 1 else data
    if not isinstance(parent, dict) or path[-1] not in parent:
        return None
    value = parent.pop(path[-1])
    for depth in range(len(path) - 1, 0, -1):
        holder = _get(data, path[: depth - 1]) if depth > 1 else data
        if isinstance(holder, dict) and holder.get(path[depth - 1]) == {}:
            holder.pop(path[depth - 1])
    return value


def _put(data: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {})
    if isinstance(data.get(path[-1]), dict) and isinstance(value, dict):
        data[path[-1]] = {**value, **data[path[-1]]}  # an explicit new-style key wins
    else:
        data.setdefault(path[-1], value)


def reason_for(key: str) -> str:
    for prefix, why in REASONS:
        if key == prefix or key.startswith(prefix + "."):
            return why
    return DEFAULT_REASON


def _path_of(loc: tuple[Any, ...]) -> list[str]:
    return [str(part) for part in loc]


def translate(openclaw: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]], list[dict[str, str]], list[str]]:
    """(clawkeep config, mapped [{from, to}], unmapped [{key, reason}], notes)."""
    data = copy.deepcopy(openclaw)
    mapped: list[dict[str, str]] = []
    notes: list[str] = []
    for source, target in RENAMES:
        value = _pop(data, source.split("."))
        if value is not None:
            _put(data, target.split("."), value)
            mapped.append({"from": source, "to": target})
    reset = _get(data, ["session", "reset"]) or {}
    if isinstance(reset, dict) and "idleMinutes" in reset and "mode" not in reset:
        data.setdefault("session", {}).setdefault("reset", {})["mode"] = "idle"
        notes.append("session.reset.idleMinutes without a mode meant idle resets in OpenClaw: session.reset.mode = "
                     "idle")
    if not isinstance(reset, dict) or "mode" not in (_get(data, ["session", "reset"]) or {}):
        data.setdefault("session", {}).setdefault("reset", {})["mode"] = "none"
        notes.append("OpenClaw 2026.9 resets no session by itself unless session.reset.mode says so; clawkeep resets "
                     "daily at 04:00 by default, so the translation sets session.reset.mode = none to keep "
                     "OpenClaw's behaviour (delete it for clawkeep's daily reset)")
    _models_by_id(data)
    unmapped: list[dict[str, str]] = []
    for key, why in NOT_CARRIED.items():
        if _get(data, key.split(".")) is not None:
            unmapped.append({"key": key, "value": repr(_pop(data, key.split(".")))[:200], "reason": why})
    for index, entry in enumerate(_get(data, ["agents", "list"]) or []):
        if isinstance(entry, dict) and "workspace" in entry:
            unmapped.append({"key": f"agents.list.{index}.workspace", "value": repr(entry.pop("workspace"))[:200],
                             "reason": "clawkeep keeps its own workspace per agent (<home>/workspace-<id>); the "
                                       "memory files were merged into it"})
    for _ in range(200):  # each round removes at least one key
        try:
            config = Config.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                key = ".".join(_path_of(error["loc"]))
                unmapped.append({"key": key, "value": repr(_get(data, _path_of(error["loc"])))[:200],
                                 "reason": f"clawkeep refuses the value: {_describe_error(error)}"})
                _pop(data, _path_of(error["loc"]))
            continue
        except InputError as exc:  # a model reference to a provider the file does not configure
            key = str(exc).split(" = ", 1)[0]
            unmapped.append({"key": key, "value": repr(_get(data, key.split(".")))[:200],
                             "reason": f"clawkeep refuses the value: {exc}"})
            if _pop(data, key.split(".")) is None:
                raise
            continue
        unknown = _unknown_keys(config)
        if not unknown:
            return data, mapped, unmapped, notes
        removed = 0
        for key in unknown:
            unmapped.append({"key": key, "value": repr(_get(data, key.split(".")))[:200], "reason": reason_for(key)})
            removed += _pop(data, key.split(".")) is not None
        if not removed:  # nothing more can be taken out: clawkeep loads it with warnings
            return data, mapped, unmapped, notes
    raise AssertionError("config translation did not converge")


def _models_by_id(data: dict[str, Any]) -> None:
    """OpenClaw lists a provider's models ([{id, …}]); clawkeep keys them by id (both load, but
    a report names keys by the keyed form)."""
    providers = _get(data, ["models", "providers"])
    for provider in (providers or {}).values() if isinstance(providers, dict) else ():
        models = provider.get("models") if isinstance(provider, dict) else None
        if isinstance(models, list) and all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in models):
            provider["models"] = {m["id"]: {k: v for k, v in m.items() if k != "id"} for m in models}


def without_models(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The translation minus MODEL_KEYS, and the keys taken out."""
    kept = copy.deepcopy(data)
    return kept, [key for key in MODEL_KEYS if _pop(kept, key.split(".")) is not None]


def model_settings(data: dict[str, Any]) -> dict[str, Any]:
    """What the translation's MODEL_KEYS would make live: providers (URL, API, where the key comes
    from: a literal key is never shown), the environment variables whose values would be sent as
    API keys, and the model choices."""
    providers, variables = [], []
    for name, entry in sorted((_get(data, ["models", "providers"]) or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        builtin = BUILTIN_PROVIDERS.get(name, {})
        variable = None if entry.get("apiKey") else entry.get("apiKeyEnv") or builtin.get("apiKeyEnv")
        providers.append({"name": name, "baseUrl": entry.get("baseUrl") or builtin.get("baseUrl"),
                          "api": entry.get("api") or builtin.get("api"), "apiKeyEnv": variable,
                          "apiKey": "set in the file (not shown)" if entry.get("apiKey") else None,
                          "headers": sorted(entry.get("headers") or {}),
                          "models": sorted(entry.get("models") or {})})
        if variable:
            variables.append(variable)
    remote = _get(data, "agents.defaults.memorySearch.remote".split(".")) or {}
    variables += [value for key, value in remote.items() if key.endswith("Env") and isinstance(value, str)]
    choices = []
    for key in MODEL_KEYS[1:]:
        value = _get(data, key.split("."))
        if value is not None:
            choices.append({"key": key, "value": _safe_value(value)})
    return {"providers": providers, "keyVariables": sorted(set(variables)), "choices": choices}


def _safe_value(value: Any) -> Any:
    """A model choice as a report shows it: credentials in it are not shown, headers by name only."""
    if not isinstance(value, dict):
        return value
    shown: dict[str, Any] = {}
    for key, item in value.items():
        if key == "headers" and isinstance(item, dict):
            shown[key] = sorted(item)
        elif any(word in key.lower() for word in _SECRET_WORDS) and not key.endswith("Env"):
            shown[key] = "set (not shown)"
        else:
            shown[key] = item
    return shown


def render(data: dict[str, Any], unmapped: list[dict[str, str]], source: str, held: list[str] | None = None) -> str:
    lines = [f"// Translated from {source} by `clawkeep import openclaw`."]
    if held:
        lines.append("// Model settings of that file held back (import again with --accept-models to apply them):")
        lines += [f"//   {key}" for key in held]
    if unmapped:
        lines.append("// Keys of that file with no clawkeep equivalent (left out):")
        lines += [f"//   {item['key']}: {item['reason']}" for item in unmapped]
    return "\n".join(lines) + "\n" + json5.dumps(data, indent=2, quote_keys=False, trailing_commas=True,
                                                 ensure_ascii=False) + "\n"


def write_config(text: str, target: Path, *, mode: str, dry_run: bool, ours: str | None = None) -> dict[str, Any]:
    """keep: an existing file is never replaced (the translation goes beside it) unless it holds
    exactly `ours` (what an earlier import wrote, unedited since); force: the existing file is
    backed up (`<name>.bak-<time>`) and replaced."""
    if dry_run:
        return {"written": None, "action": "dry run: nothing written"}
    beside = target.with_name(target.name.removesuffix(".json5") + TARGET_SUFFIX)
    for existing in (target,) if mode == "force" else (target, beside):
        if existing.is_file() and existing.read_text(encoding="utf-8", errors="replace") == text:
            return {"written": None, "action": f"unchanged: {existing} already holds this translation"}
    if ours is not None and target.is_file() and target.read_text(encoding="utf-8", errors="replace") == ours:
        mode = "force"  # the file an earlier import wrote, unedited: replacing it loses nothing (a backup is kept)
    if target.exists() and mode != "force":
        beside.write_text(text, encoding="utf-8")
        return {"written": str(beside), "action": f"{target} exists and was kept; the translation is in {beside} "
                                                  "(review it, or import again with --force-config to replace "
                                                  f"{target.name}, which keeps a backup)"}
    backup = None
    if target.exists():
        backup = target.with_name(f"{target.name}.bak-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}")
        target.replace(backup)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return {"written": str(target), "action": "written" + (f"; the previous file is kept as {backup}" if backup
                                                            else ""), "backup": str(backup) if backup else None}
