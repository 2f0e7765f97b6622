"""The import/export operations the Engine exposes (one function per verb)."""

from __future__ import annotations

import functools
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
        except OSError as exc:
            name = exc.filename if exc.filename is not None else "a file"
            shown = str(name) if len(str(name)) <= 300 else str(name)[:300] + "…"
            raise InputError(f"{shown}: {exc.strerror or exc}") from None

    return call


@_paths_checked
def import_openclaw(rt: Runtime, path: Path, *, agent: str | None, dry_run: bool, config: str,
                    progress: ProgressFactory | None) -> ImportReport:
    def translate(openclaw: dict[str, Any], report: ImportReport) -> None:
        data, mapped, unmapped, notes = config_map.translate(openclaw)
        source = str(Path(path).expanduser() / "openclaw.json")
        outcome: dict[str, Any] = {"action": "not written (--config skip)", "written": None}
        if config != "skip":
            target = rt.config_path or rt.home / CONFIG_FILE
            outcome = config_map.write_config(config_map.render(data, unmapped, source), target, mode=config,
                                              dry_run=dry_run)
        report.config = {"source": source, **outcome, "renamed": mapped, "unmapped": unmapped, "notes": notes,
                         "keys": sorted(_leaves(data))}

    return _import_openclaw(rt, path, agent=agent, dry_run=dry_run, progress=progress, translate=translate)


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
