"""Option help read from the operation registry (api.operations): an option that passes one
argument of an operation says what its argument model says — choices, description, bounds — so
`--help`, the HTTP reference and the MCP tool schema cannot tell three stories. The CLI keeps its
own flag names, presentation and anything only it does (`also`)."""

from __future__ import annotations

import typing

import annotated_types

from .. import validation as check
from ..api.operations import OPERATIONS
from ..validation import MAX_INT


def _declared(operation: str, field: str) -> tuple[list[str], int | None, int | None]:
    """(choices, low, high) of `field` as the operation's argument model declares it."""
    info = OPERATIONS[operation].args.model_fields[field]  # KeyError: a typo here fails the CLI's import
    choices = [value for option in (info.annotation, *typing.get_args(info.annotation))
               if typing.get_origin(option) is typing.Literal for value in typing.get_args(option)]
    low = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
    return choices, low, high


def checked(value: object, flag: str, operation: str, field: str) -> None:
    """Refuse a flag's value outside `field`'s declaration, naming the flag (`--days 0 …`): the
    Engine would name its parameter (`days 0 …`), which the user never typed."""
    if value is None:
        return
    choices, low, high = _declared(operation, field)
    if choices:
        check.choice(value, flag, tuple(choices))
    elif low is not None and high is not None:
        check.integer(value, flag, low, high)


def described(operation: str, field: str, also: str = "") -> str:
    """The help of the option passing `field` of `operation`: "CHOICES or BOUNDS — description —
    also" (`also`: what the CLI adds, e.g. a default the engine fills in)."""
    choices, low, high = _declared(operation, field)
    allowed = " | ".join(map(str, choices))
    if not allowed and low is not None and high is not None and high != MAX_INT:
        allowed = f"{low}-{high}"
    elif not allowed and low is not None:
        allowed = f"at least {low}"
    description = OPERATIONS[operation].args.model_fields[field].description
    return " — ".join(part for part in (allowed, description or "", also) if part)
