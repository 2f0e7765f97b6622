"""The import/export operations the Engine exposes (one function per verb)."""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .. import validation as check
from ..errors import InputError, NotFoundError
from ..runtime import Runtime
from ..sessions.service import find_session, find_transcript
from . import config_map, jsonl
from .openclaw import ProgressFactory
from .openclaw import import_openclaw as _import_openclaw
from .report import ImportReport

CONFIG_FILE = "clawkeep.json5"


def _paths_checked(function: Callable[..., Any]) -> Callable[..., Any]:
    """A path that cannot be used (too long, unreadable, not writable, …) is an input error
    naming the file, never a traceback."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except BrokenPipeError:  # the reader of an output stream left (`| head`): no path at fault
            raise
        except OSError as exc:
            name = exc.filename if exc.filename is not None else "a file"
            shown = str(name) if len(str(name)) <= 300 else str(name)[:300] + "…"
            raise InputError(f"{shown}: {exc.strerror or exc}") from None

    return call


@_paths_checked
def import_openclaw(rt: Runtime, path: Path, *, agent: str | None, dry_run: bool, config: str,
                    progress: ProgressFactory | None, accept_models: bool = False) -> ImportReport:
    """Model providers, API-key variables and model choices of the archive are applied only with
    `accept_models`; otherwise the report lists them with the command that applies them."""
    def translate(openclaw: dict[str, Any], report: ImportReport) -> None:
        data, mapped, unmapped, notes = config_map.translate(openclaw)
        source = str(Path(path).expanduser() / "openclaw.json")
        held_data, held = config_map.without_models(data)
        ours = config_map.render(held_data, unmapped, source, held) if held else None
        written = data if accept_models else held_data
        outcome: dict[str, Any] = {"action": "not written (--config skip)", "written": None}
        if config != "skip":
            target = rt.config_path or rt.home / CONFIG_FILE
            text = ours if ours is not None and not accept_models else config_map.render(data, unmapped, source)
            # with --accept-models, the file a plain import wrote (unedited) is replaced, not put beside
            outcome = config_map.write_config(text, target, mode=config, dry_run=dry_run,
                                              ours=ours if accept_models else None)
        report.config = {"source": source, **outcome, "renamed": mapped, "unmapped": unmapped, "notes": notes,
                         "keys": sorted(_leaves(written)), "heldBack": [] if accept_models else held}
        if held:
            report.models = config_map.model_settings(data)

    report = _import_openclaw(rt, path, agent=agent, dry_run=dry_run, progress=progress, translate=translate,
                              accept_models=accept_models)
    _describe_models(rt, report, path, agent=agent, accept_models=accept_models)
    return report


def _describe_models(rt: Runtime, report: ImportReport, path: Path, *, agent: str | None,
                     accept_models: bool) -> None:
    """report.models: the model settings found (config and sessions' own choices), whether they
    were applied, and if not the exact command that applies them."""
    if not (report.models or report.model_overrides):
        return
    applied = accept_models and not report.dry_run  # with --skip-config: the sessions' choices only
    found = {**(report.models or {"providers": [], "keyVariables": [], "choices": []}),
             "sessionOverrides": report.model_overrides, "applied": applied}
    if not applied:
        found["applyCommand"] = apply_command(rt, path, agent)
    report.models = found


def apply_command(rt: Runtime, path: Path, agent: str | None) -> str:
    """`clawkeep … import openclaw DIR --accept-models`: importing again writes no session twice and
    replaces the config an earlier import wrote (unless it was edited since: see the report)."""
    words = ["clawkeep", "--home", str(rt.home)]
    if rt.config_path is not None and rt.config_path != rt.home / CONFIG_FILE:
        words += ["--config", str(rt.config_path)]
    words += ["import", "openclaw", str(Path(path).expanduser().resolve())]
    if agent is not None:
        words += ["--agent", agent]
    return shlex.join([*words, "--accept-models"])


def _leaves(data: Any, prefix: str = "") -> list[str]:
    if isinstance(data, dict) and data:
        return [leaf for key, value in data.items() for leaf in _leaves(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


@_paths_checked
def import_jsonl(rt: Runtime, paths: list[Path], *, dry_run: bool) -> ImportReport:
    report = ImportReport(", ".join(str(p) for p in paths), dry_run=dry_run)
    jsonl.import_paths(rt, paths, report, dry_run=dry_run)
    return report


@_paths_checked
def export_session(rt: Runtime, ref: str, out: IO[str]) -> dict[str, Any]:
    """One session (key or id; an archived transcript by its id) in clawkeep's JSONL format."""
    try:
        store, session = find_session(rt, ref)
    except NotFoundError:
        store, session = find_transcript(rt, ref)
    return jsonl.export_session(store, session, out)


@_paths_checked
def export_all(rt: Runtime, directory: Path) -> list[dict[str, Any]]:
    """Every session of every agent, one file each: `<dir>/<agent>/<sessionId>.jsonl`."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory} exists and is not a directory; --all writes one file per session into --out DIR")
    written, refused = [], []
    for store, session in jsonl.all_sessions(rt):
        try:
            target = check.inside(directory, directory / jsonl.export_file_name(session), "export file")
        except InputError as exc:
            refused.append(str(exc))  # the other sessions are still written; this one is named below
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp")
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            summary = jsonl.export_session(store, session, handle)
        temporary.replace(target)
        written.append({**summary, "file": str(target)})
    if refused:
        raise InputError(f"{len(refused)} session(s) not exported (their stored ids cannot name a file inside "
                         f"{directory}): " + "; ".join(refused) + f". The other {len(written)} were written; export "
                         "a refused one to a file you name with `clawkeep export SESSION_ID --out FILE`")
    return written
