"""Embedding providers reached over HTTP (httpx, synchronous).

Wire protocols:

- `openai` — OpenAI-compatible `POST {baseUrl}/embeddings` (baseUrl default
  `https://api.openai.com/v1`); body `{"model", "input": [...]}` plus `dimensions` and
  `input_type` when configured; `Authorization: Bearer <key>`; answer `{"data": [{"index",
  "embedding"}]}` (float lists or base64 float32). Covers OpenAI, Ollama's `/v1`, vLLM,
  LM Studio, llama.cpp server and other compatible servers.
- `ollama` — native `POST {baseUrl}/api/embed` (baseUrl default `http://127.0.0.1:11434`);
  body `{"model", "input": [...]}`; answer `{"embeddings": [[...]]}`.
- `gemini` — `POST {baseUrl}/models/{model}:batchEmbedContents` (baseUrl default
  `https://generativelanguage.googleapis.com/v1beta`); key in the `x-goog-api-key` header;
  one request entry per text with `taskType` RETRIEVAL_QUERY / RETRIEVAL_DOCUMENT (and
  `outputDimensionality` when configured); answer `{"embeddings": [{"values": [...]}]}`.
- `voyage` — `POST {baseUrl}/embeddings` (default `https://api.voyageai.com/v1`) with
  `input_type` query/document (and `output_dimension` when configured).
- `mistral` — `POST {baseUrl}/embeddings` (default `https://api.mistral.ai/v1`), OpenAI-shaped;
  queries and documents are embedded the same way.

`timeoutMs` bounds each HTTP request (connect, send, wait, and reading the whole answer).
HTTP 429, 502, 503 and 504 and dropped connections are retried up to `maxRetries` times with
a short backoff (honouring `Retry-After`, capped); everything else fails at once with
`EmbeddingError`.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from ..http import (
    HttpClient,
    RetryPolicy,
    WireBroken,
    WireError,
    WireTimeout,
    WireTooLarge,
    parse_retry_after,
    retrying,
)
from .base import REMOTE_PROVIDER_IDS, EmbeddingError, EmbeddingProvider, Side

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
RETRY_STATUSES = frozenset({429, 502, 503, 504})
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0


class HttpEmbeddingProvider(EmbeddingProvider):
    """What every remote provider shares: the HTTP layer (`models.http`), error wording, JSON parsing."""

    default_base_url: str = ""
    default_model: str = ""
    default_batch_size: int = 128
    max_batch_size: int = 2048
    default_timeout_s: float = 60.0
    model_dims: dict[str, int] = {}
    needs_key: bool = True
    key_env: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        dimensions: int | None = None,
        batch_size: int | None = None,
        timeout_s: float | None = None,
        max_retries: int = 2,
        query_prefix: str = "",
        document_prefix: str = "",
        input_convention: str = "none",
    ):
        model = model or self.default_model
        base = (base_url or self.default_base_url).rstrip("/")
        dims = dimensions
        if dims is None and base == self.default_base_url.rstrip("/"):
            dims = type(self).model_dims.get(model)
        if query_prefix or document_prefix:
            prefix_tag = f"prefix:{query_prefix}|{document_prefix}"
            input_convention = prefix_tag if input_convention == "none" else f"{input_convention};{prefix_tag}"
        super().__init__(
            model=model,
            dims=dims,
            batch_size=min(batch_size or self.default_batch_size, self.max_batch_size),
            timeout_s=timeout_s or self.default_timeout_s,
            input_convention=input_convention,
        )
        self.base_url = base
        self.requested_dimensions = dimensions
        self.max_retries = max(0, int(max_retries))
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._api_key = api_key or None
        self._wire = HttpClient({"Accept": "application/json", **self._auth_headers(self._api_key), **(headers or {})},
                                secret=self._api_key)

    # -- per-protocol hooks ------------------------------------------------------------------

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _prefixed(self, texts: list[str], side: Side) -> list[str]:
        prefix = self.query_prefix if side == "query" else self.document_prefix
        return [prefix + text for text in texts] if prefix else texts

    # -- plumbing ---------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"baseUrl": self.base_url, "apiKey": "set" if self._api_key else "none"})
        return info

    def close(self) -> None:
        self._wire.close()

    def _scrub(self, text: str) -> str:
        return self._wire.scrub(text)

    def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST `body` as JSON to base URL + path and return the decoded JSON answer.

        Retried (up to maxRetries): a dropped connection and HTTP 429/502/503/504; everything else —
        timeouts included — fails at once."""
        url = self.base_url + path
        policy = RetryPolicy(self.max_retries, FIRST_BACKOFF_S, min(MAX_BACKOFF_S, self.timeout_s))
        answer = retrying(lambda: self._attempt(url, body), policy)
        if 300 <= answer.status < 400:
            target = answer.headers.get("location", "?")
            raise self.error(f"HTTP {answer.status} from POST {url} redirects to {target}; set remote.baseUrl to the "
                             "final URL")
        try:
            return json.loads(answer.body)
        except ValueError:
            snippet = self._scrub(answer.body[:120].decode("utf-8", "replace"))
            raise self.error(
                f"answered HTTP {answer.status} with invalid JSON ({len(answer.body)} bytes, starting {snippet!r})"
            ) from None

    def _attempt(self, url: str, body: dict[str, Any]) -> Any:
        """One request: the answer, or an EmbeddingError (`retryable` for what `_post_json` retries)."""
        try:
            answer = self._wire.post(url, body, timeout_s=self.timeout_s, limit=MAX_RESPONSE_BYTES)
        except WireTimeout as exc:
            raise self.error(f"{exc.detail} from POST {url} within {self.timeout_s:g} s (timeoutMs)") from None
        except WireTooLarge:
            raise self.error(f"answer from {url} is larger than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB") from None
        except WireError as exc:
            cause = exc.cause
            what = f"{type(cause).__name__}: {self._scrub(str(cause))}"
            if isinstance(exc, WireBroken):
                raise self._retryable(self.error(f"connection to {url} broke: {what}")) from None
            raise self.error(f"cannot reach {url}: {what}") from None
        if answer.status >= 400:
            error = self.error(f"HTTP {answer.status} from POST {url}: {self._error_detail(answer.body)}")
            if answer.status in RETRY_STATUSES:
                raise self._retryable(error, parse_retry_after(answer.headers.get("retry-after")))
            raise error
        return answer

    @staticmethod
    def _retryable(error: EmbeddingError, retry_after_s: float | None = None) -> EmbeddingError:
        error.retryable = True
        error.retry_after_s = retry_after_s
        return error

    def _error_detail(self, payload: bytes) -> str:
        text = payload.decode("utf-8", "replace")
        detail: Any = None
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            err = data.get("error", data.get("message", data.get("detail")))
            if isinstance(err, dict):
                detail = err.get("message") or err.get("status") or json.dumps(err)[:300]
            elif err is not None:
                detail = err
        if detail is None:
            detail = text.strip() or "(empty body)"
        detail = str(detail)
        if len(detail) > 300:
            detail = detail[:300] + "…"
        return self._scrub(detail)

    def _need_dict(self, data: Any, key: str) -> Any:
        if not isinstance(data, dict) or key not in data:
            shape = (
                type(data).__name__
                if not isinstance(data, dict)
                else "object with keys " + ", ".join(sorted(map(str, data))[:8])
            )
            raise self.error(f"answer has no {key!r} field (got {shape})")
        return data[key]

    def _vector(self, value: Any, i: int) -> Any:
        """A float list, or base64 little-endian float32 (OpenAI `encoding_format: base64`)."""
        if isinstance(value, str):
            try:
                raw = base64.b64decode(value, validate=True)
            except ValueError:
                raise self.error(f"vector {i} is a string that is not base64") from None
            if len(raw) % 4:
                raise self.error(f"vector {i} is base64 of {len(raw)} bytes, not float32s")
            return np.frombuffer(raw, dtype="<f4").astype(np.float64).tolist()
        return value

    def _parse_openai_data(self, data: Any, expected: int) -> list[Any]:
        items = self._need_dict(data, "data")
        if not isinstance(items, list):
            raise self.error(f"'data' is {type(items).__name__}, not a list")
        if len(items) != expected:
            raise self.error(f"returned {len(items)} vectors for {expected} inputs")
        vectors: list[Any] = [None] * expected
        for pos, item in enumerate(items):
            if not isinstance(item, dict) or "embedding" not in item:
                raise self.error(f"data[{pos}] has no 'embedding'")
            index = item.get("index", pos)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
                raise self.error(f"data[{pos}] has index {index!r}, outside 0..{expected - 1}")
            if vectors[index] is not None:
                raise self.error(f"index {index} appears twice in the answer")
            vectors[index] = self._vector(item["embedding"], index)
        return vectors


class OpenAIEmbeddingProvider(HttpEmbeddingProvider):
    """OpenAI and every OpenAI-compatible `/v1/embeddings` server."""

    id = "openai"
    default_base_url = "https://api.openai.com/v1"
    default_model = "text-embedding-3-small"
    default_batch_size = 128
    max_batch_size = 2048
    model_dims = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
    key_env = ("OPENAI_API_KEY",)

    def __init__(self, *, query_input_type: str | None = None, document_input_type: str | None = None, **kw: Any):
        convention = "none"
        if query_input_type or document_input_type:
            convention = f"input_type:{query_input_type or ''}|{document_input_type or ''}"
        self.query_input_type = query_input_type
        self.document_input_type = document_input_type
        super().__init__(input_convention=convention, **kw)

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        body: dict[str, Any] = {"model": self.model, "input": self._prefixed(texts, side)}
        if self.requested_dimensions:
            body["dimensions"] = self.requested_dimensions
        input_type = self.query_input_type if side == "query" else self.document_input_type
        if input_type:
            body["input_type"] = input_type
        return self._parse_openai_data(self._post_json("/embeddings", body), len(texts))


class OllamaEmbeddingProvider(HttpEmbeddingProvider):
    """Ollama's native `/api/embed` (batch input). Dimensions are learned from the first answer."""

    id = "ollama"
    default_base_url = "http://127.0.0.1:11434"
    default_model = "nomic-embed-text"
    default_batch_size = 32
    max_batch_size = 1024
    default_timeout_s = 120.0
    needs_key = False

    def __init__(self, *, base_url: str | None = None, **kw: Any):
        if base_url and base_url.rstrip("/").endswith("/v1"):
            base_url = base_url.rstrip("/")[: -len("/v1")]  # the native API lives at the root
        super().__init__(base_url=base_url, **kw)

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        body: dict[str, Any] = {"model": self.model, "input": self._prefixed(texts, side)}
        if self.requested_dimensions:
            body["dimensions"] = self.requested_dimensions
        vectors = self._need_dict(self._post_json("/api/embed", body), "embeddings")
        if not isinstance(vectors, list):
            raise self.error(f"'embeddings' is {type(vectors).__name__}, not a list")
        return vectors


class GeminiEmbeddingProvider(HttpEmbeddingProvider):
    """Google Gemini API `batchEmbedContents` with retrieval task types."""

    id = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    default_model = "gemini-embedding-001"
    default_batch_size = 100
    max_batch_size = 100  # the API's limit per batch request
    model_dims = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "embedding-001": 768}
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    task_types = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}

    def __init__(self, *, model: str | None = None, **kw: Any):
        if model and model.startswith("models/"):
            model = model[len("models/") :]
        super().__init__(model=model, input_convention="taskType:RETRIEVAL_QUERY|RETRIEVAL_DOCUMENT", **kw)

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        requests = []
        for text in self._prefixed(texts, side):
            entry: dict[str, Any] = {
                "model": f"models/{self.model}",
                "content": {"parts": [{"text": text}]},
                "taskType": self.task_types[side],
            }
            if self.requested_dimensions:
                entry["outputDimensionality"] = self.requested_dimensions
            requests.append(entry)
        data = self._post_json(f"/models/{self.model}:batchEmbedContents", {"requests": requests})
        items = self._need_dict(data, "embeddings")
        if not isinstance(items, list):
            raise self.error(f"'embeddings' is {type(items).__name__}, not a list")
        vectors = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "values" not in item:
                raise self.error(f"embeddings[{i}] has no 'values'")
            vectors.append(item["values"])
        return vectors


class VoyageEmbeddingProvider(HttpEmbeddingProvider):
    """Voyage AI `/v1/embeddings` with `input_type` query/document."""

    id = "voyage"
    default_base_url = "https://api.voyageai.com/v1"
    default_model = "voyage-3.5"
    default_batch_size = 128
    max_batch_size = 1000
    model_dims = {
        "voyage-3.5": 1024,
        "voyage-3.5-lite": 1024,
        "voyage-3-large": 1024,
        "voyage-3": 1024,
        "voyage-3-lite": 512,
        "voyage-code-3": 1024,
        "voyage-multilingual-2": 1024,
    }
    key_env = ("VOYAGE_API_KEY",)

    def __init__(self, **kw: Any):
        super().__init__(input_convention="input_type:query|document", **kw)

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        body: dict[str, Any] = {"model": self.model, "input": self._prefixed(texts, side), "input_type": side}
        if self.requested_dimensions:
            body["output_dimension"] = self.requested_dimensions
        return self._parse_openai_data(self._post_json("/embeddings", body), len(texts))


class MistralEmbeddingProvider(HttpEmbeddingProvider):
    """Mistral `/v1/embeddings` (OpenAI-shaped; no query/document distinction)."""

    id = "mistral"
    default_base_url = "https://api.mistral.ai/v1"
    default_model = "mistral-embed"
    default_batch_size = 32
    max_batch_size = 512
    model_dims = {"mistral-embed": 1024, "codestral-embed": 1536}
    key_env = ("MISTRAL_API_KEY",)

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        body: dict[str, Any] = {"model": self.model, "input": self._prefixed(texts, side)}
        if self.requested_dimensions:
            body["output_dimension"] = self.requested_dimensions
        return self._parse_openai_data(self._post_json("/embeddings", body), len(texts))


REMOTE_PROVIDERS: dict[str, type[HttpEmbeddingProvider]] = {
    cls.id: cls
    for cls in (
        OpenAIEmbeddingProvider,
        OllamaEmbeddingProvider,
        GeminiEmbeddingProvider,
        VoyageEmbeddingProvider,
        MistralEmbeddingProvider,
    )
}
assert tuple(REMOTE_PROVIDERS) == REMOTE_PROVIDER_IDS, "base.REMOTE_PROVIDER_IDS names these providers, in order"
