"""A real HTTP server on 127.0.0.1 that answers from a script, for testing HTTP clients.

Tests talk to it over a real socket, through the client's real wire protocol, and then assert
on what it received::

    with ScriptedHTTPServer([Reply(json={"data": [...]}), Reply(status=500)]) as server:
        client = make_client(base_url=server.url)
        ...
        assert server.requests[0].path == "/v1/embeddings"
        assert server.requests[0].json()["model"] == "m"

The script is either a sequence (one entry per incoming request, in order) or a callable that
receives each `RecordedRequest` and returns what to answer. An entry is a `Reply`, a dict or
list (answered as JSON, HTTP 200), or a callable taking the request and returning either.
When a sequence runs out, the server answers 500 `{"error": "script exhausted"}` and counts it
in `exhausted`, so a test that expects N requests can see an N+1th.

`Reply` can delay before answering (to provoke client timeouts), answer any status, headers
and raw bytes (garbage JSON), stream the body in pieces with pauses (server-sent events, slow
drips), or drop the connection without answering.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_UNSET: Any = object()


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    json: Any = _UNSET  # serialised as the body with Content-Type application/json
    body: bytes | str = b""  # raw body, used when `json` is not given
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering anything
    stream: Sequence[bytes | str] | None = None  # send these pieces with Transfer-Encoding: chunked
    stream_delay: float = 0.0  # pause before each streamed piece
    close: bool = False  # drop the connection without any answer

    def payload(self) -> bytes:
        if self.json is not _UNSET:
            return json.dumps(self.json).encode("utf-8")
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


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


Entry = Any  # Reply | dict | list | Callable[[RecordedRequest], Reply | dict | list]
Script = Sequence[Entry] | Callable[[RecordedRequest], Any]


class ScriptedHTTPServer:
    """Serve a script on 127.0.0.1 (port 0 = a free port) in a background thread."""

    def __init__(self, script: Script = (), host: str = "127.0.0.1", port: int = 0):
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._script: Script = script
        self._position = 0
        self.requests: list[RecordedRequest] = []
        self.exhausted = 0
        self.errors: list[str] = []  # exceptions raised by callable entries
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedHTTPServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-http", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes delayed replies
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedHTTPServer:
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
                if reply.delay and server._stopping.wait(reply.delay):
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
                    self.send_header("Content-Type", "application/json" if reply.json is not _UNSET else "text/plain")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.stream is not None:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in reply.stream:
                        if reply.stream_delay and server._stopping.wait(reply.stream_delay):
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
