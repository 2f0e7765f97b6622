"""When sweeps run: one managed cron (`dreaming.frequency`, default `0 3 * * *`) in the
Dreaming time zone (`dreaming.timezone`, else `session.reset.timezone`, else the host's).

The gateway's background loop asks `next_run(config, now)` when to wake up and calls
`dreaming.run_due(runtime)` then; a sweep is due when the latest scheduled time at or before
now is later than the last sweep (so a machine that slept through 03:00 sweeps once when it
wakes, not once per missed day).
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from croniter import croniter

from ..config import Config, DreamingConfig
from ..timeutil import zone


def settings(config: Config) -> DreamingConfig:
    return config.plugins.entries.memory_core.config.dreaming


def zone_for(config: Config) -> tzinfo:
    return zone(settings(config).timezone or config.session.reset.timezone)


def _moment(config: Config, now: datetime | int) -> datetime:
    tz = zone_for(config)
    if isinstance(now, datetime):
        return now.astimezone(tz) if now.tzinfo else now.replace(tzinfo=tz)
    return datetime.fromtimestamp(now / 1000, tz=tz)


def next_run(config: Config, now: datetime | int) -> datetime:
    """The next scheduled sweep strictly after `now` (a datetime, or epoch ms), in the Dreaming zone."""
    return croniter(settings(config).frequency, _moment(config, now)).get_next(datetime)


def previous_run(config: Config, now: datetime | int) -> datetime:
    """The latest scheduled time at or before `now`."""
    moment = _moment(config, now)
    if croniter.match(settings(config).frequency, moment.replace(second=0, microsecond=0)):
        return moment.replace(second=0, microsecond=0)
    return croniter(settings(config).frequency, moment).get_prev(datetime)


def is_due(config: Config, last_sweep_ms: int | None, now_ms: int) -> bool:
    if not settings(config).enabled:
        return False
    due_at = previous_run(config, now_ms)
    return last_sweep_ms is None or int(due_at.timestamp() * 1000) > last_sweep_ms


def local_day(config: Config, ms: int) -> str:
    return _moment(config, ms).date().isoformat()
