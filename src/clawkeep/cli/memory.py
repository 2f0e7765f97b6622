"""`clawkeep memory …`: status, index, search, get, remember, items, edit, delete, sweep."""

from __future__ import annotations

import sys
from typing import Any

import typer

from .app import engine, err, memory_app, out
from .render import emit, table


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415

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
