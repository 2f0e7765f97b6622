"""The reply half of a turn: recall → context → (flush, compaction) → model and tools → transcript.

Each step takes the turn object (`turn.Turn`): `context_step`, `model_step`, `transcript_step`;
`after_user_message` runs them in order, with the memory flush and compaction in between.

With no model configured the turn runs in record mode: the user message is stored and every
memory step still runs (Active Memory, the memory flush and compaction with their no-model
fallbacks), but no reply is generated and the result says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..api import RecallResult
from ..config.active_memory import active_memory_config
from ..config.providers import DEFAULT_CONTEXT_WINDOW, RECORD_MODE_CONTEXT_WINDOW
from ..context import compaction as compaction_mod
from ..context.assembly import TurnContext, assemble, inter_session_text
from ..context.flush import FlushResult, flush, flush_due
from ..errors import ClawkeepError
from ..events import Compacted, MemoryRefused, MemoryWritten, MessageRecorded
from ..memory import items
from ..memory import service as memory
from ..models.errors import ContextOverflowError
from ..models.reasoning import CLOSE_ONLY, REASONING, UNCLOSED, strip_reasoning
from ..recall.service import recall
from ..runtime import Runtime
from ..sessions import compactions, transcript
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..timeutil import zone
from .messages import TurnEvent

if TYPE_CHECKING:
    from .turn import Turn

RECORD_MODE_NOTE = "record mode: no model is configured, so no reply was generated"


def window_tokens(rt: Runtime, model: Any | None) -> int:
    """The model's context window; in record mode the window config assumes for the caller's model
    (both defaults live in config.providers)."""
    if model is None:
        return RECORD_MODE_CONTEXT_WINDOW
    return getattr(model, "context_window", None) or DEFAULT_CONTEXT_WINDOW


def compaction_threshold(rt: Runtime, window: int) -> int:
    return compaction_mod.Budget.for_window(window, rt.config.agents.defaults.compaction).threshold


def window_budget(rt: Runtime, model: Any | None) -> compaction_mod.Budget:
    """Reserve, kept tail, summary size and flush point scaled to the model's window
    (context/budget.py): the one rule the threshold, the flush and every compaction use."""
    return compaction_mod.Budget.for_window(window_tokens(rt, model), rt.config.agents.defaults.compaction)


@dataclass
class TurnOutcome:
    reply: str | None = None
    recall: RecallResult | None = None
    compaction: dict[str, Any] | None = None
    flush: dict[str, Any] | None = None
    notices: list[str] = field(default_factory=list)
    model: str | None = None
    record_mode: bool = False
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    remembered: dict[str, Any] | None = None  # record mode: a "remember …" stated in chat


def recall_before(rt: Runtime, session: SessionRecord, text: str, model: Any | None, *,
                  turn: Turn | None = None) -> RecallResult | None:
    """Active Memory runs before the message is stored, so it cannot recall the question itself."""
    options = active_memory_config(rt.config).config
    ref = options.model or options.model_fallback
    recall_model = rt.models.chat_model(ref) if model is not None and ref else None
    return recall(rt, text, session.key, model=recall_model or model, session=session, turn=turn)


def memory_steps(rt: Runtime, store: AgentStore, session: SessionRecord, model: Any | None, at: int,
                 context_tokens: int) -> tuple[dict | None, dict | None]:
    """Flush (once per cycle, before compaction) and automatic compaction near the window.

    Decided from the session's running size counters, so a turn does not re-read its history.
    Whatever makes compaction due (the token threshold or maxActiveTranscriptBytes), the cycle's
    flush runs first, on the messages about to be summarised."""
    settings = rt.config.agents.defaults.compaction
    budget = window_budget(rt, model)
    transcript_bytes = session.meta.get("activeBytes", 0)
    too_big = bool(settings.max_active_transcript_bytes) and transcript_bytes > settings.max_active_transcript_bytes
    compaction_due = context_tokens >= budget.threshold or too_big
    flushed = None
    if settings.memory_flush.enabled and flush_due(
            context_tokens=context_tokens, threshold_tokens=budget.threshold, soft_threshold=budget.flush_soft,
            transcript_bytes=transcript_bytes, force_bytes=settings.memory_flush.force_flush_transcript_bytes,
            session=session, compaction_due=compaction_due):
        messages, _ = compaction_mod.active_messages(store, session)
        flushed = run_flush(rt, store, session, model, messages).to_json()
    compacted = None
    if compaction_due:
        compacted = run_compaction(rt, store, session, model, at=at, reason="threshold").to_json()
    return flushed, compacted


def run_flush(rt: Runtime, store: AgentStore, session: SessionRecord, model: Any | None,
              messages: list[EntryRecord]) -> FlushResult:
    flush_ref = rt.config.agents.defaults.compaction.memory_flush.model
    flush_model = (rt.models.chat_model(flush_ref) if flush_ref else None) or model
    today = datetime.fromtimestamp(rt.now() / 1000, tz=zone(rt.config.session.reset.timezone)).date()
    try:
        result = flush(memory.workspace(rt), session, messages, today=today, model=flush_model,
                       allow_secrets=rt.config.agents.defaults.memory_search.write_filters.allow_secrets,
                       access=rt.config.agents.defaults.workspace_access)
    except (ClawkeepError, OSError) as exc:  # an unwritable note never fails the turn it runs in
        rt.log_warning(f"memory flush failed: {exc}")
        result = FlushResult(False, f"failed: {exc}")
    if result.path:
        rt.events.publish(MemoryWritten(rt.now(), session.agent_id, "flush", result.path, session_key=session.key))
    for note, why in result.refused:
        rt.events.publish(MemoryRefused(rt.now(), session.agent_id, "flush", why, note, session.key))
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        fresh.meta["memoryFlushCompactionCount"] = fresh.meta.get("compactionCount", 0)
        fresh.meta["memoryFlushAt"] = rt.now()
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)
    return result


def run_compaction(rt: Runtime, store: AgentStore, session: SessionRecord, model: Any | None, *, at: int,
                   reason: str, instructions: str | None = None) -> compaction_mod.CompactionResult:
    """Automatic and manual (`/compact`) compaction: keeps the window budget's recent tail, and
    never grows the context (compact() reports "not compacted: nothing to gain" instead)."""
    budget = window_budget(rt, model)
    return _compact(rt, store, session, model, at=at, reason=reason, instructions=instructions,
                    keep_recent_tokens=budget.keep_recent, summary_tokens=budget.summary)


def compact_for_overflow(rt: Runtime, store: AgentStore, session: SessionRecord, model: Any | None, *, at: int,
                         overhead_tokens: int | None = None) -> compaction_mod.CompactionResult:
    """The provider refused the context as too long: compact hard so the rebuilt context fits.

    The cycle's flush runs first (on the messages about to be summarised). Then everything
    before the pending turn (the latest user message and what the tool loop recorded after it)
    is summarised down to a kept tail and a summary sized so that the system prompt and tool
    schemas (`overhead_tokens`; estimated from the bootstrap files when not given) plus summary
    plus tail aim at half the window — our estimate was evidently low. A huge old message is
    summarised like any other. When the pending turn alone does not fit the window, the result
    says so in `errors` (retrying cannot help; the caller reports it)."""
    settings = rt.config.agents.defaults.compaction
    budget = window_budget(rt, model)
    flushed = None
    if settings.memory_flush.enabled and flush_due(
            context_tokens=0, threshold_tokens=budget.threshold, soft_threshold=budget.flush_soft,
            transcript_bytes=0, force_bytes=0, session=session, compaction_due=True):
        messages, _ = compaction_mod.active_messages(store, session)
        flushed = run_flush(rt, store, session, model, messages).to_json()
    if overhead_tokens is None:
        overhead_tokens = _context_overhead(rt, session, budget)
    keep, summary = budget.for_overflow(overhead_tokens)
    result = _compact(rt, store, session, model, at=at, reason="overflow", instructions=None,
                      keep_recent_tokens=keep, summary_tokens=summary, keep_pending_turn=True)
    result.flush = flushed
    if overhead_tokens + result.tokens_after > budget.window:
        result.errors.append(f"the latest turn does not fit the {budget.window}-token window even after compaction "
                             f"({overhead_tokens + result.tokens_after} tokens with the system prompt)")
    return result


def _context_overhead(rt: Runtime, session: SessionRecord, budget: compaction_mod.Budget) -> int:
    """Tokens of a model call besides the history, when the caller does not say: the bootstrap
    files (a caller with tool schemas passes `compaction_mod.context_overhead([system], offered)`)."""
    bootstrap = memory.bootstrap(rt, chat_type=session.chat_type, new_session=True, session_key=session.key,
                                 max_tokens=budget.bootstrap)
    return compaction_mod.context_overhead([f"## {f.path}\n\n{f.text}" for f in bootstrap])


def _compact(rt: Runtime, store: AgentStore, session: SessionRecord, model: Any | None, *, at: int, reason: str,
             instructions: str | None, keep_recent_tokens: int, summary_tokens: int,
             keep_pending_turn: bool = False) -> compaction_mod.CompactionResult:
    settings = rt.config.agents.defaults.compaction
    summarizer_model = (rt.models.chat_model(settings.model) if settings.model else None) or model
    # registered providers first, then the model, then (inside compact) the extractive fallback
    summarizers = list(rt.compaction_providers)
    if summarizer_model is not None:
        summarizers.append(compaction_mod.ModelSummarizer(summarizer_model, max_summary_tokens=summary_tokens))
    result = compaction_mod.compact(
        store, session, summarizers, at=at, keep_recent_tokens=keep_recent_tokens, summary_tokens=summary_tokens,
        keep_pending_turn=keep_pending_turn, policy=settings.identifier_policy,
        custom_rule=settings.identifier_instructions, instructions=instructions, reason=reason)
    if result.compacted:  # context computed it; the session layer writes it
        compactions.record_compaction(store, session, result, at=at)
    if result.compacted and settings.notify_user:
        result.notice = (f"Context compacted: {result.compacted_messages} earlier messages summarised "
                         f"({result.tokens_before} → {result.tokens_after} tokens).")
    if result.compacted and settings.truncate_after_compaction:
        successor = compactions.start_successor(store, session, compaction_mod.successor(store, session, at=at), at=at)
        result.session_id = successor.session_id
        session.__dict__.update(successor.__dict__)
    if result.compacted:
        rt.events.publish(Compacted(at, session.agent_id, session.key, session.session_id, reason,
                                    result.tokens_before, result.tokens_after))
    return result


@dataclass
class ModelReply:
    """What the model part of a turn produced: the answer, the tool calls it ran, and the
    compaction an overflow forced."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    compaction: dict[str, Any] | None = None
    asking: str | None = None  # the id of the user message being answered
    answered_by: Any | None = None  # the model call that gave the answer: its usage goes with the answer's entry


STEP_LIMIT_NOTE = ("Tool step limit reached (agents.defaults.tools.maxSteps): no more tools this turn; "
                   "answer now with what you have.")


def reply(rt: Runtime, store: AgentStore, session: SessionRecord, text: str, recall_result: RecallResult | None,
          model: Any, at: int, *, context: TurnContext | None = None,
          on_event: Callable[[TurnEvent], None] | None = None, turn: Turn | None = None) -> ModelReply:
    """The model loop: call the model with the agent tools; while it asks for tools, run them
    as this session, record each call and result in the transcript, and call it again — at
    most `maxSteps` times, then once more without tools. A context overflow compacts and
    retries once; a second overflow fails the turn with a clear message (everything recorded
    so far stays). `context` is reused when nothing changed since it was built. With
    `on_event` each model call is streamed as `token` events and each tool run is a
    `tool_call` event. The tools run for `turn` (its limit, its one index check, the message it
    answers); None runs them outside any turn."""
    # Only with a model: record mode never loads the chat clients (httpx) or the tool registry.
    from . import tools  # deferred: the tool registry and the chat clients (httpx), with a model only

    offered = tools.offered_tools(rt, session)
    limit = rt.config.agents.defaults.tools.max_steps
    if context is None:
        context = build_context(rt, store, session, text, recall_result, model, at, offered)
    done = ModelReply("")
    asking = store.last_entry(session.session_id, ["message"])  # the user's message, stored just before
    done.asking = asking.entry_id if asking is not None and asking.role == "user" else None
    if turn is not None:
        turn.answer(done.asking)  # the tools' searches never offer its line back
    steps, overflowed = 0, False
    while True:
        last = steps >= limit
        system = context.system + ("\n\n" + STEP_LIMIT_NOTE if last and offered else "")
        try:
            result = _call_model(model, system, context.messages, None if last else offered, on_event)
        except ContextOverflowError as exc:
            if overflowed:
                raise ContextOverflowError(
                    f"the conversation does not fit {model.ref}'s context window even after compaction ({exc}); "
                    "your message is saved — start a new session (/new) or send something shorter",
                    provider=exc.provider, model=exc.model, status=exc.status) from exc
            overflowed = True
            overhead = compaction_mod.context_overhead([context.system], offered)
            done.compaction = compact_for_overflow(rt, store, session, model, at=at,
                                                   overhead_tokens=overhead).to_json()
            context = build_context(rt, store, session, text, recall_result, model, at, offered)
            continue
        if not result.tool_calls or last:
            done.answered_by = result
            done.text = strip_reasoning(result.text) or ("" if not last else "(no answer: the tool step limit "
                                                                              "was reached)")
            return done
        steps += 1
        _run_calls(rt, store, session, result, offered, context, done, on_event, turn)  # usage goes with it


def _run_calls(rt: Runtime, store: AgentStore, session: SessionRecord, result: Any, offered: list[dict[str, Any]],
               context: TurnContext, done: ModelReply, on_event: Callable[[TurnEvent], None] | None,
               turn: Turn | None = None) -> None:
    """Run the model's tool calls, then record the calls (with the usage of the model call that
    asked for them) and their results in one write: a call never lands without its result, and
    the next model call sees both."""
    from . import tools  # deferred: see reply()

    said = strip_reasoning(result.text)
    calls = [call.to_message() for call in result.tool_calls]
    blocks = (transcript.text_blocks(said) if said else []) + [
        {"type": "toolCall", "id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls]
    entries: list[PendingEntry] = [PendingEntry("assistant", blocks, {"model": f"{result.provider}/{result.model}"},
                                                usage_of=result)]
    outcomes = [(call, tools.run_tool(rt, session, call, offered, turn=turn)) for call in result.tool_calls]
    entries += [PendingEntry("tool", [{"type": "toolResult", "toolCallId": call.id, "name": call.name,
                                       "content": outcome.content, "isError": outcome.is_error}], {})
                for call, outcome in outcomes]
    _record_entries(rt, store, session, entries)
    context.messages.append({"role": "assistant", "content": said, "tool_calls": calls})
    for call, outcome in outcomes:
        context.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                 "content": outcome.content, "is_error": outcome.is_error})
        summary = {"name": call.name, "isError": outcome.is_error}
        done.tool_calls.append(summary)
        if on_event is not None:
            on_event(TurnEvent("tool_call", {**summary, "id": call.id}))


_TAG_NAMES = ("think", "thinking", "reasoning")


def _partial_tag_at_end(text: str) -> int:
    """Where a reasoning tag that is still arriving ("<thi", "</reas") starts, or -1."""
    start = text.rfind("<", max(0, len(text) - 13))
    if start < 0 or ">" in text[start:]:
        return -1
    name = text[start + 1:].lstrip("/").lower()
    return start if any(tag.startswith(name) for tag in _TAG_NAMES) else -1


def visible_so_far(raw: str) -> str:
    """What of a reply still being streamed may be shown: `strip_reasoning` applied to the text
    so far, with an open block hidden until it closes and a tag still arriving held back."""
    text = UNCLOSED.sub("", REASONING.sub("", raw))
    if CLOSE_ONLY.match(text):
        text = CLOSE_ONLY.sub("", text, count=1)
    cut = _partial_tag_at_end(text)
    return (text if cut < 0 else text[:cut]).lstrip()


class ReasoningFilter:
    """Streams a reply's deltas without its reasoning: `token` events carry only visible text.
    A lone closing tag turns everything shown so far into reasoning: a `discard` event tells the
    listener to drop what it showed of this model call, and the visible rest follows."""

    def __init__(self, emit: Callable[[TurnEvent], None]):
        self._emit, self._raw, self._shown = emit, "", ""

    def feed(self, delta: str) -> None:
        self._raw += delta
        visible = visible_so_far(self._raw)
        if visible.startswith(self._shown):
            fresh = visible[len(self._shown):]
        else:
            self._emit(TurnEvent("discard"))
            fresh = visible
        if fresh:
            self._emit(TurnEvent("token", fresh))
        self._shown = visible


def _call_model(model: Any, system: str, messages: list[dict[str, Any]], offered: list[dict[str, Any]] | None,
                on_event: Callable[[TurnEvent], None] | None) -> Any:
    options: dict[str, Any] = {"system": system or None}
    if offered:
        options["tools"] = offered
    if on_event is None:
        return model.complete(messages, **options)
    shown = ReasoningFilter(on_event)
    with model.stream(messages, **options) as deltas:
        for delta in deltas:
            shown.feed(delta)
        return deltas.result


def build_context(rt: Runtime, store: AgentStore, session: SessionRecord, text: str,
                  recall_result: RecallResult | None, model: Any | None, at: int,
                  offered: list[dict[str, Any]] | None = None) -> TurnContext:
    """The context of this turn's next model call, from the store: the history before the
    user's message (already stored; it is sent once, with the recall block in front), the
    message, then what this turn's tool loop has recorded since."""
    history, compaction = compaction_mod.active_messages(store, session)
    before, after = history, []
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "user":
            before, after = history[:index], history[index + 1:]
            source = transcript.inter_session_source(history[index])
            if source is not None:  # another session's message: marked as such, never the user's
                text = inter_session_text(text, source)
            break
    # Bootstrap files are in the system context of every model call, not only the first (SPEC §P).
    # ... each within its budget, all within the window's share (context/budget.py)
    bootstrap = memory.bootstrap(rt, chat_type=session.chat_type, new_session=True, session_key=session.key,
                                 max_tokens=window_budget(rt, model).bootstrap)
    summary = recall_result.summary if recall_result and recall_result.status == "ok" else None
    return assemble(session, before, compaction, store=store, user_text=text, bootstrap=bootstrap,
                    recall_summary=summary, pruning=rt.config.agents.defaults.context_pruning,
                    provider=getattr(model, "provider", None), now_ms=at, window_tokens=window_tokens(rt, model),
                    after_user=after, tools=offered)


def _add_usage(session: SessionRecord, result: Any, now: int) -> None:
    """A model call's tokens added to the session's counters; the session records its model."""
    usage = session.meta.setdefault("usage", {"inputTokens": 0, "outputTokens": 0})
    usage["inputTokens"] += int(result.usage.get("inputTokens") or 0)
    usage["outputTokens"] += int(result.usage.get("outputTokens") or 0)
    session.meta["lastModelCallAt"] = now
    session.model = f"{result.provider}/{result.model}"


def context_step(rt: Runtime, turn: Turn) -> TurnContext:
    """Context: what the next model call of this turn sees (history, bootstrap files, the recall
    block, notices, the tools offered), computed from the store; nothing is written."""
    from . import tools  # deferred: see reply()

    session = turn.session
    assert session is not None
    store = rt.store_for_key(session.key)
    return build_context(rt, store, session, turn.text, turn.recalled, turn.model, turn.at,
                         tools.offered_tools(rt, session))


def model_step(rt: Runtime, turn: Turn, context: TurnContext | None = None) -> ModelReply:
    """Model and tools: the model loop (`reply`) for the turn's message, its tools run for the
    turn; `context` is reused when nothing changed since `context_step` built it."""
    session = turn.session
    assert session is not None and turn.model is not None
    return reply(rt, rt.store_for_key(session.key), session, turn.text, turn.recalled, turn.model, turn.at,
                 context=context, on_event=turn.on_event, turn=turn)


def transcript_step(rt: Runtime, turn: Turn, answer: ModelReply) -> None:
    """Transcript: the answer recorded as the assistant's entry, with the usage of the model
    call that gave it (the tool calls and results were recorded as they ran)."""
    session = turn.session
    assert session is not None
    _record_entry(rt, rt.store_for_key(session.key), session, "assistant", transcript.text_blocks(answer.text),
                  {"model": getattr(turn.model, "ref", None)}, usage_of=answer.answered_by)


def after_user_message(rt: Runtime, turn: Turn) -> TurnOutcome:
    """Everything after the user message is stored: context, memory steps, the reply.
    `turn.inter_session`: the message came from another session (sessions_send), so nothing in it
    is remembered as the user's. `turn.record_only`: another system answered, so this runs as
    record mode."""
    session = turn.session
    assert session is not None
    store = rt.store_for_key(session.key)
    model = turn.model = None if turn.record_only else session_model(rt, session)
    outcome = TurnOutcome(recall=turn.recalled, record_mode=model is None,
                          model=getattr(model, "ref", None) if model is not None else None)
    context = None
    if model is not None:
        context = context_step(rt, turn)
        outcome.notices, tokens = context.notices, context.estimated_tokens
    else:  # record mode: nothing to send, so the running counters decide flush and compaction
        tokens = session.meta.get("activeTokens", 0)
        outcome.remembered = None if turn.inter_session else remember_from_chat(rt, session, turn.text)
    try:
        outcome.flush, outcome.compaction = memory_steps(rt, store, session, model, turn.at, tokens)
    except ClawkeepError as exc:
        rt.log_warning(f"memory steps failed: {exc}")
    if model is not None:
        # a flush changes today's note and a compaction the history: only then build again
        unchanged = outcome.flush is None and outcome.compaction is None
        answer = model_step(rt, turn, context if unchanged else None)
        outcome.reply, outcome.tool_calls = answer.text, answer.tool_calls
        outcome.compaction = answer.compaction or outcome.compaction
        transcript_step(rt, turn, answer)
    compactions.clear_notices(store, session)
    return outcome


def session_model(rt: Runtime, session: SessionRecord) -> Any | None:
    """The session's model: its own override (`/new <model>`), else the agent's chain; None in
    record mode (no model configured at all)."""
    override = session.meta.get("modelOverride")
    default = rt.models.chat_model()
    if override and default is not None:
        return rt.models.chat_model(override) or default
    return default


def remember_from_chat(rt: Runtime, session: SessionRecord, text: str) -> dict[str, Any] | None:
    """Record mode's way to keep a fact stated in chat ("remember that …", "记住…"): the same
    write path and filters as memory_remember, owned by this conversation. With a model the
    model decides, through the memory_remember tool."""
    fact = items.chat_memory_request(text)
    if fact is None or session.meta.get("incognito"):
        return None
    try:
        return memory.remember(rt, fact, owner=session.key, source="chat").to_json()
    except ClawkeepError as exc:  # a read-only workspace, an unwritable file: the message is kept anyway
        return {"status": "failed", "reason": str(exc)}


@dataclass
class PendingEntry:
    """An assistant or tool entry to append; `usage_of`: the model call whose tokens it carries."""

    role: str
    content: list[dict[str, Any]]
    meta: dict[str, Any]
    usage_of: Any | None = None


def _record_entry(rt: Runtime, store: AgentStore, session: SessionRecord, role: str, content: list[dict[str, Any]],
                  meta: dict[str, Any], usage_of: Any | None = None) -> None:
    _record_entries(rt, store, session, [PendingEntry(role, content, meta, usage_of)])


def _record_entries(rt: Runtime, store: AgentStore, session: SessionRecord, pending: list[PendingEntry]) -> None:
    """Append assistant or tool entries in order; the entries and the session counters (with
    the usage of each entry's model call) land together, in one transaction."""
    at = rt.now()
    entries = []
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        for item in pending:
            entry = EntryRecord(transcript.new_entry_id(), session.session_id, "message", at, role=item.role,
                                content=item.content, meta=item.meta)
            transcript.append(store, entry)
            if item.usage_of is not None:
                _add_usage(fresh, item.usage_of, at)
            transcript.add_active_size(fresh, entry)
            fresh.message_count += 1
            entries.append(entry)
        fresh.updated_at = max(fresh.updated_at, at)
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)
    for entry in entries:
        rt.events.publish(MessageRecorded(at, session.agent_id, session.key, session.session_id, entry.entry_id,
                                          entry.role))
