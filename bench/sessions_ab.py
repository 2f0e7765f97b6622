"""sessions_search latency of two source trees on the same seeded store, in turns (same run).

The store is sessions_perf's (`seed_store`: SIZE messages over 1,000 sessions, cached under
`.bench-data/search-<label>`). Each round starts one process per tree (`PYTHONPATH=<tree>/src`),
the trees taking turns at going first; a process opens the engine, asks every question once
untimed, then REPS times timed, and reports its latencies. Questions: `nl_questions(N)` (LoCoMo
questions, ranked as dialogue) and the English keywords of sessions_perf. p50 / p95 per tree
over all rounds; the load average is printed beside them.

    python -m bench.sessions_ab --before /work/main --after . [--size 100000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from rich.progress import Progress  # noqa: E402

from .common import BENCH_DATA, REPO, load_average, percentile  # noqa: E402
from .corpus import EN_KEYWORDS, nl_questions  # noqa: E402
from .sessions_perf import seed_store  # noqa: E402

_CHILD = """
import json, sys, time
from clawkeep import Engine
home, reps, queries = sys.argv[1], int(sys.argv[2]), json.loads(sys.stdin.read())
eng = Engine.open(home=home)
out = {}
for q in queries:
    eng.sessions_search(q, limit=10)
for q in queries:
    for _ in range(reps):
        t = time.perf_counter()
        eng.sessions_search(q, limit=10)
        out.setdefault(q, []).append(time.perf_counter() - t)
eng.close()
print(json.dumps(out))
"""


def _run(tree: Path, home: Path, reps: int, queries: list[str]) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(home), str(reps)], input=json.dumps(queries),
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", type=Path, required=True, help="source tree measured as 'before'")
    p.add_argument("--after", type=Path, default=REPO, help="source tree measured as 'after' (default: this one)")
    p.add_argument("--size", type=int, default=100_000, help="stored messages")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--questions", type=int, default=50)
    args = p.parse_args(argv)
    label = f"{args.size // 1000}k" if args.size < 1_000_000 else f"{args.size / 1_000_000:g}M"
    home = BENCH_DATA / f"search-{label}"
    with Progress(transient=True) as progress:
        seed_store(home, args.size, 1_000, progress)
    classes = {"question": nl_questions(args.questions), "English keyword": list(EN_KEYWORDS)}
    queries = [q for qs in classes.values() for q in qs]
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    times: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    load_start = load_average()
    for r in range(args.rounds):
        for name in (list(trees) if r % 2 == 0 else list(reversed(trees))):
            for q, values in _run(trees[name], home, args.reps, queries).items():
                times[name].setdefault(q, []).extend(values)
    print(f"{args.size:,} messages, {args.rounds} rounds × {args.reps} reps; load average at start {load_start}, "
          f"at end {load_average()}")
    for cls, qs in classes.items():
        stats = {}
        for name in trees:
            values = [v for q in qs for v in times[name][q]]
            stats[name] = (percentile(values, 50), percentile(values, 95))
        ratio = stats["after"][0] / stats["before"][0]
        each = statistics.median(statistics.median(times["after"][q]) / statistics.median(times["before"][q])
                                 for q in qs)
        print(f"{cls} ({len(qs)}): before p50 {stats['before'][0] * 1e3:.2f} ms / p95 {stats['before'][1] * 1e3:.2f}; "
              f"after p50 {stats['after'][0] * 1e3:.2f} ms / p95 {stats['after'][1] * 1e3:.2f}; "
              f"p50 ratio {ratio:.2f}×; per-question median ratio {each:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
