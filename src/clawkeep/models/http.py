"""The one HTTP layer every model provider speaks through (chat models and embeddings).

`HttpClient` owns one httpx client (User-Agent `clawkeep/<version>` plus the provider's
headers, created on first use), sends POST requests with a per-request timeout, reads answers
against a deadline and a size limit, and hides the API key in any text it hands back.
`retrying` runs an attempt again while it fails with a retryable error (`retryable` set on the
error), waiting the server's `Retry-After` (delta-seconds or HTTP-date) or an exponential
backoff, both capped by the `RetryPolicy`.

Failures on the wire are `WireError`s: `WireTimeout` (no answer / no complete answer within the
timeout), `WireUnreachable` (no connection could be made), `WireBroken` (the connection broke
mid-exchange) and `WireTooLarge`. Each provider words them in its own error type and decides
which ones it retries (chat: connection failures, 429 and 5xx; embeddings: dropped connections
and 429/502/503/504).
"""

from __future__ import annotations

import email.utils
import importlib.metadata
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from ..errors import ClawkeepError
from .errors import WireBroken, WireError, WireTimeout, WireTooLarge, WireUnreachable

try:
    _VERSION = importlib.metadata.version("clawkeep")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    _VERSION = "dev"

USER_AGENT = f"clawkeep/{_VERSION}"
T = TypeVar("T")
SseEvent = tuple[str, str]  # (event name, data)


_BROKEN = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


def as_wire_error(exc: httpx.HTTPError, *, reading: bool) -> WireError:
    """The WireError an httpx failure stands for (`reading`: after the answer started)."""
    if isinstance(exc, httpx.TimeoutException):
        return WireTimeout(complete=reading, cause=exc)
    if isinstance(exc, _BROKEN):
        return WireBroken(str(exc), exc)
    return WireUnreachable(str(exc), exc)


# -- the client -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A whole answer: status, headers and body (as read within the limit)."""

    status: int
    headers: httpx.Headers
    body: bytes


class HttpClient:
    """POST JSON to one provider. Thread-safe; `close()` drops the connections (a later call reopens)."""

    def __init__(self, headers: Mapping[str, str] | Callable[[], Mapping[str, str]] = (), *,
                 secret: str | None = None):
        self._headers = headers
        self._secret = secret or None
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def scrub(self, text: str) -> str:
        """`text` with the API key replaced by ***."""
        return text.replace(self._secret, "***") if self._secret and self._secret in text else text

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                extra = self._headers() if callable(self._headers) else self._headers
                self._client = httpx.Client(headers={"User-Agent": USER_AGENT, **dict(extra)})
            return self._client

    def open(self, url: str, body: Any, timeout_s: float) -> httpx.Response:
        """Send the request; the (streaming) response is returned whatever its status — close it."""
        client = self._http()
        request = client.build_request("POST", url, json=body, timeout=httpx.Timeout(timeout_s))
        try:
            return client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise as_wire_error(exc, reading=False) from None

    def read(self, response: httpx.Response, *, limit: int, deadline: float, truncate: bool = False) -> bytes:
        """The body, at most `limit` bytes (more: WireTooLarge, or cut when `truncate`), by `deadline`
        (time.monotonic(); a slow drip that passes it is a WireTimeout even if each piece came in time)."""
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    if truncate:
                        break
                    raise WireTooLarge(limit)
                if time.monotonic() > deadline:
                    raise WireTimeout(complete=True)
        except httpx.HTTPError as exc:
            raise as_wire_error(exc, reading=True) from None
        return b"".join(chunks)[:limit]

    def post(self, url: str, body: Any, *, timeout_s: float, limit: int) -> Answer:
        """Send and read the whole answer (any status) within `timeout_s` in total."""
        deadline = time.monotonic() + timeout_s
        response = self.open(url, body, timeout_s)
        try:
            return Answer(response.status_code, response.headers,
                          self.read(response, limit=limit, deadline=deadline))
        finally:
            response.close()

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


# -- server-sent events -----------------------------------------------------------------------


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


# -- retries ----------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class RetryPolicy:
    """`retries` more attempts after the first; wait Retry-After, else `backoff_s` doubled per retry
    (plus up to `jitter` of it at random), never longer than `cap_s`."""

    retries: int
    backoff_s: float
    cap_s: float
    jitter: float = 0.0

    def wait(self, tries: int, retry_after_s: float | None) -> float:
        delay = retry_after_s
        if delay is None:
            delay = self.backoff_s * 2**tries * (1 + random.random() * self.jitter)
        return max(0.0, min(delay, self.cap_s))


def retrying(attempt: Callable[[], T], policy: RetryPolicy) -> T:
    """`attempt()`, again while it raises a ClawkeepError marked `retryable` and retries remain."""
    tries = 0
    while True:
        try:
            return attempt()
        except ClawkeepError as exc:
            if not getattr(exc, "retryable", False) or tries >= policy.retries:
                raise
            time.sleep(policy.wait(tries, getattr(exc, "retry_after_s", None)))
            tries += 1
