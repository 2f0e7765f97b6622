"""sessions_history (S6): intervals, re-opening closed ones, sanitisation, caps."""

import pytest

from clawkeep.errors import NotFoundError
from clawkeep.sessions import transcript
from clawkeep.storage import EntryRecord


def texts(view):
    return [m["text"] for m in view["messages"]]


def test_returns_interval_after_latest_boundary(engine):
    a = engine.message("first interval one")
    engine.message("first interval two", role="assistant")
    engine.message("/reset")
    engine.message("second interval")
    view = engine.sessions_history(a.session_key)
    assert texts(view) == ["second interval"]
    assert view["sessionKey"] == a.session_key and view["sessionId"] == a.session_id
    assert {"truncated", "droppedMessages", "contentTruncated", "contentRedacted", "bytes"} <= set(view)


def test_message_id_reopens_exactly_that_closed_interval(engine):
    a1 = engine.message("alpha one")
    engine.message("alpha two")
    engine.message("/reset")
    b1 = engine.message("beta one")
    engine.message("/reset")
    engine.message("gamma one")
    assert texts(engine.sessions_history(a1.session_key, message_id=a1.message_id)) == ["alpha one", "alpha two"]
    assert texts(engine.sessions_history(a1.session_key, message_id=b1.message_id)) == ["beta one"]
    assert texts(engine.sessions_history(a1.session_id)) == ["gamma one"]


def test_unknown_message_id_is_not_found(engine):
    a = engine.message("x")
    with pytest.raises(NotFoundError, match="message 'nope' not found"):
        engine.sessions_history(a.session_key, message_id="nope")


def test_history_by_session_id_and_missing_session(engine):
    a = engine.message("hello")
    assert texts(engine.sessions_history(a.session_id)) == ["hello"]
    with pytest.raises(NotFoundError, match="not found"):
        engine.sessions_history("agent:main:telegram:direct:ghost")


def test_sanitised_and_redacted(engine):
    a = engine.message(
        "here <think>secret plan</think>visible <|im_end|> and sk-abc123def456ghi789jkl012", role="assistant"
    )
    view = engine.sessions_history(a.session_key)
    assert texts(view) == [texts(view)[0]]
    text = texts(view)[0]
    assert "secret plan" not in text and "<|im_end|>" not in text and "abc123def456" not in text
    assert "visible" in text and view["contentRedacted"] is True


def test_include_tools(engine):
    a = engine.message("lint it")
    store = engine.runtime.store()
    transcript.append(
        store,
        EntryRecord(
            "call-1",
            a.session_id,
            "message",
            5,
            role="assistant",
            content=[{"type": "toolCall", "id": "c1", "name": "lint", "arguments": {"path": "src"}}],
        ),
    )
    transcript.append(
        store,
        EntryRecord(
            "res-1",
            a.session_id,
            "message",
            6,
            role="tool",
            content=[{"type": "toolResult", "toolCallId": "c1", "content": "3 warnings", "isError": False}],
        ),
    )
    assert texts(engine.sessions_history(a.session_key)) == ["lint it"]
    with_tools = texts(engine.sessions_history(a.session_key, include_tools=True))
    assert len(with_tools) == 3 and "lint" in with_tools[1] and "3 warnings" in with_tools[2]


def test_caps_4000_chars_per_block_and_80kb_total(engine):
    a = engine.message("x" * 5000)
    view = engine.sessions_history(a.session_key)
    assert view["contentTruncated"] is True and len(texts(view)[0]) < 4100
    for i in range(30):
        engine.message(f"{i} " + "y" * 3990)
    view = engine.sessions_history(a.session_key)
    assert view["truncated"] is True and view["droppedMessages"] > 0
    assert view["bytes"] <= 80 * 1024
    assert texts(view)[-1].startswith("29 ")  # the newest rows survive; the oldest were dropped


def test_cjk_text_counts_bytes_not_chars(engine):
    a = engine.message("上海" * 1900)
    view = engine.sessions_history(a.session_key)
    assert view["bytes"] > 1900 * 2 * 3
