"""`FallbackChain`: try models in order on failure; a context overflow goes straight to the caller."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ...errors import InputError
from ..errors import ContextOverflowError, ModelError, ModelTimeoutError
from .base import ChatModel, ChatResult, StreamResult

T = TypeVar("T")


class FallbackChain(ChatModel):
    """A ChatModel that asks `models[0]`, then the next one on ModelError / ModelTimeoutError.

    ContextOverflowError is raised at once (the caller compacts and asks again; a fallback with
    a different window would only hide the problem). When every model fails, the error lists
    each failure; it is a ModelTimeoutError when all of them timed out. `provider`, `model` and
    `context_window` are the primary's. `last_model` / `last_errors` describe the most recent
    call (per-call truth is `ChatResult.provider`/`.model`, which name the model that answered).
    For `stream`, fallback happens only before the first delta (the request is sent and the
    first delta read when `stream` is called).
    """

    def __init__(self, models: Sequence[ChatModel]):
        self.models = list(models)
        if not self.models:
            raise InputError("a fallback chain needs at least one model")
        primary = self.models[0]
        self.provider, self.model, self.context_window = primary.provider, primary.model, primary.context_window
        self.last_model: ChatModel | None = None
        self.last_errors: list[ModelError] = []

    def complete(
        self,
        messages: list[dict],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ChatResult:
        options: dict[str, Any] = {
            "system": system,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "timeout_s": timeout_s,
            "tools": tools,
        }
        return self._run(lambda m: m.complete(messages, **options))

    def stream(
        self,
        messages: list[dict],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> StreamResult:
        options: dict[str, Any] = {
            "system": system,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "timeout_s": timeout_s,
            "tools": tools,
        }
        return self._run(lambda m: m.stream(messages, **options))

    def close(self) -> None:
        for model in self.models:
            model.close()

    def _run(self, call: Callable[[ChatModel], T]) -> T:
        errors: list[ModelError] = []
        self.last_model, self.last_errors = None, errors
        for model in self.models:
            try:
                answer = call(model)
            except ContextOverflowError:
                raise
            except ModelError as exc:
                errors.append(exc)
                continue
            self.last_model = model
            return answer
        cls = ModelTimeoutError if all(isinstance(e, ModelTimeoutError) for e in errors) else ModelError
        summary = "; ".join(str(e) for e in errors)
        error = cls(
            f"all {len(errors)} models of the fallback chain failed: {summary}",
            provider=self.provider,
            model=self.model,
        )
        error.errors = errors  # type: ignore[attr-defined]
        raise error from errors[-1]

    def __repr__(self) -> str:
        return f"<FallbackChain {' -> '.join(m.ref for m in self.models)}>"
