"""What the rerank stage costs: memory_search and Active Memory lane 2, p50 with rerank off and on.

Stores: memory_perf's synthetic memory indexes (10k and 100k chunks of ~1,500 characters, random
512-d vectors; cached under `.bench-data/memory-perf-<N>/`). Two engines on the same home, one with
`rerank.provider: none` and one with `rerank.provider: local` (the bundled cross-encoder, default
candidates, one thread), are called alternately with the same English LoCoMo questions (the stage
applies to them), in the same run, so the shared machine's load falls on both alike.

- memory_search: the public `Engine.memory_search(q)` (limit 6, the default).
- lane 2: `Engine.recall(q, session=…)` without a chat model (the deterministic lane 2:
  memory_search for the question and its variants, then a one-line summary), Active Memory mode
  `always` so every question reaches lane 2 (only those that do are timed).

    python -m bench.rerank_perf [--sizes 10000,100000] [--queries 30] [--reps 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep import Engine  # noqa: E402
from clawkeep.config import config_from_dict  # noqa: E402

from .common import make_progress  # noqa: E402
from .corpus import nl_questions  # noqa: E402
from .memory_perf import build_store  # noqa: E402

SESSION = "agent:main:main"


def _config(rerank: str) -> dict[str, Any]:
    # Active Memory mode always: every question goes to lane 2 (escalate sends only past questions)
    return {"agents": {"defaults": {"memorySearch": {"provider": "local", "rerank": {"provider": rerank}}}},
            "plugins": {"entries": {"active-memory": {"config": {"mode": "always"}}}}}


def _p50(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else float("nan")


def measure(n: int, queries: list[str], reps: int, progress: Any) -> dict[str, Any]:
    home, _ = build_store(n, progress)
    off, on = Engine.open(home=home, config=_config("none")), Engine.open(home=home, config=_config("local"))
    try:
        off.message("hello, this session exists for the recall benchmark")  # lane 2 needs a session
        for eng in (off, on):  # load both models and warm the caches outside the timings
            eng.memory_search("warm-up question about the weekend?")
            eng.recall("What did we say about the weekend?", session=SESSION)
        times: dict[str, list[float]] = {k: [] for k in ("search off", "search on", "lane2 off", "lane2 on")}
        lanes: dict[str, int] = {}
        for _ in range(reps):
            for q in queries:
                for name, eng in (("off", off), ("on", on)):
                    t0 = time.perf_counter()
                    eng.memory_search(q)
                    times[f"search {name}"].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    result = eng.recall(q, session=SESSION)
                    elapsed = time.perf_counter() - t0
                    if result.lane == 2:
                        times[f"lane2 {name}"].append(elapsed)
                    lanes[name] = lanes.get(name, 0) + (result.lane == 2)
        return {"n": n, **{k: _p50(v) for k, v in times.items()}, "timed": {k: len(v) for k, v in times.items()},
                "candidates": config_from_dict(_config("local")).agents.defaults.memory_search.rerank.candidates}
    finally:
        off.close()
        on.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--reps", type=int, default=2)
    args = p.parse_args(argv)
    queries = [q for q in nl_questions(args.queries * 2) if q.strip().endswith("?")][:args.queries]
    rows = []
    with make_progress() as progress:
        for n in (int(s) for s in args.sizes.split(",")):
            rows.append(measure(n, queries, args.reps, progress))
            print(rows[-1], file=sys.stderr, flush=True)
    print("| chunks | memory_search off p50 | on p50 | added | lane 2 off p50 | on p50 | added "
          "| timed (search/lane 2) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['search off']:.0f} ms | {r['search on']:.0f} ms | "
              f"{r['search on'] - r['search off']:+.0f} ms | {r['lane2 off']:.0f} ms | {r['lane2 on']:.0f} ms | "
              f"{r['lane2 on'] - r['lane2 off']:+.0f} ms | {r['timed']['search on']}/{r['timed']['lane2 on']} |")
    print(f"\nrerank: local cross-encoder, {rows[0]['candidates']} candidates (the default), one thread")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
