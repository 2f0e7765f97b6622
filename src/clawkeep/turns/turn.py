"""The turn object: one inbound message's state, made when the turn starts and handed to
every step as a parameter (`pipeline.start_turn`; docs/architecture.md lists the steps).

It carries what a step needs of the steps before it and of the call chain the turn runs in:

- `limit`: the credential limit of whoever sent the message (`visibility.Limit`); the turn's
  tools run on an engine under it (`Engine.for_turn`).
- `held`: keys of the sessions whose turn locks are held up this call chain, this turn's own
  included once it is locked (a tool's sessions_send into one of them would wait for itself).
- `index_checked`: whether the memory index was already checked for edits this turn (recall
  and each memory_search of the tool loop come within a second; one check is enough).
- `answering`: ids of the messages this turn answers; a memory_search run for the turn never
  offers their transcript lines back as the answer.

A call from outside any turn (a plain `memory search` from the CLI) passes `turn=None`: no
locks held, the index checked on every search, nothing hidden.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api import RecallResult
from ..routing.router import Route
from ..storage import EntryRecord, SessionRecord
from ..visibility import NO_LIMIT, Limit
from .messages import MessageRequest, TurnEvent

EventSink = Callable[[TurnEvent], None]


@dataclass(eq=False)
class Turn:
    request: MessageRequest
    at: int  # the message's time (epoch ms)
    limit: Limit = NO_LIMIT
    held: tuple[str, ...] = ()
    on_event: EventSink | None = None  # sees the reply's tokens and tool calls as they happen
    started: float = field(default_factory=time.monotonic)
    # filled in by the steps, in order
    route: Route | None = None  # route: the session key and the conversation numbering client ids
    session: SessionRecord | None = None  # session: opened or rolled over (a successor after truncation)
    reset: str | None = None  # ... and the automatic reset that caused, if any
    text: str = ""  # the message answered (for "/new rest": the rest)
    interactive: bool = False  # a person's chat message: recall, freshness, a reply
    inter_session: bool = False  # another session's message (sessions_send): answered, never the user's
    record_only: bool = False  # another system answers: record mode
    model: Any | None = None  # the session's chat model; None in record mode
    recalled: RecallResult | None = None  # recall: Active Memory's result
    entry: EntryRecord | None = None  # transcript: the stored message
    index_checked: bool = False
    answering: frozenset[str] = frozenset()

    @classmethod
    def start(cls, request: MessageRequest, at: int, *, limit: Limit = NO_LIMIT, within: Turn | None = None,
              on_event: EventSink | None = None) -> Turn:
        """A new turn for `request`; `within` is the turn that waits for this one (a
        sessions_send with a timeout): its held locks are this turn's chain too."""
        return cls(request, at, limit=limit, held=within.held if within is not None else (), on_event=on_event,
                   text=request.text, inter_session=request.provenance is not None,
                   record_only=request.record_only)

    def hold(self, key: str) -> None:
        """This turn now holds the lock of session `key`."""
        self.held = (*self.held, key)

    def answer(self, message_id: str | None) -> None:
        """The message the tool loop answers (its line is never offered back by a search)."""
        self.answering = frozenset([message_id]) if message_id else frozenset()
