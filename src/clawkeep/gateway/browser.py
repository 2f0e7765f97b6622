"""Browser safety (docs/security.md "Browser safety and resource limits"): what a web page in the
user's browser must not be able to do to a gateway it can reach, checked before any route or token.

- Host: every request must name a host the gateway serves (loopback names, the bind address,
  `gateway.allowedHosts`), else 421. A DNS-rebinding page reaches 127.0.0.1 under its own name,
  so its requests carry that name: refused, whatever the route and whether or not a token is set.
- Cross-site: a state-changing request (POST, PUT, PATCH, DELETE) that a browser marks as coming
  from another site (`Sec-Fetch-Site`, else `Origin` against `Host`) gets 403.
- JSON only: a state-changing request must say `Content-Type: application/json`, with or without
  a body (415 otherwise). A page can send a cross-site "simple request" (a form post, a no-cors
  fetch) without the gateway's consent only with a form or text content type; JSON needs a CORS
  preflight, which the gateway never grants. This also covers browsers that send neither
  `Sec-Fetch-Site` nor `Origin`. A header every JSON client already sends was preferred over a
  custom one: httpx's `json=`, fetch with a JSON body and the MCP transport all send it.

Plain ASGI middleware, like `_Observe`: no extra task or stream per request.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from .. import validation as check
from ..config.gateway import GatewayConfig
from .errors import error_response

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SAME_ORIGIN_FETCH = frozenset({b"same-origin", b"none"})  # "none": typed in the address bar, a bookmark
DEFAULT_PORTS = {"http": 80, "https": 443}
_KNOWN_HOSTS_KEPT = 64  # Host values already accepted, so the common case is one set lookup


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` (IPv6 in brackets) as (lower-case name, port or None); None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        if not bracket:
            return None
        name += "]"
        port = rest[1:] if rest.startswith(":") else (None if not rest else "x")
    else:
        name, colon, port_text = value.partition(":")
        port = port_text if colon else None
    if not name or (port is not None and not (port.isdigit() and len(port) <= 5)):
        return None
    return name, int(port) if port is not None else None


def _ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


class HostRule:
    """Which Host header values this gateway serves."""

    def __init__(self, settings: GatewayConfig):
        bind = settings.bind
        self.bind_name = f"[{bind}]" if ":" in bind else bind
        # A wildcard bind serves every address of the machine: any IP literal is then one of ours
        # (DNS rebinding needs a name: a page under an IP literal is that address's own origin).
        self.any_ip = ipaddress.ip_address(bind).is_unspecified
        self.names = LOOPBACK_NAMES | {self.bind_name} | {e for e in settings.allowed_hosts if split_host(e)[1] is None}
        self.name_ports = {split_host(e) for e in settings.allowed_hosts if split_host(e)[1] is not None}
        self.known: set[str] = set()

    def serves(self, host: str) -> bool:
        if host in self.known:
            return True
        parsed = split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        ok = name in self.names or (name, port) in self.name_ports or (self.any_ip and _ip_literal(name))
        if ok and len(self.known) < _KNOWN_HOSTS_KEPT:
            self.known.add(host)
        return ok

    def refusal(self, host: str | None, count: int = 1) -> str:
        if host is None:
            return ("the request has no Host header; send the host name you reach the gateway by "
                    "(HTTP/1.1 requires it)")
        if count > 1:
            return f"the request has {count} Host headers; send exactly one"
        served = ", ".join(dict.fromkeys(["localhost", "127.0.0.1", "[::1]", self.bind_name]))
        return (f"Host {check.shown(host)} is not a name this gateway serves ({served}); if you reach the "
                "gateway by this name, add it to gateway.allowedHosts in the config file and restart the gateway")


def _same_origin(origin: str, host: str) -> bool:
    """`Origin: scheme://name[:port]` names the same host and port as the `Host` header."""
    scheme, sep, authority = origin.strip().lower().partition("://")
    if not sep or scheme not in DEFAULT_PORTS:
        return False  # "null" (sandboxed frame, file://) or anything odd
    ours, theirs = split_host(host), split_host(authority)
    if ours is None or theirs is None:
        return False
    default = DEFAULT_PORTS[scheme]
    return ours[0] == theirs[0] and (ours[1] or default) == (theirs[1] or default)


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json"


class BrowserGuard:
    """ASGI middleware: the Host rule (421), then for state-changing methods the cross-site rule
    (403) and the JSON content type (415). WebSocket and lifespan scopes pass untouched."""

    def __init__(self, app: Any, settings: GatewayConfig):
        self.app, self.hosts = app, HostRule(settings)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = origin = fetch_site = content_type = None
        hosts = 0
        for name, value in scope["headers"]:
            if name == b"host":
                host, hosts = value.decode("latin-1"), hosts + 1
            elif name == b"origin":
                origin = value.decode("latin-1")
            elif name == b"sec-fetch-site":
                fetch_site = value.strip().lower()
            elif name == b"content-type":
                content_type = value
        if hosts != 1 or not self.hosts.serves(host):  # type: ignore[arg-type] # one Host: a str
            response = error_response(421, "misdirected_request", self.hosts.refusal(host, hosts))
            return await response(scope, receive, send)
        method = scope["method"]
        if method in STATE_CHANGING:
            refusal = _cross_site(method, host, origin, fetch_site) or _not_json(method, scope["path"], content_type)
            if refusal is not None:
                return await refusal(scope, receive, send)
        await self.app(scope, receive, send)


def _cross_site(method: str, host: str, origin: str | None, fetch_site: bytes | None) -> Any:
    """The browser's own word on where the request comes from: `Sec-Fetch-Site` (a page cannot set
    it) when present, else `Origin`. Neither: not a browser, or one too old to say — then the JSON
    rule below still stops a forged form or no-cors fetch."""
    if fetch_site is not None:
        if fetch_site in SAME_ORIGIN_FETCH:
            return None
        said = f"Sec-Fetch-Site: {fetch_site.decode('latin-1')}"
    elif origin is not None:
        if _same_origin(origin, host):
            return None
        said = f"Origin {check.shown(origin)}"
    else:
        return None
    return error_response(403, "cross_site", f"refused a cross-site {method} ({said}, Host {check.shown(host)}): a "
                                             "page on another site may not change anything here; use the Control UI "
                                             "served by this gateway, or a client that is not a browser")


def _not_json(method: str, path: str, content_type: bytes | None) -> Any:
    if _is_json(content_type):
        return None
    given = f"Content-Type {check.shown(content_type.decode('latin-1'))}" if content_type else "no Content-Type"
    return error_response(415, "unsupported_media_type",
                          f"{method} {path[:200]} sent {given}: every {method} must send "
                          "`Content-Type: application/json`, also without a body (e.g. curl -H 'Content-Type: "
                          "application/json'); a web page on another site cannot send that header, so it tells "
                          "your request from a forged one")
