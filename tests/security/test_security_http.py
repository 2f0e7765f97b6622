"""Browser safety and resource limits of `clawkeep gateway` (issue 28 items 2, 3; docs/security.md),
against a real gateway subprocess over real sockets, and headless Chromium for the cross-site pages.

The routes are enumerated from the app itself (`Gateway(...).app().routes`), so a new route is
covered by the Host and cross-site checks without touching this file. Every refused request is
followed by a comparison of the gateway's whole visible state: refusals change nothing.
"""

from __future__ import annotations

import http.server
import re
import selectors
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from playwright.sync_api import sync_playwright
from starlette.routing import Mount

from clawkeep import Engine
from clawkeep.gateway import Gateway
from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayProcess, write_config

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
JSON = {"Content-Type": "application/json"}
SESSION = "agent:main:main"
HEADER_TIMEOUT, BODY_TIMEOUT, KEEP_ALIVE, MAX_CONNECTIONS = 1.0, 1.0, 2.0, 100
SLACK = 2.5  # a loaded 2-core machine: how much later than its deadline a close may be seen
CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}},
          "gateway": {"allowedHosts": ["clawkeep.test", "box.lan:8443"], "headerTimeoutSeconds": HEADER_TIMEOUT,
                      "bodyTimeoutSeconds": BODY_TIMEOUT, "keepAliveSeconds": KEEP_ALIVE,
                      "maxConnections": MAX_CONNECTIONS}}
SAMPLE_PATH_VALUES = {"key": SESSION, "item_id": "m-00000000", "rest": "nothing-here"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    home = tmp_path_factory.mktemp("security-home")
    running = GatewayProcess(home, config=CONFIG)
    with running.client() as http:  # something to lose: a session with a message, a memory item
        assert http.post("/v1/messages", json={"text": "the vault code is in the blue folder"}).status_code == 200
        assert http.post("/v1/memory/remember", json={"text": "I keep spare keys with Ana"}).status_code == 200
    yield running
    running.stop()


@pytest.fixture(scope="module")
def routes(tmp_path_factory) -> list[tuple[str, str]]:
    """(method, path) for every route and method of the app, path parameters filled in."""
    engine = Engine.open(home=tmp_path_factory.mktemp("routes-home"), config=CONFIG)
    try:
        app = Gateway(engine, background=False).app()
    finally:
        engine.close()
    found = []
    for route in app.routes:
        if isinstance(route, Mount):
            found.append(("GET", route.path + "/js/api.js"))
            continue
        path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: SAMPLE_PATH_VALUES.get(m.group(1), "x"), route.path)
        found += [(method, path) for method in sorted(route.methods)]
    assert len(found) > 30 and ("POST", f"/v1/sessions/{SESSION}/reset") in found
    return found


def state(gateway: GatewayProcess) -> dict[str, Any]:
    """Everything a refused request could have changed, as the operator sees it."""
    with gateway.client() as http:
        sessions = http.get("/v1/sessions").json()
        dreaming = http.get("/v1/dreaming").json()
        return {"sessions": sessions,
                "history": {s["key"]: http.get(f"/v1/sessions/{s['key']}/history").json() for s in sessions},
                "timeline": http.get(f"/v1/sessions/{SESSION}/timeline").json(),
                "items": http.get("/v1/memory/items").json(),
                "memory": http.get("/v1/memory/file", params={"path": "MEMORY.md"}).json()["text"],
                "dreaming": (dreaming["enabled"], dreaming["lastSweepAt"], dreaming["lastRunId"])}


def body_for(method: str) -> dict[str, Any]:
    return {} if method in ("GET", "HEAD") else {"content": b"{}", "headers": dict(JSON)}


# --- Host ---------------------------------------------------------------------------------------
def test_a_foreign_host_gets_421_on_every_route_and_changes_nothing(gateway, routes):
    before = state(gateway)
    with gateway.client() as http:
        for host in ("evil.example", "evil.example:18790", "127.0.0.1.nip.io", "clawkeep.test.evil.example",
                     "box.lan:9000"):
            for method, path in routes:
                request = body_for(method)
                headers = {**request.pop("headers", {}), "Host": host}
                answer = http.request(method, path, headers=headers, **request)
                assert answer.status_code == 421, (host, method, path, answer.status_code, answer.text[:200])
                if method != "HEAD":
                    error = answer.json()["error"]
                    assert error["code"] == "misdirected_request" and host in error["message"]
                    assert "gateway.allowedHosts" in error["message"]
        leaked = http.get("/v1/search", params={"q": "vault"}, headers={"Host": "rebound.example"})
        assert leaked.status_code == 421 and "vault" not in leaked.text
    assert state(gateway) == before


def test_loopback_names_the_bind_address_and_allowed_hosts_are_served(gateway):
    port = gateway.url.rsplit(":", 1)[1]
    with gateway.client() as http:
        for host in ("localhost", f"localhost:{port}", "127.0.0.1", f"127.0.0.1:{port}", "[::1]", "[::1]:99",
                     "LOCALHOST", "clawkeep.test", "clawkeep.test:443", "box.lan:8443"):
            answer = http.get("/v1/sessions", headers={"Host": host})
            assert answer.status_code == 200 and answer.json()[0]["key"] == SESSION, (host, answer.text[:200])


def test_a_request_without_a_host_header_or_with_two_is_refused(gateway):
    answer = raw_exchange(gateway, b"GET /v1/sessions HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 421") and b"no Host header" in answer and SESSION.encode() not in answer
    twice = raw_exchange(gateway, b"GET /v1/sessions HTTP/1.1\r\nHost: evil.example\r\nHost: localhost\r\n"
                                  b"Connection: close\r\n\r\n")
    assert twice.startswith(b"HTTP/1.1 421") and b"2 Host headers" in twice and SESSION.encode() not in twice


# --- cross-site and JSON-only state changes -------------------------------------------------------
def test_state_changing_routes_refuse_cross_site_requests_and_non_json_ones(gateway, routes):
    changing = [(m, p) for m, p in routes if m in ("POST", "PUT", "PATCH", "DELETE")]
    assert len(changing) >= 10
    other_port = "http://127.0.0.1:9"  # another loopback port: same site, another origin
    refusals = [({"Origin": other_port}, 403, "cross_site"), ({"Origin": "http://evil.example"}, 403, "cross_site"),
                ({"Origin": "null"}, 403, "cross_site"), ({"Sec-Fetch-Site": "cross-site"}, 403, "cross_site"),
                ({"Sec-Fetch-Site": "same-site", "Origin": gateway.url}, 403, "cross_site")]
    refusals += [({"Content-Type": content_type} if content_type else {}, 415, "unsupported_media_type")
                 for content_type in (None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data")]
    with gateway.client() as http:
        for method, path in changing:
            before = state(gateway)
            for headers, status, code in refusals:
                headers = {**JSON, **headers} if status == 403 else headers
                answer = http.request(method, path, content=b"{}", headers=headers)
                assert answer.status_code == status, (method, path, headers, answer.text[:200])
                error = answer.json()["error"]
                assert error["code"] == code and method in error["message"], error
                if status == 415:
                    assert "Content-Type: application/json" in error["message"]
            assert state(gateway) == before, (method, path)
            # the same request from a client that is not a browser, as JSON, passes the guard
            answer = http.request(method, path, content=b"{}", headers=JSON)
            assert answer.status_code not in (403, 415, 421), (method, path, answer.text[:200])


def test_same_origin_and_non_browser_requests_keep_working(gateway):
    with gateway.client() as http:
        same = http.post("/v1/sessions", json={"label": "same-origin"},
                         headers={"Origin": gateway.url, "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 200 and same.json()["label"] == "same-origin"
        origin_only = http.post(f"/v1/sessions/{same.json()['key']}/reset", headers={**JSON, "Origin": gateway.url})
        assert origin_only.status_code == 200
        charset = http.post(f"/v1/sessions/{same.json()['key']}/fork",
                            headers={"Content-Type": "application/json; charset=utf-8"})
        assert charset.status_code == 200 and charset.json()["kind"] == "dashboard"


# --- Chromium: pages on other loopback origins -------------------------------------------------------
ATTACK_PAGE = """<!doctype html><html><body>
<form id="form" method="POST" enctype="text/plain" target="sink" action="GW/v1/sessions/KEY/reset">
<input name='{"a":"' value='"}'></form><iframe name="sink" id="sink"></iframe>
</body></html>"""

ATTACKS = """async (gw) => {
  const results = {};
  const noCors = (path, init = {}) => fetch(gw + path, { method: "POST", mode: "no-cors", ...init })
    .then((r) => r.type, (e) => "error: " + e);
  results.reset = await noCors("/v1/sessions/KEY/reset");
  results.fork = await noCors("/v1/sessions/KEY/fork");
  results.sweep = await noCors("/v1/dreaming/sweep");
  results.undo = await noCors("/v1/dreaming/undo");
  results.remember = await noCors("/v1/memory/remember",
    { headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ text: "attacker planted fact" }) });
  results.message = await noCors("/v1/messages",
    { headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ text: "attacker message" }) });
  results.jsonCors = await fetch(gw + "/v1/memory/remember", { method: "POST",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ text: "attacker json" }) })
    .then((r) => "status " + r.status, (e) => "blocked");
  results.deleteCors = await fetch(gw + "/v1/memory/items/ITEM", { method: "DELETE" })
    .then((r) => "status " + r.status, (e) => "blocked");
  results.read = await fetch(gw + "/v1/sessions").then((r) => r.text(), (e) => "blocked");
  return results;
}"""


class _AttackSite:
    """A web page on another loopback port (another origin), served by a plain HTTP server."""

    def __init__(self, page_html: str):
        body = page_html.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def refusals_logged(gateway: GatewayProcess) -> int:
    """Requests the gateway answered 403 (its structured log line per request)."""
    return len(re.findall(r'"event": "request".*?"status": 403', gateway.logs()))


def test_cross_origin_pages_in_chromium_change_nothing_and_the_control_ui_still_works(gateway):
    assert CHROMIUM.exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    with gateway.client() as http:
        item = http.get("/v1/memory/items").json()[0]["id"]
    page_html = ATTACK_PAGE.replace("GW", gateway.url).replace("KEY", SESSION)
    site = _AttackSite(page_html)
    before, refused_before = state(gateway), refusals_logged(gateway)
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            try:
                for origin in (f"http://127.0.0.1:{site.port}", f"http://localhost:{site.port}"):
                    page = browser.new_page()
                    page.goto(origin + "/")
                    results = page.evaluate(ATTACKS.replace("KEY", SESSION).replace("ITEM", item), gateway.url)
                    assert results["reset"] == results["fork"] == results["sweep"] == "opaque", results
                    assert results["jsonCors"] == results["deleteCors"] == results["read"] == "blocked", results
                    with page.expect_event("framenavigated"):
                        page.evaluate("document.getElementById('form').submit()")
                    page.wait_for_timeout(300)
                    page.close()
                # Chromium sent Origin / Sec-Fetch-Site: each no-cors POST and the form got the 403 (×2 origins)
                deadline = time.monotonic() + 10
                while refusals_logged(gateway) - refused_before < 14 and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert refusals_logged(gateway) - refused_before >= 14, gateway.logs()[-3000:]
                assert state(gateway) == before

                # the Control UI from the gateway itself: loads, and its state-changing calls pass
                page = browser.new_page()
                page.goto(gateway.url + "/")
                page.wait_for_selector("body[data-ready='true']", timeout=15_000)
                page.click("#new-thread")
                page.wait_for_selector("#chat-badges:has-text('dashboard')", timeout=15_000)
                reset = page.evaluate("""() => fetch('/v1/sessions/KEY/reset', {method: 'POST',
                    headers: {'Content-Type': 'application/json'}}).then((r) => r.status)""".replace("KEY", SESSION))
                assert reset == 200
                page.close()
            finally:
                browser.close()
            # a DNS-rebinding page: its own name resolves to 127.0.0.1, the browser sends that name as Host
            port = gateway.url.rsplit(":", 1)[1]
            rebinding = driver.chromium.launch(executable_path=str(CHROMIUM),
                                               args=[*ARGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"])
            try:
                page = rebinding.new_page()
                answer = page.goto(f"http://rebind.test:{port}/v1/search?q=vault")
                assert answer is not None and answer.status == 421 and "vault" not in page.content()
            finally:
                rebinding.close()
    finally:
        site.close()
    with gateway.client() as http:
        dashboards = [s for s in http.get("/v1/sessions").json() if s["kind"] == "dashboard"]
        assert dashboards and http.get(f"/v1/sessions/{SESSION}/timeline").json() != before["timeline"]


# --- resource limits -------------------------------------------------------------------------------
def raw_exchange(gateway: GatewayProcess, request: bytes, timeout: float = 10) -> bytes:
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(request)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    answer = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return answer
        if not chunk:
            return answer
        answer += chunk


def rss(gateway: GatewayProcess) -> int:
    return psutil.Process(gateway.proc.pid).memory_info().rss


def send_in_background(sock: socket.socket, data: bytes) -> threading.Thread:
    def push():
        try:
            sock.sendall(data)
        except OSError:
            pass  # the gateway closed: what is left is not read, which is the point

    sender = threading.Thread(target=push, daemon=True)
    sender.start()
    return sender


def oversized(gateway: GatewayProcess, head: bytes) -> tuple[bytes, float]:
    """Send `head` while reading the answer; the answer and how long it took."""
    host, port = gateway.url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sender = send_in_background(sock, head)
        answer = read_all(sock)
        sock.shutdown(socket.SHUT_RDWR)
        sender.join(timeout=20)
    return answer, time.monotonic() - started


def test_oversized_headers_and_too_many_header_lines_get_431_without_growing_the_gateway(gateway):
    for _ in range(20):  # warm: the first requests allocate what every request needs
        raw_exchange(gateway, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    start = rss(gateway)
    huge = b"GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (64 * 1024 * 1024) + b"\r\n\r\n"
    answer, took = oversized(gateway, huge)
    after_huge = rss(gateway)
    assert answer.startswith(b"HTTP/1.1 431") and b"gateway.maxHeaderBytes" in answer, answer[:300]
    many = (b"GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(20_000))
            + b"\r\n")
    answer_many, _ = oversized(gateway, many)
    after_many = rss(gateway)
    assert answer_many.startswith(b"HTTP/1.1 431") and b"gateway.maxHeaders" in answer_many, answer_many[:300]
    just_over = b"GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"b" * (64 * 1024) + b"\r\n\r\n"
    assert raw_exchange(gateway, just_over).startswith(b"HTTP/1.1 431")
    long_url = b"GET /v1/search?q=" + b"c" * (70 * 1024) + b" HTTP/1.1\r\nHost: localhost\r\n\r\n"
    assert raw_exchange(gateway, long_url).startswith(b"HTTP/1.1 431")
    print(f"\nRSS: start {start / 2**20:.1f} MiB, after a 64 MiB header {after_huge / 2**20:.1f} MiB "
          f"(answered in {took:.2f} s), after 20,000 header lines {after_many / 2**20:.1f} MiB")
    assert after_huge - start < 8 * 2**20 and after_many - start < 8 * 2**20
    with gateway.client() as http:  # below the limits all is well
        assert http.get("/v1/sessions", headers={f"X-H{i}": "v" * 100 for i in range(80)}).status_code == 200


def dribblers(gateway: GatewayProcess, count: int, head: bytes, every: float,
              give_up: float) -> list[tuple[float | None, bytes]]:
    """`count` clients each sending `head`, then one byte every `every` seconds; for each, how long
    after connecting it was disconnected (None: still connected after `give_up` seconds) and what
    the gateway sent it."""
    host, port = gateway.url.removeprefix("http://").split(":")
    selector = selectors.DefaultSelector()
    clients = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall(head)
        sock.setblocking(False)
        clients.append({"sock": sock, "start": time.monotonic(), "closed": None, "got": b""})
        selector.register(sock, selectors.EVENT_READ, clients[-1])
    next_drip, stop = time.monotonic() + every, time.monotonic() + give_up
    while time.monotonic() < stop and any(c["closed"] is None for c in clients):
        for key, _ in selector.select(timeout=0.05):
            client = key.data
            try:
                chunk = key.fileobj.recv(65536)
                if chunk:
                    client["got"] += chunk
                    continue  # the 408 first, then the end
            except OSError:
                pass
            client["closed"] = time.monotonic() - client["start"]
            selector.unregister(key.fileobj)
        if time.monotonic() >= next_drip:
            next_drip += every
            for client in clients:
                if client["closed"] is None:
                    try:
                        client["sock"].send(b"a")
                    except OSError:
                        pass  # closed: the select sees it next
    for client in clients:
        client["sock"].close()
    return [(c["closed"], c["got"]) for c in clients]


def test_slow_clients_are_disconnected_within_the_timeouts(gateway):
    before = state(gateway)
    # slowloris on the headers: 60 clients, a byte each every 0.4 s (they would never finish)
    head = b"GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
    closed = dribblers(gateway, 60, head, every=0.4, give_up=HEADER_TIMEOUT + 8)
    assert all(t is not None and HEADER_TIMEOUT * 0.9 <= t <= HEADER_TIMEOUT + SLACK for t, _ in closed), closed
    assert all(got.startswith(b"HTTP/1.1 408") and b"gateway.headerTimeoutSeconds" in got for _, got in closed)
    # the same on the body: complete headers, then a byte of the body every 0.4 s
    body_head = (b"POST /v1/memory/remember HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 200\r\n\r\n{\"text\": \"slow")
    closed = dribblers(gateway, 60, body_head, every=0.4, give_up=BODY_TIMEOUT + 8)
    assert all(t is not None and BODY_TIMEOUT * 0.9 <= t <= BODY_TIMEOUT + SLACK for t, _ in closed), closed
    assert all(got.startswith(b"HTTP/1.1 408") and b"gateway.bodyTimeoutSeconds" in got for _, got in closed)
    # a connection that never sends a byte, and one kept alive after its answer
    silent, said = dribblers(gateway, 1, b"", every=60, give_up=HEADER_TIMEOUT + 8)[0]
    assert silent is not None and silent <= HEADER_TIMEOUT + SLACK and said == b""  # nothing asked, nothing said
    kept, answer = dribblers(gateway, 1, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n", every=60,
                             give_up=KEEP_ALIVE + 8)[0]
    assert answer.startswith(b"HTTP/1.1 200") and kept is not None and KEEP_ALIVE * 0.9 <= kept <= KEEP_ALIVE + SLACK
    timed_out = raw_exchange(gateway, b"GET /v1/sessions HTTP/1.1\r\nHost: local")
    assert timed_out.startswith(b"HTTP/1.1 408") and b"gateway.headerTimeoutSeconds" in timed_out
    assert state(gateway) == before  # the slow bodies stored nothing
    with gateway.client() as http:
        assert http.get("/v1/health").status_code == 200


def test_connections_over_the_cap_get_503_with_retry_after(gateway):
    host, port = gateway.url.removeprefix("http://").split(":")
    held: list[socket.socket] = []
    busy = None
    try:
        for _ in range(MAX_CONNECTIONS + 2):
            sock = socket.create_connection((host, int(port)), timeout=10)
            held.append(sock)
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = sock.recv(65536)
            if answer.startswith(b"HTTP/1.1 503"):
                busy = answer + read_all(sock)
                break
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert busy is not None, f"{len(held)} connections and no 503"
        assert len(held) <= MAX_CONNECTIONS + 1
        assert re.search(rb"(?i)\r\nretry-after: \d+\r\n", busy) and b"gateway.maxConnections" in busy, busy
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the slots free as soon as the connections close
        if httpx.get(gateway.url + "/v1/health", timeout=5).status_code == 200:
            break
        time.sleep(0.1)
    assert httpx.get(gateway.url + "/v1/health", timeout=5).status_code == 200


def test_bad_limit_settings_are_input_errors_naming_the_key(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = write_config(home, {"gateway": {"allowedHosts": ["https://clawkeep.example.org/"], "maxHeaders": 3}})
    result = run_cli(home, "gateway", "--port", "0", config=config)
    assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
    for words in ("gateway.allowedHosts", "'https://clawkeep.example.org/' is not a host name", "no scheme",
                  "gateway.maxHeaders", "10"):
        assert words in " ".join(result.stderr.split()), result.stderr
