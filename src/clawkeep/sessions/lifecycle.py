"""Session freshness (S3): when does the next real user message start a new interval?

Daily resets compare against `sessionStartedAt`; idle resets against `lastInteractionAt`
(falling back to the session start, never to `updatedAt`). Whichever expires first wins.
System events never call this and never move `lastInteractionAt`, so they cannot keep a
session fresh.
"""

from __future__ import annotations

from ..config import ResetPolicy, SessionConfig
from ..storage import SessionRecord
from ..timeutil import latest_hour_boundary, zone


def policy_for(config: SessionConfig, session: SessionRecord) -> ResetPolicy:
    """`resetByChannel` beats `resetByType` beats `reset`."""
    if session.channel and session.channel in config.reset_by_channel:
        return config.reset_by_channel[session.channel]
    chat = "thread" if session.kind == "thread" else session.chat_type
    if chat in config.reset_by_type:
        return config.reset_by_type[chat]  # type: ignore[index]
    return config.reset


def stale_reason(config: SessionConfig, session: SessionRecord, now: int) -> str | None:
    """'daily', 'idle' or None (fresh)."""
    policy = policy_for(config, session)
    if policy.mode == "none":
        return None
    if policy.mode == "daily":
        boundary = latest_hour_boundary(now, policy.at_hour, zone(config.reset.timezone))
        if session.session_started_at < boundary <= now:
            return "daily"
    if policy.idle_minutes:
        last = session.last_interaction_at or session.session_started_at
        if now > last + policy.idle_minutes * 60_000:
            return "idle"
    return None


def next_reset_at(config: SessionConfig, session: SessionRecord) -> int | None:
    """When the session goes stale if nobody writes to it (for status output)."""
    policy = policy_for(config, session)
    candidates: list[int] = []
    if policy.mode == "daily":
        day = 24 * 3_600_000
        candidates.append(latest_hour_boundary(session.session_started_at, policy.at_hour,
                                               zone(config.reset.timezone)) + day)
    if policy.mode != "none" and policy.idle_minutes:
        candidates.append((session.last_interaction_at or session.session_started_at) + policy.idle_minutes * 60_000)
    return min(candidates) if candidates else None
