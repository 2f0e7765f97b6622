"""`gateway`: the long-running HTTP service (`clawkeep gateway`). One source of truth for its
defaults; `clawkeep.gateway` reads them, `--host`/`--port` override them for one run."""

import ipaddress

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


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
