"""HTTP plumbing shared by the chat providers: one httpx client, timeouts, retries, SSE, error wording."""

from __future__ import annotations

import email.utils
import importlib.metadata
import json
import random
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from ...errors import InputError
from .base import (
    ChatModel,
    ChatResult,
    ContextOverflowError,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
    StreamResult,
    check_messages,
    default_context_window,
    error_detail,
    finished_stream,
    is_context_overflow,
    overflow_token_counts,
)

try:
    _VERSION = importlib.metadata.version("clawkeep")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    _VERSION = "dev"

MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
T = TypeVar("T")
SseEvent = tuple[str, str]  # (event name, data)


def iter_sse(response: httpx.Response) -> Iterator[SseEvent]:
    """Server-sent events as (event, data); comments and unknown fields are skipped."""
    event, data = "", []
    for line in response.iter_lines():
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event or "message", "\n".join(data)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


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
        timeout_s: float = 60.0,
        retries: int = 2,
        retry_backoff_s: float = 0.5,
        retry_after_cap_s: float = 20.0,
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
        self._extra_headers = dict(headers or {})
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    # -- per-protocol hooks ------------------------------------------------------------------

    @abstractmethod
    def _url(self) -> str: ...

    @abstractmethod
    def _headers(self) -> dict[str, str]: ...

    @abstractmethod
    def _body(
        self,
        messages: list[dict[str, str]],
        system: str | None,
        max_tokens: int | None,
        temperature: float | None,
        stream: bool,
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
    ) -> ChatResult:
        body = self._body(
            check_messages(messages), _system(system), self._max_tokens(max_tokens), _temp(temperature), False
        )
        timeout = self._timeout(timeout_s)

        def attempt() -> ChatResult:
            deadline = time.monotonic() + timeout
            response = self._open(body, timeout)
            try:
                raw = self._read(response, MAX_RESPONSE_BYTES, deadline, timeout)
            finally:
                response.close()
            return self._parse(self.decode(raw.decode("utf-8", "replace")))

        return self._with_retries(attempt)

    def stream(
        self,
        messages: list[dict],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
    ) -> StreamResult:
        body = self._body(
            check_messages(messages), _system(system), self._max_tokens(max_tokens), _temp(temperature), True
        )
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

        return self._with_retries(attempt)

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

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

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"User-Agent": f"clawkeep/{_VERSION}"}
                headers.update(self._headers())
                headers.update(self._extra_headers)
                self._client = httpx.Client(headers=headers)
            return self._client

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key and self._api_key in text else text

    def _timed_out(self, what: str, timeout: float) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"{self.ref}: {what} within {timeout:g} s (timeout)", provider=self.provider, model=self.model
        )

    def _unreachable(self, exc: Exception) -> ModelError:
        return ModelError(
            f"{self.ref}: connection to {self.base_url} failed: {self._scrub(str(exc)) or type(exc).__name__}",
            provider=self.provider,
            model=self.model,
            retryable=True,
        )

    def _open(self, body: dict[str, Any], timeout: float) -> httpx.Response:
        """POST and return the open (streaming) response when it is 2xx; raise the mapped error otherwise."""
        client = self._http()
        request = client.build_request("POST", self._url(), json=body, timeout=httpx.Timeout(timeout))
        try:
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            raise self._timed_out("no answer", timeout) from None
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        if 200 <= response.status_code < 300:
            return response
        status = response.status_code
        try:
            text = self._read(response, MAX_ERROR_BYTES, time.monotonic() + timeout, timeout, truncate=True)
        except ModelError:
            text = b""
        finally:
            response.close()
        raise self.error_from_body(
            status,
            text.decode("utf-8", "replace"),
            retryable=status == 429 or status >= 500,
            retry_after_s=parse_retry_after(response.headers.get("retry-after")),
        )

    def _read(
        self, response: httpx.Response, limit: int, deadline: float, timeout: float, truncate: bool = False
    ) -> bytes:
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    if truncate:
                        break
                    raise self.bad_response(f"answer larger than {limit} bytes")
                if time.monotonic() > deadline:
                    raise self._timed_out("no complete answer", timeout)
        except httpx.TimeoutException:
            raise self._timed_out("no complete answer", timeout) from None
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        return b"".join(chunks)[:limit]

    def _guarded(self, response: httpx.Response, timeout: float) -> Generator[str, None, ChatResult]:
        """`_deltas` over the response's SSE, with transport errors mapped and the response closed."""
        try:
            return (yield from self._deltas(iter_sse(response)))
        except httpx.TimeoutException:
            raise self._timed_out("stream stalled: no data", timeout) from None
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        finally:
            response.close()

    def _with_retries(self, attempt: Callable[[], T]) -> T:
        tries = 0
        while True:
            try:
                return attempt()
            except ModelError as exc:
                if not exc.retryable or tries >= self.retries:
                    raise
                delay = exc.retry_after_s
                if delay is None:
                    delay = self.retry_backoff_s * (2**tries) * (1 + random.random() * 0.25)
                time.sleep(min(delay, self.retry_after_cap_s))
                tries += 1


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
    return {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "eos": "stop"}.get(value, value)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
