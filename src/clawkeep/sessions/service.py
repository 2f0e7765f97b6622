"""Session service functions: open, reset, fork, create, list, status (S1, S3, S7).

Every CLI verb, HTTP route and MCP tool calls these; they take the `Runtime` and a `Caller`
and return the api shapes (clawkeep.api.shapes) the Engine hands out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .. import api
from ..config import AGENT_ID
from ..errors import ConflictError, InputError, NotFoundError
from ..events import SessionReset
from ..redact import redacted_preview
from ..routing.keys import coding_key, dashboard_key, foreign_key, is_session_id, new_session_id, parse_key
from ..routing.router import Route
from ..runtime import Runtime
from ..storage import AgentStore, EntryRecord, SessionFilter, SessionRecord
from ..timeutil import to_iso
from ..visibility import Caller, Scope
from . import lifecycle, maintenance, transcript

PREVIEW_CHARS = 120
CURRENT_SESSION_ALIAS = "current"  # OpenClaw's session_status name for the calling session
MAX_PREDECESSORS = 10_000  # archived transcripts walked back from one key (one per truncating compaction)


def not_found(ref: str) -> NotFoundError:
    # One message for missing and hidden sessions: visibility must not leak existence (S8).
    return NotFoundError(f"session {ref!r} not found")


def find_session(rt: Runtime, ref: str, caller: Caller = Caller()) -> tuple[AgentStore, SessionRecord]:
    """Resolve a session key or id the caller may see; NotFoundError otherwise."""
    ref = (ref or "").strip()
    scope = rt.scope(caller)
    if is_session_id(ref):
        candidates = [rt.incognito_store(), *rt.stores_in(scope)]
        for store in candidates:
            session = store.get_session(ref.lower())
            if session and session.archived_at is None and scope.allows(session):
                return store, session
        raise not_found(ref)
    key = parse_key(ref).key
    store = rt.read_store_for_key(key)  # a key of an agent without a database is simply not found
    session = store.get_session_by_key(key)
    if session is None or not scope.allows(session):
        raise not_found(ref)
    return store, session


def transcript_visible(store: AgentStore, session: SessionRecord, scope: Scope) -> bool:
    """May `scope` read this transcript? A current one by the scope (S8); one archived by
    truncateAfterCompaction is the same conversation, so it is readable by whoever may see the
    current session of its key (or by a scope that admits it directly)."""
    if scope.allows(session):
        return True
    if session.archived_at is None:
        return False
    current = store.get_session_by_key(session.key)
    return current is not None and scope.allows(current)


def find_transcript(rt: Runtime, session_id: str, caller: Caller = Caller()) -> tuple[AgentStore, SessionRecord]:
    """A transcript by session id, current or archived (truncateAfterCompaction), that the
    caller may see; NotFoundError otherwise (the same error as for a missing one)."""
    scope = rt.scope(caller)
    if is_session_id(session_id):
        for store in [rt.incognito_store(), *rt.stores_in(scope)]:
            session = store.get_session(session_id.lower())
            if session is not None and transcript_visible(store, session, scope):
                return store, session
    raise not_found(session_id)


def predecessors(store: AgentStore, session: SessionRecord) -> Iterator[SessionRecord]:
    """The archived transcripts a truncateAfterCompaction chain left behind the session of the
    same key, newest first (bounded; a cycle ends the walk)."""
    seen = {session.session_id}
    previous = session.meta.get("predecessorSessionId")
    while isinstance(previous, str) and previous not in seen and len(seen) <= MAX_PREDECESSORS:
        seen.add(previous)
        found = store.get_session(previous)
        if found is None or found.key != session.key:
            return
        yield found
        previous = found.meta.get("predecessorSessionId")


def _header(session: SessionRecord, at: int, **meta: Any) -> EntryRecord:
    return EntryRecord(transcript.new_entry_id(), session.session_id, "session", at,
                       meta={"key": session.key, **meta})


def create_session(rt: Runtime, route: Route, at: int, *, label: str | None = None,
                   parent: SessionRecord | None = None, meta: dict[str, Any] | None = None) -> SessionRecord:
    parsed = parse_key(route.key)
    session = SessionRecord(
        session_id=new_session_id(), key=route.key, agent_id=route.agent_id, kind=route.kind,
        chat_type=route.chat_type, channel=route.channel, account=route.account, peer=route.peer,
        label=label, origin=route.origin, parent_session_id=parent.session_id if parent else None,
        session_started_at=at, updated_at=at, created_at=at, meta=dict(meta or {}),
    )
    if parsed.incognito:
        session.meta["incognito"] = True
    store = rt.store_for_key(route.key)
    with store.transaction():
        store.insert_session(session)
        transcript.append(store, _header(session, at, parentSessionId=session.parent_session_id,
                                         **{k: v for k, v in session.meta.items() if k.startswith("forked")}))
    if not parsed.incognito:
        maintenance.maybe_cleanup_after_create(rt)
    return session


def open_session(rt: Runtime, route: Route, at: int, *, interactive: bool) -> tuple[SessionRecord, str | None]:
    """The session for a routed message, created if new and rolled over if stale.

    Only real user interaction (`interactive`) checks freshness; system events neither reset
    nor refresh a session. Returns (session, automatic reset reason or None).
    """
    store = rt.store_for_key(route.key)
    session = store.get_session_by_key(route.key)
    if session is None:
        try:
            return create_session(rt, route, at), None
        except ConflictError:  # another process created it first
            session = store.get_session_by_key(route.key)
            assert session is not None
    reason = lifecycle.stale_reason(rt.config.session, session, at) if interactive else None
    if reason:
        append_reset(rt, store, session, at, reason=reason)
    return session, reason


def append_reset(rt: Runtime, store: AgentStore, session: SessionRecord, at: int, *, reason: str) -> EntryRecord:
    """Close the current interval: same key, same id, a boundary entry (S1/S3), then a
    `SessionReset` event for the hooks (what they report lands in the entry's meta)."""
    start, _ = transcript.interval_bounds(store, session.session_id)
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        dropped = len(fresh.meta.pop("pendingNotices", []))
        entry = transcript.append(store, EntryRecord(
            transcript.new_entry_id(), session.session_id, "reset", at,
            meta={"reason": reason, "droppedNotices": dropped},
        ))
        fresh.session_started_at = at
        fresh.updated_at = max(fresh.updated_at, at)
        fresh.meta["resetCount"] = fresh.meta.get("resetCount", 0) + 1
        fresh.meta["activeTokens"] = fresh.meta["activeBytes"] = 0
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)
    event = SessionReset(at, session.agent_id, session.key, session.session_id, reason, start, entry.seq)
    rt.events.publish(event)  # the session-memory hook keeps an excerpt of the closed interval (C3)
    entry.meta.update(event.outputs)
    return entry


RESET_CLOCK_LEASE = "reset-clock"
RESET_CLOCK_TTL_MS = 5 * 60_000


def roll_over_due(rt: Runtime, now: int) -> list[str]:
    """The reset clock of a long-running process: close every interval whose daily or idle reset
    is due (and that holds user interaction), so the session-memory excerpt is written on time
    instead of at the next message. The next message finds the session already fresh, exactly
    as if it had rolled it over itself. Returns the keys that were reset."""
    if not rt.has_database():
        return []
    store = rt.store()
    # one instance at a time runs the clock on a shared database (D2); the holder renews it each
    # tick, another takes over once a crashed holder's lease lapses. (Each reset is also re-checked
    # under the session's lock, so even two clocks could never reset one interval twice.)
    if not store.try_lease(RESET_CLOCK_LEASE, rt.instance_id, RESET_CLOCK_TTL_MS):
        return []
    done = []
    for session in store.list_sessions():
        talked = session.last_interaction_at is not None and session.last_interaction_at >= session.session_started_at
        if not talked or session.meta.get("incognito") or not lifecycle.stale_reason(rt.config.session, session, now):
            continue
        with store.session_lock(session.key):  # never between a turn's message and its reply
            fresh = store.get_session(session.session_id)
            reason = fresh and fresh.archived_at is None and lifecycle.stale_reason(rt.config.session, fresh, now)
            if fresh is not None and reason:
                append_reset(rt, store, fresh, now, reason=reason)
                done.append(fresh.key)
    return done


def reset_session(rt: Runtime, ref: str, caller: Caller = Caller(), *, at: int | None = None) -> api.ResetResult:
    store, session = find_session(rt, ref, caller)
    entry = append_reset(rt, store, session, at or rt.now(), reason="manual")
    return api.ResetResult(session_key=session.key, session_id=session.session_id, boundary_id=entry.entry_id,
                           memory_file=entry.meta.get("sessionMemoryFile"))


def fork_session(rt: Runtime, ref: str, caller: Caller = Caller(), *, at: int | None = None,
                 label: str | None = None) -> api.SessionInfo:
    """A child dashboard thread that continues from the parent's current branch."""
    store, parent = find_session(rt, ref, caller)
    at = at or rt.now()
    last = store.last_entry(parent.session_id)
    key = dashboard_key(parent.agent_id, incognito=bool(parent.meta.get("incognito")))
    route = Route(key, parent.agent_id, "dashboard", "direct", "dashboard", None, None, "chat")
    child = create_session(rt, route, at, label=label or f"fork of {parent.key}", parent=parent,
                           meta={"forkedFromSessionId": parent.session_id,
                                 "forkedFromSeq": last.seq if last else 0})
    return session_info(child)


def create_dashboard(rt: Runtime, *, incognito: bool = False, label: str | None = None,
                     at: int | None = None) -> api.SessionInfo:
    key = dashboard_key(rt.agent_id, incognito=incognito)
    route = Route(key, rt.agent_id, "dashboard", "direct", "dashboard", None, None, "chat")
    return session_info(create_session(rt, route, at or rt.now(), label=label))


def create_coding(rt: Runtime, name: str, *, label: str | None = None, at: int | None = None) -> api.SessionInfo:
    """A coding session `agent:<id>:coding:<name>` (the Control UI's Coding group); one per name."""
    key = coding_key(rt.agent_id, name)
    route = Route(key, rt.agent_id, "coding", None, "coding", None, None, "chat", conversation=key)
    try:
        return session_info(create_session(rt, route, at or rt.now(), label=label))
    except ConflictError:
        raise ConflictError(f"coding session {key!r} exists already; send into it with "
                            f"`clawkeep message --session {key} TEXT`") from None


def open_by_key(rt: Runtime, key: str, *, label: str | None = None) -> api.SessionInfo:
    """The session with this key, created if missing (`created`): how another system's conversation —
    an OpenClaw session key — gets its clawkeep session 1:1. The key is mapped as import maps
    it; the kind follows from the key. No freshness check: opening is not a user's message."""
    parts = key.split(":")
    agent = parts[1].lower() if len(parts) >= 3 and parts[0] == "agent" and AGENT_ID.fullmatch(parts[1].lower()) \
        else rt.agent_id
    mapped, _ = foreign_key(key, agent)
    parsed = parse_key(mapped)
    if parsed.incognito or parsed.kind == "dashboard":
        raise InputError(f"key {key!r}: dashboard and incognito threads are made by `sessions create` without a "
                         "key; give the key of a conversation (e.g. agent:main:main)")
    store = rt.store_for_key(mapped)
    existing = store.get_session_by_key(mapped)
    if existing is not None:
        return session_info(existing, created=False)
    route = Route(mapped, parsed.agent_id, parsed.kind, parsed.chat_type, parsed.channel or "api", None, None, "chat")
    try:
        return session_info(create_session(rt, route, rt.now(), label=label), created=True)
    except ConflictError:  # another caller opened it first
        return session_info(store.get_session_by_key(mapped), created=False)


def _session_fields(session: SessionRecord) -> dict[str, Any]:
    """The SessionInfo fields of a session (`incognito` only when true)."""
    return {
        "key": session.key, "session_id": session.session_id, "agent_id": session.agent_id,
        "kind": session.kind, "chat_type": session.chat_type, "channel": session.channel,
        "label": session.label, "session_started_at": to_iso(session.session_started_at),
        "last_interaction_at": to_iso(session.last_interaction_at), "updated_at": to_iso(session.updated_at),
        "message_count": session.message_count,
        **({"incognito": True} if session.meta.get("incognito") else {}),
    }


def session_info(session: SessionRecord, **extra: Any) -> api.SessionInfo:
    return api.SessionInfo(**_session_fields(session), **extra)


@dataclass
class ListFilter:
    kind: str | None = None
    label: str | None = None
    agent_id: str | None = None
    active_minutes: int | None = None
    search: str | None = None
    preview: bool = False
    recent_messages: int = 0


MAX_RECENT_MESSAGES = 20


def list_sessions(rt: Runtime, flt: ListFilter = ListFilter(), caller: Caller = Caller()) -> list[api.SessionInfo]:
    if flt.active_minutes is not None and flt.active_minutes < 0:
        raise InputError(f"active_minutes {flt.active_minutes} is invalid; give minutes >= 0")
    if not 0 <= flt.recent_messages <= MAX_RECENT_MESSAGES:
        raise InputError(f"recent messages {flt.recent_messages} is out of range; allowed 0-{MAX_RECENT_MESSAGES}")
    scope = rt.scope(caller)
    now = rt.now()
    # kind, label and activity are answered by the store; the rest is checked here
    wanted = SessionFilter(kinds=(flt.kind,) if flt.kind else None, label=flt.label or None,
                           updated_since=None if flt.active_minutes is None else now - flt.active_minutes * 60_000)
    rows = []
    for store in [*rt.stores_in(scope), rt.incognito_store()]:
        for session in store.list_sessions(wanted):
            if scope.allows(session) and _matches(session, flt):
                rows.append(_list_row(store, session, flt))
    rows.sort(key=lambda r: r.updated_at or "", reverse=True)
    return rows


def _matches(session: SessionRecord, flt: ListFilter) -> bool:
    if flt.agent_id and session.agent_id != flt.agent_id:
        return False
    if flt.search:
        haystack = " ".join(filter(None, [session.key, session.label, session.meta.get("title")])).lower()
        if flt.search.lower() not in haystack:
            return False
    return True


def _list_row(store: AgentStore, session: SessionRecord, flt: ListFilter) -> api.SessionInfo:
    row = _session_fields(session)
    if session.meta.get("title"):
        row["title"] = session.meta["title"]
    if flt.preview or flt.recent_messages:
        recent = [e for e in store.iter_entries(session.session_id, types=("message",), newest_first=True,
                                                 limit=max(flt.recent_messages, 1) * 3)
                  if e.role in transcript.SEARCHABLE_ROLES][: max(flt.recent_messages, 1)]
        if flt.preview and recent:
            row["preview"] = redacted_preview(transcript.plain_text(recent[0].content), PREVIEW_CHARS)
        if flt.recent_messages:
            row["recent_messages"] = [
                api.MessagePreview(message_id=e.entry_id, role=e.role,
                                   text=redacted_preview(transcript.plain_text(e.content), PREVIEW_CHARS),
                                   timestamp=to_iso(e.timestamp)) for e in reversed(recent)
            ]
    return api.SessionInfo(**row)


def session_status(rt: Runtime, ref: str | None, caller: Caller = Caller()) -> api.SessionStatus:
    """session_status: times, counters, model, next reset; `current` marks the caller's own.

    `sessionKey: "current"` is OpenClaw's name for the calling session (tool contract, seed 003)."""
    if ref is not None and ref.strip().lower() == CURRENT_SESSION_ALIAS:
        if caller.key is None:
            raise InputError("session key 'current' means the calling session, and there is none: call it from "
                             "a session (CLI --as KEY, HTTP X-Clawkeep-Session, a model tool) or give a session key")
        ref = caller.key
    if ref is None:
        if caller.key is None:
            raise InputError("session_status needs a session key or a calling session (--as)")
        ref = caller.key
    store, session = find_session(rt, ref, caller)
    usage = session.meta.get("usage", {})
    return api.SessionStatus(
        **{**_session_fields(session), "incognito": bool(session.meta.get("incognito"))},
        model=session.model,
        **({"modelOverride": session.meta["modelOverride"]} if session.meta.get("modelOverride") else {}),
        origin=session.origin,
        parent_session_id=session.parent_session_id,
        current=caller.key is not None and parse_key(caller.key).key == session.key,
        reset_count=session.meta.get("resetCount", 0),
        compaction_count=session.meta.get("compactionCount", 0),
        pending_notices=len(session.meta.get("pendingNotices", [])),
        next_reset_at=to_iso(lifecycle.next_reset_at(rt.config.session, session)),
        usage=api.Usage(input_tokens=usage.get("inputTokens", 0), output_tokens=usage.get("outputTokens", 0),
                        total_tokens=usage.get("inputTokens", 0) + usage.get("outputTokens", 0)),
    )
