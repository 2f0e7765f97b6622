"""A Dreaming sweep over a month of memory: 30 daily notes × 200 lines, 10,000 recall traces.

    python -m bench --only dreaming [--quick]      # quick: 30 × 20 lines, 1,000 traces

Workspace: 30 dated notes of 200 distinct synthetic lines each (filler made of a 600-word
vocabulary, plus 40 planted facts), and a MEMORY.md of 300 items. Traces: 10,000 searches,
each with 3 hits (a window of 3 lines around a line of some note; a quarter of them on planted
facts, with 5 distinct queries per fact), written through the recorder's own entry point
(`dreaming.recorder.record`, the same locked append a live search does).

Measured in the same run:
- the per-search cost of recording a trace (flock + append) against a bare `open(…, "a")`
  append of the same line (the floor);
- a full sweep (Light → REM → Deep, provider "none", no model) — wall time, and peak Python
  memory in a second, identical sweep on a copy under tracemalloc; against the I/O floor of the
  same data: reading every note and JSON-parsing every trace line;
- a second sweep right after (nothing new: the steady nightly cost of a big store).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/dreaming.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep import Engine  # noqa: E402
from clawkeep.dreaming.recorder import record  # noqa: E402
from clawkeep.dreaming.store import DreamsDir  # noqa: E402

from .common import Section, md_table, scratch_dir  # noqa: E402

FULL = {"days": 30, "lines": 200, "traces": 10_000, "facts": 40, "memory_items": 300}
QUICK = {"days": 30, "lines": 20, "traces": 1_000, "facts": 10, "memory_items": 50}
CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}, "session": {"reset": {"timezone": "UTC"}},
          "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": True}}}}}}


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted({"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(700)})[:600]


def build(root: Path, sizes: dict[str, int], seed: int = 13) -> dict[str, Any]:
    """The workspace and its traces; returns what was planted."""
    rng = random.Random(seed)
    words = _vocabulary(rng)
    ws = root / "workspace"
    (ws / "memory").mkdir(parents=True)
    today = datetime.now(UTC).date()
    memory = ["# Memory", ""] + [f"- Long-term fact {n} about {' '.join(rng.sample(words, 4))}"
                                 for n in range(sizes["memory_items"])]
    (ws / "MEMORY.md").write_text("\n".join(memory) + "\n")
    facts = [f"My {rng.choice(words)} preference is {rng.choice(words)} with {rng.choice(words)}"
             for _ in range(sizes["facts"])]
    notes: list[tuple[str, list[str]]] = []
    for day_index in range(sizes["days"]):
        day = today - timedelta(days=sizes["days"] - 1 - day_index)
        lines = [f"# {day.isoformat()}", ""]
        for n in range(sizes["lines"]):
            lines.append(f"- Line {n} of the day: {' '.join(rng.sample(words, 7))}")
        for k, fact in enumerate(facts):
            if k % sizes["days"] == day_index:
                lines.insert(2 + rng.randint(0, sizes["lines"] - 1), f"- {fact}")
        rel = f"memory/{day.isoformat()}.md"
        (ws / rel).write_text("\n".join(lines) + "\n")
        notes.append((rel, lines))
    dreams = DreamsDir(ws)
    now = int(time.time() * 1000)
    fact_where = {}
    for rel, lines in notes:
        for number, line in enumerate(lines, start=1):
            if line[2:] in facts:
                fact_where[line[2:]] = (rel, number, lines)
    started = time.perf_counter()
    for t in range(sizes["traces"]):
        at = now - rng.randint(0, sizes["days"] - 1) * 86_400_000 - rng.randint(0, 80_000_000)
        if t % 4 == 0:
            fact = facts[(t // 4) % len(facts)]
            rel, number, lines = fact_where[fact]
            query = f"{fact.split()[1]} {rng.choice(['setup', 'choice', 'pick', 'liking', 'taste'])}"
        else:
            rel, lines = notes[rng.randrange(len(notes))]
            number = rng.randint(3, len(lines) - 1)
            query = " ".join(lines[number - 1].split()[-2:])
        hits = [{"path": rel, "startLine": number - 1, "endLine": number + 1, "score": round(rng.uniform(0.5, 0.95), 3),
                 "snippet": "\n".join(lines[number - 2:number + 1])} for _ in range(1)]
        hits += [{"path": notes[rng.randrange(len(notes))][0], "startLine": 3, "endLine": 5, "score": 0.3,
                  "snippet": "\n".join(notes[rng.randrange(len(notes))][1][2:5])} for _ in range(2)]
        record(dreams, "search", query, hits, None, at, snippets_redacted=True)  # as a live search records
    record_s = time.perf_counter() - started
    return {"facts": facts, "record_s": record_s, "workspace": ws}


def raw_append_floor(root: Path, traces: Path) -> float:
    """The same trace lines appended with a bare open(…, "a") per line (no lock)."""
    lines = traces.read_text().splitlines(keepends=True)
    target = root / "floor.jsonl"
    started = time.perf_counter()
    for line in lines:
        with open(target, "a", encoding="utf-8") as out:
            out.write(line)
    return (time.perf_counter() - started) / max(1, len(lines))


def io_floor(ws: Path) -> float:
    """Read every note and JSON-parse every trace: what any sweep of this data must do at least."""
    started = time.perf_counter()
    for path in sorted((ws / "memory").glob("*.md")):
        path.read_text(encoding="utf-8").splitlines()
    for path in (ws / "memory" / ".dreams").glob("recall-log*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            json.loads(line)
    return time.perf_counter() - started


def sweep(home: Path) -> tuple[float, dict[str, Any]]:
    with Engine.open(home=home, config=CONFIG) as eng:
        started = time.perf_counter()
        report = eng.dream().to_json()
        return time.perf_counter() - started, report


def run(progress: Any, quick: bool = False) -> Section:
    sizes = QUICK if quick else FULL
    task = progress.add_task("dreaming: build", total=5)
    root = scratch_dir("dreaming-")
    try:
        home = root / "home"
        built = build(home, sizes)
        ws = built["workspace"]
        log = ws / "memory" / ".dreams" / "recall-log.jsonl"
        per_trace = built["record_s"] / sizes["traces"]
        floor_append = raw_append_floor(root, log)
        progress.advance(task)
        copy = root / "copy"
        shutil.copytree(home, copy)
        floor = io_floor(ws)
        progress.advance(task)
        first_s, first = sweep(home)
        progress.advance(task)
        second_s, second = sweep(home)
        progress.advance(task)
        tracemalloc.start()
        sweep(copy)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        progress.advance(task)
        store = ws / "memory" / ".dreams" / "short-term-recall.json"
        entries = len(json.loads(store.read_text())["entries"])
        store_mib = store.stat().st_size / 2**20
        promoted = len(first.get("promoted", []))
        planted = set(built["facts"])
        promoted_planted = sum(1 for p in first.get("promoted", []) if p["text"] in planted)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = [
        ["record one trace (flock + append)", f"{per_trace * 1e6:,.0f} µs", f"{floor_append * 1e6:,.0f} µs",
         f"{per_trace / floor_append:.1f}×"],
        ["full sweep (Light → REM → Deep)", f"{first_s:.2f} s", f"{floor:.2f} s (read + parse)",
         f"{first_s / floor:.1f}×"],
        ["second sweep, nothing new", f"{second_s:.2f} s", "–", "–"],
        ["peak Python memory of a sweep (tracemalloc)", f"{peak / 2**20:.1f} MiB", "–", "–"],
    ]
    table = md_table(["what", "measured", "baseline (same run)", "ratio"], rows)
    notes = (f"{sizes['days']} daily notes × {sizes['lines']} lines, {sizes['traces']:,} traces (3 hits each), "
             f"{sizes['memory_items']} MEMORY.md items, provider \"none\", no model. The store ended with "
             f"{entries:,} entries ({store_mib:.1f} MiB of JSON); "
             f"the sweep promoted {promoted} item(s) ({promoted_planted} of the {len(planted)} planted facts; "
             "deep.limit 10 per sweep). Time includes writing DREAMS.md, the store and the "
             "promotion record.")
    data = {"sizes": sizes, "record_trace_s": per_trace, "raw_append_s": floor_append, "sweep_s": first_s,
            "io_floor_s": floor, "second_sweep_s": second_s, "peak_bytes": peak, "entries": entries,
            "promoted": promoted, "promoted_planted": promoted_planted, "store_mib": store_mib,
            "second_promoted": len(second.get("promoted", []))}
    return Section("dreaming", "Dreaming sweep (30 days of notes, recall traces)", [table, notes], data)


def run_bench(progress: Any, quick: bool = False) -> Section:
    return run(progress, quick=quick)


if __name__ == "__main__":
    from .common import make_progress

    with make_progress() as bar:
        print(run(bar, quick="--quick" in sys.argv).markdown())
