"""Times: stored as integer epoch milliseconds (UTC), shown as ISO-8601."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from .errors import InputError

MIN_TIME_MS = 0  # 1970-01-01T00:00:00Z
MAX_TIME_MS = 7_258_118_400_000  # 2200-01-01T00:00:00Z: later times are refused


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_iso(value: str, what: str = "--at") -> int:
    """ISO-8601 → epoch ms; a time without an offset is read as local time."""
    text = (value or "").strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{what} {value!r} is not an ISO-8601 time; use e.g. 2026-05-08T13:56:00 or 2026-05-08T13:56:00+02:00"
        ) from None
    try:
        if moment.tzinfo is None:
            moment = moment.astimezone()
        ms = int(moment.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):  # year 1 in a zone west of UTC, 9999-12-31 east of it
        ms = None
    if ms is None or not MIN_TIME_MS <= ms <= MAX_TIME_MS:
        raise InputError(f"{what} {value!r} is out of range; give a time between 1970-01-01 and 2200-01-01 (UTC)")
    return ms


# Below this, ms / 1000 as a float is within half a microsecond of the exact time, so the
# datetime path rounds to the exact millisecond and integer arithmetic gives the same text.
_EXACT_ISO_MS = 4_000_000_000_000  # 2096-10-02
_DAY_MS = 86_400_000
_ISO_DAYS: dict[int, str] = {}  # day number -> "YYYY-MM-DDT" (a few thousand days at most)
_ISO_DAYS_MAX = 65_536


def to_iso(ms: int | None) -> str | None:
    """ISO-8601 UTC; a stored value no calendar can show (written before times were bounded)
    comes out as None rather than breaking the answer it is part of."""
    if ms is None:
        return None
    if type(ms) is int and 0 <= ms < _EXACT_ISO_MS:  # every stored time: the date once per day
        day, rest = divmod(ms, _DAY_MS)
        date = _ISO_DAYS.get(day)
        if date is None:
            if len(_ISO_DAYS) >= _ISO_DAYS_MAX:
                _ISO_DAYS.clear()
            date = _ISO_DAYS[day] = (datetime(1970, 1, 1) + timedelta(days=day)).strftime("%Y-%m-%dT")
        seconds, milli = divmod(rest, 1000)
        minutes, sec = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return "%s%02d:%02d:%02d.%03dZ" % (date, hours, minutes, sec, milli)  # noqa: UP031 -- half an f-string's time
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError, TypeError):
        return None


def zone(name: str | None) -> tzinfo:
    """An IANA zone, or the host's local zone when unset."""
    if name:
        return ZoneInfo(name)
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local


def latest_hour_boundary(ms: int, at_hour: int, tz: tzinfo) -> int:
    """The most recent local `at_hour`:00 at or before `ms` (the daily reset boundary)."""
    local = datetime.fromtimestamp(ms / 1000, tz=tz)
    boundary = local.replace(hour=at_hour, minute=0, second=0, microsecond=0)
    if boundary > local:
        boundary -= timedelta(days=1)
        boundary = boundary.replace(hour=at_hour)  # keep the wall-clock hour across DST changes
    return int(boundary.timestamp() * 1000)


def local_date(ms: int, tz: tzinfo) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=tz).strftime("%Y-%m-%d")
