"""Read limits for `clawkeep gateway` (docs/security.md "Browser safety and resource limits"),
enforced by the HTTP protocol while a request is read — before the app, a route or the token
check sees it, so an unauthenticated client cannot make the gateway hold much or wait long:

- the request line and headers over `maxHeaderBytes`, or more than `maxHeaders` header lines → 431;
  the parser holds at most the limit plus one socket read (uvicorn's httptools protocol has no such
  limit: a 64 MiB header was read whole);
- headers not complete within `headerTimeoutSeconds` of the connection (or of the request's first
  byte on a kept-alive connection) → 408 and closed, or just closed when nothing was sent
  (uvicorn has no header timeout: a byte every few seconds kept a connection open for ever);
- a body not complete within `bodyTimeoutSeconds` of its headers → closed (the route sees a
  disconnect and stores nothing);
- a request on a connection beyond `maxConnections` open ones → 503 with `Retry-After`.

The keep-alive timeout is uvicorn's own (`timeout_keep_alive`). `protocol_class(settings)` is
passed to `uvicorn.Config(http=…)`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ..config.gateway import GatewayConfig

RETRY_AFTER_SECONDS = 1  # connections are short: one second is long enough for some to close
LINGER_SECONDS = 2.0  # after a 431, what the client still sends is read and dropped this long


@dataclass(frozen=True)
class ReadLimits:
    max_header_bytes: int
    max_headers: int
    header_timeout: float
    body_timeout: float
    max_connections: int

    @classmethod
    def of(cls, settings: GatewayConfig) -> ReadLimits:
        return cls(settings.max_header_bytes, settings.max_headers, settings.header_timeout_seconds,
                   settings.body_timeout_seconds, settings.max_connections)


def protocol_class(settings: GatewayConfig) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with these settings' read limits (uvicorn builds one per connection)."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"limits": ReadLimits.of(settings)})


def raw_error(status: int, code: str, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
    """A whole HTTP/1.1 response with the gateway's JSON error body, closing the connection."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = [STATUS_LINE[status], b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body), b"connection: close\r\n"]
    head += [name + b": " + value + b"\r\n" for name, value in extra]
    return b"".join([*head, b"\r\n", body])


class _HeadTooLarge(Exception):
    """Raised from a parser callback to stop parsing; data_received answers 431."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    limits: ReadLimits

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._head_seen = 0  # bytes fed to the parser since the request head began (wire bytes)
        self._head_counted = 0  # request line and header bytes as parsed
        self._header_lines = 0
        self._reading_head = True
        self._bytes_this_request = 0
        self._refusal: str | None = None
        self._deadline: asyncio.TimerHandle | None = None

    # --- timers -----------------------------------------------------------------------
    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.limits.header_timeout, self._head_too_slow)  # also a connection that never says a word

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _head_too_slow(self) -> None:
        self._deadline = None
        if self._bytes_this_request and self._idle():
            self._answer(408, "request_timeout", f"the request's headers did not arrive within "
                         f"{self.limits.header_timeout:g} s (gateway.headerTimeoutSeconds); send them at once")
        self._close()

    def _body_too_slow(self) -> None:
        self._deadline = None
        if self.cycle is not None and not self.cycle.response_started:
            self.cycle.disconnected = True  # the route's receive() sees a disconnect; nothing more is sent
            self._answer(408, "request_timeout", f"the request body did not arrive within "
                         f"{self.limits.body_timeout:g} s of its headers (gateway.bodyTimeoutSeconds)")
        self._close()

    # --- reading ----------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._refusal is not None or self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        if self._reading_head:
            self._head_seen += len(data)
        self._bytes_this_request += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._disarm()  # the connection is no longer ours (the gateway has no WebSocket route)
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            if self._refusal is None:
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response("Invalid HTTP request received.")
                return
        if self._refusal is None and self._reading_head and self._head_seen > self.limits.max_header_bytes:
            self._refusal = self._too_large_message()  # still no end of the headers after more than the limit
        if self._refusal is not None:
            if self._idle():
                self._answer(431, "headers_too_large", self._refusal)
            self._linger()

    def _too_large_message(self) -> str:
        return (f"the request line and headers are larger than {self.limits.max_header_bytes} bytes "
                "(gateway.maxHeaderBytes); send fewer or shorter headers")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_counted = self._header_lines = 0
        if self._deadline is None:  # a kept-alive connection's next request: its head has the same deadline
            self._arm(self.limits.header_timeout, self._head_too_slow)

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_lines += 1
        if self._header_lines > self.limits.max_headers:
            self._refusal = (f"the request has more than {self.limits.max_headers} header lines "
                             "(gateway.maxHeaders); send fewer headers")
            raise _HeadTooLarge
        self._count_head(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def _count_head(self, size: int) -> None:
        self._head_counted += size
        if self._head_counted > self.limits.max_header_bytes:
            self._refusal = self._too_large_message()
            raise _HeadTooLarge

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._head_seen = 0
        self._arm(self.limits.body_timeout, self._body_too_slow)
        if len(self.connections) > self.limits.max_connections:
            self.app = _busy  # this connection only, and it closes after the answer
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._reading_head = True
        self._bytes_this_request = 0
        super().on_message_complete()

    # --- answering without the app ----------------------------------------------------
    def _idle(self) -> bool:
        """No request of this connection is being answered (a pipelined one's may be): raw bytes
        written now cannot interleave with a response."""
        return self.cycle is None or self.cycle.response_complete

    def _answer(self, status: int, code: str, message: str) -> None:
        if not self.transport.is_closing():
            self.transport.write(raw_error(status, code, message))

    def _linger(self) -> None:
        """Close after the answer without losing it: a client still sending would get a reset
        that can drop the 431 from its receive buffer. So: end our side, keep reading (and
        dropping) what it sends for a moment, then close."""
        if self.transport.is_closing():
            return
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._arm(LINGER_SECONDS, self._close)
        else:
            self._close()

    def _close(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()


async def _busy(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a request on a connection over `maxConnections` (uvicorn's own 503 says
    neither when to retry nor why)."""
    body = json.dumps({"error": {"code": "busy", "message": "the gateway has as many connections open as "
                                                          "gateway.maxConnections allows; retry in a moment"}})
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                            (b"retry-after", b"%d" % RETRY_AFTER_SECONDS), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body.encode()})
