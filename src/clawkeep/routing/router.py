"""Inbound message → session key (S1)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import SessionConfig
from ..errors import InputError
from .keys import normalize_agent_id, normalize_segment, parse_key

CHAT_TYPES = ("direct", "group", "channel")
# Channels that are not people talking: each gets its own synthetic key shape.
SYSTEM_ORIGINS = ("cron", "hook", "heartbeat", "subagent")


@dataclass(frozen=True)
class Inbound:
    """Where a message came from; `session` bypasses routing (e.g. a dashboard thread)."""

    channel: str = "cli"
    account: str | None = None
    sender: str = "owner"
    chat_type: str = "direct"
    group: str | None = None
    thread: str | None = None
    session: str | None = None


@dataclass(frozen=True)
class Route:
    key: str
    agent_id: str
    kind: str
    chat_type: str | None
    channel: str
    account: str | None
    peer: str | None
    origin: str  # "chat" or one of SYSTEM_ORIGINS
    # The chat that numbers the channel's message ids (channel, account, group or DM sender;
    # threads share their chat's numbering): client message ids are unique only within it.
    conversation: str = ""


def route(inbound: Inbound, agent_id: str, config: SessionConfig) -> Route:
    """Compute the session key for an inbound message."""
    agent = normalize_agent_id(agent_id)
    if inbound.session:
        parsed = parse_key(inbound.session)
        if parsed.agent_id != agent:
            raise InputError(f"session {inbound.session!r} belongs to agent {parsed.agent_id!r}, not {agent!r}")
        return Route(parsed.key, agent, parsed.kind, parsed.chat_type, parsed.channel or inbound.channel,
                     inbound.account, None, "chat", conversation=parsed.key)
    channel = normalize_segment(inbound.channel or "unknown", "channel")
    if channel in SYSTEM_ORIGINS:
        return _system_route(agent, channel, inbound)
    if inbound.chat_type not in CHAT_TYPES:
        raise InputError(f"chat type {inbound.chat_type!r} is not allowed; allowed values: {', '.join(CHAT_TYPES)}")
    account = normalize_segment(inbound.account, "account") if inbound.account else None
    if inbound.chat_type == "direct":
        base, peer = _direct_key(agent, channel, inbound, config), _peer(inbound, channel, config)
        chat = normalize_segment(inbound.sender, "sender")
    else:
        if not inbound.group:
            raise InputError(f"a {inbound.chat_type} message needs a group id (--group)")
        chat = normalize_segment(inbound.group, "group id")
        base = f"agent:{agent}:{channel}:{inbound.chat_type}:{chat}"
        peer = None
    key = base if not inbound.thread else f"{base}:thread:{normalize_segment(inbound.thread, 'thread id')}"
    parsed = parse_key(key)
    conversation = f"{channel}:{account or ''}:{inbound.chat_type}:{chat}"
    return Route(key, agent, parsed.kind, inbound.chat_type, channel, account, peer, "chat", conversation)


def _system_route(agent: str, origin: str, inbound: Inbound) -> Route:
    if origin == "heartbeat":
        key = f"agent:{agent}:heartbeat"
    else:
        ident = inbound.group or inbound.sender
        key = f"agent:{agent}:{origin}:{normalize_segment(ident, f'{origin} id')}"
    return Route(key, agent, origin, None, origin, None, None, origin, conversation=key)


def _peer(inbound: Inbound, channel: str, config: SessionConfig) -> str:
    sender = normalize_segment(inbound.sender, "sender")
    if config.dm_scope == "main":
        return sender
    return _linked_peer(inbound.sender, inbound.channel or "unknown", config.identity_links) or sender


def _direct_key(agent: str, channel: str, inbound: Inbound, config: SessionConfig) -> str:
    main = f"agent:{agent}:{config.main_key}"
    if config.dm_scope == "main":
        return main  # identityLinks are not consulted under `main`
    peer = _peer(inbound, channel, config)
    if config.dm_scope == "per-peer":
        return f"agent:{agent}:direct:{peer}"
    if config.dm_scope == "per-channel-peer":
        return f"agent:{agent}:{channel}:direct:{peer}"
    account = normalize_segment(inbound.account or "default", "account")
    return f"agent:{agent}:{channel}:{account}:direct:{peer}"


def _linked_peer(sender: str, channel: str, links: dict[str, list[str]]) -> str | None:
    """First canonical name (in file order) whose identities include the sender; identities are
    compared as written (trimmed, case-insensitive), before any escaping for the key."""
    raw = (sender or "").strip().lower()
    candidates = {raw, f"{(channel or '').strip().lower()}:{raw}"}
    for canonical, identities in links.items():
        if any(identity.strip().lower() in candidates for identity in identities):
            return normalize_segment(canonical, "identityLinks name")
    return None
