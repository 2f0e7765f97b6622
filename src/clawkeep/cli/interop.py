"""`clawkeep import …` and `clawkeep export …` (SPEC G4)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import typer

from .. import validation as check
from ..errors import InputError
from ..validation import shown
from .app import app, engine, err, out
from .render import emit, progress_display, table

import_app = typer.Typer(help="Import sessions, transcripts, memory files and config.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[Callable[[int], Callable[[int], None]]]:
    """A Rich bar over bytes read (shown on stderr, not with --json)."""
    with progress_display(err, label=label, sizes=True, disable=quiet) as bar:
        def start(total: int) -> Callable[[int], None]:
            task = bar.add_task(label, total=max(total, 1))
            return lambda n: bar.advance(task, n)

        yield start


def render_report(data: dict[str, Any]) -> None:
    s = data["sessions"]
    verb = "would import" if data["dryRun"] else "imported"
    out.print(f"{verb} from {data['source']}: {s['imported']} new sessions, {s['updated']} updated, "
              f"{s['unchanged']} unchanged, {s['failed']} failed; entries "
              + (", ".join(f"{k} {v}" for k, v in data["entries"].items()) or "none")
              + f"; {data['alreadyImportedEntries']} already imported", highlight=False)
    if data["unmapped"]:
        rows = [{"kind": k, "count": v["count"], "example": (v["example"] or "")[:100], "where": v["where"]}
                for k, v in data["unmapped"].items()]
        out.print(table(rows, ["kind", "count", "example", "where"], "not mapped (reported, not imported)"))
    if data.get("renamedKeys"):
        rows = [{"why": k, "count": v["count"], "example": v["example"]} for k, v in data["renamedKeys"].items()]
        out.print(table(rows, ["why", "count", "example"], "session keys mapped to clawkeep's shapes"))
    if data.get("memory"):
        columns = ["file", "action", "lines", "to"]
        if any(m.get("redactedLines") for m in data["memory"]):
            columns.insert(3, "redactedLines")  # credentials found in OpenClaw's notes were not copied
        out.print(table(data["memory"], columns, "memory files"))
    config = data.get("config")
    if config:
        out.print(f"config: {config['action']}", highlight=False)
        if config["unmapped"]:
            out.print(table(config["unmapped"], ["key", "reason"], "openclaw.json keys with no clawkeep equivalent"))
    for note in data["notes"] + (config or {}).get("notes", []):
        out.print(f"note: {note}", highlight=False)
    if data.get("models"):
        render_models(data["models"])


def render_models(models: dict[str, Any]) -> None:
    """The archive's model settings: applied (--accept-models) or, by default, listed with the
    command that applies them."""
    state = "applied (--accept-models)" if models["applied"] else "found and NOT applied"
    rows = [{"setting": f"provider {p['name']}", "value": f"{p['baseUrl']} ({p['api']})",
             "key from": f"${p['apiKeyEnv']}" if p["apiKeyEnv"] else p["apiKey"] or "no key"}
            for p in models["providers"]]
    rows += [{"setting": c["key"], "value": str(c["value"]), "key from": ""} for c in models["choices"]]
    rows += [{"setting": f"session {o['session']}", "value": o["model"], "key from": ""}
             for o in models["sessionOverrides"]]
    out.print(table(rows, ["setting", "value", "key from"], f"model settings of the archive: {state}"))
    if not models["applied"]:
        variables = ", ".join(models["keyVariables"]) or "none"
        out.print(f"These would send prompts to the URLs above with the values of these environment variables as "
                  f"API keys: {variables}. Review them; to apply them run:\n  {models['applyCommand']}",
                  highlight=False, markup=False)


def _finish(data: dict[str, Any], as_json: bool) -> None:
    """The report (JSON or tables); what failed also goes to stderr, and makes the exit code 2."""
    emit(data, as_json, render_report)
    for problem in data["errors"]:
        err.print(f"error: {problem['where']}: {problem['message']}", highlight=False, markup=False)
    if data["errors"]:
        raise typer.Exit(2)


@import_app.command("openclaw")
def import_openclaw(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="OpenClaw state directory (default of OpenClaw: ~/.openclaw)."),
    agent: str | None = typer.Option(None, "--agent", help="Only this OpenClaw agent (default: every agent)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Read and report; write nothing."),
    force_config: bool = typer.Option(False, "--force-config", help="Replace an existing clawkeep.json5 with the "
                                      "translated openclaw.json (the old file is kept as a backup)."),
    skip_config: bool = typer.Option(False, "--skip-config", help="Do not translate openclaw.json."),
    accept_models: bool = typer.Option(False, "--accept-models", help="Apply the archive's model providers "
                                       "(URLs, API-key variables), primary/fallback models and sessions' model "
                                       "choices; without it they are listed, not applied."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Import sessions, transcripts, memory files and openclaw.json from an OpenClaw home."""
    if force_config and skip_config:
        raise InputError("--force-config and --skip-config exclude each other")
    eng = engine(ctx)
    with progress_bar("importing", as_json) as bar:
        data = eng.import_openclaw(path, agent=agent, dry_run=dry_run, progress=bar, accept_models=accept_models,
                                   config="force" if force_config else "skip" if skip_config else "keep")
    _finish(data, as_json)


@import_app.command("jsonl")
def import_jsonl(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="clawkeep export files, or directories of them."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and report; write nothing."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Import transcripts written by `clawkeep export` (idempotent)."""
    _finish(engine(ctx).import_jsonl(list(paths), dry_run=dry_run), as_json)


@app.command("export")
def export(
    ctx: typer.Context,
    session: str | None = typer.Argument(None, help="Session key or id (or use --all)."),
    all_sessions: bool = typer.Option(False, "--all", help="Every session of every agent, one file each in --out."),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl (the only format)."),
    out_path: Path | None = typer.Option(None, "--out", help="File (one session; default stdout) or dir (--all)."),
    as_json: bool = typer.Option(False, "--json", help="Print a summary as JSON (needs --out)."),
) -> None:
    """Write transcripts in clawkeep's JSONL format (docs/import.md), re-importable losslessly."""
    if output_format != "jsonl":
        raise InputError(f"--format {output_format!r} is not supported; allowed: jsonl")
    if all_sessions == (session is not None):
        raise InputError("give one SESSION (key or id) or --all")
    eng = engine(ctx)
    if all_sessions:
        if out_path is None:
            raise InputError("--all needs --out DIR (one file per session)")
        check.path(out_path, "--out")  # the CLI names its flag; the Engine says `directory`
        written = eng.export_all(out_path)
        emit({"sessions": written}, as_json, lambda d: out.print(
            f"exported {len(d['sessions'])} sessions to {out_path}", highlight=False))
        return
    if out_path is None:
        if as_json:
            raise InputError("--json prints a summary; give --out FILE for the export itself")
        try:
            eng.export_session(session, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `clawkeep export KEY | head`: the reader stopped, nothing is wrong
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the final flush goes nowhere
            raise typer.Exit(1) from None  # as any command whose output pipe closed early (cli.main)
        return
    summary = _export_to_file(eng, session, out_path)
    emit({**summary, "file": str(out_path)}, as_json, lambda d: out.print(
        f"exported {d['sessionKey']} ({d['entries']} entries) to {d['file']}", highlight=False))


def _export_to_file(eng: Any, session: str, out_path: Path) -> dict[str, Any]:
    """Write one session to `out_path` through a temporary file, so a failed export never leaves
    half a file under the name asked for; a path the system refuses is an input error."""
    try:
        if out_path.is_dir() or not out_path.name:
            raise InputError(f"--out {shown(str(out_path))} is a directory; give a file for one session (or use --all)")
    except OSError as exc:
        raise InputError(f"--out {shown(str(out_path))} cannot be used: {exc.strerror or exc}") from None
    temporary = out_path.with_name(f".{out_path.name}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            summary = eng.export_session(session, handle)
        temporary.replace(out_path)
    except OSError as exc:
        with suppress(OSError):  # the temporary may not exist (or its name may be the problem)
            temporary.unlink(missing_ok=True)
        raise InputError(f"--out {shown(str(out_path))} cannot be written: {exc.strerror or exc}; "
                         "give a writable file path") from None
    return summary

