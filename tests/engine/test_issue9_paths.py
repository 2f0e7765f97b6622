"""Issue 9: what search returns can be opened, and chat text is what the user meant.

1. `memory get` opens the `extra:…` and `sessions/<id>` paths `memory search` returns (M4, M6),
   inside the roots only and with the session tools' visibility (S8);
2. `sessions history` opens a transcript truncateAfterCompaction archived (C1, S6) — by the
   key plus a hit's message id, and by its own session id;
3. `/new <model>` switches the new session's model instead of storing the name as chat text;
4. `[media attached: …]` / `media://…` text references of old turns are not re-sent (S9).
"""

import json
import os

import pytest

from clawkeep.context.pruning import MEDIA_REMOVED
from clawkeep.errors import InputError, NotFoundError
from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import Reply, ScriptedServer

KEYWORD_ONLY = {"provider": "none"}
TRANSCRIPTS = {"provider": "none", "experimental": {"sessionMemory": True}, "sources": ["memory", "sessions"]}


def config(memory_search=KEYWORD_ONLY, **defaults):
    return {"agents": {"defaults": {"memorySearch": memory_search, **defaults}}}


def write_config(home, data):
    path = home / "clawkeep.json5"
    path.write_text(json.dumps(data))
    return path


# --- 1. memory get opens what memory search returns --------------------------------------------
@pytest.fixture
def extra_root(tmp_path):
    root = tmp_path / "extra"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "harbour.md").write_text("# Boats\n\n- the harbour is at Pier 39\n- the boat is called Marigold\n")
    (tmp_path / "outside.md").write_text("- planted outside the roots\n")
    os.symlink(tmp_path / "outside.md", root / "escape.md")
    return root


def test_memory_get_opens_the_extra_path_memory_search_returns(home, extra_root):
    path = write_config(home, config({**KEYWORD_ONLY, "extraPaths": [str(extra_root)]}))
    assert run_cli(home, "memory", "index", config=path).code == 0
    hits = run_cli(home, "memory", "search", "harbour Pier", "--json", config=path).json()["results"]
    hit = next(h for h in hits if h["path"].startswith("extra:"))
    got = run_cli(home, "memory", "get", hit["path"], "--from", str(hit["startLine"]), "--lines",
                  str(hit["endLine"] - hit["startLine"] + 1), "--json", config=path)
    assert got.code == 0, got.stderr
    data = got.json()
    assert data["path"] == hit["path"] and "the harbour is at Pier 39" in data["text"]
    assert data["from"] == hit["startLine"] and data["totalLines"] == 4


def test_extra_paths_stay_inside_their_roots(home, tmp_path, extra_root):
    engine = open_engine(home, config({**KEYWORD_ONLY, "extraPaths": [str(extra_root)]}))
    engine.memory_remember("I prefer TypeScript")
    workspace = engine.memory_status()["workspace"]
    assert engine.memory_get(f"extra:{extra_root}/sub/harbour.md")["totalLines"] == 4
    for refused in (f"extra:{tmp_path}/outside.md",                # outside every root
                    f"extra:{extra_root}/escape.md",               # a link out of the root
                    f"extra:{extra_root}/sub/../../outside.md",    # dot-dot out of the root
                    f"extra:{workspace}/MEMORY.md"):               # extra: reads the extra roots only
        with pytest.raises(InputError, match="extra root"):
            engine.memory_get(refused)
    with pytest.raises(NotFoundError):
        engine.memory_get(f"extra:{extra_root}/sub/missing.md")


def transcript_hit(engine, query):
    engine.memory_index()
    return next(h for h in engine.memory_search(query)["results"] if h["path"].startswith("sessions/"))


def test_memory_get_opens_a_transcript_hit_at_the_lines_it_names(home):
    engine = open_engine(home, config(TRANSCRIPTS))
    engine.message("good morning", channel="telegram", sender="alice")
    engine.message("morning! how can I help?", role="assistant", channel="telegram", sender="alice")
    engine.message("my password is hunter2", channel="telegram", sender="alice")
    engine.message("/status", channel="telegram", sender="alice")  # commands are not rendered
    engine.message("the blue boat is called Marigold", channel="telegram", sender="alice")
    engine.message("Marigold is a lovely name", role="assistant", channel="telegram", sender="alice")
    hit = transcript_hit(engine, "Marigold boat")
    got = engine.memory_get(hit["path"], from_line=hit["startLine"], lines=hit["endLine"] - hit["startLine"] + 1)
    assert got["path"] == hit["path"] and got["sessionKey"] == hit["sessionKey"]
    assert got["text"].splitlines() == ["User: the blue boat is called Marigold",
                                         "Assistant: Marigold is a lovely name"]
    whole = engine.memory_get(hit["path"])["text"].splitlines()
    assert whole[0].startswith("[") and whole[0].endswith(" UTC]")  # the date line, as indexed
    assert whole[1:] == ["User: good morning", "Assistant: morning! how can I help?",
                         "User: my password is [REDACTED]", "User: the blue boat is called Marigold",
                         "Assistant: Marigold is a lovely name"]  # redacted as indexed, no /status


def test_a_transcript_path_is_readable_only_by_whoever_may_see_the_session(home):
    engine = open_engine(home, {"session": {"dmScope": "per-channel-peer"}, **config(TRANSCRIPTS)})
    alice = engine.message("the spare key is under the blue pot", channel="telegram", sender="alice")
    bob = engine.message("hello there", channel="telegram", sender="bob")
    hit = transcript_hit(engine, "spare key blue pot")
    assert hit["sessionKey"] == alice.session_key
    assert "blue pot" in engine.memory_get(hit["path"], caller=alice.session_key)["text"]
    assert "blue pot" in engine.memory_get(hit["path"])["text"]  # the operator sees every session
    with pytest.raises(NotFoundError) as hidden:
        engine.memory_get(hit["path"], caller=bob.session_key)
    with pytest.raises(NotFoundError) as missing:
        engine.memory_get("sessions/00000000-0000-4000-8000-000000000000", caller=bob.session_key)
    assert str(hidden.value).replace(hit["path"], "P") == str(missing.value).replace(
        "sessions/00000000-0000-4000-8000-000000000000", "P")  # hidden looks exactly like missing


def test_a_transcript_path_needs_transcripts_as_a_memory_source(home):
    engine = open_engine(home, config(KEYWORD_ONLY))
    sent = engine.message("the blue boat is called Marigold")
    with pytest.raises(InputError, match="sessionMemory"):
        engine.memory_get(f"sessions/{sent.session_id}")


# --- 2. sessions history opens a transcript truncateAfterCompaction archived --------------------
def test_history_opens_an_archived_transcript_that_search_still_finds(home):
    path = write_config(home, config(compaction={"truncateAfterCompaction": True, "keepRecentTokens": 50}))
    engine = open_engine(home, json.loads(path.read_text()))
    first = engine.message("the blue boat is called Marigold", channel="telegram", sender="alice",
                           message_id="tg-1")
    for i in range(8):
        engine.message(f"filler {i} about the weather in Lisbon and other things", channel="telegram",
                       sender="alice")
        engine.message(f"reply {i} with a few more words", role="assistant", channel="telegram", sender="alice")
    compacted = engine.message("/compact", channel="telegram", sender="alice")
    assert compacted.status["compacted"] and compacted.session_id != first.session_id  # archived
    hit = engine.sessions_search("Marigold")["hits"][0]
    assert hit["sessionId"] == first.session_id and hit["messageId"] == "tg-1"
    engine.close()
    by_key = run_cli(home, "sessions", "history", first.session_key, "--message-id", hit["messageId"], "--json",
                     config=path)
    assert by_key.code == 0, by_key.stderr
    data = by_key.json()
    assert data["sessionId"] == first.session_id and data["archived"] is True
    assert data["messages"][0]["text"] == "the blue boat is called Marigold"
    by_id = run_cli(home, "sessions", "history", first.session_id, "--json", config=path)
    assert by_id.code == 0, by_id.stderr
    assert by_id.json()["messages"] == data["messages"]
    engine = open_engine(home, json.loads(path.read_text()))
    current = engine.sessions_history(first.session_key)
    assert current["sessionId"] == compacted.session_id and "archived" not in current


def test_an_archived_transcript_keeps_the_visibility_of_its_key(home):
    engine = open_engine(home, {"session": {"dmScope": "per-channel-peer"},
                                **config(compaction={"truncateAfterCompaction": True, "keepRecentTokens": 50})})
    bob = engine.message("hello", channel="telegram", sender="bob", message_id="tg-1")
    # the same channel id in another chat: alice's message gets its own id, "tg-1" stays her client id
    alice = engine.message("the blue boat is called Marigold", channel="telegram", sender="alice",
                           message_id="tg-1")
    assert alice.message_id != "tg-1"
    for i in range(8):
        engine.message(f"filler {i} about the weather in Lisbon and other things", channel="telegram",
                       sender="alice")
    assert engine.message("/compact", channel="telegram", sender="alice").session_id != alice.session_id
    mine = engine.sessions_history(alice.session_id, caller=alice.session_key)
    assert mine["sessionId"] == alice.session_id and mine["archived"] is True
    for mid in (alice.message_id, "tg-1"):  # our id, or the channel's id within this conversation
        opened = engine.sessions_history(alice.session_key, message_id=mid, caller=alice.session_key)
        assert opened["sessionId"] == alice.session_id
        assert opened["messages"][0]["text"] == "the blue boat is called Marigold"
    for ref, mid in ((alice.session_id, None), (alice.session_key, alice.message_id)):
        with pytest.raises(NotFoundError):
            engine.sessions_history(ref, message_id=mid, caller=bob.session_key)


# --- 3. /new <model> --------------------------------------------------------------------------
# models are configured, no primary: record mode, so no reply is attempted
MODELS = {"models": {"providers": {"local": {"api": "openai", "baseUrl": "http://127.0.0.1:9/v1",
                                             "models": {"qwen2.5": {}, "llama3": {}}}}},
          **config()}


def current_texts(engine, key):
    return [m["text"] for m in engine.sessions_history(key)["messages"]]


def test_new_with_a_model_switches_the_model_and_stores_no_chat_text(home):
    engine = open_engine(home, MODELS)
    key = engine.message("hello", channel="telegram", sender="alice").session_key
    switched = engine.message("/new local/llama3", channel="telegram", sender="alice")
    assert switched.command == "reset" and switched.status == {"modelOverride": "local/llama3"}
    assert current_texts(engine, key) == []
    assert engine.session_status(key)["modelOverride"] == "local/llama3"
    assert engine.sessions_search("llama3")["hits"] == []
    again = engine.message("/reset qwen2.5 tell me a joke", channel="telegram", sender="alice")
    assert again.status == {"modelOverride": "local/qwen2.5"}  # a model key, written out in full
    assert current_texts(engine, key) == ["tell me a joke"]
    assert engine.session_status(key)["modelOverride"] == "local/qwen2.5"
    engine.message("/new see you later", channel="telegram", sender="alice")  # not a model: the first message
    assert current_texts(engine, key) == ["see you later"]
    assert engine.session_status(key)["modelOverride"] == "local/qwen2.5"


def test_an_unknown_model_after_new_is_an_error_and_changes_nothing(home):
    path = write_config(home, MODELS)
    assert run_cli(home, "message", "keep this", config=path).code == 0
    result = run_cli(home, "message", "/new local/gpt-9 hi", config=path)
    assert result.code == 2 and "'local/gpt-9'" in result.stderr
    assert "local/qwen2.5" in result.stderr and "local/llama3" in result.stderr
    status = run_cli(home, "sessions", "status", "agent:main:main", "--json", config=path).json()
    assert status["resetCount"] == 0 and "modelOverride" not in status
    history = run_cli(home, "sessions", "history", "agent:main:main", "--json", config=path).json()
    assert [m["text"] for m in history["messages"]] == ["keep this"]


# --- 4. media text references in old turns ----------------------------------------------------
def completion(text):
    return Reply(json={"id": "x", "object": "chat.completion", "model": "scripted-1",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": 10}})


def test_old_media_text_references_are_not_resent_to_the_model(home):
    with ScriptedServer() as server:
        server.add(*[completion(f"answer {i}") for i in range(6)])
        engine = open_engine(home, {
            "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "retries": 0,
                                               "models": {"scripted-1": {"contextWindow": 32000}}}}},
            **config(model={"primary": "local/scripted-1"})})
        engine.message("[media attached: /tmp/in/cat.jpg (image/jpeg) | media://inbound/cat.jpg] what is this?")
        engine.message("and this one media://inbound/dog.png, please")
        for i in range(3):
            engine.message(f"question {i}")
        engine.message("[media attached: /tmp/in/bird.png (image/png)] and now?")
        sent = [m for m in server.requests[-1].json()["messages"] if m["role"] == "user"]
    assert sent[0]["content"] == f"{MEDIA_REMOVED} what is this?"
    assert sent[1]["content"] == f"and this one {MEDIA_REMOVED}, please"
    assert [m["content"] for m in sent[2:5]] == ["question 0", "question 1", "question 2"]
    assert "/tmp/in/bird.png" in sent[-1]["content"]  # the current turn's attachment stays
    text = json.dumps(server.requests[-1].json())
    assert "cat.jpg" not in text and "dog.png" not in text
    # the most recent completed turns are replayed byte-identical
    with ScriptedServer() as server:
        server.add(completion("a"), completion("b"))
        engine = open_engine(home, {
            "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "retries": 0,
                                               "models": {"scripted-1": {"contextWindow": 32000}}}}},
            **config(model={"primary": "local/scripted-1"})})
        engine.sessions_reset("agent:main:main")
        engine.message("[media attached: /tmp/in/fish.jpg (image/jpeg)] look")
        engine.message("what was it?")
        recent = [m for m in server.requests[-1].json()["messages"] if m["role"] == "user"]
    assert recent[0]["content"] == "[media attached: /tmp/in/fish.jpg (image/jpeg)] look"


def test_with_no_models_configured_the_error_names_the_providers_that_take_any_id(home):
    """`/new local/qwen2.5` on a bare home said only "configured models: none", while
    `/new openai/gpt-4o-mini` was accepted: the message now says which providers take any id."""
    refused = run_cli(home, "message", "/new local/qwen2.5 hi")
    assert refused.code == 2 and "'local/qwen2.5'" in refused.stderr
    flat = " ".join(refused.stderr.split())
    assert "configured models: none" in flat and "openai/<model>" in flat and "anthropic/<model>" in flat
    assert run_cli(home, "message", "/new openai/gpt-4o-mini hi").code == 0
