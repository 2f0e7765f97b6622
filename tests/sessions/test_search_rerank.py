"""The rerank stage of sessions_search (tools.sessions.search.rerank, docs/rerank.md): the remote
/rerank API against a scripted server on loopback, the bundled local cross-encoder, the per-query
rule, the fallback when the reranker fails, config errors and `clawkeep status`. The stage sits
above the storage layer: run with --engine-backend postgres too."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest

from clawkeep.config import config_from_dict
from clawkeep.errors import InputError
from clawkeep.models.rerank import bundled_model_dir
from clawkeep.sessions.search import CHARS_PER_TOKEN
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import Reply, ScriptedServer

LOCAL_MISSING = next((name for name in ("onnxruntime", "tokenizers") if importlib.util.find_spec(name) is None), None)
needs_local = pytest.mark.skipif(
    LOCAL_MISSING is not None or bundled_model_dir() is None,
    reason="the optional extra clawkeep[rerank] is not installed: pip install 'clawkeep[rerank]'")

# The keyword ranking puts the messages that repeat the question's words ahead of the one that answers it.
MESSAGES = (
    "Alice keeps asking which city has the best coffee; she moved that question to next week.",
    "The city trains were late again, Alice said, which moved her meeting.",
    "Alice relocated to Lisbon in April and rents a flat near the river.",
)
QUESTION = "Which city did Alice move to?"


def _config(rerank: dict) -> dict:
    return {"tools": {"sessions": {"search": {"rerank": rerank}}}}


def _remote(server: ScriptedServer, **more) -> dict:
    return _config({"provider": "remote", "remote": {"baseUrl": server.url}, **more})


def _written(home: Path, extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Message id → text, written with rerank off."""
    with open_engine(home) as eng:
        return {eng.message(text).message_id: text for text in MESSAGES + extra}


def _ids(eng, query: str, **kw) -> list[str]:
    return [h["messageId"] for h in eng.sessions_search(query, **kw)["hits"]]


def _reversed_scores(request) -> dict:
    docs = request.json()["documents"]  # scores rising with the index: the last document is the most relevant
    return {"results": [{"index": i, "relevance_score": i / 10} for i in reversed(range(len(docs)))]}


# -- remote provider --------------------------------------------------------------------------


def test_remote_rerank_reorders_the_first_candidates_and_marks_them(home: Path):
    texts = _written(home)
    with open_engine(home) as eng:
        plain = _ids(eng, QUESTION, limit=3)
    with ScriptedServer(_reversed_scores) as server:
        with open_engine(home, _remote(server, weight=1.0)) as eng:
            hits = eng.sessions_search(QUESTION, limit=3)["hits"]
    assert len(server.requests) == 1
    sent = server.requests[0].json()
    assert sent["query"] == QUESTION and sent["documents"] == [texts[i] for i in plain]  # the search's order
    # the server scored the last document highest: the hits come in the reverse of the order sent
    assert [h["messageId"] for h in hits] == list(reversed(plain))
    assert [h["rerankScore"] for h in hits] == [0.2, 0.1, 0.0]


def test_the_stage_reads_candidates_beyond_limit_and_shows_limit(home: Path):
    texts = _written(home)
    with open_engine(home) as eng:
        plain = _ids(eng, QUESTION, limit=3)
    with ScriptedServer(_reversed_scores) as server:
        with open_engine(home, _remote(server, weight=1.0, candidates=3)) as eng:
            shown = _ids(eng, QUESTION, limit=1)
    assert len(server.requests[0].json()["documents"]) == 3
    assert shown == [plain[-1]] and texts[shown[0]].startswith("Alice relocated")  # the third hit reached the top


def test_a_long_message_is_cut_before_it_is_sent(home: Path):
    _written(home, ("Alice moved to a new city. " + "She walks to the river every morning. " * 400,))
    with ScriptedServer(_reversed_scores) as server:
        with open_engine(home, _remote(server, maxTokens=32)) as eng:
            eng.sessions_search(QUESTION, limit=4)
    documents = server.requests[0].json()["documents"]
    assert len(documents) == 4
    assert max(len(d) for d in documents) == 32 * CHARS_PER_TOKEN  # the long one, cut; the others whole


# -- failure ----------------------------------------------------------------------------------


def test_a_failing_reranker_keeps_the_search_order_and_says_so_once(home: Path, caplog: pytest.LogCaptureFixture):
    _written(home)
    with open_engine(home) as eng:
        plain = eng.sessions_search(QUESTION, limit=3)["hits"]
    with ScriptedServer(lambda request: Reply(status=503, json={"error": "overloaded"})) as server:
        with open_engine(home, _remote(server)) as eng, caplog.at_level(logging.WARNING):
            first = eng.sessions_search(QUESTION, limit=3)["hits"]
            second = eng.sessions_search(QUESTION, limit=3)["hits"]
    assert len(server.requests) == 2  # asked each time, answered in the search's own order each time
    assert first == plain and second == plain and not any("rerankScore" in h for h in first)
    warned = [r.getMessage() for r in caplog.records if "rerank skipped" in r.getMessage()]
    assert len(warned) == 1 and "HTTP 503" in warned[0]


# -- when the stage applies -------------------------------------------------------------------


def test_cjk_and_mixed_queries_are_not_reranked_nor_cjk_messages_sent(home: Path):
    texts = _written(home, ("爱丽丝四月搬到了里斯本。", "Alice 说 city 很好"))
    with ScriptedServer(_reversed_scores) as server:
        with open_engine(home, _remote(server)) as eng:
            cjk = eng.sessions_search("里斯本", limit=5)["hits"]
            mixed = eng.sessions_search("Alice 搬到了 city", limit=5)["hits"]
            assert server.requests == []  # neither a Chinese nor a mixed-script query reaches the reranker
            english = eng.sessions_search("Alice city", limit=5)["hits"]
    assert cjk and mixed and not any("rerankScore" in h for h in cjk + mixed)
    assert len(server.requests) == 1
    sent = server.requests[0].json()["documents"]
    assert any(texts[h["messageId"]] == "Alice 说 city 很好" for h in english)  # found, but not sent
    assert "Alice 说 city 很好" not in sent and len(sent) == len(english) - 1
    assert [("rerankScore" in h) for h in english] == [texts[h["messageId"]] in sent for h in english]


# -- local provider ---------------------------------------------------------------------------


@needs_local
def test_local_rerank_puts_the_answer_first(home: Path):
    texts = _written(home)
    with open_engine(home) as eng:
        plain = _ids(eng, QUESTION, limit=3)
    assert not texts[plain[0]].startswith("Alice relocated")  # the premise: the keyword ranking misses it
    with open_engine(home, _config({"provider": "local", "weight": 1.0})) as eng:
        hits = eng.sessions_search(QUESTION, limit=3)["hits"]
    assert texts[hits[0]["messageId"]].startswith("Alice relocated")
    assert sorted(h["messageId"] for h in hits) == sorted(plain)  # reordered, nothing lost or added
    assert all(isinstance(h["rerankScore"], float) for h in hits)


def test_local_provider_without_model_files_keeps_the_order_and_names_the_key(home: Path, tmp_path: Path,
                                                                              caplog: pytest.LogCaptureFixture):
    _written(home)
    with open_engine(home) as eng:
        plain = _ids(eng, QUESTION, limit=3)
    with open_engine(home, _config({"provider": "local", "modelDir": str(tmp_path)})) as eng, \
            caplog.at_level(logging.WARNING):
        assert _ids(eng, QUESTION, limit=3) == plain
        shown = eng.status()["sessionsSearchRerank"]
    assert shown["modelDir"] == str(tmp_path)
    warned = " ".join(r.getMessage() for r in caplog.records if "rerank skipped" in r.getMessage())
    assert ("model.onnx" if LOCAL_MISSING is None else "clawkeep[rerank]") in warned


# -- config and status ------------------------------------------------------------------------


@pytest.mark.parametrize("rerank, key, allowed", [
    ({"provider": "cohere"}, "tools.sessions.search.rerank.provider", "'none', 'local' or 'remote'"),
    ({"provider": "local", "candidates": 1}, "tools.sessions.search.rerank.candidates", "greater than or equal to 2"),
    ({"provider": "local", "candidates": 51}, "tools.sessions.search.rerank.candidates", "less than or equal to 50"),
    ({"provider": "local", "weight": 1.5}, "tools.sessions.search.rerank.weight", "less than or equal to 1"),
    ({"provider": "local", "maxTokens": 8}, "tools.sessions.search.rerank.maxTokens", "greater than or equal to 32"),
    ({"provider": "remote"}, "tools.sessions.search.rerank.remote.baseUrl", "http:// or https://"),
    ({"provider": "remote", "remote": {"baseUrl": "ftp://x"}}, "tools.sessions.search.rerank.remote.baseUrl",
     "http:// or https://"),
])
def test_config_errors_name_the_key_and_what_is_allowed(rerank: dict, key: str, allowed: str):
    with pytest.raises(InputError) as info:
        config_from_dict(_config(rerank))
    assert key in str(info.value) and allowed in str(info.value)


def test_off_by_default_and_status_says_what_is_configured(home: Path, cli):
    defaults = config_from_dict({}).tools.sessions.search.rerank
    assert (defaults.provider, defaults.candidates, defaults.weight) == ("none", 20, 0.3)
    with open_engine(home) as eng:
        assert eng.status()["sessionsSearchRerank"] == {"provider": "none"}
    config = home / "clawkeep.json5"
    config.write_text('{ tools: { sessions: { search: { rerank: { provider: "remote", candidates: 12, model: "m1", '
                      'remote: { baseUrl: "http://127.0.0.1:9/v1" } } } } } }')
    with open_engine(home) as eng:
        shown = eng.status()["sessionsSearchRerank"]
    assert shown["provider"] == "remote" and shown["candidates"] == 12 and shown["model"] == "m1"
    assert shown["url"] == "http://127.0.0.1:9/v1" and "Latin" in shown["appliesTo"]
    result = cli("status")
    assert result.code == 0 and "remote · 12 candidates · weight 0.3 · m1" in result.stdout
