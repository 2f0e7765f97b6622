"""The `clawkeep` command: a thin skin over `Engine`.

Exit codes: 0 success, 2 usage or input error (message on stderr, no traceback),
1 internal failure. `--json` prints the documented camelCase shapes.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from rich.table import Table

from ..errors import ClawkeepError, InputError
from . import call as _call_command  # noqa: F401 - registers `clawkeep call` (every operation, derived)
from . import interop as _interop_commands  # noqa: F401 - registers `clawkeep import …` / `export`
from . import mcp_command as _mcp_command  # noqa: F401 - registers `clawkeep mcp`
from . import memory as _memory_commands  # noqa: F401 - registers `clawkeep memory …`
from . import serve as _serve_commands  # noqa: F401 - registers `clawkeep gateway`
from . import sessions as _sessions_commands  # noqa: F401 - registers `clawkeep sessions …`
from . import tokens as _tokens_commands  # noqa: F401 - registers `clawkeep tokens …`
from .app import (  # noqa: F401
    GlobalOptions,
    app,
    engine,
    err,
    for_arguments,
    global_options_first,
    memory_app,
    out,
    sessions_app,
)
from .options import described
from .render import as_json_data, emit, progress_display, table  # noqa: F401


# --- message ---------------------------------------------------------------------------
@app.command()
def message(
    ctx: typer.Context,
    text: str = typer.Argument(..., help=described("message", "text")),
    channel: str = typer.Option("cli", "--channel"),
    account: str | None = typer.Option(None, "--account"),
    sender: str = typer.Option("owner", "--sender"),
    chat_type: str = typer.Option("direct", "--chat-type", help=described("message", "chat_type")),
    group: str | None = typer.Option(None, "--group"),
    thread: str | None = typer.Option(None, "--thread"),
    role: str = typer.Option("user", "--role", help=described("message", "role")),
    message_id: str | None = typer.Option(None, "--message-id", help=described("message", "message_id")),
    at: str | None = typer.Option(None, "--at", help=described("message", "at")),
    session: str | None = typer.Option(None, "--session", help=described("message", "session")),
    record_only: bool = typer.Option(False, "--record-only", help=described("message", "record_only")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Send one inbound message through the router and the turn pipeline."""
    result = (
        engine(ctx)
        .message(
            text,
            channel=channel,
            account=account,
            sender=sender,
            chat_type=chat_type,
            group=group,
            thread=thread,
            role=role,
            message_id=message_id,
            at=at,
            session=session,
            record_only=record_only,
        )
        .to_json()
    )

    if result.get("conflict"):  # the id was used for another text: nothing stored, exit 2 (documented)
        if as_json:
            out.print_json(data=result)
        err.print(f"error: {result['note']}", highlight=False)
        raise typer.Exit(2)

    def render(data: dict[str, Any]) -> None:
        what = data.get("command") or ("duplicate, already stored" if data.get("duplicate") else "stored")
        out.print(
            f"{data['sessionKey']} [dim]{data['sessionId']}[/dim] → {what}"
            + (f" (reset: {data['reset']})" if data.get("reset") else "")
            + (f" message {data['messageId']}" if data.get("messageId") else ""),
            highlight=False,
        )
        if data.get("status"):
            out.print_json(data=data["status"])

    emit(result, as_json, render)


# --- status ----------------------------------------------------------------------------
OVERVIEW = [
    ("message TEXT", "route a message to its session and record it"),
    ("sessions list", "sessions you can see (--kind, --label, --active, --search)"),
    ("sessions history KEY", "the current interval, sanitised (--message-id re-opens a closed one)"),
    ("sessions search QUERY", "full-text search, CJK fragments included"),
    ("sessions reset|fork|create|cleanup", "lifecycle and maintenance"),
    ("sessions send KEY TEXT", "deliver a message into another session, wait for its reply (--timeout, --as)"),
    ("memory remember TEXT", "write a fact to MEMORY.md or today's note"),
    ("memory search QUERY", "hybrid search over memory (and transcripts if enabled)"),
    ("memory get|items|edit|delete|sweep", "read and correct what is remembered"),
    ("memory status|index", "provider, vector store and index health; (re)build the index"),
    ("memory dream|dreaming|dreams|promote …",
     "Dreaming: sweep now, status/on/off, promotion candidates, explain, undo"),
    ("recall TEXT --session KEY", "Active Memory for a would-be message; --classify to test the detector"),
    ("import openclaw PATH", "sessions, transcripts, memory files and config from an OpenClaw home"),
    ("export SESSION|--all", "transcripts as clawkeep JSONL (re-import with `import jsonl`)"),
    ("gateway [--host H] [--port P]", "serve the HTTP API and the control UI (loopback; a token beyond it)"),
    ("mcp [--session KEY] [--http PORT]", "the agent tools as an MCP server (stdio, or streamable HTTP)"),
    ("status", "this overview, the engine's state and the memory metrics"),
    ("doctor [--repair]", "check every database; salvage a damaged one into a new file, rebuild the index"),
    ("migrate --from A --to B", "copy a home into PostgreSQL or back (verified, resumable)"),
]


def rerank_line(info: dict[str, Any]) -> str:
    """One line for a rerank stage's status: `none`, or provider, candidates, weight and model."""
    if info.get("provider", "none") == "none":
        return "none"
    model = info.get("model") or info.get("url")
    line = f"{info['provider']} · {info['candidates']} candidates · weight {info['weight']} · {model}"
    return line + (f" · {info['error']}" if info.get("error") else "")


@app.command()
def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Engine state and the command overview."""
    data = engine(ctx).status()

    def render(info: dict[str, Any]) -> None:
        grid = Table(title=f"clawkeep status · home {info['home']}", show_header=False)  # first line: where data is
        for key in (
            "home",
            "agentId",
            "database",
            "storage",
            "sessions",
            "messages",
            "indexedMessages",
            "dmScope",
            "visibility",
            "resetMode",
            "maintenanceMode",
        ):
            grid.add_row(key, str(info[key]))
        grid.add_row("sessionsSearchRerank", rerank_line(info.get("sessionsSearchRerank") or {}))
        for key, value in (info.get("metrics") or {}).items():
            if key != "counters":
                grid.add_row(f"metrics.{key}", "–" if value is None else str(value))
        out.print(grid)
        out.print(table([{"command": c, "does": d} for c, d in OVERVIEW], ["command", "does"], "commands"))

    emit(data, as_json, render)


# --- sessions ----------------------------------------------------------------------------
@app.command()
def recall(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The would-be user message."),
    session: str | None = typer.Option(None, "--session", help="Session key (required unless --classify)."),
    classify_only: bool = typer.Option(False, "--classify", help="Only say whether TEXT asks about the past."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run Active Memory for a message without storing it (or just classify it)."""
    eng = engine(ctx)
    if classify_only:
        emit(eng.classify(text), as_json, lambda d: out.print(
            f"past question: {d['pastQuestion']} (language {d['language']})", highlight=False))
        return
    if not session:
        raise InputError("recall needs --session KEY (or --classify)")
    data = eng.recall(text, session=session)
    emit(data, as_json, lambda d: out.print(
        f"{d['status']} (lane {d['lane']}, {d['elapsedMs']} ms): {d['summary'] or d.get('reason') or 'nothing'}",
        highlight=False))


# --- memory ------------------------------------------------------------------------------
@app.command()
def doctor(
    ctx: typer.Context,
    agent: str | None = typer.Option(None, "--agent", help="Only this agent (default: every agent in the home)."),
    repair: bool = typer.Option(False, "--repair", help="Salvage damaged agent databases into new files (the "
                                "originals are kept) and rebuild damaged memory indexes."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Check every database (integrity and full-text index); exit 1 while corruption remains."""
    data = engine(ctx).doctor(repair=repair, agent=agent)

    def render(d: dict[str, Any]) -> None:
        rows = []
        for f in d["files"]:
            fixed = f.get("repair") or f.get("rebuild") or {}
            what = f.get("error") or (f["problems"][0] if f["problems"] else "")
            if f.get("repair"):
                msgs = fixed["messages"]
                what = (f"recovered {msgs['recovered']}"
                        + (f" of {msgs['expected']}" if msgs["expected"] is not None else "")
                        + f" messages, {fixed['sessions']['recovered']} sessions ({fixed['method']}); "
                        f"original kept at {fixed['corruptKeptAt']}")
            elif f.get("rebuild"):
                what = f"rebuilt ({fixed['chunks']} chunks); old file at {fixed['movedTo']}"
            rows.append({"agent": f["agent"], "file": f["kind"], "status": f["status"], "details": what})
        out.print(table(rows, ["agent", "file", "status", "details"], "clawkeep doctor"))
        if not d["healthy"]:
            err.print("corruption remains: " + ("see the errors above" if d["repair"]
                                                 else "run `clawkeep doctor --repair`"), highlight=False)

    emit(data, as_json, render)
    if not data["healthy"]:
        raise typer.Exit(1)


@app.command()
def migrate(
    source: str = typer.Option(..., "--from", help="A clawkeep home directory or a postgresql:// URL."),
    target: str = typer.Option(..., "--to", help="The other kind: a postgresql:// URL or a home directory."),
    schema: str = typer.Option("clawkeep", "--schema", help="PostgreSQL: the prefix of clawkeep's schemas."),
    agent: list[str] = typer.Option(None, "--only-agent", help="Copy only these agents (default: all)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Copy every agent between an embedded home and PostgreSQL (D3): sessions, transcripts, memory
    documents; verified by counts and checksums; run it again to resume an interrupted copy."""
    from ..migrate import migrate as run_migrate  # deferred: the PostgreSQL driver, for this command only

    with progress_display(err, transient=as_json, disable=as_json) as bar:
        tasks: dict[tuple[str, str], Any] = {}

        def progress(agent_id: str, phase: str, done: int, total: int) -> None:
            key = (agent_id, phase)
            if key not in tasks:
                tasks[key] = bar.add_task(f"{agent_id}: {phase}", total=max(total, 1))
            bar.update(tasks[key], completed=done, total=max(total, 1))

        data = run_migrate(source, target, schema=schema, agents=agent or None, progress=progress)

    def render(d: dict[str, Any]) -> None:
        rows = [{"agent": a["agent"], "sessions": a["sessions"], "entries": a["entries"], "documents": a["documents"],
                 "checksum": a["checksums"]["entries"][:12], "verified": "yes" if a["verified"] else "NO"}
                for a in d["agents"]]
        out.print(table(rows, ["agent", "sessions", "entries", "documents", "checksum", "verified"],
                        f"clawkeep migrate {d['from']} → {d['to']}"))

    emit(data, as_json, render)


def run() -> None:
    """Console entry point: map errors to exit codes, never a traceback for user mistakes.

    Typer itself exits 2 on usage errors; our own errors surface here.
    """
    try:
        command = typer.main.get_command(for_arguments(app, sys.argv[1:]))
        command(args=global_options_first(command, sys.argv[1:]))
    except InputError as exc:
        err.print(f"error: {exc}", highlight=False, markup=False)
        sys.exit(2)
    except ClawkeepError as exc:
        err.print(f"error: {exc}", highlight=False, markup=False)
        sys.exit(1)
    except OSError as exc:  # a file the command had to write: read-only, full, no permission
        where = f" {exc.filename}" if exc.filename else " a file"
        err.print(f"error: could not use{where} ({exc.strerror or exc}); make it writable (or free space) and "
                  "run the command again — nothing already stored was lost", highlight=False, markup=False)
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - last line of defence: a message, not a traceback
        if os.environ.get("CLAWKEEP_DEBUG"):
            raise
        err.print(
            f"internal error: {type(exc).__name__}: {exc} (set CLAWKEEP_DEBUG=1 for a traceback)",
            highlight=False,
            markup=False,
        )
        sys.exit(1)
