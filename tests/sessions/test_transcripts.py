"""Transcripts (S2) and lifecycle (S3): entries, ids, boundaries, forks, freshness."""

from clawkeep.sessions import transcript
from tests.helpers.engine import open_engine


def entries(engine, session_id):
    return list(engine.runtime.store().iter_entries(session_id))


def test_messages_get_stable_ids_and_are_stored_in_order(engine):
    first = engine.message("one")
    second = engine.message("two", role="assistant")
    assert first.message_id != second.message_id
    assert first.session_id == second.session_id
    stored = [e for e in entries(engine, first.session_id) if e.type == "message"]
    assert [(e.entry_id, e.role, transcript.plain_text(e.content)) for e in stored] == [
        (first.message_id, "user", "one"), (second.message_id, "assistant", "two")]
    assert entries(engine, first.session_id)[0].type == "session"  # header entry first


def test_client_message_id_is_idempotent(engine):
    a = engine.message("pay the invoice", message_id="tg-1001")
    b = engine.message("pay the invoice", message_id="tg-1001")
    assert a.message_id == b.message_id == "tg-1001"
    assert b.duplicate and not a.duplicate
    assert sum(1 for e in entries(engine, a.session_id) if e.type == "message") == 1
    assert len(engine.sessions_search("invoice")["hits"]) == 1


def test_reset_keeps_key_and_id_and_appends_a_boundary(engine):
    before = engine.message("remember the blue door")
    result = engine.message("/reset")
    after = engine.message("new topic")
    assert result.command == "reset" and result.message_id is None
    assert before.session_key == after.session_key and before.session_id == after.session_id
    kinds = [e.type for e in entries(engine, before.session_id)]
    assert kinds == ["session", "message", "reset", "message"]
    # nothing is deleted: the old message is still searchable
    assert engine.sessions_search("blue door")["hits"][0]["messageId"] == before.message_id


def test_new_with_text_passes_the_rest_through(engine):
    result = engine.message("/new what's the weather")
    assert result.command == "reset" and result.message_id
    history = engine.sessions_history(result.session_key)
    assert [m["text"] for m in history["messages"]] == ["what's the weather"]


def test_slash_commands_are_not_stored_as_chat(engine):
    engine.message("hi")
    status = engine.message("/status")
    assert status.command == "status" and status.status["messageCount"] == 1
    texts = [transcript.plain_text(e.content) for e in entries(engine, status.session_id) if e.type == "message"]
    assert texts == ["hi"]


def test_fork_creates_child_with_parent_pointer_parent_untouched(engine):
    parent = engine.message("plan: migrate the database on friday")
    before = [e.entry_id for e in entries(engine, parent.session_id)]
    child = engine.sessions_fork(parent.session_key)
    assert child["sessionId"] != parent.session_id and child["kind"] == "dashboard"
    status = engine.session_status(child["key"])
    assert status["parentSessionId"] == parent.session_id
    engine.message("only in the child", session=child["key"])
    assert [e.entry_id for e in entries(engine, parent.session_id)] == before
    texts = [m["text"] for m in engine.sessions_history(child["key"])["messages"]]
    assert texts == ["plan: migrate the database on friday", "only in the child"]


def test_explicit_at_sets_message_time(engine):
    result = engine.message("from the past", at="2025-01-02T03:04:05Z")
    history = engine.sessions_history(result.session_key)
    assert history["messages"][0]["timestamp"] == "2025-01-02T03:04:05.000Z"


def test_daily_reset_at_four_based_on_session_start(home):
    eng = open_engine(home, {"session": {"reset": {"timezone": "UTC"}}})
    first = eng.message("evening", at="2026-03-01T22:00:00Z")
    same = eng.message("still night", at="2026-03-02T03:59:00Z")
    assert same.reset is None
    rolled = eng.message("morning", at="2026-03-02T04:00:01Z")
    assert rolled.reset == "daily" and rolled.session_id == first.session_id
    # the new interval started at 04:00:01, so no second reset the same day
    assert eng.message("noon", at="2026-03-02T12:00:00Z").reset is None
    assert [m["text"] for m in eng.sessions_history(first.session_key)["messages"]] == ["morning", "noon"]


def test_daily_reset_hour_is_local_time_of_the_configured_zone(home):
    eng = open_engine(home, {"session": {"reset": {"timezone": "Asia/Shanghai", "atHour": 4}}})
    eng.message("a", at="2026-03-01T10:00:00+08:00")
    assert eng.message("b", at="2026-03-02T03:30:00+08:00").reset is None
    assert eng.message("c", at="2026-03-02T04:30:00+08:00").reset == "daily"


def test_idle_reset_uses_last_interaction(home):
    eng = open_engine(home, {"session": {"reset": {"mode": "idle", "idleMinutes": 60}}})
    eng.message("a", at="2026-03-01T10:00:00Z")
    assert eng.message("b", at="2026-03-01T10:59:00Z").reset is None
    assert eng.message("c", at="2026-03-01T11:58:00Z").reset is None  # 59 min after b
    assert eng.message("d", at="2026-03-01T13:00:00Z").reset == "idle"


def test_daily_and_idle_whichever_first(home):
    eng = open_engine(home, {"session": {"reset": {"mode": "daily", "idleMinutes": 30, "timezone": "UTC"}}})
    eng.message("a", at="2026-03-01T10:00:00Z")
    assert eng.message("b", at="2026-03-01T10:45:00Z").reset == "idle"
    assert eng.message("c", at="2026-03-02T04:10:00Z").reset == "daily"


def test_system_events_never_extend_freshness(home):
    eng = open_engine(home, {"session": {"reset": {"mode": "idle", "idleMinutes": 60}}})
    msg = eng.message("hello", at="2026-03-01T10:00:00Z")
    for minute in (30, 50, 70, 90):
        eng.system_event(msg.session_key, f"heartbeat ok {minute}", at=f"2026-03-01T11:{minute - 60:02d}:00Z"
                         if minute >= 60 else f"2026-03-01T10:{minute:02d}:00Z")
    status = eng.session_status(msg.session_key)
    assert status["lastInteractionAt"] == "2026-03-01T10:00:00.000Z"
    assert eng.message("back", at="2026-03-01T11:35:00Z").reset == "idle"


def test_heartbeat_session_messages_do_not_reset_or_refresh(home):
    eng = open_engine(home, {"session": {"reset": {"mode": "idle", "idleMinutes": 10}}})
    beat1 = eng.message("tick", channel="heartbeat", at="2026-03-01T10:00:00Z")
    beat2 = eng.message("tick", channel="heartbeat", at="2026-03-01T12:00:00Z")
    assert beat2.reset is None and beat1.session_id == beat2.session_id
    assert eng.session_status(beat1.session_key)["lastInteractionAt"] is None


def test_queued_system_notices_are_dropped_on_rollover(home):
    eng = open_engine(home, {"session": {"reset": {"mode": "idle", "idleMinutes": 60}}})
    msg = eng.message("hello", at="2026-03-01T10:00:00Z")
    eng.system_event(msg.session_key, "cron: backup finished", at="2026-03-01T10:10:00Z")
    eng.system_event(msg.session_key, "cron: disk 91%", at="2026-03-01T10:20:00Z")
    assert eng.session_status(msg.session_key)["pendingNotices"] == 2
    assert eng.message("later", at="2026-03-01T12:00:00Z").reset == "idle"
    assert eng.session_status(msg.session_key)["pendingNotices"] == 0
    boundary = [e for e in entries(eng, msg.session_id) if e.type == "reset"][0]
    assert boundary.meta == {"reason": "idle", "droppedNotices": 2}


def test_reset_by_channel_beats_by_type_beats_default(home):
    eng = open_engine(home, {"session": {
        "dmScope": "per-channel-peer",
        "reset": {"mode": "none"},
        "resetByType": {"direct": {"mode": "idle", "idleMinutes": 10}},
        "resetByChannel": {"slack": {"mode": "none"}},
    }})
    eng.message("a", channel="telegram", sender="x", at="2026-03-01T10:00:00Z")
    assert eng.message("b", channel="telegram", sender="x", at="2026-03-01T11:00:00Z").reset == "idle"
    eng.message("a", channel="slack", sender="x", at="2026-03-01T10:00:00Z")
    assert eng.message("b", channel="slack", sender="x", at="2026-03-01T11:00:00Z").reset is None


def test_assistant_messages_are_recorded_without_a_reset(home):
    eng = open_engine(home, {"session": {"reset": {"mode": "idle", "idleMinutes": 1}}})
    eng.message("q", at="2026-03-01T10:00:00Z")
    reply = eng.message("an answer", role="assistant", at="2026-03-01T10:30:00Z")
    assert reply.reset is None and reply.role == "assistant"


def test_tool_results_and_reasoning_are_kept_but_not_indexed(engine):
    msg = engine.message("run the linter")
    store = engine.runtime.store()
    from clawkeep.storage import EntryRecord
    transcript.append(store, EntryRecord("a1", msg.session_id, "message", 1, role="assistant", content=[
        {"type": "thinking", "thinking": "zebrathought"},
        {"type": "toolCall", "id": "c1", "name": "lint", "arguments": {"path": "zebrapath"}},
        {"type": "text", "text": "running the check immediately"}]))
    transcript.append(store, EntryRecord("t1", msg.session_id, "message", 2, role="tool", content=[
        {"type": "toolResult", "toolCallId": "c1", "content": "zebraoutput 3 warnings", "isError": False}]))
    for secret_word in ("zebrathought", "zebrapath", "zebraoutput"):
        assert engine.sessions_search(secret_word)["hits"] == []
    assert [h["messageId"] for h in engine.sessions_search("immediately")["hits"]] == ["a1"]
    assert store.get_entry("t1") is not None
