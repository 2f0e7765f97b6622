"""A request the gateway's models refuse, worded as the Engine words the same bad argument.

FastAPI and pydantic refuse a query parameter or a JSON field before any operation runs, in
pydantic's words ("limit: Input should be greater than or equal to 1"). The Engine checks the
same argument with `clawkeep.validation` ("limit 0 is out of range; allowed 1-25"). Here each
refused field of an operation runs through that same check, with the bounds and choices its
argument model declares: the Engine's wording, under the name the request gave (the query
parameter or JSON field, `from`, `maxResults`, as docs/gateway.md says). `clawkeep.Client` runs
the same checks under the Engine's names (`from_line`, `limit`) before it sends a call, so a
refusal reads the same in process and through the client. What the checks cannot say (malformed
JSON, an unknown field, a value a check would take) keeps the gateway's own sentence
(`gateway.errors.describe_validation`).
"""

from __future__ import annotations

import re
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from .. import validation as check
from ..errors import InputError
from ..timeutil import MAX_TIME_MS, MIN_TIME_MS
from .operations import OPERATIONS, Operation

SOURCES = ("body", "query", "path", "header")
_INT = re.compile(r"[+-]?[0-9]+")
_PARAM = re.compile(r"{[^}]*}")
_ROUTES: dict[tuple[str, str], Operation] = {
    (op.http.method, _PARAM.sub("{}", op.http.path)): op for op in OPERATIONS.values() if op.http is not None}


def route_operation(method: str, path: str | None) -> Operation | None:
    """The operation a route (its method and path template, `/v1/sessions/{key:path}/send`) serves."""
    return _ROUTES.get((method, _PARAM.sub("{}", path))) if path else None


def engine_message(op: Operation, error: dict[str, Any]) -> str | None:
    """The Engine's message for one pydantic error on an argument of `op`, naming the argument as
    the request did (the query parameter or JSON field: `from`, `maxResults`); None: no check says it."""
    loc = [str(p) for p in error.get("loc", ())]
    source = loc[0] if loc and loc[0] in SOURCES else None
    names = loc[1:] if source else loc
    if not names or error.get("type") in ("extra_forbidden", "json_invalid", "missing", "value_error"):
        return None  # value_error: the gateway's own validators word it (a query integer in digits)
    found = _field(op, names[0])
    if found is None:
        return None
    field, info = found
    value = error.get("input")
    try:
        _check(info, _http_name(op, field, info), value, source in ("query", "path") and isinstance(value, str))
    except InputError as exc:
        return str(exc)
    return None


def check_arguments(op: Operation, fields: dict[str, Any]) -> None:
    """The Python client's check of an Engine-style call before it is sent, with the checks and
    names the Engine uses (InputError in the Engine's words): a query string cannot carry a type
    ("5" for 5, "true" for True), and a refusal reads the same in process and through the client."""
    engine_names = {target: name for name, target in op.http.engine_names} if op.http is not None else {}
    for field, value in fields.items():
        info = op.args.model_fields.get(field)
        if info is not None and value is not None:
            _check(info, engine_names.get(field, field), value, False)


def _http_name(op: Operation, field: str, info: FieldInfo) -> str:
    params = op.http.query_params(op.args) if op.http is not None else {}
    return params.get(field) or info.alias or field


def _field(op: Operation, name: str) -> tuple[str, FieldInfo] | None:
    fields = op.args.model_fields
    if name in fields:
        return name, fields[name]
    for field, info in fields.items():
        if info.alias == name:
            return field, info
    params = op.http.query_params(op.args) if op.http is not None else {}
    for field, param in params.items():
        if param == name:
            return field, fields[field]
    return None


def _bounds(info: FieldInfo) -> tuple[float | None, float | None, int | None]:
    low = high = longest = None
    for rule in info.metadata:
        if isinstance(rule, annotated_types.Ge):
            low = rule.ge
        elif isinstance(rule, annotated_types.Gt):
            low = rule.gt + 1 if isinstance(rule.gt, int) else rule.gt
        elif isinstance(rule, annotated_types.Le):
            high = rule.le
        elif isinstance(rule, annotated_types.Lt):
            high = rule.lt - 1 if isinstance(rule.lt, int) else rule.lt
        elif isinstance(rule, annotated_types.MaxLen):
            longest = rule.max_length
    return low, high, longest


def _kind(annotation: Any) -> tuple[str, tuple[Any, ...]]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _kind(get_args(annotation)[0])
    if origin is Literal:
        return "choice", get_args(annotation)
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(annotation) if m is not type(None)]
        kinds = [_kind(m)[0] for m in members]
        if len(members) == 1:
            return _kind(members[0])
        if sorted(kinds) == ["int", "str"]:
            return "time", ()  # ISO-8601 text or epoch ms (`at`)
        return "other", ()
    return {bool: "flag", int: "int", float: "float", str: "str"}.get(annotation, "other"), ()


def _from_text(value: str, kind: str) -> Any:
    """A query parameter as the value the Engine would have been given ("true" a bool, "5" an int)."""
    if value in ("true", "false"):
        return value == "true"
    if _INT.fullmatch(value):
        return int(value) if kind != "float" else float(value)
    try:
        return float(value)
    except ValueError:
        return value


def _check(info: FieldInfo, name: str, value: Any, from_text: bool) -> None:
    kind, choices = _kind(info.annotation)
    low, high, longest = _bounds(info)
    if from_text and kind in ("int", "float", "time"):
        value = _from_text(value, kind)
    if kind == "int":
        check.integer(value, name, int(low if low is not None else -check.MAX_INT),
                      int(high if high is not None else check.MAX_INT), optional=False)
    elif kind == "float":
        check.number(value, name, low if low is not None else float("-inf"),
                     high if high is not None else float("inf"), optional=False)
    elif kind == "time" and not isinstance(value, str):
        check.integer(value, name, MIN_TIME_MS, MAX_TIME_MS, optional=False)
    elif kind == "choice":
        check.choice(value, name, tuple(str(c) for c in choices))
    elif kind == "flag" and not from_text:
        check.flag(value, name)
    elif kind == "str":
        if value is not None and not isinstance(value, str):
            check.text(value, name)
        if longest is not None and isinstance(value, str) and len(value) > longest:
            raise InputError(f"{name} is {len(value)} characters long; at most {longest} are allowed")
