"""`Engine`: the Python API. Its methods mirror the CLI verbs one to one.

from clawkeep import Engine
with Engine.open(home="~/.clawkeep") as engine:
    engine.message("下周二我去上海出差", channel="telegram", sender="alice")
    hits = engine.sessions_search("上海")
"""

from __future__ import annotations

import copy
import functools
import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import api, dreaming, hooks
from . import validation as check
from .config import Config, config_from_dict, load_config, with_storage_environment
from .errors import ClawkeepError, CorruptDatabaseError, InputError, StorageError
from .hooks import metrics as metric_rates
from .memory import refusals as refusal_log
from .routing.keys import KINDS, parse_key
from .routing.router import Inbound
from .runtime import Runtime, default_home
from .storage import check_storage, commit_journal
from .timeutil import parse_iso
from .visibility import Caller, Limit

if TYPE_CHECKING:
    from .turns import MessageRequest, TurnEvent
    from .turns.turn import Turn


class _Deferred:
    """A module imported on the first read of one of its names. import_module, not a look-up in
    sys.modules: while another thread is still importing the module it waits for that import
    to finish instead of reading a half-initialised module."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


# The service modules are deferred: a short-lived process (one CLI command) loads only what its
# one call needs (tests/engine/test_cold_start.py). Each costs tens to hundreds of milliseconds cold:
# the memory index and its search (~110 ms), Dreaming (~170 ms), the turn pipeline with the
# recall detector and the model clients (~300 ms); a keyword search never imports the turn
# pipeline, the recall detector, Dreaming, numpy or the HTTP client. (The modules imported above
# are loaded by every Engine.open anyway.)
sessions = _Deferred("clawkeep.sessions.service")
history = _Deferred("clawkeep.sessions.history")
timeline = _Deferred("clawkeep.sessions.timeline")
session_search = _Deferred("clawkeep.sessions.search")
maintenance = _Deferred("clawkeep.sessions.maintenance")
memory = _Deferred("clawkeep.memory.service")
store_files = _Deferred("clawkeep.memory.store_files")
corrections = _Deferred("clawkeep.memory.corrections")
turns = _Deferred("clawkeep.turns")
send = _Deferred("clawkeep.turns.send")
reply = _Deferred("clawkeep.turns.reply")
recall_service = _Deferred("clawkeep.recall.service")
detector = _Deferred("clawkeep.recall.detector")
dream_service = _Deferred("clawkeep.dreaming.service")
review = _Deferred("clawkeep.dreaming.review")
dream_backfill = _Deferred("clawkeep.dreaming.backfill")
credentials = _Deferred("clawkeep.credentials")
interop = _Deferred("clawkeep.interop.service")
doctor_checks = _Deferred("clawkeep.doctor")
rerank_stage = _Deferred("clawkeep.models.rerank_stage")

CONFIG_FILE = "clawkeep.json5"
MEMORY_CORPORA = ("all", "memory", "sessions")  # memory_search `corpus`: notes, transcripts, or both


def resolve_config(home: Path, config: str | os.PathLike[str] | Config | dict[str, Any] | None) -> Config:
    """An explicit Config/dict/path wins; otherwise `clawkeep.json5` in the home if present. The
    environment's CLAWKEEP_STORAGE_URL / CLAWKEEP_STORAGE_SCHEMA win over `storage.url` / `storage.schema`."""
    if isinstance(config, Config):
        return with_storage_environment(config)
    if isinstance(config, dict):
        return with_storage_environment(config_from_dict(config))
    if config is not None:
        return with_storage_environment(load_config(config))
    default = home / CONFIG_FILE
    # with its overrides file (/active-memory --global), if any
    return with_storage_environment(load_config(default, missing_ok=True))


def _at(rt: Runtime, value: str | int | None, name: str = "--at") -> int | None:
    """A caller's time: ISO-8601 text or epoch ms, inside the accepted window (validation.py)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = check.ident(value, name)  # bounded first: int() of thousands of digits raises
        # epoch ms as text (`--at 1796367482000`), as docs/input-limits.md promises
        value = int(text) if text.isascii() and text.isdigit() else parse_iso(text, name)
    return check.time_ms(value, name, rt.now())


class Engine:
    turn: Turn | None = None  # the turn whose tools run on this engine (`for_turn`); None: no turn

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        runtime.tool_host = self  # the reply model's tools are this engine's verbs (turns.tools)

    def limited(self, limit: Limit) -> Engine:
        """This engine for one credential's calls: every scope it computes stays within `limit`."""
        bound = copy.copy(self)
        bound.runtime = self.runtime.with_limit(limit)
        return bound

    def for_turn(self, turn: Turn) -> Engine:
        """The engine a turn's tools run on: within the turn's limit, and its searches and sends
        know the turn (`turns.turn.Turn`: one index check, the answered message, held locks)."""
        bound = self.limited(turn.limit)
        bound.turn = turn
        return bound

    @classmethod
    def open(
        cls,
        home: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | Config | dict[str, Any] | None = None,
        agent: str = "main",
    ) -> Engine:
        check.path(home, "home", optional=True)
        if not isinstance(config, (Config, dict)):
            check.path(config, "config file", optional=True)
        check.ident(agent, "agent id")
        home_path = Path(home).expanduser() if home is not None else default_home()
        check.path(home_path, "home")
        if home_path.exists() and not home_path.is_dir():
            raise StorageError(f"home {home_path} cannot be created or used: it exists and is not a directory")
        runtime = Runtime(home_path, resolve_config(home_path, config), agent)
        hooks.install(runtime)  # session-memory and the metrics counters
        dreaming.install(runtime)  # the recall store's input (records only while Dreaming is enabled)
        if isinstance(config, (str, os.PathLike)):
            runtime.config_path = Path(config)  # /active-memory --global writes here
        return cls(runtime)

    @property
    def config(self) -> Config:
        return self.runtime.config

    def close(self) -> None:
        self.runtime.close()

    def check_storage(self) -> None:
        """Log in to the storage once (PostgreSQL; nothing is created): an unreachable server is a
        StorageError, a refused login or a missing database an InputError — before a server says
        it is up."""
        check_storage(self.config.storage)

    def subscribe(self, event_type: type[Any], handler: Any) -> None:
        """Call `handler(event)` for every engine event of `event_type` (clawkeep.events)."""
        self.runtime.events.subscribe(event_type, handler)

    @staticmethod
    def check_session_key(key: str, what: str = "session key") -> str:
        """`key` if it is a valid session key, else an InputError naming `what`."""
        try:
            return parse_key(check.ident(key, what)).key
        except InputError as exc:
            raise InputError(f"{what}: {exc}") from None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- messages -------------------------------------------------------------------
    def message(self, text: str, **inbound: Any) -> api.MessageResult:
        """Route one inbound message to its session and run the turn (see `request` for the arguments)."""
        return api.MessageResult.model_validate(
            turns.handle_message(self.runtime, self.request(text, **inbound)).to_json())

    def message_stream(self, text: str, **inbound: Any) -> Iterator[TurnEvent]:
        """The same turn as events: reply `token`s as the model streams them, then `result`
        (a MessageResult) or `error` (the ClawkeepError that ended the turn)."""
        return turns.stream_message(self.runtime, self.request(text, **inbound))

    def request(
        self,
        text: str,
        *,
        channel: str = "cli",
        account: str | None = None,
        sender: str = "owner",
        chat_type: str = "direct",
        group: str | None = None,
        thread: str | None = None,
        role: str = "user",
        message_id: str | None = None,
        at: str | int | None = None,
        session: str | None = None,
        record_only: bool = False,
    ) -> MessageRequest:
        """A checked turn request: where the message came from (channel, account, sender, chat
        type, group, thread — or `session` to deliver into an existing session), role, the
        channel's own message id (idempotent per conversation) and an optional time."""
        check.text(text, "message text")
        for name, value in (("channel", channel), ("sender", sender), ("chat type", chat_type), ("role", role)):
            check.ident(value, name)
        for name, value in (("account", account), ("group", group), ("thread", thread), ("message id", message_id),
                            ("session", session)):
            check.ident(value, name, optional=True)
        inbound = Inbound(
            channel=channel,
            account=account,
            sender=sender,
            chat_type=chat_type,
            group=group,
            thread=thread,
            session=session,
        )
        check.flag(record_only, "record_only")
        return turns.MessageRequest(text, inbound, role, message_id, _at(self.runtime, at), record_only=record_only)

    def system_event(
        self, session: str, text: str, *, at: str | int | None = None, queue: bool = True
    ) -> api.SystemEventResult:

        check.ident(session, "session")
        check.text(text, "system event text")
        check.flag(queue, "queue")
        return turns.record_system_event(self.runtime, session, text, at=_at(self.runtime, at), queue=queue)

    # --- sessions -------------------------------------------------------------------
    def sessions_list(
        self,
        *,
        kind: str | None = None,
        label: str | None = None,
        agent_id: str | None = None,
        active_minutes: int | None = None,
        search_text: str | None = None,
        preview: bool = False,
        recent_messages: int = 0,
        caller: str | None = None,
    ) -> list[api.SessionInfo]:

        for name, value in (("kind", kind), ("label", label), ("agent id", agent_id), ("caller", caller)):
            check.ident(value, name, optional=True)
        if kind is not None:
            check.choice(kind, "kind", KINDS)  # an unknown kind matched nothing: an empty list hid the typo
        check.text(search_text, "search text", optional=True)
        check.integer(active_minutes, "active_minutes", 1, check.MAX_INT)  # as its argument model: ge=1
        check.integer(recent_messages, "recent_messages", 0, sessions.MAX_RECENT_MESSAGES, optional=False)
        check.flag(preview, "preview")
        flt = sessions.ListFilter(kind, label, agent_id, active_minutes, search_text, preview, recent_messages)
        return sessions.list_sessions(self.runtime, flt, Caller(caller))

    def sessions_history(
        self, session: str, *, message_id: str | None = None, include_tools: bool = False, caller: str | None = None
    ) -> api.History:

        check.ident(session, "session")
        check.ident(message_id, "message id", optional=True)
        check.ident(caller, "caller", optional=True)
        check.flag(include_tools, "include_tools")
        return history.sessions_history(self.runtime, session, Caller(caller), message_id=message_id,
                                        include_tools=include_tools)

    def sessions_timeline(self, session: str, *, caller: str | None = None) -> api.Timeline:
        """The session's intervals (reset boundaries) and the compactions inside them."""
        check.ident(session, "session")
        check.ident(caller, "caller", optional=True)
        return timeline.sessions_timeline(self.runtime, session, Caller(caller))

    def sessions_search(self, query: str, *, limit: int | None = None, caller: str | None = None) -> api.SearchResult:
        check.text(query, "search query")
        check.integer(limit, "limit", 1, session_search.MAX_LIMIT)
        check.ident(caller, "caller", optional=True)
        return session_search.sessions_search(self.runtime, query, Caller(caller), limit=limit)

    def session_status(self, session: str | None = None, *, caller: str | None = None) -> api.SessionStatus:
        check.ident(session, "session", optional=True)
        check.ident(caller, "caller", optional=True)
        return sessions.session_status(self.runtime, session, Caller(caller))

    def sessions_send(self, session: str, message: str, *, timeout_seconds: int = api.SEND_TIMEOUT_DEFAULT_S,
                      caller: str | None = None) -> api.SendResult:
        """Deliver `message` into another session as inter-session data (S7). `timeout_seconds=0`
        returns at once (`accepted`); otherwise waits that long for the target's reply. A calling
        session then goes back and forth with the target (session.agentToAgent.maxPingPongTurns)
        in the background; `close()` waits for that work."""
        check.ident(session, "session")
        check.text(message, "message")
        check.integer(timeout_seconds, "timeout_seconds", 0, api.SEND_TIMEOUT_MAX_S, optional=False)
        check.ident(caller, "caller", optional=True)
        return send.sessions_send(self.runtime, session, message, timeout_s=timeout_seconds, caller=caller,
                                  turn=self.turn)

    def sessions_reset(self, session: str, *, at: str | int | None = None,
                       caller: str | None = None) -> api.ResetResult:
        check.ident(session, "session")
        check.ident(caller, "caller", optional=True)
        return sessions.reset_session(self.runtime, session, Caller(caller), at=_at(self.runtime, at))

    def sessions_fork(self, session: str, *, label: str | None = None, caller: str | None = None) -> api.SessionInfo:
        check.ident(session, "session")
        check.ident(label, "label", optional=True)
        check.ident(caller, "caller", optional=True)
        return sessions.fork_session(self.runtime, session, Caller(caller), label=label)

    def sessions_create(self, *, incognito: bool = False, label: str | None = None, coding: str | None = None,
                        key: str | None = None, caller: str | None = None) -> api.SessionInfo:
        """A new dashboard thread; with `coding` the coding session agent:<id>:coding:<name>; with `key`,
        the session of that key (an OpenClaw key is mapped as import maps it), created if missing —
        `created` says which. A calling session may open only itself."""
        check.flag(incognito, "incognito")
        check.ident(label, "label", optional=True)
        check.ident(key, "key", optional=True)
        if coding is not None and key is not None:
            raise InputError("give either coding or key, not both")
        if coding is not None:
            if incognito:
                raise InputError("a coding session cannot be incognito; give either coding or incognito")
            return sessions.create_coding(self.runtime, coding, label=label)
        if key is None:
            return sessions.create_dashboard(self.runtime, incognito=incognito, label=label)
        if incognito:
            raise InputError("key and incognito do not go together: an incognito thread gets a new key of its own")
        opened = sessions.open_by_key(self.runtime, key, label=label)
        if caller is not None and opened.key != self.session_status(caller, caller=caller).key:
            raise InputError(f"key {key!r}: a calling session may open only itself; open other sessions as the "
                             "operator or with an agent credential")
        return opened

    def sessions_roll_over(self, *, at: str | int | None = None) -> list[str]:
        """Reset every session whose daily or idle reset is due now (the gateway's reset clock)."""
        return sessions.roll_over_due(self.runtime, _at(self.runtime, at) or self.runtime.now())

    def sessions_cleanup(
        self, *, dry_run: bool = False, enforce: bool = False, fix_dm_scope: bool = False
    ) -> api.CleanupReport:

        for name, value in (("dry run", dry_run), ("enforce", enforce), ("fix dm scope", fix_dm_scope)):
            check.flag(value, name)
        return maintenance.cleanup(self.runtime, dry_run=dry_run, enforce=enforce, fix_dm_scope=fix_dm_scope)

    # --- memory ---------------------------------------------------------------------
    def memory_search(self, query: str, *, limit: int | None = None, mode: str = "hybrid",
                      min_score: float | None = None, corpus: str = "all",
                      caller: str | None = None) -> api.MemorySearchResult:
        """Hybrid search over the memory files and indexed transcripts; a calling session sees
        only the notes and transcripts visible to it."""
        check.text(query, "memory search query")
        check.integer(limit, "limit", 1, check.MAX_MEMORY_SEARCH)
        check.ident(mode, "mode")
        check.choice(corpus, "corpus", MEMORY_CORPORA)
        check.number(min_score, "min_score", 0.0, 1.0)
        check.ident(caller, "caller", optional=True)
        found = memory.search(self.runtime, query, limit=limit, mode=mode, caller=caller, corpus=corpus,
                              turn=self.turn)
        if min_score is not None:
            found = api.MemorySearchResult(results=[hit for hit in found.results if hit.score >= min_score])
        return found

    def memory_get(self, path: str, *, from_line: int | None = None, lines: int | None = None,
                   caller: str | None = None) -> api.MemoryFile:
        """Lines of a memory file or an indexed transcript, as `caller` may see them (None: the operator)."""
        check.path(path, "memory path")
        check.integer(from_line, "from_line", 1, check.MAX_INT)
        check.integer(lines, "lines", 1, check.MAX_GET_LINES)
        check.ident(caller, "caller", optional=True)
        return memory.get(self.runtime, path, from_line=from_line, lines=lines, caller=caller)

    def memory_remember(self, text: str, *, force: bool = False, caller: str | None = None) -> api.RememberResult:
        """Write one fact; from a calling session the line is that conversation's (owner boundary)."""
        check.text(text, "memory text")
        check.flag(force, "force")
        check.ident(caller, "caller", optional=True)
        owner = self.runtime.caller_session(Caller(caller)).key if caller else None
        source = "tool" if caller else "remember"
        return memory.remember(self.runtime, text, force=force, owner=owner, source=source)

    def memory_refusals(self, *, days: int = 7) -> list[api.Refusal]:
        """What the write filters refused in the last `days` days (1-30), newest first."""
        check.integer(days, "days", 1, refusal_log.RETENTION_DAYS, optional=False)
        return refusal_log.recent(self.runtime, days, self.runtime.now())

    def memory_items(self, *, status: str | None = None) -> list[api.MemoryItem]:
        check.ident(status, "status", optional=True)
        return memory.list_items(self.runtime, status=status)

    def memory_edit(self, item_id: str, text: str, base_text: str | None = None) -> api.MemoryItem:
        """`base_text`: the text the editor started from; when the item no longer says it, the
        edit is refused as a conflict (ConflictError) instead of overwriting the other writer."""
        check.ident(item_id, "memory item id")
        check.text(text, "memory text")
        if base_text is not None:
            check.text(base_text, "memory base text")
        return memory.edit_item(self.runtime, item_id, text, base_text)

    def memory_delete(self, item_id: str) -> api.DeleteResult:
        check.ident(item_id, "memory item id")
        return memory.delete_item(self.runtime, item_id)

    # --- key/value store files (memory/store/: the LangGraph store's namespaces) ---------------
    def memory_store_read(self, path: str, *, caller: str | None = None) -> api.StoreFile:
        """A store file whole, with the sha256 a write names to detect a concurrent writer. A
        calling session reads only the files it owns and the agent's (`memory/store_files.py`)."""
        check.ident(caller, "caller", optional=True)
        return store_files.read(self.runtime, path, caller)

    def memory_store_write(self, path: str, text: str, base_sha256: str | None = None, *,
                           caller: str | None = None) -> api.StoreFile:
        """Replace a store file (empty text deletes it); 409 when it changed since `base_sha256`.
        A calling session writes only the files it owns."""
        check.text(text, "store text", optional=True)
        check.ident(caller, "caller", optional=True)
        return store_files.write(self.runtime, path, text, base_sha256, caller)

    def memory_store_files(self, *, prefix: str = "memory/store", caller: str | None = None) -> list[api.StoreFile]:
        """The store files under `prefix`, each with its text (a calling session: those it may read)."""
        check.ident(caller, "caller", optional=True)
        return store_files.listing(self.runtime, prefix, caller)

    def memory_correct(self, item_id: str | None, text: str, *, old_text: str | None = None,
                       caller: str | None = None) -> api.MemoryChange:
        """Correct a remembered line (the model's memory_edit): the new text passes the write
        filters and supersedes the old line, which is kept as the trail; undoable (memory_undo).
        A calling session corrects only lines it may see and owns."""
        return self._correction(lambda owner: corrections.edit(
            self.runtime, corrections.resolve(self.runtime, item_id, old_text, owner), text, owner),
            caller, item_id=item_id, old_text=old_text, text=text)

    def memory_forget(self, item_id: str | None, *, old_text: str | None = None,
                      caller: str | None = None) -> api.MemoryChange:
        """Retire a remembered line (kept in its file, marked forgotten; undoable)."""
        return self._correction(lambda owner: corrections.forget(
            self.runtime, corrections.resolve(self.runtime, item_id, old_text, owner), owner),
            caller, item_id=item_id, old_text=old_text)

    def memory_undo(self, item_id: str, *, caller: str | None = None) -> api.MemoryChange:
        """Undo a memory_edit or memory_forget by the `undo` id it answered with."""
        check.ident(item_id, "memory item id")
        return self._correction(lambda owner: corrections.undo(self.runtime, item_id, owner), caller)

    def _correction(self, work: Any, caller: str | None, *, item_id: str | None = None,
                    old_text: str | None = None, text: str | None = None) -> api.MemoryChange:
        if item_id is not None:
            check.ident(item_id, "memory item id")
        if old_text is not None:
            check.text(old_text, "memory old text")
        if text is not None:
            check.text(text, "memory text")
        check.ident(caller, "caller", optional=True)
        owner = self.runtime.caller_session(Caller(caller)).key if caller else None
        return work(owner)

    def memory_sweep(self) -> api.SweepResult:
        return memory.sweep(self.runtime)

    def memory_index(self, *, force: bool = False, progress: Any = None) -> api.IndexReport:
        check.flag(force, "force")
        return memory.index(self.runtime, force=force, progress=progress)

    def memory_status(self, *, deep: bool = False) -> api.MemoryStatus:
        check.flag(deep, "deep")
        return memory.status(self.runtime, deep=deep)

    def memory_bootstrap(self, *, chat_type: str | None = "direct", new_session: bool = True,
                         session: str | None = None) -> list[api.BootstrapFile]:
        """The bootstrap files as `session` would see them in its prompt (None: the operator)."""
        check.ident(chat_type, "chat type", optional=True)
        check.flag(new_session, "new session")
        check.ident(session, "session", optional=True)

        # budgeted for the default model's window, as a turn without a session model sees them
        try:
            model = self.runtime.models.chat_model()
        except ClawkeepError:  # a broken model setting is reported by a turn, not by this view
            model = None
        budget = reply.window_budget(self.runtime, model)
        return memory.bootstrap(self.runtime, chat_type=chat_type, new_session=new_session, session_key=session,
                                max_tokens=budget.bootstrap)

    def memory_warm(self) -> None:
        """Load the embedding model now instead of at the first search that needs vectors."""
        memory.warm(self.runtime)

    def memory_watch(self) -> Any:
        return memory.watch(self.runtime)

    def register_compaction_provider(self, summarizer: Any) -> None:
        """A pluggable compaction provider: an object with `name` and
        `summarize(messages, *, instructions, policy, custom_rule) -> str`. Tried before the model;
        if it raises a ClawkeepError the next provider (and finally the extractive one) is used."""
        check.summarizer(summarizer)
        self.runtime.compaction_providers.append(summarizer)

    # --- recall ---------------------------------------------------------------------
    def recall(self, text: str, *, session: str) -> api.RecallResult:
        """Active Memory for a would-be user message in `session`, without storing it."""
        check.text(text, "recall text")
        check.ident(session, "session")
        model = self.runtime.models.chat_model()
        return recall_service.recall(self.runtime, text, session, model=model)

    def classify(self, text: str) -> api.Classification:
        check.text(text, "text")
        found = detector.classify(text)
        return api.Classification(past_question=found.past_question, language=found.language)

    def status(self) -> api.EngineStatus:
        rt = self.runtime
        store = rt.read_store()  # status of an agent without a database must not create one
        listed = store.list_sessions()
        server = store.server_info()  # the backend and its version: "postgres", "PostgreSQL 16.2"
        return api.EngineStatus(
            home=str(rt.home), agent_id=rt.agent_id, agents=rt.agent_ids(),
            database=getattr(store, "path", None) if rt.has_database() else None, storage=server["storage"],
            storage_version=server["storageVersion"], pgvector=server["pgvector"],
            sessions=len(listed), messages=sum(s.message_count for s in listed),
            indexed_messages=store.indexed_messages(), dm_scope=rt.config.session.dm_scope,
            visibility=rt.config.tools.sessions.visibility,
            sessions_search_rerank=rerank_stage.status(rt.config.tools.sessions.search.rerank),
            reset_mode=rt.config.session.reset.mode,
            maintenance_mode=rt.config.session.maintenance.mode, config_warnings=rt.config.warnings,
            metrics=self.metrics(), chat_model=rt.config.agents.defaults.model.primary)

    def metrics(self) -> api.Metrics:
        """G5: compaction rate per 100 turns, recall hit rate, supersession rate, adoption of
        injected memory — over every process that used this agent's database."""
        totals = dict(self.runtime.read_store().counters())
        for name, value in self.runtime.metrics.pending().items():  # counted here, not yet flushed
            totals[name] = totals.get(name, 0) + value
        return metric_rates.rates(totals)

    # --- dreaming (Dr1–Dr2) -----------------------------------------------------------
    def dreaming_status(self) -> api.DreamingStatus:
        return dream_service.status(self.runtime)

    def dreaming_enable(self, enabled: bool) -> api.DreamingToggle:
        """Switch the schedule and the recording on or off (the overrides file, like `/dreaming on|off`)."""
        check.flag(enabled, "enabled")
        return dream_service.set_enabled(self.runtime, enabled)

    # --- caller credentials (tokens) ---------------------------------------------------
    def tokens_create(self, name: str, scope: str, *, expires: str | None = None,
                      sandboxed: bool = False) -> dict[str, Any]:
        """A new token: its description and, under `token`, the secret (shown this once only)."""
        for what, value in (("token name", name), ("scope", scope)):
            check.text(value, what)
        check.text(expires, "expires", optional=True)  # a list here was an AttributeError in parse_duration
        check.flag(sandboxed, "sandboxed")
        record, secret = credentials.create(self.runtime, name, scope, expires=expires, sandboxed=sandboxed)
        return {**credentials.describe(record), "token": secret}

    def tokens_list(self) -> list[dict[str, Any]]:
        return credentials.listing(self.runtime)

    def tokens_revoke(self, name: str) -> dict[str, Any]:
        return credentials.revoke(self.runtime, name)

    def dreaming_review(self, *, limit: int = 20, caller: str | None = None) -> api.DreamsReview:
        """DREAMS.md's blocks, the Dream Diary and the promotion runs (a caller: only its visible items)."""
        check.integer(limit, "limit", 1, review.MAX_LIMIT, optional=False)
        check.ident(caller, "caller", optional=True)
        return review.review(self.runtime, limit=limit, caller=caller)

    def dream_if_due(self) -> api.SweepReport | None:
        """The scheduled sweep (the gateway's clock): runs when `dreaming.frequency` says one is
        due and Dreaming is enabled; None otherwise."""
        return dreaming.run_due(self.runtime)

    def dream(self, *, phase: str = "all", at: str | int | None = None) -> api.SweepReport:
        """Run a sweep now: every phase (Light → REM → Deep) or one (`light`, `rem`, `deep`)."""
        check.choice(phase, "phase", ("all", *dreaming.PHASES))
        phases = dreaming.PHASES if phase == "all" else (phase,)
        return dreaming.run_sweep(self.runtime, _at(self.runtime, at), phases=phases)

    def memory_promote(self, *, apply: bool = False, limit: int | None = None, min_score: float | None = None,
                       min_recall_count: int | None = None, min_unique_queries: int | None = None
                       ) -> api.SweepReport | api.PromoteReport:
        """The ranked promotion candidates (a preview), or with `apply` a Light + Deep run now.
        The gates default to the deep-phase configuration."""
        check.flag(apply, "apply")
        check.integer(limit, "limit", 1, 1000)
        check.number(min_score, "min_score", 0.0, 1.0)
        check.integer(min_recall_count, "min_recall_count", 0, check.MAX_INT)
        check.integer(min_unique_queries, "min_unique_queries", 0, 32)
        return dream_service.promote(self.runtime, apply=apply, limit=limit, min_score=min_score,
                                     min_recall_count=min_recall_count, min_unique_queries=min_unique_queries)

    def memory_promote_explain(self, query: str) -> api.ExplainReport:
        check.text(query, "query")
        return dream_service.explain(self.runtime, query)

    def memory_promote_undo(self, target: str | None = None) -> api.UndoReport:
        """Undo a promotion run (its id), one promoted item (its id), or by default the last run."""
        check.ident(target, "run or item id", optional=True)
        return dream_service.undo(self.runtime, target)

    def rem_harness(self, *, path: str | None = None, grounded: bool = False) -> api.HarnessReport:
        """REM's themes and Deep's would-be promotions now, or the grounded reading of the dated
        notes under `path`; writes nothing."""
        check.path(path, "path", optional=True)
        check.flag(grounded, "grounded")
        return dream_service.harness(self.runtime, path=path, grounded=grounded)

    def rem_backfill(self, *, path: str | None = None, stage_short_term: bool = False, rollback: bool = False,
                     rollback_short_term: bool = False) -> api.BackfillReport:
        check.path(path, "path", optional=True)
        for name, value in (("stage short term", stage_short_term), ("rollback", rollback),
                            ("rollback short term", rollback_short_term)):
            check.flag(value, name)
        if rollback or rollback_short_term:
            done = [report(self.runtime) for wanted, report in ((rollback, dream_backfill.rollback),
                    (rollback_short_term, dream_backfill.rollback_short_term)) if wanted]
            # both: one report with both counts (each sets only its own fields)
            return done[0].model_copy(update=done[1].model_dump(exclude_unset=True)) if len(done) == 2 else done[0]
        if path is None:
            raise InputError("rem-backfill needs --path DIR (a folder of YYYY-MM-DD.md notes), or --rollback / "
                             "--rollback-short-term")
        return dream_backfill.backfill(self.runtime, Path(path), stage_short_term=stage_short_term)

    # --- import and export (G4) ----------------------------------------------------------
    def import_openclaw(self, path: str | os.PathLike[str], *, agent: str | None = None, dry_run: bool = False,
                        config: str = "keep", progress: Any = None, accept_models: bool = False) -> dict[str, Any]:
        """Import an OpenClaw state directory (sessions, transcripts, memory files, openclaw.json);
        `config`: keep (never replace an existing clawkeep.json5) | force (replace it, keeping a
        backup) | skip. `progress(total_bytes)` returns a callable advanced by bytes read.
        `accept_models`: apply the archive's model providers, API-key variables and model choices
        (by default they are only reported, under "models", with the command that applies them)."""
        check.path(path, "OpenClaw home")
        check.ident(agent, "agent id", optional=True)
        check.flag(dry_run, "dry run")
        check.choice(config, "config", ("keep", "force", "skip"))
        check.flag(accept_models, "accept models")

        return interop.import_openclaw(self.runtime, Path(path), agent=agent, dry_run=dry_run, config=config,
                                       progress=progress, accept_models=accept_models).to_json()

    def import_jsonl(self, paths: list[str | os.PathLike[str]], *, dry_run: bool = False) -> dict[str, Any]:
        """Import clawkeep JSONL exports (files or directories of them); importing twice changes nothing."""
        for value in paths:
            check.path(value, "export file")
        check.flag(dry_run, "dry run")

        return interop.import_jsonl(self.runtime, [Path(p) for p in paths], dry_run=dry_run).to_json()

    def export_session(self, session: str, out: Any) -> dict[str, Any]:
        """Write one session (key or id) to the text stream `out` in clawkeep's JSONL format."""
        check.ident(session, "session")

        return interop.export_session(self.runtime, session, out)

    def export_all(self, directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """Every session of every agent into `directory/<agent>/<sessionId>.jsonl`."""
        check.path(directory, "directory")

        return interop.export_all(self.runtime, Path(directory))

    def doctor(self, *, repair: bool = False, agent: str | None = None) -> dict[str, Any]:
        """Check every agent database and memory index (or one agent's); `repair` salvages a
        damaged agent.sqlite into a new file (the original is kept) and rebuilds a damaged index."""
        check.flag(repair, "repair")
        check.ident(agent, "agent id", optional=True)

        return doctor_checks.doctor(self.runtime, repair=repair, agent=agent)


def _reports_commits(method: Any) -> Any:
    """A damaged agent.sqlite found part-way through a call: say exactly which of the call's
    writes had already committed (the store's commit journal), instead of guessing."""

    @functools.wraps(method)
    def call(self: Engine, *args: Any, **kwargs: Any) -> Any:
        with commit_journal() as committed:
            try:
                return method(self, *args, **kwargs)
            except CorruptDatabaseError as exc:
                exc.committed = list(committed)
                raise

    return call


for _name, _method in list(vars(Engine).items()):
    if callable(_method) and not _name.startswith("_") and _name not in ("open", "close", "doctor"):
        setattr(Engine, _name, _reports_commits(_method))
