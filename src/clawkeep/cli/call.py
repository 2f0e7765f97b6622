"""`clawkeep call OPERATION [NAME=VALUE ...]`: every operation of the registry from the command line.

Derived, not written: the operation's argument model gives the names (snake_case or camelCase),
the types and the checks, its result shape the JSON printed — so a verb declared in
`api/operations.py` is a command here with nothing more written. The hand-made commands
(`sessions search`, `memory remember`, …) stay for their tables, progress bars and flags.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import typer

from ..api.operations import OPERATIONS, Operation
from ..errors import InputError
from .app import app, engine, out
from .render import emit, table


@app.command("call", context_settings={"allow_interspersed_args": True})
def call(
    ctx: typer.Context,
    operation: str | None = typer.Argument(None, help="An operation name (see --list), e.g. sessions_history."),
    arguments: list[str] | None = typer.Argument(
        None, metavar="NAME=VALUE...", help="Its arguments: text as it is; numbers, true/false, lists and objects "
        "as JSON (e.g. limit=5 preview=true sessionKey=agent:main:main)."),
    caller: str | None = typer.Option(None, "--as", help="Calling session (visibility), as the model's tools run."),
    describe: bool = typer.Option(False, "--describe", help="Print the operation's argument schema and exit."),
    listing: bool = typer.Option(False, "--list", help="List every operation and its arguments."),
    as_json: bool = typer.Option(False, "--json", help="With --list: print JSON."),
) -> None:
    """Run any operation of the registry by name; prints its documented JSON result."""
    if listing or operation is None:
        _list(as_json)
        return
    op = _operation(operation)
    if describe:
        emit(op.tool_schema(), True)
        return
    args = op.parse(_arguments(op, arguments or []))
    emit(op.run(engine(ctx), args, caller), True)


def _operation(name: str) -> Operation:
    found = OPERATIONS.get(name) or OPERATIONS.get(name.replace("-", "_"))
    if found is None:
        raise InputError(f"operation {name!r} is unknown; `clawkeep call --list` lists them: "
                         + ", ".join(sorted(OPERATIONS)))
    return found


def _arguments(op: Operation, pairs: list[str]) -> dict[str, Any]:
    """NAME=VALUE pairs as the argument model's JSON: a text field takes the value as it is,
    any other parses it as JSON (a bare word stays text, so the model names what is wrong)."""
    fields = {name: info for name, info in op.args.model_fields.items()}
    aliases = {info.alias: name for name, info in fields.items() if info.alias}
    parsed: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InputError(f"argument {pair!r} of {op.name}: write NAME=VALUE; its arguments are "
                             + ", ".join(info.alias or name for name, info in fields.items()))
        field = aliases.get(name, name)
        if field not in fields:
            raise InputError(f"argument {name!r} is not one of {op.name}'s: "
                             + ", ".join(info.alias or n for n, info in fields.items()))
        parsed[field] = value if _takes_text(fields[field].annotation) else _json_or_text(value)
    return parsed


def _takes_text(annotation: Any) -> bool:
    return annotation is str or str in typing.get_args(annotation)


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _list(as_json: bool) -> None:
    rows = [{"operation": name, "summary": op.summary,
             "arguments": " ".join(_signature_part(n, info) for n, info in op.args.model_fields.items())}
            for name, op in sorted(OPERATIONS.items())]
    if as_json:
        emit(rows, True)
    else:
        out.print(table(rows, ["operation", "arguments", "summary"], "operations (clawkeep call NAME NAME=VALUE …)"))


def _signature_part(name: str, info: Any) -> str:
    shown = info.alias or name
    return shown if info.is_required() else f"[{shown}]"
