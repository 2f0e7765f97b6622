"""The typed event bus: what the engine publishes, and that a failing subscriber never fails the work."""

from clawkeep.errors import StorageError
from clawkeep.events import (
    Compacted,
    EventBus,
    MemorySearched,
    MemoryWritten,
    MessageRecorded,
    RecallTraced,
    SessionReset,
)
from tests.helpers.engine import open_engine

CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def collect(engine, *kinds):
    seen = []
    for kind in kinds:
        engine.subscribe(kind, seen.append)
    return seen


def test_a_turn_publishes_recorded_recall_and_reset(home):
    engine = open_engine(home, CONFIG)
    seen = collect(engine, MessageRecorded, RecallTraced, SessionReset, MemorySearched)
    sent = engine.message("what did we decide about the invoices last time?")
    engine.message("/reset")
    kinds = [type(e).__name__ for e in seen]
    assert kinds.count("MessageRecorded") == 1 and "RecallTraced" in kinds and "SessionReset" in kinds
    recorded = next(e for e in seen if isinstance(e, MessageRecorded))
    assert (recorded.session_key, recorded.entry_id, recorded.role) == (sent.session_key, sent.message_id, "user")
    searched = [e for e in seen if isinstance(e, MemorySearched)]
    assert searched and searched[0].session_key == sent.session_key  # lane 2 searched memory for this session
    reset = next(e for e in seen if isinstance(e, SessionReset))
    assert reset.reason == "manual" and reset.outputs.get("sessionMemoryFile")  # the hook answered


def test_memory_writes_and_compaction_are_published(home):
    engine = open_engine(home, {**CONFIG, "agents": {"defaults": {"memorySearch": {"provider": "none"},
                                                                  "compaction": {"keepRecentTokens": 100}}}})
    seen = collect(engine, MemoryWritten, Compacted)
    stored = engine.memory_remember("I prefer TypeScript")
    engine.memory_remember("I prefer Rust")
    engine.memory_edit(stored.item.id, "I prefer Go")
    for i in range(6):
        engine.message(f"note {i} " + "words " * 200)
    engine.message("/compact")
    actions = [e.action for e in seen if isinstance(e, MemoryWritten)]
    assert actions[:3] == ["remember", "remember", "edit"]
    assert next(e for e in seen if isinstance(e, MemoryWritten) and e.superseded).superseded == (stored.item.id,)
    assert any(isinstance(e, Compacted) and e.reason == "manual" for e in seen)


def test_a_failing_subscriber_never_fails_the_publisher(home):
    engine = open_engine(home, CONFIG)

    def broken(event):
        raise RuntimeError("subscriber bug")

    engine.subscribe(MessageRecorded, broken)
    assert engine.message("still stored").message_id
    assert engine.sessions_search("stored")["hits"]


def test_storage_errors_reach_the_caller_and_unsubscribe_works():
    bus, seen = EventBus(), []
    stop = bus.subscribe(MessageRecorded, seen.append)
    event = MessageRecorded(1, "main", "agent:main:main", "s", "e", "user")
    bus.publish(event)
    stop()
    bus.publish(event)
    assert seen == [event]

    def damaged(_):
        raise StorageError("database is corrupt")

    bus.subscribe(MessageRecorded, damaged)
    try:
        bus.publish(event)
    except StorageError:
        pass
    else:
        raise AssertionError("a StorageError must reach the publisher")
