"""The chat providers' side of the HTTP layer (`models.http`): request bodies in, ChatResults or
ModelErrors out — timeouts, retries, size limits and SSE are the shared layer's."""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Generator, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from ...config.providers import ProviderConfig
from ...errors import InputError
from ..errors import ContextOverflowError, ModelError, ModelResponseError, ModelTimeoutError
from ..http import (
    HttpClient,
    RetryPolicy,
    SseEvent,
    WireError,
    WireTimeout,
    WireTooLarge,
    as_wire_error,
    iter_sse,
    parse_retry_after,
    retrying,
)
from .base import (
    ChatModel,
    ChatResult,
    StreamResult,
    check_messages,
    check_tools,
    default_context_window,
    error_detail,
    finished_stream,
    is_context_overflow,
    overflow_token_counts,
)

__all__ = ["MAX_ERROR_BYTES", "MAX_RESPONSE_BYTES", "HttpChatModel", "SseEvent", "as_int", "finish_reason",
           "iter_sse", "parse_retry_after"]

MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
# Defaults of a provider's settings: one place, the config's ProviderConfig.
_DEFAULTS = ProviderConfig()


def _resume(first: str, rest: Generator[str, None, ChatResult]) -> Generator[str, None, ChatResult]:
    try:
        yield first
        return (yield from rest)
    finally:
        rest.close()


class HttpChatModel(ChatModel):
    """Base for providers spoken over HTTP+JSON with SSE streaming."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        base_url: str,
        api_key: str | None = None,
        context_window: int | None = None,
        max_tokens: int | None = None,
        timeout_s: float = _DEFAULTS.timeout_ms / 1000,
        retries: int = _DEFAULTS.retries,
        retry_backoff_s: float = _DEFAULTS.retry_backoff_ms / 1000,
        retry_after_cap_s: float = _DEFAULTS.retry_after_cap_ms / 1000,
        headers: dict[str, str] | None = None,
    ):
        if not model:
            raise InputError(f"provider {provider!r}: model id must not be empty")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InputError(f"provider {provider!r}: baseUrl {base_url!r} must be an http:// or https:// URL")
        self.provider = provider
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.context_window = int(context_window) if context_window else default_context_window(model)
        self.default_max_tokens = max_tokens
        self.timeout_s = float(timeout_s)
        self.retries = max(0, int(retries))
        self.retry_backoff_s = max(0.0, float(retry_backoff_s))
        self.retry_after_cap_s = max(0.0, float(retry_after_cap_s))
        self._api_key = api_key or None
        extra_headers = dict(headers or {})
        self._wire = HttpClient(lambda: {**self._headers(), **extra_headers}, secret=self._api_key)

    @property
    def _retry(self) -> RetryPolicy:
        return RetryPolicy(self.retries, self.retry_backoff_s, self.retry_after_cap_s, jitter=0.25)

    # -- per-protocol hooks ------------------------------------------------------------------

    @abstractmethod
    def _url(self) -> str: ...

    @abstractmethod
    def _headers(self) -> dict[str, str]: ...

    @abstractmethod
    def _body(
        self,
        messages: list[dict[str, Any]],
        system: str | None,
        max_tokens: int | None,
        temperature: float | None,
        stream: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]: ...

    @abstractmethod
    def _parse(self, data: Any) -> ChatResult:
        """A non-streaming answer (already JSON-decoded) as a ChatResult."""

    @abstractmethod
    def _deltas(self, events: Iterator[SseEvent]) -> Generator[str, None, ChatResult]:
        """Yield text deltas from the SSE events; return the final ChatResult."""

    # -- public API --------------------------------------------------------------------------

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
        body = self._body(check_messages(messages), _system(system), self._max_tokens(max_tokens),
                          _temp(temperature), False, check_tools(tools))
        timeout = self._timeout(timeout_s)

        def attempt() -> ChatResult:
            deadline = time.monotonic() + timeout
            response = self._open(body, timeout)
            try:
                raw = self._read(response, MAX_RESPONSE_BYTES, deadline, timeout)
            finally:
                response.close()
            return self._parse(self.decode(raw.decode("utf-8", "replace")))

        return retrying(attempt, self._retry)

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
        body = self._body(check_messages(messages), _system(system), self._max_tokens(max_tokens),
                          _temp(temperature), True, check_tools(tools))
        timeout = self._timeout(timeout_s)

        def attempt() -> StreamResult:
            response = self._open(body, timeout)
            if response.headers.get("content-type", "").startswith("application/json"):
                # The server ignored "stream": answer it as one delta.
                try:
                    raw = self._read(response, MAX_RESPONSE_BYTES, time.monotonic() + timeout, timeout)
                finally:
                    response.close()
                return finished_stream(self._parse(self.decode(raw.decode("utf-8", "replace"))))
            gen = self._guarded(response, timeout)
            try:
                first = next(gen)  # errors before any output can still be retried or fall back
            except StopIteration as stop:
                return finished_stream(stop.value)
            return StreamResult(_resume(first, gen))

        return retrying(attempt, self._retry)

    def close(self) -> None:
        self._wire.close()

    # -- helpers for subclasses --------------------------------------------------------------

    def decode(self, text: str) -> Any:
        if not text.strip():
            raise ModelResponseError(f"{self.ref}: empty response body", provider=self.provider, model=self.model)
        try:
            return json.loads(text)
        except ValueError:
            snippet = text.strip()[:200]
            raise ModelResponseError(
                f"{self.ref}: response is not valid JSON: {snippet!r}", provider=self.provider, model=self.model
            ) from None

    def bad_response(self, what: str) -> ModelResponseError:
        return ModelResponseError(f"{self.ref}: unexpected response: {what}", provider=self.provider, model=self.model)

    def error_from_body(
        self, status: int | None, text: str, *, retryable: bool = False, retry_after_s: float | None = None
    ) -> ModelError:
        """The error an HTTP error body (or an in-band error object) stands for."""
        text = self._scrub(text)
        detail = error_detail(text)
        where = f"HTTP {status}" if status else "error in response"
        if is_context_overflow(text):
            observed, limit = overflow_token_counts(text)
            counts = ", ".join(
                part
                for part in (
                    f"observed {observed} tokens" if observed is not None else "",
                    f"limit {limit}" if limit is not None else "",
                )
                if part
            )
            return ContextOverflowError(
                f"{self.ref}: context overflow ({where}): {detail}" + (f" ({counts})" if counts else ""),
                provider=self.provider,
                model=self.model,
                status=status,
                observed_tokens=observed,
                limit_tokens=limit,
            )
        return ModelError(
            f"{self.ref}: {where}: {detail}",
            provider=self.provider,
            model=self.model,
            status=status,
            retryable=retryable,
            retry_after_s=retry_after_s,
        )

    # -- plumbing ----------------------------------------------------------------------------

    def _max_tokens(self, value: int | None) -> int | None:
        value = self.default_max_tokens if value is None else value
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InputError(f"max_tokens must be a positive integer; got {value!r}")
        return value

    def _timeout(self, value: float | None) -> float:
        value = self.timeout_s if value is None else value
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise InputError(f"timeout_s must be a positive number of seconds; got {value!r}")
        return float(value)

    def _scrub(self, text: str) -> str:
        return self._wire.scrub(text)

    def _timed_out(self, what: str, timeout: float) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"{self.ref}: {what} within {timeout:g} s (timeout)", provider=self.provider, model=self.model
        )

    def _failed(self, exc: WireError, timeout: float, *, timeout_wording: str | None = None) -> ModelError:
        """A wire failure as a ModelError: a timeout is final, a connection failure retryable."""
        if isinstance(exc, WireTimeout):
            return self._timed_out(timeout_wording or exc.detail, timeout)
        if isinstance(exc, WireTooLarge):
            return self.bad_response(exc.detail)
        reason = self._scrub(str(exc.cause)) or type(exc.cause).__name__
        return ModelError(
            f"{self.ref}: connection to {self.base_url} failed: {reason}",
            provider=self.provider,
            model=self.model,
            retryable=True,
        )

    def _open(self, body: dict[str, Any], timeout: float) -> httpx.Response:
        """POST and return the open (streaming) response when it is 2xx; raise the mapped error otherwise."""
        try:
            response = self._wire.open(self._url(), body, timeout)
        except WireError as exc:
            raise self._failed(exc, timeout) from None
        if 200 <= response.status_code < 300:
            return response
        status = response.status_code
        try:
            text = self._wire.read(response, limit=MAX_ERROR_BYTES, deadline=time.monotonic() + timeout, truncate=True)
        except WireError:
            text = b""
        finally:
            response.close()
        raise self.error_from_body(
            status,
            text.decode("utf-8", "replace"),
            retryable=status == 429 or status >= 500,
            retry_after_s=parse_retry_after(response.headers.get("retry-after")),
        )

    def _read(self, response: httpx.Response, limit: int, deadline: float, timeout: float) -> bytes:
        try:
            return self._wire.read(response, limit=limit, deadline=deadline)
        except WireError as exc:
            raise self._failed(exc, timeout) from None

    def _guarded(self, response: httpx.Response, timeout: float) -> Generator[str, None, ChatResult]:
        """`_deltas` over the response's SSE, with transport errors mapped and the response closed."""
        try:
            return (yield from self._deltas(iter_sse(response)))
        except httpx.HTTPError as exc:
            raise self._failed(as_wire_error(exc, reading=True), timeout,
                               timeout_wording="stream stalled: no data") from None
        finally:
            response.close()


def _system(value: str | None) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InputError(f"system must be a string; got {type(value).__name__}")
    return value


def _temp(value: float | None) -> float | None:
    if value is not None and (not isinstance(value, int | float) or isinstance(value, bool) or value < 0):
        raise InputError(f"temperature must be a number >= 0; got {value!r}")
    return value


def finish_reason(value: Any) -> str | None:
    """Normalise provider stop reasons: natural ends → "stop", token limit → "length"."""
    if not isinstance(value, str) or not value:
        return None
    return {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "eos": "stop",
            "tool_use": "tool_calls", "function_call": "tool_calls"}.get(value, value)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
