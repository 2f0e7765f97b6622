"""Output: contract models print their documented JSON with --json, Rich tables otherwise."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.table import Table
from rich.text import Text

from ..api import Shape
from ..deferred import deferred_import

bars = deferred_import("rich.progress")  # deferred: ≈5 ms of Rich, only for the commands that show a bar


def as_json_data(data: Any) -> Any:
    """The documented JSON of a result: contract models (clawkeep.api) print their own shape."""
    if isinstance(data, Shape):
        return data.to_json()
    if isinstance(data, list):
        return [as_json_data(item) for item in data]
    return data


def emit(data: Any, as_json: bool, render: Any = None) -> None:
    data = as_json_data(data)
    if as_json or render is None:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        render(data)


def table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None) -> Table:
    grid = Table(title=title, show_lines=False)
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        # plain Text: a key such as `agent:main:x:thread:42` is not an emoji code or markup
        grid.add_row(*(Text("" if row.get(c) is None else str(row.get(c))) for c in columns))
    return grid


def progress_display(console: Any, *, disable: bool, transient: bool = True, label: str = "{task.description}",
             sizes: bool = False) -> Any:
    """A Rich progress display on `console`: a bar with items done of the total and the time
    elapsed, or with `sizes` the bytes read and the time remaining."""
    columns = (bars.DownloadColumn(), bars.TimeRemainingColumn()) if sizes else (
        bars.MofNCompleteColumn(), bars.TimeElapsedColumn())
    return bars.Progress(bars.TextColumn(label), bars.BarColumn(), *columns, console=console, transient=transient,
                         disable=disable)
