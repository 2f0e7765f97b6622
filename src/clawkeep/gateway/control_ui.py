"""The Control UI at `/` (G2): the page and its static files, outside the token check (they
hold no data: every figure comes from the guarded `/v1` API, with the token the page asks for).

A strict Content-Security-Policy keeps the page to its own origin: no CDN, no inline script,
nothing loaded from elsewhere — it works offline and an injected string cannot run.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from .. import ui

POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-cache"}


class _Static(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Any:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def install(app: FastAPI) -> None:
    static = ui.static_dir()
    app.mount("/ui", _Static(directory=static), name="ui")

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def control_ui() -> FileResponse:
        return FileResponse(static / "index.html", headers=HEADERS)
