"""The memory-system metrics of seed 001 §6.2 (G5), counted from the event bus.

Running totals live in the agent database (`AgentStore.add_counters`), so `clawkeep status`,
the gateway's `/v1/metrics` and every process on one database see the same figures. Events are
added up in memory and written in one small transaction at most every FLUSH_SECONDS (and when
the runtime closes): a SIGKILL can lose the last few seconds of counts, never a message.

    turns                      user turns answered or recorded (slash commands excluded)
    compactions                compactions of any cause (threshold, overflow, /compact)
    recall.ran / recall.ok     turns where Active Memory searched / found a line to inject
    injected / adopted         recalled lines injected / that the reply then used (`adopted`)
    memory.remembered / memory.superseded   facts stored / of which replaced an older value
"""

from __future__ import annotations

import re
import threading
import time

from .. import api
from ..events import Compacted, MemoryWritten, TurnCompleted
from ..runtime import Runtime
from ..text import stopwords
from ..text.analyzer import analyze_document

FLUSH_SECONDS = 5.0
RECALL_RAN = ("ok", "none", "timeout", "error")  # "skipped" (not a past question, off, …) is not a try
_LABEL = re.compile(r"^\s*(?:The (?:user|assistant) said(?: on [^:]{1,40})?|Memory(?: \([^)]{0,200}\))?):\s*")
_STOP = stopwords.ENGLISH | stopwords.CJK
ADOPTION_SHARE = 0.3  # of the injected line's content words found in the reply


def _content_words(text: str) -> set[str]:
    return {t for t in analyze_document(text).split() if t not in _STOP and len(t) > 1}


def adopted(injected: str, reply: str) -> bool:
    """Whether a reply used the recalled line: at least 30% of the line's content words (and at
    least two, or its only one) show up in the reply. A lexical proxy, as in seed 001 §6.2:
    it counts paraphrases in another language as not adopted."""
    words = _content_words(_LABEL.sub("", injected))
    if not words or not reply:
        return False
    shared = len(words & _content_words(reply))
    return shared >= min(2, len(words)) and shared >= ADOPTION_SHARE * len(words)


class MetricsRecorder:
    def __init__(self, rt: Runtime):
        self._rt = rt
        self._pending: dict[str, int] = {}
        self._lock = threading.Lock()
        self._flushed = time.monotonic()

    def count(self, **deltas: int) -> None:
        with self._lock:
            for name, value in deltas.items():
                key = name.replace("_", ".")
                self._pending[key] = self._pending.get(key, 0) + value
            due = time.monotonic() - self._flushed >= FLUSH_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        """Write what was counted since the last flush (nothing is created for an agent
        without a database: its counts stay pending until it has one)."""
        with self._lock:
            batch, self._pending = self._pending, {}
            self._flushed = time.monotonic()
        if not batch:
            return
        if not self._rt.has_database():
            with self._lock:
                for name, value in batch.items():
                    self._pending[name] = self._pending.get(name, 0) + value
            return
        self._rt.store().add_counters(batch)

    def pending(self) -> dict[str, int]:
        with self._lock:
            return dict(self._pending)

    # --- event handlers -------------------------------------------------------------
    def on_turn(self, event: TurnCompleted) -> None:
        deltas: dict[str, int] = {"turns": 1, f"turns_{event.mode}": 1, "tools_calls": event.tool_calls}
        if event.recall_status in RECALL_RAN:
            deltas["recall_ran"] = 1
            deltas["recall_ok"] = int(event.recall_status == "ok")
        if event.injected:
            deltas["injected"] = 1
            deltas["adopted"] = int(adopted(event.injected, event.reply or ""))
        self.count(**deltas)

    def on_compacted(self, event: Compacted) -> None:
        self.count(compactions=1)

    def on_memory_written(self, event: MemoryWritten) -> None:
        if event.action == "remember":
            self.count(memory_remembered=1, memory_superseded=int(bool(event.superseded)))


def install(rt: Runtime) -> MetricsRecorder:
    recorder = MetricsRecorder(rt)
    rt.events.subscribe(TurnCompleted, recorder.on_turn)
    rt.events.subscribe(Compacted, recorder.on_compacted)
    rt.events.subscribe(MemoryWritten, recorder.on_memory_written)
    rt.on_close(recorder.flush)
    rt.metrics = recorder
    return recorder


def rates(totals: dict[str, int]) -> api.Metrics:
    """The G5 figures from running totals (None where nothing was counted yet), with the totals."""

    def ratio(part: str, whole: str, scale: float = 1.0) -> float | None:
        return round(scale * totals.get(part, 0) / totals[whole], 4) if totals.get(whole) else None

    return api.Metrics(
        turns=totals.get("turns", 0),
        compactions_per100_turns=ratio("compactions", "turns", 100.0),
        recall_hit_rate=ratio("recall.ok", "recall.ran"),
        supersession_rate=ratio("memory.superseded", "memory.remembered"),
        adoption_rate=ratio("adopted", "injected"),
        tool_calls_per_turn=ratio("tools.calls", "turns"),
        counters=totals,
    )
