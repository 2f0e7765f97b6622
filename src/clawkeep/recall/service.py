"""Active Memory (A1–A5): recall before a reply, never blocking it.

recall() = gates → lane 1 (trusted MEMORY.md entries) → lane 2 when the message asks about
the past and lane 1 had no strong hit (escalate mode) → a one-line summary or nothing.
Failures and timeouts return a status, never an exception: a reply must not wait on memory.

Lane 2 gathers its evidence with one tool, `memory_search`: over the memory index and, with
rememberAcrossConversations, over the other DM transcripts of the agent (the agent tool's
`corpus: "sessions"`). When `toolsAllow` does not permit `memory_search`, lane 2 is skipped (lane
1 reads no tool and still runs). `memory_get` is never needed: the search snippets carry the text.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .. import api
from ..config.active_memory import (
    SEARCH_TOOL,
    ActiveMemoryOptions,
    active_memory_config,
    remember_across_conversations,
)
from ..context.compaction import active_messages
from ..errors import ClawkeepError, InputError
from ..events import RecallTraced
from ..memory import service as memory
from ..memory.owners import DM_KINDS, visible_to
from ..memory.sessions_source import eligible as transcript_eligible
from ..models.errors import ModelTimeoutError
from ..routing.keys import SYNTHETIC_KINDS, subagent_key
from ..routing.router import Route
from ..runtime import Runtime
from ..sessions import transcript
from ..sessions.service import create_session, find_session
from ..storage import EntryRecord, SessionFilter, SessionRecord, TextQuery
from ..text.query import parse_query, rerank
from ..timeutil import to_iso
from . import lanes
from .detector import classify
from .evidence import memory_evidence, sentences, settle

if TYPE_CHECKING:
    from ..turns.turn import Turn


def gate(rt: Runtime, session: SessionRecord, *, options: ActiveMemoryOptions, enabled: bool,
         inter_session: bool = False) -> str | None:
    """Why Active Memory must not run for this turn (None = it may)."""
    if not enabled:
        return "plugin disabled"
    if options.agents and session.agent_id not in options.agents:
        return f"agent {session.agent_id} not targeted"
    if session.kind in SYNTHETIC_KINDS or session.kind == "coding":
        return f"{session.kind} runs never trigger Active Memory"
    if session.meta.get("incognito"):
        return "incognito sessions are not persistent"
    if inter_session:
        return "inter-session data is not a user message"
    chat = session.chat_type or "direct"
    if chat not in options.allowed_chat_types:
        return f"chat type {chat} not in allowedChatTypes"
    ids = {session.key.lower(), *(p.lower() for p in session.key.split(":")[2:])}
    if ids & {c.lower() for c in options.denied_chat_ids}:
        return "chat id denied"
    if options.allowed_chat_ids and not ids & {c.lower() for c in options.allowed_chat_ids}:
        return "chat id not allowed"
    if session.meta.get("activeMemory") == "off":
        return "paused for this session (/active-memory off)"
    return None


class CircuitBreaker:
    """N consecutive timeouts for an agent+model open the circuit for a cooldown (A4)."""

    def __init__(self) -> None:
        self._state: dict[tuple[str, str], tuple[int, float]] = {}

    def open(self, key: tuple[str, str]) -> bool:
        _, until = self._state.get(key, (0, 0.0))
        return time.monotonic() < until

    def record(self, key: tuple[str, str], *, timed_out: bool, max_timeouts: int, cooldown_ms: int) -> None:
        if not timed_out:
            self._state.pop(key, None)
            return
        count, _ = self._state.get(key, (0, 0.0))
        count += 1
        until = time.monotonic() + cooldown_ms / 1000 if count >= max_timeouts else 0.0
        self._state[key] = (0 if until else count, until)


def breaker(rt: Runtime) -> CircuitBreaker:
    if rt.recall_breaker is None:
        rt.recall_breaker = CircuitBreaker()
    return rt.recall_breaker


def recall(rt: Runtime, text: str, session_ref: str, *, model: Any = None, inter_session: bool = False,
           session: SessionRecord | None = None, turn: Turn | None = None) -> api.RecallResult:
    """Active Memory for one would-be message; the outcome is published as `RecallTraced`.
    A turn passes the `session` record it already holds, so it is not looked up again, and
    itself (`turn`: its memory searches share one index check; None outside a turn)."""
    result = _recall(rt, text, session_ref, model=model, inter_session=inter_session, session=session, turn=turn)
    rt.events.publish(RecallTraced(rt.now(), rt.agent_id, session_ref, text, result.status, result.lane,
                                   result.summary, result.elapsed_ms))
    return result


def _recall(rt: Runtime, text: str, session_ref: str, *, model: Any, inter_session: bool,
            session: SessionRecord | None, turn: Turn | None) -> api.RecallResult:
    started = time.monotonic()

    def done(status: str, lane: int | None, past: bool, summary: str | None = None,
             reason: str | None = None) -> api.RecallResult:
        return api.RecallResult(status=status, lane=lane, past_question=past, summary=summary,
                                elapsed_ms=int((time.monotonic() - started) * 1000),
                                **({"reason": reason} if reason else {}))

    settings = active_memory_config(rt.config)
    options = settings.config
    if session is None:
        _, session = find_session(rt, session_ref)
    if session.agent_id != rt.agent_id:  # A5: recall never crosses agents
        raise InputError(f"session {session_ref!r} belongs to agent {session.agent_id!r}, not {rt.agent_id!r}; "
                         f"run recall with --agent {session.agent_id}")
    past = classify(text).past_question
    blocked = gate(rt, session, options=options, enabled=settings.enabled, inter_session=inter_session)
    if blocked:
        return done("skipped", None, past, reason=blocked)
    try:
        across = remember_across_conversations(rt.config)
        hits, block = lanes.lane_one(memory.workspace(rt), text, min_score=options.lane_one.min_score,
                                     max_entries=options.lane_one.max_entries, max_chars=options.lane_one.max_chars,
                                     today=memory.today(rt),
                                     visible=lambda owner: visible_to(owner, session.key, across=across))
        if hits:
            return done("ok", 1, past, block, reason="strong-lane-one-hit")
        if options.mode == "off":
            return done("none", None, past, reason="mode-off")
        if options.mode == "escalate" and not past:
            return done("none", None, past, reason="no-recall-intent")
        return _lane_two(rt, session, text, options, model, past, done, turn)
    except ClawkeepError as exc:
        return done("error", 2, past, reason=str(exc))
    except (OSError, ValueError) as exc:  # A4: a broken memory file never blocks the turn
        rt.log_warning(f"Active Memory failed: {type(exc).__name__}: {exc}")
        return done("error", None, past, reason=f"{type(exc).__name__}: {exc}")


def _lane_two(rt: Runtime, session: SessionRecord, text: str, options: ActiveMemoryOptions, model: Any,
              past: bool, done: Any, turn: Turn | None = None) -> api.RecallResult:
    if SEARCH_TOOL not in options.allowed_tools():  # toolsAllow: lane 2's one evidence tool is not permitted
        return done("skipped", 2, past, reason=f"toolsAllow does not permit {SEARCH_TOOL}")
    across = remember_across_conversations(rt.config)
    evidence = lanes.gather(lambda q: _memory_evidence(rt, session, q, across, turn),
                            (lambda q: _transcript_evidence(rt, session, q)) if across else None, text)
    evidence = settle(evidence, text, memory.today(rt))  # no earlier questions, no outdated plans
    if model is None:
        summary = lanes.deterministic_summary(evidence, text, options.max_summary_chars)
        return done("ok" if summary else "none", 2, past, summary)
    key = (session.agent_id, getattr(model, "model", "model"))
    circuit = breaker(rt)
    if circuit.open(key):
        return done("skipped", 2, past, reason="circuit open after repeated timeouts")
    context = lanes.conversation_context(_recent_turns(rt, session), text, mode=options.query_mode,
                                         user_turns=options.recent_user_turns,
                                         assistant_turns=options.recent_assistant_turns)
    try:
        summary = lanes.model_summary(model, evidence, text, style=options.style,
                                      max_chars=options.max_summary_chars, timeout_s=options.timeout_ms / 1000,
                                      context=context)
    except ModelTimeoutError:
        circuit.record(key, timed_out=True, max_timeouts=options.circuit_breaker.max_timeouts,
                       cooldown_ms=options.circuit_breaker.cooldown_ms)
        return done("timeout", 2, past, reason=f"recall model timed out after {options.timeout_ms} ms")
    circuit.record(key, timed_out=False, max_timeouts=options.circuit_breaker.max_timeouts,
                   cooldown_ms=options.circuit_breaker.cooldown_ms)
    if options.persist_transcripts:
        _persist_subagent(rt, session, context, summary)
    return done("ok" if summary else "none", 2, past, summary)


def _recent_turns(rt: Runtime, session: SessionRecord) -> list[tuple[str, str]]:
    messages, _ = active_messages(rt.store_for_key(session.key), session)
    return [(m.role, transcript.searchable_text(m.content)) for m in messages[-40:] if m.role in ("user", "assistant")]


def _persist_subagent(rt: Runtime, session: SessionRecord, context: str, summary: str | None) -> None:
    """persistTranscripts: keep the recall sub-agent's exchange as a sub-agent session of the turn's
    session (temporary and unrecorded otherwise)."""
    at = rt.now()
    route = Route(subagent_key(session.agent_id), session.agent_id, "subagent", None, "subagent", None, None,
                  "subagent")
    child = create_session(rt, route, at, label="active-memory recall", parent=session)
    store = rt.store_for_key(child.key)
    for role, text_ in (("user", context), ("assistant", summary or "NONE")):
        transcript.append(store, EntryRecord(transcript.new_entry_id(), child.session_id, "message", at,
                                             role=role, content=transcript.text_blocks(text_)))


def _memory_evidence(rt: Runtime, session: SessionRecord, query: str, across: bool,
                     turn: Turn | None = None) -> list[lanes.Evidence]:
    """memory_search, minus what belongs to other conversations when DMs are isolated and minus
    the current session's own transcript (A5: its turns are the conversation, not memory)."""
    results = memory.search(rt, query, limit=6, caller=session.key, without_session=session.session_id,
                            turn=turn)["results"]
    workspace = memory.workspace(rt)
    found = []
    for hit in results:
        if not visible_to(hit.get("sessionKey"), session.key, across=across):
            continue  # another peer's conversation: never crosses an isolation boundary
        # the window's items carry their dates (written, expiry, supersession) in their markers
        found.append(memory_evidence(workspace, hit["path"], hit["startLine"], hit["endLine"], hit["snippet"],
                                     hit["score"], hit.get("source")))
    return found


def _transcript_evidence(rt: Runtime, session: SessionRecord, query: str) -> list[lanes.Evidence]:
    """A5: the other direct-message transcripts of this agent (never groups, cron, the current one)."""
    parsed = parse_query(query)
    if parsed is None:
        return []
    store = rt.store(session.agent_id)
    allowed = [s.session_id for s in store.list_sessions(SessionFilter(kinds=DM_KINDS))
               if s.session_id != session.session_id and transcript_eligible(s)]
    if not allowed:
        return []
    selected = parsed.select(store.document_frequency, store.indexed_documents())
    rows = rerank(store.search(TextQuery.of(selected.terms), session_ids=allowed, limit=50), selected,
                  tokens=lambda r: r.tokens, rank=lambda r: r.score)
    evidence: list[lanes.Evidence] = []
    for row in rows:
        text_ = transcript.searchable_text(row.entry.content)  # no inline reasoning reaches a summary
        if next(sentences(text_), None) is None:
            continue  # only a question or recall request (an earlier "我下周有什么安排"): never the answer
        said = to_iso(row.entry.timestamp)
        evidence.append(lanes.Evidence(text_, 1.0 / (1 + len(evidence)), "transcript", (said or "")[:10] or None,
                                       said=said, speaker=row.entry.role or "user"))
        if len(evidence) == 5:
            break
    return evidence
