"""Shared helpers: paths, machine description, percentiles, Markdown tables, progress bars."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

REPO = Path(__file__).resolve().parent.parent
BENCH_DATA = REPO / ".bench-data"  # git-ignored cache of seeded stores and scratch homes
SCRATCH = BENCH_DATA / "sessions-bench-tmp"  # this suite's scratch homes (each removed after use)
RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO_DIR = Path(os.environ.get("CLAWKEEP_LOCOMO_DIR", "/work/shared/eval/locomo"))

console = Console(stderr=True)


@dataclass
class Section:
    """What one benchmark hands back: Markdown blocks for the report and raw data for JSON."""

    name: str
    title: str
    blocks: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def markdown(self) -> str:
        return f"## {self.title}\n\n" + "\n\n".join(b.strip("\n") for b in self.blocks) + "\n"


def scratch_dir(prefix: str) -> Path:
    """A fresh directory on the same disk as the real stores (not tmpfs)."""
    import tempfile

    base = SCRATCH
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def make_progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sequence."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000.0
    if ms != ms:  # NaN
        return "–"
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"


def fmt_ratio(a: float, b: float) -> str:
    if not b or a != a or b != b:
        return "–"
    return f"{a / b:.2f}×"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    return "unknown"


def _git_rev() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "src"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return rev + (" (src/ has uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def load_average() -> str:
    """1/5/15-minute load averages: other work on this shared machine skews timings."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine_info() -> dict[str, str]:
    return {
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": _mem_gib(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "git": _git_rev(),
    }


def machine_line(info: dict[str, str]) -> str:
    return (f"Machine: {info['cores']} cores ({info['cpu']}), {info['memory']} RAM, {info['os']}; "
            f"Python {info['python']}, SQLite {info['sqlite']}; clawkeep at {info['git']}.")


# --- FTS5 MATCH strings as the SQLite store renders them (for raw-SQL baselines) ------------------
def match_of(query: Any) -> str:
    """The FTS5 MATCH expression the SQLite store runs for a parsed/selected `SearchQuery`."""
    from clawkeep.storage import TextQuery
    from clawkeep.storage.sqlite.fts import match_expression

    return match_expression(TextQuery.of(query.terms))


def build_match_query(query: str, df: Any = None, total: int | None = None, max_terms: int | None = None) -> str | None:
    """parse → select → render: the MATCH string the engine builds for user text (None: nothing searchable)."""
    from clawkeep.text.query import parse_query

    parsed = parse_query(query)
    return match_of(parsed.select(df, total, max_terms)) if parsed else None


def fts5_doc_freq(conn: sqlite3.Connection, vocab_table: str) -> Any:
    from clawkeep.storage.sqlite.fts import vocab_doc_freq

    return vocab_doc_freq(conn, vocab_table)


def settle_background() -> float:
    """Wait for the memory index's background load of common terms' posting lists (started by
    a warm-up's searches; ≈1 CPU-s at 10k chunks), so what is timed next sees a process that has
    been up for a few seconds, as a gateway is. Returns the seconds waited."""
    import threading  # noqa: PLC0415

    start = time.perf_counter()
    for thread in threading.enumerate():
        if thread.name == "clawkeep-bm25-warm":
            thread.join(120)
    return time.perf_counter() - start
