"""A real local HTTP server answering from a script: JSON, raw bodies, SSE streams, delays, hangs.

    with ScriptedChatServer() as server:
        server.script(Reply(json={...}), Reply(status=500, json={...}), Reply(sse=sse_data({...}, "[DONE]")))
        ... point a client at server.url ...
        server.requests  # [Recorded(method, path, headers, body)] in arrival order

Replies are consumed first in, first out; an unscripted request gets HTTP 599.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    json: Any = None  # encoded as the body (Content-Type: application/json)
    body: bytes | str | None = None  # raw body (used when json is None)
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[str] | None = None  # SSE blocks written one at a time (text/event-stream)
    delay_s: float = 0.0  # before the status line
    chunk_delay_s: float = 0.0  # before each SSE block after the first
    hang: bool = False  # accept, read the request, never answer (until the server stops)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def sse_data(*items: Any) -> list[str]:
    """`data: <json>` blocks (strings are sent verbatim, e.g. "[DONE]")."""
    return [f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n" for item in items]


def sse_events(*pairs: tuple[str, Any]) -> list[str]:
    """`event: <name>` + `data: <json>` blocks."""
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in pairs]


class ScriptedChatServer:
    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                owner._handle(self)

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append(
                Recorded(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)
            )
            reply = self._replies.popleft() if self._replies else Reply(status=599, body="unscripted request")
        if reply.hang:
            self._stop.wait(30)
            return
        if reply.delay_s and self._stop.wait(reply.delay_s):
            return
        try:
            handler.send_response(reply.status)
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            if reply.sse is not None:
                if "Content-Type" not in reply.headers:
                    handler.send_header("Content-Type", "text/event-stream")
                handler.send_header("Cache-Control", "no-cache")
                handler.end_headers()  # HTTP/1.0: the body ends when the connection closes
                for index, block in enumerate(reply.sse):
                    if index and reply.chunk_delay_s and self._stop.wait(reply.chunk_delay_s):
                        return
                    handler.wfile.write(block.encode())
                    handler.wfile.flush()
                return
            if reply.json is not None:
                payload = json.dumps(reply.json).encode()
                content_type = "application/json"
            else:
                raw = reply.body or b""
                payload = raw.encode() if isinstance(raw, str) else raw
                content_type = "text/plain; charset=utf-8"
            if "Content-Type" not in reply.headers:
                handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass
