"""The Control UI (SPEC G2): static HTML, CSS and JavaScript modules the gateway serves at `/`.

No build step and nothing from outside: `static/` is shipped as package data and works offline.
The page is a thin skin over the HTTP API (`/v1/...`); see docs/ui.md.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"


def static_dir() -> Path:
    return STATIC
