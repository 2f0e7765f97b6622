"""What every config section shares: strict numbers, durations, paths, and the `_Model` base
(camelCase aliases in files, snake_case in Python, unknown keys kept to warn about)."""


import math
import re
import types
from datetime import timedelta
from typing import Any, Literal, Union, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from .. import validation

DmScope = Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"]
Visibility = Literal["self", "tree", "agent", "all"]
ResetMode = Literal["daily", "idle", "none"]

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)?\s*$", re.ASCII)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_DURATION_DAYS = 36_500  # 100 years: any longer duration is a typo
# A config file is a few KB; JSON5 parses at ~13 µs a byte, so a runaway file is refused early.
MAX_CONFIG_BYTES = 256 * 1024
MAX_CONFIG_DEPTH = 32  # objects and lists nested deeper than this are refused


def parse_duration(value: str | int | float, *, default_unit: str = "s") -> timedelta:
    """Parse `30d`, `5m`, `90s`, `1500ms` or a bare number (in `default_unit`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) * _UNIT_SECONDS[default_unit]
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{validation.shown(value)} is not a duration; use a number with a unit such as 30d, "
                             "12h, 5m, 90s")
        number, unit = match.groups()
        seconds = int(number) * _UNIT_SECONDS[unit or default_unit] if len(number) <= 15 else math.inf
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DURATION_DAYS * 86400):
        raise ValueError(f"{validation.shown(value)} is out of range; a duration is 0 to {MAX_DURATION_DAYS}d "
                         "(100 years)")
    return timedelta(seconds=seconds)


def _numeric_kind(annotation: Any) -> type | None:
    """int or float when a field holds that number (optionally None), else None."""
    if annotation in (int, float):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = {a for a in get_args(annotation) if a is not type(None)}
        if len(kinds) == 1 and next(iter(kinds)) in (int, float):
            return next(iter(kinds))
    return None


def _allowed(field: Any, kind: type) -> str:
    """What a numeric field allows, from its ge/gt/le/lt constraints: 'an integer in 0-23'."""
    low = high = None
    for item in field.metadata:
        low = getattr(item, "ge", None) if getattr(item, "ge", None) is not None else low
        low = f"more than {item.gt}" if getattr(item, "gt", None) is not None else low
        high = getattr(item, "le", None) if getattr(item, "le", None) is not None else high
    what = "an integer" if kind is int else "a number"
    if low is not None and high is not None and not isinstance(low, str):
        return f"{what} in {low}-{high}"
    parts = [f">= {low}" if low is not None and not isinstance(low, str) else low, f"<= {high}" if high else None]
    return " ".join([what, *filter(None, parts)])


def known_zone(value: str | None) -> str | None:
    """An IANA time-zone name (None stays None: the host's local time)."""
    if value is None:
        return value
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {value!r}; use an IANA name such as Europe/Berlin") from None
    return value


def _path_value(value: Any) -> Any:
    """A path in the config: text without NUL, at most validation.MAX_PATH_CHARS characters."""
    if value is None:
        return value
    if not isinstance(value, str):
        raise ValueError("a path must be a string")
    if "\x00" in value:
        raise ValueError("a path cannot contain a NUL character")
    if len(value) > validation.MAX_PATH_CHARS:
        raise ValueError(f"a path may be at most {validation.MAX_PATH_CHARS} characters long")
    return value


class _Model(BaseModel):
    # populate_by_name lets Python callers use snake_case; files use the camelCase aliases.
    # defer_build: a section's validator is built when it is first used, so loading a config
    # builds only the sections the file sets (model.config_from_dict).
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True, allow_inf_nan=False,
                              defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """`true` is not 1 and 1e30 is not an integer: numbers are numbers, integers whole."""
        field = cls.model_fields.get(info.field_name or "")
        kind = _numeric_kind(field.annotation) if field is not None else None
        if kind is None:
            return value
        if isinstance(value, bool):
            raise ValueError(f"a boolean is not allowed here; give {_allowed(field, kind)}")
        if kind is int and isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer() or abs(value) > validation.MAX_INT:
                raise ValueError(f"not allowed; give {_allowed(field, kind)}")
            return int(value)
        return value


# pydantic error types that mean "this key holds an object".
_OBJECT_ERRORS = frozenset({"model_type", "model_attributes_type", "dict_type", "mapping_type"})


def _describe_error(error: dict[str, Any]) -> str:
    """One pydantic error as `key = value: what is wrong / what is allowed`."""
    key = ".".join(str(part) for part in error["loc"])
    value = validation.redact_url(validation.shown(error.get("input")))  # a storage URL's password
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "literal_error":
        allowed = error.get("ctx", {}).get("expected", "")
        return f"{key} = {value} is not allowed; allowed values: {allowed}"
    if error["type"] in _OBJECT_ERRORS:
        return f"{key} = {value} is not allowed; give an object"
    if error["type"] == "missing":  # its input is the enclosing object, not a value of this key
        return f"{key} is not set; it is required here"
    return f"{key} = {value}: {message}"


AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
