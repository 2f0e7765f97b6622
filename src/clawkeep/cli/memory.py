"""`clawkeep memory …`: status, index, search, get, remember, items, edit, delete, sweep."""

from __future__ import annotations

import sys
from typing import Any

import typer

from .. import validation as check
from ..errors import InputError
from .app import engine, err, memory_app, out
from .options import checked, described
from .render import emit, progress_display, table


@memory_app.command("status")
def memory_status(
    ctx: typer.Context,
    deep: bool = typer.Option(False, "--deep", help=described("memory_status", "deep")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Workspace, provider, vector store and index health, reported separately."""
    emit(engine(ctx).memory_status(deep=deep), as_json, lambda d: out.print_json(data=d))


@memory_app.command("index")
def memory_index(
    ctx: typer.Context,
    force: bool = typer.Option(False, "--force", help=described("memory_index", "force")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Bring the memory index up to date with the Markdown files (and transcripts if enabled)."""
    eng = engine(ctx)
    with progress_display(err, disable=as_json) as bar:
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
        + "".join(f"\n[dim]skipped {p}: {why}[/dim]" for p, why in d["skipped"].items())
        + "".join(f"\n[yellow]indexed {p} without its bad parts:[/yellow] {what}"
                  for p, what in (d.get("repaired") or {}).items()), highlight=False))


@memory_app.command("search")
def memory_search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help=described("memory_search", "query")),
    limit: int | None = typer.Option(None, "--limit", help=described("memory_search", "max_results",
                                                                      "default maxResults (6).")),
    mode: str = typer.Option("hybrid", "--mode", help=described("memory_search", "mode")),
    corpus: str = typer.Option("all", "--corpus", help=described("memory_search", "corpus")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Hybrid search over memory files (and indexed transcripts)."""

    check.integer(limit, "--limit", 1, check.MAX_MEMORY_SEARCH)  # the CLI names its flags; the Engine its parameters
    checked(mode, "--mode", "memory_search", "mode")
    data = engine(ctx).memory_search(query, limit=limit, mode=mode, corpus=corpus)
    emit(data, as_json, lambda d: out.print(table(d["results"], ["score", "source", "snippet"])))


@memory_app.command("get")
def memory_get(
    ctx: typer.Context,
    path: str = typer.Argument(..., help=described("memory_get", "path")),
    from_line: int | None = typer.Option(None, "--from", help=described("memory_get", "from_line")),
    lines: int | None = typer.Option(None, "--lines", help=described("memory_get", "lines")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Read a memory file or a line range of it (at most 100,000 characters per answer)."""
    check.integer(from_line, "--from", 1, check.MAX_INT)  # the CLI names its flags; the Engine its parameters
    check.integer(lines, "--lines", 1, check.MAX_GET_LINES)

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
    status: str | None = typer.Option(None, "--status", help=described("memory_items", "status")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Everything remembered, one bullet line each, with ids for edit and delete."""
    checked(status, "--status", "memory_items", "status")
    emit(engine(ctx).memory_items(status=status), as_json,
         lambda rows: out.print(table(rows, ["id", "status", "path", "line", "text"])))


@memory_app.command("refusals")
def memory_refusals(
    ctx: typer.Context,
    days: int = typer.Option(7, "--days", help=described("memory_refusals", "days")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What the write filters refused lately, with the reason (excerpts redacted)."""
    checked(days, "--days", "memory_refusals", "days")
    emit(engine(ctx).memory_refusals(days=days), as_json,
         lambda rows: out.print(table(rows, ["at", "source", "reason", "excerpt", "sessionKey"])))


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


# --- dreaming (Dr1–Dr2) ----------------------------------------------------------------------
@memory_app.command("dream")
def memory_dream(
    ctx: typer.Context,
    phase: str = typer.Option("all", "--phase", help=described("dream", "phase")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run a Dreaming sweep now (Light → REM → Deep); DREAMS.md shows what each phase did."""
    data = engine(ctx).dream(phase=phase)
    emit(data, as_json, _render_sweep)
    if data["status"] == "locked":
        raise typer.Exit(1)  # the sweep did not run


def _render_sweep(d: dict[str, Any]) -> None:
    if d["status"] == "locked":
        holder = d.get("holder") or {}
        err.print(f"another Dreaming sweep is running ({holder.get('owner', '?')}, pid {holder.get('pid', '?')}); "
                  "nothing was done", highlight=False)
        return
    if d["status"] == "no-workspace":
        err.print(f"no workspace at {d.get('workspace')}: nothing to dream about", highlight=False)
        return
    light, deep = d.get("light"), d.get("deep")
    if light:
        out.print(f"light: {light['traces']} trace(s), {light['notes']} note(s), {light['transcripts']} conversation(s)"
                  f" → {len(light['staged'])} staged", highlight=False)
    if d.get("rem"):
        out.print(f"rem: {len(d['rem']['themes'])} theme(s) ({d['rem']['source']})", highlight=False)
    if deep:
        out.print(f"deep: {deep['ranked']} ranked, {deep['passed']} passed the gates, {len(d['promoted'])} promoted "
                  f"(MEMORY.md: {deep['mode']})", highlight=False)
        for row in d["promoted"]:
            out.print(f"  + {row['text']} [dim]{row['id']}[/dim]", highlight=False)
    out.print(f"[dim]run {d['runId']}; details in DREAMS.md[/dim]", highlight=False)


@memory_app.command("dreaming")
def memory_dreaming(
    ctx: typer.Context,
    action: str = typer.Argument("status", help="status | on | off"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Dreaming's state (schedule, next run, last sweep, counts), or switch it on or off."""
    eng = engine(ctx)
    if action not in ("status", "on", "off"):
        raise InputError(f"memory dreaming takes status, on or off (got {action!r})")
    data = eng.dreaming_status() if action == "status" else eng.dreaming_enable(action == "on")
    emit(data, as_json, lambda d: out.print_json(data=d))


@memory_app.command("promote")
def memory_promote(
    ctx: typer.Context,
    apply: bool = typer.Option(False, "--apply", help="Run Light and Deep now and write MEMORY.md."),
    limit: int | None = typer.Option(None, "--limit", help="At most N promotions (1-1000, default deep.limit 10)."),
    min_score: float | None = typer.Option(None, "--min-score", help="Override deep.minScore (0-1)."),
    min_recall_count: int | None = typer.Option(None, "--min-recall-count"),
    min_unique_queries: int | None = typer.Option(None, "--min-unique-queries"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Rank the short-term candidates with Deep's signals and gates; --apply promotes the passing ones."""
    # the CLI names its flags; the Engine its parameters (same bounds as Engine.memory_promote)
    check.integer(limit, "--limit", 1, 1000)
    check.number(min_score, "--min-score", 0.0, 1.0)
    check.integer(min_recall_count, "--min-recall-count", 0, check.MAX_INT)
    check.integer(min_unique_queries, "--min-unique-queries", 0, 32)
    data = engine(ctx).memory_promote(apply=apply, limit=limit, min_score=min_score,
                                      min_recall_count=min_recall_count, min_unique_queries=min_unique_queries)
    if apply:
        emit(data, as_json, _render_sweep)
        if data["status"] == "locked":
            raise typer.Exit(1)  # nothing was promoted: as `memory dream`, a cron wrapper must see it
        return
    decided = {row["key"]: row for row in data["decisions"]}

    def render(d: dict[str, Any]) -> None:
        rows = [{"score": f"{c['score']:.3f}", "recalls": c["recallCount"], "queries": c["uniqueQueries"],
                 "would": decided[c["key"]]["status"] if c["key"] in decided else (c["rejected"] or "not chosen"),
                 "text": c["text"]} for c in d["candidates"]]
        out.print(table(rows, ["score", "recalls", "queries", "would", "text"], "promotion candidates"))
        out.print("[dim]nothing written; --apply promotes[/dim]")

    emit(data, as_json, render)


@memory_app.command("promote-explain")
def memory_promote_explain(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words of the candidate (or the query that recalled it)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Why a candidate would or would not be promoted: each signal's value, the gates, Deep's decision."""
    data = engine(ctx).memory_promote_explain(query)

    def render(d: dict[str, Any]) -> None:
        if not d["candidates"]:
            out.print(f"no short-term candidate matches {d['query']!r}", highlight=False)
        for c in d["candidates"]:
            signals = ", ".join(f"{k} {v:.2f}×{d['weights'][k]:.2f}" for k, v in c["components"].items())
            out.print(f"[bold]{c['text']}[/bold] ({c['path']}) score {c['score']:.3f} "
                      f"(+{c['phaseBoost']:.3f} phase boost)\n  {signals}\n  → {c['decision']}"
                      + (f": {c['decisionReason']}" if c.get("decisionReason") else ""), highlight=False)

    emit(data, as_json, render)


@memory_app.command("promote-undo")
def memory_promote_undo(
    ctx: typer.Context,
    target: str | None = typer.Argument(None, metavar="[RUN_OR_ITEM_ID]",
                                        help=described("memory_promote_undo", "target")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Undo what Dreaming promoted into MEMORY.md: a whole run, or one promoted item."""
    emit(engine(ctx).memory_promote_undo(target), as_json, lambda d: out.print(
        f"undid {len(d['items'])} promotion(s) of {d['runId']} ({d['restored']})", highlight=False))


@memory_app.command("dreams")
def memory_dreams(
    ctx: typer.Context,
    limit: int = typer.Option(20, "--limit", help=described("dreaming_review", "limit")),
    caller: str | None = typer.Option(None, "--as", help="Calling session (visibility)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What Dreaming promoted, run by run (each item undoable with promote-undo), and the diary."""
    checked(limit, "--limit", "dreaming_review", "limit")
    def render(d: dict[str, Any]) -> None:
        for run in d["runs"]:
            out.print(f"[bold]{run['runId']}[/bold] ({run['status']})", highlight=False)
            for item in run["items"]:
                state = "undone" if item["undone"] else "in MEMORY.md" if item["inMemory"] else "gone from MEMORY.md"
                out.print(f"  {item['id']}  {item['text']} [dim]{state}[/dim]", highlight=False)
        if not d["runs"]:
            out.print("nothing promoted yet", highlight=False)
        for entry in d.get("diary") or ():
            out.print(f"\n[bold]{entry['heading']}[/bold]\n{entry['text']}", highlight=False)

    emit(engine(ctx).dreaming_review(limit=limit, caller=caller), as_json, render)


@memory_app.command("rem-harness")
def memory_rem_harness(
    ctx: typer.Context,
    path: str | None = typer.Option(None, "--path", help="Read these historical dated notes instead."),
    grounded: bool = typer.Option(False, "--grounded", help="With --path: each note as its own day."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Preview REM's reflections, the candidate facts and Deep's promotions; writes nothing."""
    check.path(path, "--path", optional=True)
    emit(engine(ctx).rem_harness(path=path, grounded=grounded), as_json, _render_harness)


def _render_harness(d: dict[str, Any]) -> None:
    if d["grounded"]:
        for day in d["days"]:
            out.print(f"[bold]{day['day']}[/bold] {day['path']}: {len(day['facts'])} fact(s), "
                      f"{len(day['setAside'])} set aside", highlight=False)
            for fact in day["facts"]:
                out.print(f"  - {fact}", highlight=False)
        return
    rem = d.get("rem") or {}
    themes = rem.get("themes", [])
    out.print(f"REM: {len(themes)} theme(s) ({rem.get('source', 'deterministic')}); "
              f"{len(d['candidates'])} candidate(s); nothing written", highlight=False)
    for theme in themes:
        out.print(f"[bold]{theme['title']}[/bold] (strength {theme['strength']:.2f}): {theme['reflection']}",
                  highlight=False)
    for row in d["decisions"]:
        out.print(f"{row['status']}: {row['text']}" + (f" ({row['reason']})" if row.get("reason") else ""),
                  highlight=False)
    # an empty preview printed nothing at all: say why no line would be promoted
    held = [] if d["decisions"] else d["candidates"]
    for row in held[:10]:
        out.print(f"held back: {row['text']} ({row.get('rejected') or 'below the gates'})", highlight=False)
    if len(held) > 10:
        out.print(f"… and {len(held) - 10} more held back (--json lists them)", highlight=False)
    if d.get("memoryPreview"):
        out.print("[dim]MEMORY.md would gain:[/dim]\n" + d["memoryPreview"], highlight=False, markup=False)
    else:
        out.print("MEMORY.md would gain nothing", highlight=False)


@memory_app.command("rem-backfill")
def memory_rem_backfill(
    ctx: typer.Context,
    path: str | None = typer.Option(None, "--path", help="A folder of YYYY-MM-DD.md notes (or one such file)."),
    grounded: bool = typer.Option(True, "--grounded/--no-grounded", help="Each note as its own day (always)."),
    stage_short_term: bool = typer.Option(False, "--stage-short-term",
                                          help="Also stage the durable facts as grounded candidates."),
    rollback: bool = typer.Option(False, "--rollback", help="Remove the backfill's diary entries."),
    rollback_short_term: bool = typer.Option(False, "--rollback-short-term", help="Remove the staged candidates."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Replay historical notes into reversible Dream Diary entries (and optionally the short-term store)."""
    if not grounded:
        raise InputError("rem-backfill is always grounded (each note read as its own day); drop --no-grounded")
    check.path(path, "--path", optional=True)
    data = engine(ctx).rem_backfill(path=path, stage_short_term=stage_short_term, rollback=rollback,
                                    rollback_short_term=rollback_short_term)

    def render(d: dict[str, Any]) -> None:
        if rollback or rollback_short_term:
            out.print(f"removed {d.get('removedEntries') or 0} diary entr(ies) ({d.get('restored') or '-'}), "
                      f"{d.get('removedShortTermEntries') or 0} staged candidate(s)", highlight=False)
        else:
            out.print(f"wrote {d['written']} grounded diary entr(ies) to {d['dreamsFile']}; staged {d['staged']} "
                      "candidate(s)", highlight=False)

    emit(data, as_json, render)
