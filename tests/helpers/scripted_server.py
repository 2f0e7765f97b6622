"""A real HTTP server on 127.0.0.1 that answers from a script: the one model server of the tests.

Chat-model and embedding tests talk to it over a real socket, through the client's real wire
protocol, and then assert on what it received::

    with ScriptedServer() as server:
        server.add(Reply(json={...}), Reply(status=500), Reply(sse=sse_data({...}, "[DONE]")))
        client = make_client(base_url=server.url)
        ...
        assert server.requests[0].path == "/v1/embeddings"
        assert server.requests[0].json()["model"] == "m"

The script is either a sequence (one entry per incoming request, in order; `add` appends,
`set_script` replaces) or a callable that receives each `RecordedRequest` and returns what to
answer. An entry is a `Reply`, a dict or list (answered as JSON, HTTP 200), or a callable taking
the request and returning either. When a sequence runs out, the server answers 500
`{"error": "script exhausted"}` and counts it in `exhausted`, so a test that expects N requests
can see an N+1th.

`Reply` can wait before answering (`delay`, to provoke client timeouts) or never answer
(`hang`), answer any status, headers and raw bytes (garbage JSON), stream the body in pieces
with pauses (`stream`; `sse` is the same with Content-Type text/event-stream), or drop the
connection without answering (`close`).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_UNSET: Any = object()
HANG_LIMIT_S = 30.0  # a hanging reply gives up after this long even if the server is not stopped


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    json: Any = _UNSET  # serialised as the body with Content-Type application/json
    body: bytes | str = b""  # raw body (text/plain unless headers say otherwise), used when `json` is not given
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering anything
    hang: bool = False  # read the request, never answer (until the server stops)
    stream: Sequence[bytes | str] | None = None  # send these pieces with Transfer-Encoding: chunked
    sse: Sequence[str] | None = None  # server-sent event blocks: `stream` as text/event-stream
    stream_delay: float = 0.0  # pause before each streamed piece after the first
    close: bool = False  # drop the connection without any answer

    def payload(self) -> bytes:
        if self.json is not _UNSET:
            return json.dumps(self.json).encode("utf-8")
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body

    def pieces(self) -> Sequence[bytes | str] | None:
        return self.sse if self.sse is not None else self.stream

    def content_type(self) -> str:
        if self.sse is not None:
            return "text/event-stream"
        return "application/json" if self.json is not _UNSET else "text/plain; charset=utf-8"


@dataclass
class RecordedRequest:
    """What the server received."""

    method: str
    target: str  # the raw request target, e.g. "/v1/embeddings?key=x"
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    def json(self) -> Any:
        return json.loads(self.body)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def sse_data(*items: Any) -> list[str]:
    """`data: <json>` blocks (strings are sent verbatim, e.g. "[DONE]")."""
    return [f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n" for item in items]


def sse_events(*pairs: tuple[str, Any]) -> list[str]:
    """`event: <name>` + `data: <json>` blocks."""
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in pairs]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up on a kept-alive connection (a timeout test) is not an error."""
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


Entry = Any  # Reply | dict | list | Callable[[RecordedRequest], Reply | dict | list]
Script = Sequence[Entry] | Callable[[RecordedRequest], Any]


class ScriptedServer:
    """Serve a script on 127.0.0.1 (port 0 = a free port) in a background thread."""

    def __init__(self, script: Script = (), host: str = "127.0.0.1", port: int = 0):
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._script: Script = script
        self._position = 0
        self.requests: list[RecordedRequest] = []
        self.exhausted = 0
        self.errors: list[str] = []  # exceptions raised by callable entries
        self._httpd = _QuietServer((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-http", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes delayed and hanging replies
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script -----------------------------------------------------------------------------

    def set_script(self, script: Script) -> None:
        with self._lock:
            self._script = script
            self._position = 0

    def add(self, *entries: Entry) -> None:
        """Append entries to a sequence script."""
        with self._lock:
            if callable(self._script):
                raise TypeError("the script is a callable; use set_script to replace it")
            self._script = [*self._script, *entries]

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            script = self._script
            if callable(script):
                entry: Entry = script
            elif self._position < len(script):
                entry = script[self._position]
                self._position += 1
            else:
                self.exhausted += 1
                return Reply(status=500, json={"error": "script exhausted"})
        try:
            if callable(entry):
                entry = entry(request)
            return as_reply(entry)
        except Exception as exc:  # a broken test script: answer 500 and keep the message
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return Reply(status=500, json={"error": f"script raised {type(exc).__name__}: {exc}"})

    # -- HTTP -------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

            def _handle(self) -> None:
                body = self._read_body()
                parts = urlsplit(self.path)
                request = RecordedRequest(
                    method=self.command,
                    target=self.path,
                    path=parts.path,
                    query=parse_qs(parts.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = server._next_reply(request)
                wait = HANG_LIMIT_S if reply.hang else reply.delay
                if (wait and server._stopping.wait(wait)) or reply.hang:
                    self.close_connection = True
                    return
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.close_connection = True

            def _read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    pieces = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        pieces.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(pieces)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _send(self, reply: Reply) -> None:
                if reply.close:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                headers = {k.lower(): v for k, v in reply.headers.items()}
                if "content-type" not in headers:
                    self.send_header("Content-Type", reply.content_type())
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                pieces = reply.pieces()
                if pieces is not None:
                    if reply.sse is not None:
                        self.send_header("Cache-Control", "no-cache")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for index, piece in enumerate(pieces):
                        if index and reply.stream_delay and server._stopping.wait(reply.stream_delay):
                            self.close_connection = True
                            return
                        data = piece.encode("utf-8") if isinstance(piece, str) else piece
                        if data:
                            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                            self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                payload = reply.payload()
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        return Handler


def as_reply(entry: Any) -> Reply:
    if isinstance(entry, Reply):
        return entry
    if isinstance(entry, (dict, list)):
        return Reply(json=entry)
    raise TypeError(f"a script entry must be a Reply, dict or list, got {type(entry).__name__}")
