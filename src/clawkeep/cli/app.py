"""The Typer application, its global options and the engine each command opens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console

from ..engine import Engine

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
