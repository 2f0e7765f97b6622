"""The `clawkeep` command: a thin skin over `Engine`.

Exit codes: 0 success, 2 usage or input error (message on stderr, no traceback),
1 internal failure. `--json` prints the documented camelCase shapes.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..api import Shape
from ..engine import Engine
from ..errors import ClawkeepError, InputError

app = typer.Typer(
    help="clawkeep: sessions and memory for AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sessions_app = typer.Typer(help="Inspect and manage sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
memory_app = typer.Typer(help="Memory files, the memory index and memory search.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")

out = Console()
err = Console(stderr=True)


@dataclass
class GlobalOptions:
    home: Path | None
    config: Path | None
    agent: str


@app.callback()
def main(
    ctx: typer.Context,
    home: Path | None = typer.Option(
        None, "--home", envvar="CLAWKEEP_HOME", help="State directory (default ~/.clawkeep)."
    ),
    config: Path | None = typer.Option(None, "--config", help="JSON5 config file (default <home>/clawkeep.json5)."),
    agent: str = typer.Option("main", "--agent", help="Agent id."),
) -> None:
    ctx.obj = GlobalOptions(home, config, agent)


def engine(ctx: typer.Context) -> Engine:
    opts: GlobalOptions = ctx.obj
    opened = Engine.open(home=opts.home, config=opts.config, agent=opts.agent)
    for warning in opened.config.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    ctx.call_on_close(opened.close)
    return opened


def as_json_data(data: Any) -> Any:
    """The documented JSON of a result: contract models (clawkeep.api) print their own shape."""
    if isinstance(data, Shape):
        return data.to_json()
    if isinstance(data, list):
        return [as_json_data(item) for item in data]
    return data


def emit(data: Any, as_json: bool, render: Any = None) -> None:
    data = as_json_data(data)
    if as_json or render is None:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        render(data)


def table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None) -> Table:
    grid = Table(title=title, show_lines=False)
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    return grid


# --- message ---------------------------------------------------------------------------
@app.command()
def message(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="Message text; /new, /reset, /status are executed."),
    channel: str = typer.Option("cli", "--channel"),
    account: str | None = typer.Option(None, "--account"),
    sender: str = typer.Option("owner", "--sender"),
    chat_type: str = typer.Option("direct", "--chat-type", help="direct | group | channel"),
    group: str | None = typer.Option(None, "--group"),
    thread: str | None = typer.Option(None, "--thread"),
    role: str = typer.Option("user", "--role", help="user | assistant"),
    message_id: str | None = typer.Option(None, "--message-id", help="Client id; re-sending it is idempotent."),
    at: str | None = typer.Option(None, "--at", help="Message time, ISO-8601."),
    session: str | None = typer.Option(None, "--session", help="Deliver into this existing session."),
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
        )
        .to_json()
    )

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
    ("memory remember TEXT", "write a fact to MEMORY.md or today's note"),
    ("memory search QUERY", "hybrid search over memory (and transcripts if enabled)"),
    ("memory get|items|edit|delete|sweep", "read and correct what is remembered"),
    ("memory status|index", "provider, vector store and index health; (re)build the index"),
    ("recall TEXT --session KEY", "Active Memory for a would-be message; --classify to test the detector"),
    ("status", "this overview and the engine's state"),
    ("doctor [--repair]", "check every database; salvage a damaged one into a new file, rebuild the index"),
]


@app.command()
def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Engine state and the command overview."""
    data = engine(ctx).status()

    def render(info: dict[str, Any]) -> None:
        grid = Table(title="clawkeep status", show_header=False)
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
        out.print(grid)
        out.print(table([{"command": c, "does": d} for c, d in OVERVIEW], ["command", "does"], "commands"))

    emit(data, as_json, render)


# --- sessions ----------------------------------------------------------------------------
@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    kind: str | None = typer.Option(None, "--kind"),
    label: str | None = typer.Option(None, "--label"),
    active: int | None = typer.Option(None, "--active", help="Only sessions updated in the last MIN minutes."),
    search: str | None = typer.Option(None, "--search", help="Substring of key, label or title."),
    preview: bool = typer.Option(False, "--preview", help="Add the last message preview."),
    caller: str | None = typer.Option(None, "--as", help="Calling session (visibility)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Sessions visible to the caller."""
    rows = engine(ctx).sessions_list(
        kind=kind, label=label, active_minutes=active, search_text=search, preview=preview, caller=caller
    )
    emit(
        rows,
        as_json,
        lambda r: out.print(
            table(
                r, ["key", "kind", "channel", "label", "messageCount", "updatedAt"] + (["preview"] if preview else [])
            )
        ),
    )


@sessions_app.command("history")
def sessions_history(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="KEY_OR_ID"),
    message_id: str | None = typer.Option(None, "--message-id", help="Re-open the interval holding this message."),
    include_tools: bool = typer.Option(False, "--include-tools"),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """One interval of a session's transcript, sanitised."""
    data = engine(ctx).sessions_history(ref, message_id=message_id, include_tools=include_tools, caller=caller)

    def render(view: dict[str, Any]) -> None:
        out.print(table(view["messages"], ["timestamp", "role", "text"], f"{view['sessionKey']}"))
        if view["truncated"] or view["contentTruncated"] or view["contentRedacted"]:
            out.print(
                f"[dim]dropped {view['droppedMessages']}, truncated={view['contentTruncated']}, "
                f"redacted={view['contentRedacted']}[/dim]"
            )

    emit(data, as_json, render)


@sessions_app.command("search")
def sessions_search(
    ctx: typer.Context,
    query: str = typer.Argument(...),
    limit: int | None = typer.Option(None, "--limit", help="1-25, default 10."),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Full-text search over user and assistant messages."""
    data = engine(ctx).sessions_search(query, limit=limit, caller=caller)
    emit(
        data,
        as_json,
        lambda d: out.print(table(d["hits"], ["sessionKey", "messageId", "role", "timestamp", "snippet"])),
    )


@sessions_app.command("status")
def sessions_status(
    ctx: typer.Context,
    ref: str | None = typer.Argument(None, metavar="[KEY_OR_ID]"),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """session_status: times, counters, model, next reset."""
    emit(engine(ctx).session_status(ref, caller=caller), as_json, lambda d: out.print_json(data=d))


@sessions_app.command("reset")
def sessions_reset(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="KEY_OR_ID"),
    at: str | None = typer.Option(None, "--at"),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Close the current interval (same key, same id, a boundary entry)."""
    emit(
        engine(ctx).sessions_reset(ref, at=at, caller=caller),
        as_json,
        lambda d: out.print(f"reset {d['sessionKey']} (boundary {d['boundaryId']})", highlight=False),
    )


@sessions_app.command("fork")
def sessions_fork(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="KEY_OR_ID"),
    label: str | None = typer.Option(None, "--label"),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A child session continuing from this one; the parent is untouched."""
    emit(
        engine(ctx).sessions_fork(ref, label=label, caller=caller),
        as_json,
        lambda d: out.print(f"forked → {d['key']} [dim]{d['sessionId']}[/dim]", highlight=False),
    )


@sessions_app.command("create")
def sessions_create(
    ctx: typer.Context,
    incognito: bool = typer.Option(False, "--incognito", help="In memory only: never written, gone on exit."),
    label: str | None = typer.Option(None, "--label"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A new dashboard thread."""
    emit(
        engine(ctx).sessions_create(incognito=incognito, label=label),
        as_json,
        lambda d: out.print(f"created {d['key']} [dim]{d['sessionId']}[/dim]", highlight=False),
    )


@sessions_app.command("cleanup")
def sessions_cleanup(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Only report."),
    enforce: bool = typer.Option(False, "--enforce", help="Apply even in warn mode."),
    fix_dm_scope: bool = typer.Option(False, "--fix-dm-scope", help="Retire DM rows of another dmScope."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Session maintenance: prune stale synthetic sessions, cap the row count (archives first)."""
    data = engine(ctx).sessions_cleanup(dry_run=dry_run, enforce=enforce, fix_dm_scope=fix_dm_scope)

    def render(d: dict[str, Any]) -> None:
        verb = "archived" if d["applied"] else "would archive"
        rows = [
            {**r, "why": why}
            for why, key in (("stale", "stale"), ("over cap", "overCap"), ("dm scope", "wrongDmScope"))
            for r in d[key]
        ]
        out.print(table(rows, ["why", "key", "kind", "updatedAt"], f"{verb} {len(rows)} of {d['sessions']} sessions"))

    emit(data, as_json, render)


@sessions_app.command("notify")
def sessions_notify(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="KEY_OR_ID"),
    text: str = typer.Argument(...),
    no_queue: bool = typer.Option(False, "--no-queue", help="Record only; do not queue for the next turn."),
    at: str | None = typer.Option(None, "--at"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Record a system event (heartbeat, cron, exec); it never keeps a session fresh."""
    emit(
        engine(ctx).system_event(ref, text, at=at, queue=not no_queue),
        as_json,
        lambda d: out.print(
            f"event {d['eventId']} → {d['sessionKey']} ({d['pendingNotices']} queued)", highlight=False
        ),
    )


# --- recall -------------------------------------------------------------------------------
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
@memory_app.command("status")
def memory_status(
    ctx: typer.Context,
    deep: bool = typer.Option(False, "--deep", help="Probe the embedding provider and the vector store."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Workspace, provider, vector store and index health, reported separately."""
    emit(engine(ctx).memory_status(deep=deep), as_json, lambda d: out.print_json(data=d))


@memory_app.command("index")
def memory_index(
    ctx: typer.Context,
    force: bool = typer.Option(False, "--force", help="Rebuild the whole index."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Bring the memory index up to date with the Markdown files (and transcripts if enabled)."""
    eng = engine(ctx)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=as_json) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(f"indexing {phase}", total=total)
            bar.update(tasks[phase], completed=done, total=total)

        report = eng.memory_index(force=force, progress=progress)
    emit(report, as_json, lambda d: out.print(
        f"indexed {len(d['indexed'])} file(s), removed {len(d['removed'])}, skipped {len(d['skipped'])}; "
        f"{d['chunks']} chunks" + (" (rebuilt)" if d["rebuilt"] else "")
        + (f"\n[yellow]the index was corrupt ({d['corrupt']['error']}):[/yellow] moved to {d['corrupt']['movedTo']} "
           "and rebuilt from the Markdown files" if d.get("corrupt") else "")
        + (f"\n[yellow]embedding error:[/yellow] {d['embeddingError']} (keyword search still works)"
           if d["embeddingError"] else "")
        + "".join(f"\n[dim]skipped {p}: {why}[/dim]" for p, why in d["skipped"].items()), highlight=False))


@memory_app.command("search")
def memory_search(
    ctx: typer.Context,
    query: str = typer.Argument(...),
    limit: int | None = typer.Option(None, "--limit", help="1-50, default maxResults (6)."),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid | keyword | vector"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Hybrid search over memory files (and indexed transcripts)."""
    data = engine(ctx).memory_search(query, limit=limit, mode=mode)
    emit(data, as_json, lambda d: out.print(table(d["results"], ["score", "source", "snippet"])))


@memory_app.command("get")
def memory_get(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="Workspace-relative path, e.g. MEMORY.md or memory/2026-05-08.md"),
    from_line: int | None = typer.Option(None, "--from"),
    lines: int | None = typer.Option(None, "--lines"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Read a memory file or a line range of it (at most 100,000 characters per answer)."""

    def render(d: dict[str, Any]) -> None:
        sys.stdout.write(d["text"] + "\n")
        if d.get("truncated"):
            err.print(f"[dim]truncated: {d['omittedChars']} more characters (at most {d['maxChars']} per answer); "
                      f"continue with --from {d['to'] + 1}[/dim]", highlight=False)

    emit(engine(ctx).memory_get(path, from_line=from_line, lines=lines), as_json, render)


@memory_app.command("remember")
def memory_remember(
    ctx: typer.Context,
    text: str = typer.Argument(...),
    force: bool = typer.Option(False, "--force", help="Store even an instruction or venting (never secrets)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write a fact to the right file (MEMORY.md, or today's note when it is time-bound)."""
    data = engine(ctx).memory_remember(text, force=force)

    def render(d: dict[str, Any]) -> None:
        if d["status"] == "refused":
            err.print(f"not remembered: {d['reason']}", highlight=False)
        else:
            item = d["item"]
            out.print(f"{d['status']}: {item['text']} → {item['path']}:{item['line']} [dim]{item['id']}[/dim]"
                      + (f" (supersedes {', '.join(d['superseded'])})" if d.get("superseded") else ""),
                      highlight=False)

    emit(data, as_json, render)


@memory_app.command("items")
def memory_items(
    ctx: typer.Context,
    status: str | None = typer.Option(None, "--status", help="active | superseded | expired"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Everything remembered, one bullet line each, with ids for edit and delete."""
    emit(engine(ctx).memory_items(status=status), as_json,
         lambda rows: out.print(table(rows, ["id", "status", "path", "line", "text"])))


@memory_app.command("edit")
def memory_edit(
    ctx: typer.Context,
    item_id: str = typer.Argument(..., metavar="ID"),
    text: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Change a remembered item in its Markdown file and re-index."""
    emit(engine(ctx).memory_edit(item_id, text), as_json,
         lambda d: out.print(f"edited {d['id']} in {d['path']}:{d['line']}", highlight=False))


@memory_app.command("delete")
def memory_delete(
    ctx: typer.Context,
    item_id: str = typer.Argument(..., metavar="ID"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Remove a remembered item from its Markdown file and re-index."""
    emit(engine(ctx).memory_delete(item_id), as_json,
         lambda d: out.print(f"deleted {d['deleted']} from {d['path']}", highlight=False))


@memory_app.command("sweep")
def memory_sweep(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Archive time-bound items that expired more than 30 days ago."""
    emit(engine(ctx).memory_sweep(), as_json,
         lambda d: out.print(f"archived {len(d['removed'])} expired item(s)", highlight=False))


# --- doctor -------------------------------------------------------------------------------
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


def run() -> None:
    """Console entry point: map errors to exit codes, never a traceback for user mistakes.

    Typer itself exits 2 on usage errors; our own errors surface here.
    """
    try:
        app()
    except InputError as exc:
        err.print(f"error: {exc}", highlight=False, markup=False)
        sys.exit(2)
    except ClawkeepError as exc:
        err.print(f"error: {exc}", highlight=False, markup=False)
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
