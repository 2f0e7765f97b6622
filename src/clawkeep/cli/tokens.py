"""`clawkeep tokens …`: create, list and revoke caller credentials (docs/security.md)."""

from __future__ import annotations

import typer

from .app import engine, err, out, tokens_app
from .render import emit, table

SCOPE_HELP = "operator, agent:ID, session:KEY or peer:CHANNEL:SENDER"


@tokens_app.command("create")
def tokens_create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A name for the token (1-64 letters, digits, '.', '_', '-')."),
    scope: str = typer.Option(..., "--scope", help=f"What the token may do: {SCOPE_HELP}."),
    expires: str | None = typer.Option(None, "--expires", metavar="DURATION",
                                       help="Lifetime, e.g. 12h, 30d, 2w (default: until revoked)."),
    sandboxed: bool = typer.Option(False, "--sandboxed", help="Its caller is sandboxed "
                                   "(agents.defaults.sandbox.sessionToolsVisibility applies)."),
    as_json: bool = typer.Option(False, "--json", help="Print an object with the secret under `token`."),
) -> None:
    """Create a token; its secret is printed this once and never again."""
    created = engine(ctx).tokens_create(name, scope, expires=expires, sandboxed=sandboxed)
    if as_json:
        emit(created, True)
        return
    out.print(created["token"], highlight=False, markup=False)
    err.print(f"token {created['name']!r} ({created['scope']}) created; the secret above is shown only now. "
              "Send it as 'Authorization: Bearer <token>'.", highlight=False, markup=False)


@tokens_app.command("list")
def tokens_list(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Every token: name, scope, state and times (never the secret)."""
    rows = engine(ctx).tokens_list()

    def render(data: list[dict]) -> None:
        out.print(table(data, ["name", "scope", "sandboxed", "state", "createdAt", "expiresAt", "revokedAt",
                                "lastUsedAt"]))

    emit(rows, as_json, render)


@tokens_app.command("revoke")
def tokens_revoke(ctx: typer.Context, name: str = typer.Argument(...),
                  as_json: bool = typer.Option(False, "--json")) -> None:
    """Revoke a token: every gateway on this home or database refuses it from its next request."""
    revoked = engine(ctx).tokens_revoke(name)
    emit(revoked, as_json, lambda r: out.print(f"token {r['name']!r} revoked", highlight=False, markup=False))
