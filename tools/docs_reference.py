"""MkDocs hook: the reference pages are generated at build time, so none of them drifts.

- reference/config.md from the typed config model (`clawkeep.config.Config`): every key, its type,
  its default, and the comment written above (or beside) the field in the source;
- reference/cli.md from the Typer application (every command's usage and options);
- reference/http.md from the gateway's OpenAPI document.

mkdocs.yml names this file under `hooks:`; `mkdocs build --strict` runs in `make test`.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import tokenize
import types
import typing
from typing import Any

from mkdocs.structure.files import File, Files
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

PAGES = ("reference/config.md", "reference/cli.md", "reference/http.md")


def on_files(files: Files, config: Any) -> Files:
    for path, build in zip(PAGES, (config_reference, cli_reference, http_reference), strict=True):
        files.append(File.generated(config, path, content=build()))
    return files


# --- configuration ----------------------------------------------------------------------------
def config_reference() -> str:
    from clawkeep.config import Config

    lines = ["# Configuration reference", "",
             "Generated from the typed config model (`src/clawkeep/config/`), the one source of truth for "
             "every default. Keys are as written in `clawkeep.json5`; see [configuration](../configuration.md) "
             "for the file, the overrides file and examples.", ""]
    for path, model in _sections(Config, "", set()):
        lines += [f"## `{path or '(top level)'}`", ""]
        doc = inspect.cleandoc(model.__doc__ or "") if model.__doc__ and model.__doc__ != BaseModel.__doc__ else ""
        if doc:
            lines += [doc.split("\n\n")[0].replace("\n", " "), ""]
        lines += ["| key | type | default | notes |", "|---|---|---|---|"]
        comments = {k: v for base in reversed(model.__mro__) if isinstance(base, type)
                    and issubclass(base, BaseModel) and base is not BaseModel for k, v in _field_comments(base).items()}
        for name, field in model.model_fields.items():
            key = field.alias or name
            nested = _model_of(field.annotation)
            default = "see below" if nested else _default(field)
            lines.append(f"| `{key}` | {_cell(_type_name(field.annotation))} | {_cell(default)} | "
                         f"{_cell(field.description or comments.get(name, ''))} |")
        lines.append("")
    return "\n".join(lines)


def _sections(model: type[BaseModel], path: str, seen: set[tuple[str, type]]):
    yield path, model
    for name, field in model.model_fields.items():
        nested = _model_of(field.annotation)
        key = f"{path}.{field.alias or name}" if path else (field.alias or name)
        if nested is not None and (key, nested) not in seen:
            seen.add((key, nested))
            yield from _sections(nested, key, seen)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return found[0] if len(found) == 1 else None
    if origin is dict:
        args = typing.get_args(annotation)
        return _model_of(args[1]) if len(args) == 2 else None
    return None


def _type_name(annotation: Any) -> str:
    text = repr(annotation) if not isinstance(annotation, type) else annotation.__name__
    for noise in ("typing.", "clawkeep.config.", "model.", "base.", "providers.", "plugins.", "tools.",
                  "gateway.", "active_memory."):
        text = text.replace(noise, "")
    return text


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "(computed)"
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "see below"
    try:
        return f"`{json.dumps(value, ensure_ascii=False, default=str)}`"
    except (TypeError, ValueError):
        return f"`{value!r}`"


def _field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The `#` comments above a field (and at the end of its line) in the class body."""
    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):
        return {}
    found: dict[str, str] = {}
    pending: list[str] = []
    depth_line = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            if depth_line is not None and tok.start[0] == depth_line[1]:
                found[depth_line[0]] = " ".join(filter(None, [found.get(depth_line[0], ""), text]))
            else:
                pending.append(text)
        elif tok.type == tokenize.NAME and tok.start[1] == 4 and tok.string in model.__annotations__:
            if pending:
                found[tok.string] = " ".join(pending)
            pending, depth_line = [], (tok.string, tok.start[0])
        elif tok.type == tokenize.NAME and tok.start[1] == 4:
            pending = []
    return found


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# --- command line -----------------------------------------------------------------------------
def cli_reference() -> str:
    import click
    import typer.main

    import importlib

    cli_main = importlib.import_module("clawkeep.cli.main")  # the module (clawkeep.cli.main is also a function)

    root = typer.main.get_command(cli_main.app)
    lines = ["# Command-line reference", "",
             "Generated from the `clawkeep` command itself (its `--help`). A guided list with examples is "
             "[commands](../commands.md).", ""]
    for path, command in _walk(root, "clawkeep"):
        lines += [f"## `{path}`", "", "```text", _help_text(command, path), "```", ""]
    return "\n".join(lines)


def _help_text(command: Any, path: str) -> str:
    """The command's --help as plain text (Typer prints it through Rich when Rich is installed)."""
    import click

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), click.Context(command, info_name=path, terminal_width=100) as ctx:
        returned = command.get_help(ctx)
    return (printed.getvalue() or returned).rstrip()


def _walk(command: Any, path: str):
    import click

    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.list_commands(click.Context(command))):
            sub = command.get_command(click.Context(command), name)
            if sub is not None and not getattr(sub, "hidden", False):
                yield from _walk(sub, f"{path} {name}")


# --- HTTP -------------------------------------------------------------------------------------
def http_reference() -> str:
    spec = _openapi()
    lines = ["# HTTP reference", "",
             f"Generated from the gateway's OpenAPI document (`GET /openapi.json`), version {spec['info']['version']}. "
             "Errors are `{\"error\": {\"code\", \"message\"}}`; see [the gateway](../gateway.md).", ""]
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            lines += [f"## `{method.upper()} {path}`", ""]
            for text in (op.get("summary"), op.get("description")):  # the operation's summary, the route's notes
                if text:
                    lines += [text.strip(), ""]
            params = op.get("parameters", [])
            if params:
                lines += ["| parameter | in | type | required |", "|---|---|---|---|"]
                for p in params:
                    schema = p.get("schema", {})
                    kind = schema.get("type") or " or ".join(s.get("type", "?") for s in schema.get("anyOf", []))
                    lines.append(f"| `{p['name']}` | {p['in']} | {kind} | {'yes' if p.get('required') else 'no'} |")
                lines.append("")
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                lines += [f"Body: `{_schema_name(body)}`", ""]
            codes = ", ".join(f"{code} {resp.get('description', '')}".strip()
                              for code, resp in op.get("responses", {}).items())
            lines += [f"Responses: {codes}", ""]
    return "\n".join(lines)


def _openapi() -> dict[str, Any]:
    """The OpenAPI document of a gateway over a throwaway home (nothing is served or kept)."""
    import tempfile

    from clawkeep import Engine
    from clawkeep.gateway.app import Gateway

    with tempfile.TemporaryDirectory() as home, Engine.open(home=home) as engine:
        return Gateway(engine, background=False).app().openapi()


def _schema_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_schema_name(s) for s in schema["anyOf"])
    return schema.get("type", "object")
