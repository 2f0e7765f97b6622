"""to_iso: the integer fast path writes the same text as the datetime conversion it replaced."""

import random
from datetime import UTC, datetime

from clawkeep.timeutil import MAX_TIME_MS, to_iso


def _by_datetime(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_every_stored_time_reads_as_the_datetime_conversion():
    rng = random.Random(15)
    edges = [0, 1, 999, 1000, 59_999, 3_599_999, 86_399_999, 86_400_000, 951_782_400_000,  # 2000-02-29
             1_704_067_200_000, 3_999_999_999_999, 4_000_000_000_000, MAX_TIME_MS - 1, MAX_TIME_MS]
    values = edges + [rng.randrange(0, MAX_TIME_MS + 1) for _ in range(20_000)]
    assert [to_iso(v) for v in values] == [_by_datetime(v) for v in values]


def test_times_no_calendar_shows_are_none_and_others_keep_the_old_path():
    assert to_iso(None) is None
    assert to_iso(10**20) is None
    assert to_iso(-5) == _by_datetime(-5)
    assert to_iso(True) == _by_datetime(True)  # not an int in the fast path's sense: same answer
