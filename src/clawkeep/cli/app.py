"""The Typer application, its global options and the engine each command opens."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from typer.main import get_command_name
from typer.models import CommandInfo, TyperInfo

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
tokens_app = typer.Typer(help="Caller credentials: tokens with a scope (docs/security.md).", no_args_is_help=True)
app.add_typer(tokens_app, name="tokens")

# The root callback's options below, all of which take a value (a test keeps the two in step).
GLOBAL_VALUE_OPTIONS = frozenset({"--home", "--config", "--agent"})

# No emoji codes: what is printed is data (a key like `agent:main:x:group:fire:thread:1` holds
# no `:fire:`), and Rich's table of ~4,000 emoji names is then never loaded.
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


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


# --- building only the command that runs -------------------------------------------------------
# Typer turns every registered command into a Click command on each call (signature, type hints,
# parameters: ~25 ms for ~40 commands), though a process runs one. `for_arguments` gives a view
# of the application holding only the command (or group and sub-command) the arguments name;
# whenever they name nothing definite (--help, an unknown word or option, shell completion) it
# is the whole application, so help, errors and suggestions are exactly Typer's.
def for_arguments(typer_app: typer.Typer, args: Sequence[str]) -> typer.Typer:
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return typer_app  # Click's shell completion walks the whole tree
    return _narrowed(typer_app, list(args), GLOBAL_VALUE_OPTIONS)


def _narrowed(typer_app: typer.Typer, args: list[str], value_options: frozenset[str]) -> typer.Typer:
    found = _command_word(args, value_options)
    if found is None:
        return typer_app
    word, rest = found
    # Typer keeps the last of equal names, and a group over a command: look in that order.
    for group in reversed(typer_app.registered_groups):
        inner = group.typer_instance
        if group.name == word and inner is not None:
            if inner.registered_callback is None:  # a group's own options are not parsed here
                inner = _narrowed(inner, rest, frozenset())
            narrowed = copy.copy(group)
            narrowed.typer_instance = inner
            return _view(typer_app, commands=[], groups=[narrowed])
    for command in reversed(typer_app.registered_commands):
        if _command_name(command) == word:
            return _view(typer_app, commands=[command], groups=[])
    return typer_app


def _command_word(args: list[str], value_options: frozenset[str]) -> tuple[str, list[str]] | None:
    """The first command word and what follows it, past options that take a value (as Click
    parses them: `--home X`, `--home=X`); None when anything else comes first."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in value_options:
            i += 2
        elif arg.partition("=")[0] in value_options:
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return arg, args[i + 1:]
    return None


def global_options_first(command: Any, args: Sequence[str]) -> list[str]:
    """`args` with `--home`, `--config` and `--agent` moved in front of the command when they
    were written after it (`clawkeep status --home DIR`, as the README's "every command takes
    --home" reads), unless the command has an option of that name itself (`doctor --agent`).
    Nothing after `--` moves."""
    args = list(args)
    start = next((i for i, arg in enumerate(args) if arg == _first_word(args)), None)
    if start is None:
        return args
    leaf = command  # a Click command (Typer's own copy of Click: duck-typed, a group has `commands`)
    for word in args[start:]:
        if (inner := getattr(leaf, "commands", {}).get(word)) is None:
            break
        leaf = inner
    own = {opt for param in leaf.params for opt in param.opts}
    movable = GLOBAL_VALUE_OPTIONS - own
    front, rest, i = args[:start], [], start
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg in movable and i + 1 < len(args):
            front += args[i:i + 2]
            i += 2
            continue
        name, equals, _ = arg.partition("=")
        (front if equals and name in movable else rest).append(arg)  # a bare last `--home` stays: Click names it
        i += 1
    return front + rest


def _first_word(args: list[str]) -> str | None:
    found = _command_word(args, GLOBAL_VALUE_OPTIONS)
    return found[0] if found else None


def _command_name(command: CommandInfo) -> str | None:
    if command.name:
        return command.name
    return get_command_name(command.callback.__name__) if command.callback else None


def _view(typer_app: typer.Typer, *, commands: list[CommandInfo],
          groups: list[TyperInfo]) -> typer.Typer:
    view = copy.copy(typer_app)
    view.registered_commands = commands
    view.registered_groups = groups
    return view
