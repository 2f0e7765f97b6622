"""A loopback TCP proxy in front of a real PostgreSQL server that counts round trips on the wire.

A round trip is each time the client hands the server a complete request and waits for its
answer: a simple Query ('Q'), an extended-protocol Sync ('S'), or a Flush ('H', which psycopg's
pipeline mode sends to read a result before the Sync; an 'H' right behind an 'S' rides with it
and is not counted). A statement's preparation (a named Parse synced
alone, no Execute: psycopg prepares a statement on its fifth use on a connection, then only binds
it) waits too, but once per pooled connection, not per operation: it is counted apart, in
`prepares`. So is the traffic of a connection whose first query is a LISTEN (a store's
generation listener, storage/postgres/notify.py: set up once per store and process, then an
occasional keep-alive from its own thread), in `listener_trips`. The proxy parses the frontend
message stream (startup packet first, then
typed messages `type:1 length:4 body`) and counts those; with `delay_ms` it also holds each
one back that long, as a server on another host would (bench/postgres_bench.py's 1 ms row).

The upstream may be a TCP host:port or a Unix socket (the pgserver bundle's `?host=/dir` URL).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

_SSL_REQUEST = 80877103
_GSS_REQUEST = 80877104


def _upstream(url: str) -> tuple[int, object]:
    parts = urlsplit(url)
    host = parse_qs(parts.query).get("host", [parts.hostname or "localhost"])[0]
    port = parts.port or 5432
    if host.startswith("/"):
        return socket.AF_UNIX, f"{host}/.s.PGSQL.{port}"
    return socket.AF_INET, (host, port)


def _proxied_url(url: str, port: int) -> str:
    parts = urlsplit(url)
    query = {k: v for k, v in parse_qs(parts.query).items() if k != "host"}
    query["sslmode"] = ["disable"]
    user = parts.username or ""
    auth = f"{user}:{parts.password}@" if parts.password else (f"{user}@" if user else "")
    return urlunsplit((parts.scheme, f"{auth}127.0.0.1:{port}", parts.path, urlencode(query, doseq=True), ""))


class WireCounter:
    """`with WireCounter(url) as proxy:` then use `proxy.url`; `proxy.trips` counts round trips
    since the last `proxy.reset()`, `proxy.connections` the connections opened."""

    def __init__(self, url: str, *, delay_ms: float = 0.0):
        self.target = _upstream(url)
        self.delay = delay_ms / 1000
        self.trips = 0
        self.prepares = 0  # Syncs that only prepared a statement (see the module doc)
        self.listener_trips = 0  # round trips of listening connections (see the module doc)
        self.connections = 0
        self.kinds: dict[str, int] = {}
        self.log: list[str] | None = None  # when a list: each Query, Parse and Sync, for a look at where trips go
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.url = _proxied_url(url, self._listener.getsockname()[1])
        self._closed = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="pg-wire-accept").start()

    def __enter__(self) -> WireCounter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self) -> None:
        with self._lock:
            self.trips = 0
            self.prepares = 0
            self.listener_trips = 0
            self.connections = 0
            self.kinds = {}

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass

    # --- plumbing -----------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            family, address = self.target
            server = socket.socket(family, socket.SOCK_STREAM)
            try:
                server.connect(address)
            except OSError:
                client.close()
                continue
            self._sockets += [client, server]
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._frontend, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _shut_down(src, dst)

    def _frontend(self, client: socket.socket, server: socket.socket) -> None:
        """Client -> server, message by message, counting Query and Sync."""
        buffer = b""
        started = False
        # the previous message's kind; since the last Sync: a named Parse, an Execute; a listener
        last: list = ["", False, False, None]
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                buffer += data
                out, buffer, started, trips = self._split(buffer, started, last)
                if trips and last[3]:
                    with self._lock:
                        self.listener_trips += trips
                elif trips:
                    with self._lock:
                        self.trips += trips
                    if self.delay:
                        time.sleep(self.delay * trips)
                if out:
                    server.sendall(out)
        except OSError:
            pass
        finally:
            _shut_down(client, server)

    def _split(self, buffer: bytes, started: bool, last: list) -> tuple[bytes, bytes, bool, int]:
        """The complete messages at the head of `buffer` (to forward), the rest, and the trips;
        `last` holds the kind of the connection's previous message and what its batch since the
        last Sync held (a named Parse, an Execute)."""
        at, trips = 0, 0
        while True:
            if not started:  # untyped: SSLRequest / GSSENCRequest / StartupMessage
                if len(buffer) - at < 8:
                    break
                length, code = struct.unpack("!II", buffer[at:at + 8])
                if len(buffer) - at < length:
                    break
                at += length
                if code not in (_SSL_REQUEST, _GSS_REQUEST):
                    started = True
                continue
            if len(buffer) - at < 5:
                break
            kind = chr(buffer[at])
            (length,) = struct.unpack("!I", buffer[at + 1:at + 5])
            if len(buffer) - at < 1 + length:
                break
            at += 1 + length
            if self.log is not None and kind in ("Q", "P", "S", "H"):
                body = buffer[at - length + 4:at]
                text = "" if kind in ("S", "H") else body.split(b"\0")[1 if kind == "P" else 0].decode(errors="replace")
                self.log.append(f"{kind} {text[:110]}")
            if last[3] is None and kind in ("Q", "P"):  # the first query says whether it listens
                body = buffer[at - length + 4:at]
                last[3] = body.split(b"\0")[1 if kind == "P" else 0].lstrip().upper().startswith(b"LISTEN")
            if kind == "P" and buffer[at - length + 4:at].split(b"\0", 1)[0]:
                last[1] = True
            elif kind == "E":
                last[2] = True
            if kind == "S" and last[1] and not last[2]:  # a statement's preparation
                with self._lock:
                    self.prepares += 1
                if self.delay:
                    time.sleep(self.delay)
            elif kind in ("Q", "S") or kind == "H" and last[0] != "S":
                trips += 1
                with self._lock:
                    self.kinds[kind] = self.kinds.get(kind, 0) + 1
            if kind == "S":
                last[1] = last[2] = False
            last[0] = kind
        return buffer[:at], buffer[at:], started, trips


def _shut_down(*sockets: socket.socket) -> None:
    """Both directions of a proxied connection end together (a closed peer is fine)."""
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
