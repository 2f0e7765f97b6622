"""A small typed event bus: what happened in the engine, for hooks, metrics and Dreaming.

Producers publish after their work is committed; subscribers react. A subscriber that fails
is logged and skipped — an event never fails the operation that published it — so a hook
(the session-memory excerpt, a metrics counter, the Dreaming recall store) can never lose a
message or block a turn. The one exception is a `StorageError` (the durable database is
damaged or locked): that is the caller's business and is raised. Handlers run synchronously
in the publishing thread, in the order they subscribed; one that needs to be slow should hand
the work to its own thread.

    bus = EventBus()
    bus.subscribe(SessionReset, lambda event: print(event.session_key))
    bus.publish(SessionReset(...))
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import StorageError

log = logging.getLogger("clawkeep.events")


@dataclass(frozen=True)
class Event:
    at: int  # ms since the epoch


@dataclass(frozen=True)
class SessionReset(Event):
    """An interval closed (/new, /reset, daily or idle rollover); entries in (after_seq, before_seq)."""

    agent_id: str
    session_key: str
    session_id: str
    reason: str  # manual | daily | idle
    after_seq: int
    before_seq: int
    outputs: dict[str, Any] = field(default_factory=dict)  # what subscribers report (e.g. the excerpt file)


@dataclass(frozen=True)
class MessageRecorded(Event):
    agent_id: str
    session_key: str
    session_id: str
    entry_id: str
    role: str


@dataclass(frozen=True)
class MemorySearched(Event):
    """A memory_search ran (the Dreaming recall store's input): query, hits, who asked."""

    agent_id: str
    query: str
    hits: tuple[dict[str, Any], ...]  # path, startLine, endLine, score, snippet
    session_key: str | None = None
    lexical: bool = False  # ran without vectors (provider none, keyword mode): the scores are keyword scores only


@dataclass(frozen=True)
class RecallTraced(Event):
    """Active Memory decided for one turn."""

    agent_id: str
    session_key: str
    query: str
    status: str
    lane: int | None
    summary: str | None
    elapsed_ms: int
    hits: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Compacted(Event):
    agent_id: str
    session_key: str
    session_id: str
    reason: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class MemoryWritten(Event):
    """A memory file changed through the engine (remember, edit, delete, flush, hook, sweep)."""

    agent_id: str
    action: str
    path: str
    item_id: str | None = None
    session_key: str | None = None
    superseded: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryRefused(Event):
    """A write filter (M7) refused a would-be memory: `remember` (the operator), `tool`
    (memory_remember called as a session), `chat` (record mode's "remember …") or `flush`.
    `text` is the refused text in clear: a subscriber that keeps anything redacts it first."""

    agent_id: str
    source: str
    reason: str
    text: str
    session_key: str | None = None


@dataclass(frozen=True)
class TurnCompleted(Event):
    """A user turn finished (its reply, if any, is recorded): what metrics and logs need."""

    agent_id: str
    session_key: str
    turn_id: str  # the user message's id
    mode: str  # "model" | "record" | "inter-session" (a sessions_send delivery)
    elapsed_ms: int
    recall_status: str | None = None  # Active Memory's status for this turn (None: not run)
    injected: str | None = None  # the recalled line put before the message, if any
    reply: str | None = None
    tool_calls: int = 0
    compacted: bool = False


@dataclass(frozen=True)
class DreamingProgress(Event):
    """A Dreaming sweep reached a step: `started`, `<phase>:done` for light / rem, `deep:planned`
    (MEMORY.md read and the promotions decided, nothing written yet), `deep:written` (MEMORY.md
    replaced, the machine state not yet updated), `finished`. For progress displays and tests."""

    agent_id: str
    run_id: str
    step: str
    details: dict[str, Any] = field(default_factory=dict)


E = TypeVar("E", bound=Event)
Handler = Callable[[Any], None]


@dataclass
class EventBus:
    _handlers: list[tuple[type[Event], Handler]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def subscribe(self, kind: type[E], handler: Callable[[E], None]) -> Callable[[], None]:
        """Call `handler` for every published event of `kind` (or a subclass); returns an unsubscribe."""
        entry = (kind, handler)
        with self._lock:
            self._handlers.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._handlers:
                    self._handlers.remove(entry)

        return unsubscribe

    def publish(self, event: Event) -> None:
        with self._lock:
            handlers = [h for kind, h in self._handlers if isinstance(event, kind)]
        for handler in handlers:
            try:
                handler(event)
            except StorageError:
                raise
            except Exception:  # noqa: BLE001 - a subscriber never fails the publisher
                log.warning("event handler %r failed on %s", handler, type(event).__name__, exc_info=True)
