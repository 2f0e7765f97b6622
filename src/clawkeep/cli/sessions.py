"""`clawkeep sessions …`: list, history, search, status, reset, fork, create, cleanup, notify."""

from __future__ import annotations

import typing
from typing import Any

import typer

from .. import validation as check
from ..api import SEND_TIMEOUT_DEFAULT_S, SEND_TIMEOUT_MAX_S
from ..api import operations as ops
from .app import engine, err, out, sessions_app
from .options import described
from .render import emit, table


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    kind: str | None = typer.Option(None, "--kind", help=described("sessions_list", "kind")),
    label: str | None = typer.Option(None, "--label"),
    active: int | None = typer.Option(None, "--active", help=described("sessions_list", "active_minutes")),
    search: str | None = typer.Option(None, "--search", help=described("sessions_list", "search")),
    preview: bool = typer.Option(False, "--preview", help="Add the last message preview."),
    caller: str | None = typer.Option(None, "--as", help="Calling session (visibility)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Sessions visible to the caller."""
    # checked here too, so the messages name the flags (the Engine names its parameters: active_minutes)
    if kind is not None:
        check.choice(kind, "--kind", typing.get_args(ops.SessionKind))
    check.integer(active, "--active", 1, check.MAX_INT)
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
    message_id: str | None = typer.Option(None, "--message-id", help=described("sessions_history", "message_id")),
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


@sessions_app.command("timeline")
def sessions_timeline(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="KEY_OR_ID"),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The session's intervals (reset boundaries) and compactions, oldest first."""
    data = engine(ctx).sessions_timeline(ref, caller=caller)

    def render(view: dict[str, Any]) -> None:
        rows = [{**i, "compactions": len(i["compactions"]), "closedBy": i["closedBy"] or "(open)"}
                for i in view["intervals"]]
        out.print(table(rows, ["index", "startedAt", "endedAt", "closedBy", "messageCount", "compactions",
                               "firstMessageId"], view["sessionKey"]))

    emit(data, as_json, render)


@sessions_app.command("search")
def sessions_search(
    ctx: typer.Context,
    query: str = typer.Argument(...),
    limit: int | None = typer.Option(None, "--limit", help=described("sessions_search", "limit", "default 10.")),
    caller: str | None = typer.Option(None, "--as"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Full-text search over user and assistant messages."""
    # here, so the message names the flag, not the Engine's `limit`
    check.integer(limit, "--limit", 1, check.MAX_SESSIONS_SEARCH)
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
    coding: str | None = typer.Option(None, "--coding", metavar="NAME", help=described("sessions_create", "coding")),
    key: str | None = typer.Option(None, "--key", help=described("sessions_create", "key")),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A new dashboard thread, (--coding NAME) a coding session, or (--key KEY) the session of that key."""
    emit(
        engine(ctx).sessions_create(incognito=incognito, label=label, coding=coding, key=key),
        as_json,
        lambda d: out.print(f"{'opened' if d.get('created') is False else 'created'} {d['key']} "
                            f"[dim]{d['sessionId']}[/dim]", highlight=False),
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
        done = len(rows) - len(d.get("refused") or [])
        out.print(table(rows, ["why", "key", "kind", "updatedAt"], f"{verb} {done} of {d['sessions']} sessions"))
        for row in d.get("refused") or []:
            err.print(f"refused: {row['reason']}", highlight=False, markup=False)

    emit(data, as_json, render)
    if data.get("refused"):
        raise typer.Exit(2)  # a session that should have gone is still there: say so in the exit code


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


@sessions_app.command("send")
def sessions_send(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="KEY_OR_ID"),
    text: str = typer.Argument(..., help="The message; the target receives it as inter-session data."),
    timeout: int = typer.Option(SEND_TIMEOUT_DEFAULT_S, "--timeout", help=f"Seconds to wait for the reply "
                                f"(0-{SEND_TIMEOUT_MAX_S}); 0 sends and returns at once."),
    caller: str | None = typer.Option(None, "--as", help="Calling session (visibility; the ping-pong partner)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Deliver a message into another session (sessions_send) and wait for its reply."""
    check.integer(timeout, "--timeout", 0, SEND_TIMEOUT_MAX_S)  # the message names the flag, not timeout_seconds
    data = engine(ctx).sessions_send(ref, text, timeout_seconds=timeout, caller=caller)

    def render(d: dict[str, Any]) -> None:
        detail = d.get("reply") or d.get("error") or d.get("note") or ""
        out.print(f"{d['sessionKey']} → {d['status']}" + (f": {detail}" if detail else ""), highlight=False)

    emit(data, as_json, render)


# --- recall -------------------------------------------------------------------------------
