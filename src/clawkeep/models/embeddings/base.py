"""The provider contract shared by every embedding backend (SPEC M5).

A provider turns text into L2-normalised float32 vectors. Subclasses implement one method,
`_embed_batch`, which embeds one batch of already-validated texts for one side (`"query"` or
`"document"`); this base class does the batching, the per-batch deadline bookkeeping, and
validates every answer (count, dimensions, finite numbers, non-zero norm) before anything
reaches the index.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...deferred import deferred_import
from ...errors import ClawkeepError, InputError

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: loads with the first embedding, not with the provider

Side = Literal["query", "document"]
# The remote providers (models.embeddings.remote, which loads the HTTP client): their ids here,
# so choosing or describing a provider imports neither httpx nor numpy.
REMOTE_PROVIDER_IDS: tuple[str, ...] = ("openai", "ollama", "gemini", "voyage", "mistral")


@dataclass(frozen=True)
class SimilarityScale:
    """How a provider's cosine similarities map onto the reference scale, the default `local`
    model's, on which memory_search's minScore and ranking constants were set: scale·cos + offset.
    A model whose cosines sit in a narrow high band (bge: median 0.42-0.49 where USE has 0.08) would
    otherwise pass every threshold."""

    scale: float = 1.0
    offset: float = 0.0

    @property
    def identity(self) -> bool:
        return self.scale == 1.0 and self.offset == 0.0

    def apply(self, cosines: Any) -> Any:
        """The cosines (a number or an array) on the reference scale; untouched when identity."""
        return cosines if self.identity else cosines * self.scale + self.offset


IDENTITY = SimilarityScale()


@dataclass(frozen=True)
class ScaledQuery:
    """A query vector (unit length: what a store compares stored vectors with, by inner product
    or cosine alike) and the map from its cosines onto the reference scale."""

    vector: Any
    scale: SimilarityScale = IDENTITY

    def score(self, cosines: Any) -> Any:
        return self.scale.apply(cosines)


class EmbeddingError(ClawkeepError):
    """An embedding provider failed: timeout, HTTP error, garbage answer, wrong shape.

    The message always names the provider id, the model and what went wrong, and never
    contains an API key.
    """

    code = "embedding_error"
    http_status = 502
    retryable = False  # set on the failures a remote provider retries (models.http.retrying)
    retry_after_s: float | None = None

    def __init__(self, provider: str, model: str, problem: str):
        self.provider = provider
        self.model = model
        self.problem = problem
        super().__init__(f"embedding provider {provider!r} (model {model!r}): {problem}")


class EmbeddingProvider(ABC):
    """One embedding backend. Instances are cheap to create; work starts at the first call.

    Attributes:
        id: provider id ("local", "openai", "ollama", "gemini", "voyage", "mistral").
        model: the model name as sent to the backend (or the canonical local model name).
        batch_size: texts per request (or per local forward call).
        timeout_s: deadline for one batch, in seconds.
        input_convention: how queries and documents are told apart ("none" when they are not);
            part of `fingerprint()`.
        selected_by: how the factory chose this provider (e.g. "auto: OPENAI_API_KEY").
    """

    id: str = "?"
    similarity: SimilarityScale = IDENTITY  # the reference model's own, and remote ones' unless measured

    def __init__(
        self,
        *,
        model: str,
        dims: int | None,
        batch_size: int,
        timeout_s: float,
        input_convention: str = "none",
    ):
        if batch_size < 1:
            raise InputError(f"embedding batch size must be at least 1, got {batch_size}")
        if not timeout_s > 0:
            raise InputError(f"embedding timeout must be positive, got {timeout_s}")
        self.model = model
        self._dims = dims
        self.batch_size = int(batch_size)
        self.timeout_s = float(timeout_s)
        self.input_convention = input_convention
        self.selected_by = "explicit"

    # -- identity ---------------------------------------------------------------------------

    @property
    def dims(self) -> int:
        """Vector dimensions. Known up front for local models and well-known remote models;
        otherwise learned from the first answer — if nothing was embedded yet, reading this
        embeds one short probe text (which can raise `EmbeddingError`)."""
        if self._dims is None:
            self.embed_documents(["dimension probe"])
        assert self._dims is not None
        return self._dims

    @property
    def known_dims(self) -> int | None:
        """Dimensions if already known, without any model call."""
        return self._dims

    def fingerprint(self) -> str:
        """Everything that changes the vectors: provider, model, dims, input convention.

        The memory index stores it and rebuilds every vector when it changes. Reading it may
        probe the dimensions (see `dims`)."""
        return "|".join([self.id, self.model, str(self.dims), self.input_convention, self._version_tag()])

    def _version_tag(self) -> str:
        """Extra identity for backends whose weights ship in a package (local models)."""
        return "remote"

    def describe(self) -> dict[str, Any]:
        """A status summary for `memory status` (never contains credentials)."""
        return {
            "provider": self.id,
            "model": self.model,
            "dims": self._dims,
            "batchSize": self.batch_size,
            "timeoutMs": int(self.timeout_s * 1000),
            "inputConvention": self.input_convention,
            "selectedBy": self.selected_by,
            "similarity": {"scale": self.similarity.scale, "offset": self.similarity.offset},
        }

    # -- embedding --------------------------------------------------------------------------

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to be stored (chunks, notes). Returns float32 (len(texts), dims),
        every row L2-normalised. Splits into batches of `batch_size`; each batch has its own
        deadline of `timeout_s`."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        parts = [
            self._run_batch(items[start : start + self.batch_size], "document")
            for start in range(0, len(items), self.batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query. Returns float32 (dims,), L2-normalised."""
        if not isinstance(text, str):
            raise InputError(f"embedding query must be a string, got {type(text).__name__}")
        return self._run_batch([text], "query")[0]

    def embed_scaled_query(self, text: str) -> ScaledQuery:
        """The query's vector and how its cosines map onto the reference scale (`similarity`)."""
        return ScaledQuery(self.embed_query(text), self.similarity)

    def warm(self) -> None:
        """Load whatever is slow to load (local weights); a no-op for HTTP providers."""
        return None

    def close(self) -> None:
        """Release connections or worker threads. The provider must not be used afterwards."""
        return None

    def __enter__(self) -> EmbeddingProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}/{self.model} dims={self._dims}>"

    @abstractmethod
    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        """Embed one batch; return anything `_as_matrix` accepts (array or list of lists).
        Raise `EmbeddingError` for backend failures."""

    # -- validation -------------------------------------------------------------------------

    def error(self, problem: str) -> EmbeddingError:
        return EmbeddingError(self.id, self.model, problem)

    def _run_batch(self, texts: list[str], side: Side) -> np.ndarray:
        raw = self._embed_batch(texts, side)
        matrix = self._as_matrix(raw, len(texts))
        if self._dims is None:
            self._dims = matrix.shape[1]
        elif matrix.shape[1] != self._dims:
            raise self.error(f"returned {matrix.shape[1]}-dimensional vectors, expected {self._dims}")
        return matrix

    def _as_matrix(self, raw: Any, expected: int) -> np.ndarray:
        """Validate one batch answer and return it as normalised float32 (n, d)."""
        if isinstance(raw, np.ndarray):
            matrix = raw
        else:
            if not isinstance(raw, list):
                raise self.error(f"returned {type(raw).__name__} where a list of vectors was expected")
            if len(raw) != expected:
                raise self.error(f"returned {len(raw)} vectors for {expected} inputs")
            widths = set()
            for i, vector in enumerate(raw):
                if not isinstance(vector, list) or not vector:
                    raise self.error(f"vector {i} is not a non-empty list of numbers")
                if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
                    raise self.error(f"vector {i} contains something that is not a number")
                widths.add(len(vector))
            if len(widths) > 1:
                raise self.error(f"returned vectors of different lengths {sorted(widths)}")
            matrix = np.asarray(raw, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise self.error(f"returned an array of shape {matrix.shape} for {expected} inputs")
        if matrix.shape[1] == 0:
            raise self.error("returned empty vectors")
        matrix = matrix.astype(np.float32, copy=False)
        if not np.all(np.isfinite(matrix)):
            raise self.error("returned NaN or infinite values")
        norms = np.linalg.norm(matrix, axis=1)
        if np.any(norms == 0) or not np.all(np.isfinite(norms)):
            bad = int(np.argmin(norms))
            raise self.error(f"returned a zero-length (all-zero) vector for input {bad}")
        return (matrix / norms[:, None]).astype(np.float32, copy=False)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InputError("embed_documents takes a list of strings, not one string (use embed_query)")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise InputError(f"text {i} to embed is {type(text).__name__}, not a string")
    return items
