"""`gateway`: the long-running HTTP service (`clawkeep gateway`). One source of truth for its
defaults; `clawkeep.gateway` reads them, `--host`/`--port` override them for one run.
docs/security.md ("Browser safety and resource limits") explains the Host rule and the limits."""

import ipaddress
import re

from pydantic import Field, field_validator

from .base import _Model

DEFAULT_PORT = 18790  # OpenClaw's gateway listens on 18789; one up, so both can run side by side
TOKEN_ENV = "CLAWKEEP_GATEWAY_TOKEN"  # the token may come from the environment instead of the file


class GatewayAuthConfig(_Model):
    # Required for any bind address other than loopback; when set, every request must carry
    # `Authorization: Bearer <token>` (the UI asks for it once and keeps it in the browser).
    token: str | None = Field(None, min_length=16, max_length=512)


class GatewayConfig(_Model):
    bind: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)  # 0: any free port (printed at start)
    auth: GatewayAuthConfig = Field(default_factory=GatewayAuthConfig)
    # Requests with a larger body are refused with 413 before they are read whole.
    max_body_bytes: int = Field(4 * 1024 * 1024, alias="maxBodyBytes", ge=1024, le=1024**3)
    # Worker threads running engine calls (the engine is synchronous; the event loop never waits on it).
    threads: int = Field(32, ge=1, le=1024)
    # How often the reset clock looks for sessions whose daily/idle reset is due, and maintenance runs.
    clock_seconds: float = Field(60.0, alias="clockSeconds", ge=0.05, le=86_400)
    maintenance_minutes: float = Field(60.0, alias="maintenanceMinutes", ge=0.01, le=10_080)
    # SIGTERM: in-flight turns get this long to finish; new requests are refused meanwhile.
    shutdown_grace_seconds: float = Field(30.0, alias="shutdownGraceSeconds", ge=0, le=3600)
    # Memory file watcher and transcript indexing in the background (searches then skip the per-call check).
    watch: bool = True
    # Host names (besides localhost, 127.0.0.1, [::1] and the bind address) a request's Host header may
    # name, e.g. "clawkeep.example.org" (any port) or "clawkeep.lan:8443"; any other Host gets 421, so a
    # DNS-rebinding page (its own name pointed at 127.0.0.1) cannot reach the API.
    allowed_hosts: list[str] = Field(default_factory=list, alias="allowedHosts", max_length=256)
    # Read limits (docs/security.md), enforced while a request is read, before the app or the token check:
    # the request line and headers together, in bytes (431 over it; at most this plus one read is held).
    max_header_bytes: int = Field(64 * 1024, alias="maxHeaderBytes", ge=1024, le=16 * 1024 * 1024)
    # Header lines in one request (431 over it).
    max_headers: int = Field(100, alias="maxHeaders", ge=10, le=10_000)
    # Time to send the headers, from the connection (or the request's first byte when kept alive): 408, closed.
    header_timeout_seconds: float = Field(10.0, alias="headerTimeoutSeconds", ge=0.05, le=3600)
    # Time to send the whole body after the headers: closed (408 if nothing was answered yet).
    body_timeout_seconds: float = Field(60.0, alias="bodyTimeoutSeconds", ge=0.05, le=3600)
    # Idle time between requests on a kept-alive connection before it is closed.
    keep_alive_seconds: float = Field(5.0, alias="keepAliveSeconds", ge=0.05, le=3600)
    # Open connections; a request on a connection beyond them gets 503 with Retry-After, and is closed.
    max_connections: int = Field(512, alias="maxConnections", ge=1, le=100_000)

    @field_validator("bind")
    @classmethod
    def _bind(cls, value: str) -> str:
        value = value.strip()
        if value in ("loopback", "localhost"):
            return "127.0.0.1"
        if value in ("lan", "all"):
            return "0.0.0.0"
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address; use an address such as 127.0.0.1, ::1 or 0.0.0.0, "
                             "or loopback / lan") from None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, values: list[str]) -> list[str]:
        return [_host_entry(value) for value in values]


_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST_NAME = re.compile(rf"^(\[[0-9a-f:.]+\]|{_LABEL}(\.{_LABEL})*\.?)(:[0-9]{{1,5}})?$")


def _host_entry(value: str) -> str:
    """One gateway.allowedHosts entry as the Host header spells it: a name or IP (IPv6 in brackets),
    optionally with `:port`; lower case."""
    entry = value.strip().lower()
    if not _HOST_NAME.match(entry) or len(entry) > 261:
        raise ValueError(f"{entry[:80]!r} is not a host name; give a name as the Host header "
                         "carries it, e.g. clawkeep.example.org, clawkeep.lan:8443 or [fd00::5] (no scheme, no path)")
    return entry


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
