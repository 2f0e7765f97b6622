"""An in-process Engine on a test's home directory."""

from __future__ import annotations

from pathlib import Path

from clawkeep import Engine


def open_engine(home: Path, config: dict | None = None, agent: str = "main") -> Engine:
    return Engine.open(home=home, config=config, agent=agent)
