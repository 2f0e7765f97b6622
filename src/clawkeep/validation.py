"""Checks on what a caller hands the Engine (and so the CLI): text, ids, paths, integers, times.

Every public `Engine` method runs its arguments through these before any work, so bad input
is an `InputError` naming the argument, what is wrong and what is allowed — never a
UnicodeEncodeError from SQLite, an OverflowError from `datetime` or a ValueError from `open`.

Bounds (also in docs/input-limits.md):
- text, ids, keys and paths must be valid UTF-8: no lone surrogates (what an undecodable
  byte on the command line becomes);
- ids and keys (session keys and ids, message ids, memory item ids, labels, agent ids): one
  line, no control characters (a trailing newline is refused, not stripped), at most
  `MAX_ID_CHARS` characters;
- paths: no NUL, at most `MAX_PATH_CHARS` characters;
- integers are real integers (not booleans) inside a stated range;
- times (`--at`): between 1970-01-01 and 2200-01-01 UTC and at most `MAX_FUTURE_MS` ahead of
  the engine's clock (a time far in the future would keep its session fresh until then).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .errors import InputError
from .timeutil import MAX_TIME_MS, MIN_TIME_MS, to_iso

MAX_ID_CHARS = 2048
MAX_PATH_CHARS = 4096
MAX_FUTURE_MS = 24 * 3_600_000  # clock skew and time-zone mix-ups, not scheduling
# The largest integer any count, limit or line number may be: far above every real use,
# small enough for SQLite (64-bit) and for arithmetic on milliseconds.
MAX_INT = 2**53
MAX_GET_LINES = 2000  # memory get --lines / lines=: here so the tool schemas state it too
# results per search, here so the services, the tool schemas and the CLI state the same bound
MAX_SESSIONS_SEARCH = 25
MAX_MEMORY_SEARCH = 50

_SHOW = 60  # characters of a bad value quoted in a message


def shown(value: Any) -> str:
    """A bad value as a message quotes it: repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _SHOW else f"{text[:_SHOW]}…({len(text)} characters)"


def redact_url(text: str) -> str:
    """`text` with the password of every URL in it (`user:password@`, `password=`) replaced by ***."""
    text = re.sub(r"(://[^:/@\s]*:)[^/?#\s]*@", r"\1***@", text)
    return re.sub(r"(password=)[^&\s'\"]*", r"\1***", text, flags=re.IGNORECASE)


# a `\ud800`-`\udfff` escape: the only way a lone surrogate (not Unicode text) gets into valid UTF-8 JSON;
# a cheap test on the raw bytes before `has_lone_surrogate` walks the parsed value
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value (a string, or any nesting) holds a lone surrogate anywhere."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _utf8(value: str, name: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{name} is not valid UTF-8: character {exc.start} is {value[exc.start]!r} (an undecodable byte or a "
            "lone surrogate); give UTF-8 text"
        ) from None


def text(value: Any, name: str, *, optional: bool = False) -> Any:
    """Free text (a message, a query, a fact): any valid UTF-8 string."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name} must be text, got {type(value).__name__}")
    _utf8(value, name)
    return value


# Characters a line of memory text may not hold: C0 controls but tab (a NUL once made the indexer
# drop MEMORY.md whole), DEL, C1 controls, and the separators Python's str.splitlines() breaks a line
# at (VT, FF, FS-RS, NEL, U+2028, U+2029): one of them inside a remembered line would shift every
# line number after it. Newline and carriage return are refused by the one-line rule of the caller.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
_C0_NAMES = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB "
             "ESC FS GS RS US").split()


def control_character(value: str) -> str | None:
    """The first character of `value` that memory text may not hold, described with its 1-based
    position ("U+0000 (NUL) at position 2"), or None."""
    found = _CONTROL.search(value)
    if found is None:
        return None
    ch = found.group()
    code = ord(ch)
    label = _C0_NAMES[code] if code < 0x20 else {0x7F: "DEL", 0x2028: "LINE SEPARATOR",
                                                 0x2029: "PARAGRAPH SEPARATOR"}.get(code, "C1 control")
    return f"U+{code:04X} ({label}) at position {found.start() + 1}"


def plain_text(value: str, name: str) -> str:
    """Text that becomes a line of a memory file: no control character but tab (see `_CONTROL`)."""
    bad = control_character(value)
    if bad is not None:
        raise InputError(f"{name} contains the control character {bad}; memory text may hold tab but no other "
                         "control character (NUL, ESC, DEL, U+2028 …); remove it and try again")
    return value


def ident(value: Any, name: str, *, optional: bool = False) -> Any:
    """A key, id or label: valid UTF-8, one line without control characters, not blank."""
    if value is None and optional:
        return None
    text(value, name)
    if not value.strip():
        raise InputError(f"{name} is empty; give a non-empty value")
    if len(value) > MAX_ID_CHARS:
        raise InputError(f"{name} is {len(value)} characters long; at most {MAX_ID_CHARS} are allowed")
    bad = next((i for i, ch in enumerate(value) if ch < " " or ch == "\x7f"), None)
    if bad is not None:
        raise InputError(
            f"{name} {shown(value)} contains a control character ({value[bad]!r} at position {bad}); "
            "ids and keys are one line without control characters (a trailing newline is not stripped)"
        )
    return value


def path(value: Any, name: str, *, optional: bool = False) -> Any:
    """A file or directory name: str or PathLike, valid UTF-8, no NUL, bounded length."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise InputError(f"{name} must be a path, got {type(value).__name__}")
    raw = os.fspath(value)
    if not isinstance(raw, str):
        raise InputError(f"{name} must be a text path, got {type(raw).__name__}")
    _utf8(raw, name)
    if "\x00" in raw:
        raise InputError(f"{name} {shown(raw)} contains a NUL character; paths cannot contain NUL")
    if len(raw) > MAX_PATH_CHARS:
        raise InputError(f"{name} is {len(raw)} characters long; at most {MAX_PATH_CHARS} are allowed")
    return value


def integer(value: Any, name: str, low: int, high: int, *, optional: bool = True) -> Any:
    """An integer in [low, high]; booleans and floats are refused."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be an integer in {low}-{high}, got {type(value).__name__} {shown(value)}")
    if not low <= value <= high:
        raise InputError(f"{name} {shown(value)} is out of range; allowed {low}-{high}")
    return value


def number(value: Any, name: str, low: float, high: float, *, optional: bool = True) -> Any:
    """A finite number in [low, high]; booleans are refused."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InputError(f"{name} must be a number in {low:g}-{high:g}, got {type(value).__name__} {shown(value)}")
    if not low <= value <= high:
        raise InputError(f"{name} {shown(value)} is out of range; allowed {low:g}-{high:g}")
    return value


def choice(value: Any, name: str, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        raise InputError(f"{name} {shown(value)} is not allowed; allowed values: {', '.join(allowed)}")
    return value


def flag(value: Any, name: str) -> Any:
    if not isinstance(value, bool):
        raise InputError(f"{name} must be true or false, got {type(value).__name__} {shown(value)}")
    return value


def time_ms(value: int, name: str, now: int) -> int:
    """Epoch ms inside the accepted window (see the module doc)."""
    integer(value, name, MIN_TIME_MS, MAX_TIME_MS, optional=False)
    if value > now + MAX_FUTURE_MS:
        raise InputError(
            f"{name} {to_iso(value)} is more than 24 hours after the current time {to_iso(now)}; "
            "give a time in the past or within the next 24 hours"
        )
    return value


def summarizer(value: Any) -> Any:
    """A compaction provider: a text `name` and a callable `summarize`."""
    if not isinstance(getattr(value, "name", None), str) or not callable(getattr(value, "summarize", None)):
        raise InputError(
            f"compaction provider {shown(value)} is not usable; give an object with a text `name` and a callable "
            "`summarize(messages, *, instructions, policy, custom_rule)`"
        )
    return value


def file_name_part(value: Any, name: str) -> str:
    """An id that becomes one component of a file name (export files, cleanup archives): a
    plain name, so no stored value — even one written before ids were checked on import — can
    point a write outside its folder."""
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value or any(
            ch < " " or ch == "\x7f" for ch in value):
        raise InputError(f"{name} {shown(value)} cannot name a file: it must be a plain name (not empty, not '.' "
                         "or '..', no '/', '\\' or control characters)")
    return value


def inside(folder: Path, target: Path, name: str) -> Path:
    """`target`, after checking it stays under `folder` (lexically: a folder that is itself a
    symlink, such as a home on another disk, is fine)."""
    base = os.path.normpath(os.path.abspath(folder))
    full = os.path.normpath(os.path.abspath(target))
    if os.path.commonpath([base, full]) != base or full == base:
        raise InputError(f"{name} {shown(str(target))} would be outside {base}; refused")
    return target
