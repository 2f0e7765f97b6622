"""The chat models of one runtime: built on first use from the `models` config, cached, closed once.

A reference is "<provider>/<model>"; the default chain is `agents.defaults.model` (primary +
fallbacks). No primary means record mode: `chat_model()` answers None.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..config.providers import ModelsConfig


class ChatModels:
    def __init__(self, models_config: ModelsConfig | Mapping[str, Any] | None, primary: str | None,
                 fallbacks: Sequence[str] | None) -> None:
        self._config = models_config
        self._primary = primary
        self._fallbacks = list(fallbacks or [])
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def chat_model(self, ref: str | None = None) -> Any | None:
        """`ref` alone (a named model, e.g. the compaction model), or the default chain; None = no model."""
        primary = ref or self._primary
        if not primary:
            return None
        with self._lock:
            if primary not in self._cache:
                from .chat import create_chain  # deferred: httpx clients, only when a model is used

                self._cache[primary] = create_chain(primary, [] if ref else self._fallbacks, self._config)
            return self._cache[primary]

    def close(self) -> None:
        with self._lock:
            for model in self._cache.values():
                if model is not None:
                    model.close()
            self._cache.clear()
