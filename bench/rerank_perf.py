"""What the rerank stage costs: memory_search, Active Memory lane 2 and sessions_search, p50 with
rerank off and on.

Memory stores: memory_perf's synthetic memory indexes (10k and 100k chunks of ~1,500 characters,
random 512-d vectors; cached under `.bench-data/memory-perf-<N>/`). Two engines on the same home,
one with `rerank.provider: none` and one with `rerank.provider: local` (the bundled cross-encoder,
default candidates, one thread), are called alternately with the same English LoCoMo questions (the
stage applies to them), in the same run, so the shared machine's load falls on both alike.

- memory_search: the public `Engine.memory_search(q)` (limit 6, the default).
- lane 2: `Engine.recall(q, session=…)` without a chat model (the deterministic lane 2:
  memory_search for the question and its variants, then a one-line summary), Active Memory mode
  `always` so every question reaches lane 2 (only those that do are timed).
- sessions_search (`--what sessions`): sessions_perf's seeded message stores (10k and 100k
  messages over 1,000 sessions, cached under `.bench-data/rerank-sessions-<N>/`); three engines on
  one home called in turn with each question (each engine first in turn: the first to ask a
  question reads its pages cold), `Engine.sessions_search(q)` (limit 10):
  `tools.sessions.search.rerank` none, local (default candidates, one thread) and remote, the
  last against a scripted `/rerank` server on loopback started here (it answers at once, scores
  by shared words: the cost measured is clawkeep's side and the loopback round trip, not a
  model's).

    python -m bench.rerank_perf [--what memory,sessions] [--sizes 10000,100000] [--queries 30] [--reps 2]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep import Engine  # noqa: E402
from clawkeep.config import config_from_dict  # noqa: E402

from .common import BENCH_DATA, make_progress  # noqa: E402
from .corpus import nl_questions  # noqa: E402
from .memory_perf import build_store  # noqa: E402
from .sessions_perf import seed_store  # noqa: E402

SEEDED_SESSIONS = 1_000
_WORD = re.compile(r"[a-z]+")

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


class _ScriptedRerank(BaseHTTPRequestHandler):
    """POST /rerank: one score per document, the share of the query's words it holds."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        words = set(_WORD.findall(body["query"].lower()))
        results = [{"index": i, "relevance_score": len(words & set(_WORD.findall(d.lower()))) / max(1, len(words))}
                   for i, d in enumerate(body["documents"])]
        payload = json.dumps({"results": results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def _sessions_config(rerank: dict[str, Any]) -> dict[str, Any]:
    return {"tools": {"sessions": {"search": {"rerank": rerank}}}}


def measure_sessions(n: int, queries: list[str], reps: int, progress: Any) -> dict[str, Any]:
    home = BENCH_DATA / f"rerank-sessions-{n // 1000}k"
    seed_store(home, n, SEEDED_SESSIONS, progress)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedRerank)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    engines = {"off": Engine.open(home=home, config=_sessions_config({"provider": "none"})),
               "local": Engine.open(home=home, config=_sessions_config({"provider": "local"})),
               "remote": Engine.open(home=home, config=_sessions_config({"provider": "remote",
                                                                         "remote": {"baseUrl": url}}))}
    try:
        for eng in engines.values():  # load the model, warm the caches outside the timings
            eng.sessions_search("What did they say about the weekend trip?")
        times: dict[str, list[float]] = {k: [] for k in engines}
        scored = dict.fromkeys(engines, 0)
        names = list(engines)
        for _ in range(reps):
            for i, q in enumerate(queries):
                # each engine takes its turn first: the first to ask a question reads its pages cold
                for name in names[i % len(names):] + names[:i % len(names)]:
                    eng = engines[name]
                    t0 = time.perf_counter()
                    hits = eng.sessions_search(q)["hits"]
                    times[name].append(time.perf_counter() - t0)
                    scored[name] += any("rerankScore" in h for h in hits)
        rerank = config_from_dict(_sessions_config({"provider": "local"})).tools.sessions.search.rerank
        return {"n": n, **{k: _p50(v) for k, v in times.items()}, "timed": len(times["off"]), "reranked": scored,
                "candidates": rerank.candidates}
    finally:
        for eng in engines.values():
            eng.close()
        server.shutdown()
        server.server_close()


def print_sessions(rows: list[dict[str, Any]]) -> None:
    print("| messages | sessions_search off p50 | local p50 | added | remote (loopback) p50 | added "
          "| timed | reranked (local/remote) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['off']:.0f} ms | {r['local']:.0f} ms | {r['local'] - r['off']:+.0f} ms | "
              f"{r['remote']:.0f} ms | {r['remote'] - r['off']:+.0f} ms | {r['timed']} | "
              f"{r['reranked']['local']}/{r['reranked']['remote']} |")
    print(f"\nrerank: {rows[0]['candidates']} candidates (the default), limit 10; local: one thread")


def print_memory(rows: list[dict[str, Any]]) -> None:
    print("| chunks | memory_search off p50 | on p50 | added | lane 2 off p50 | on p50 | added "
          "| timed (search/lane 2) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['search off']:.0f} ms | {r['search on']:.0f} ms | "
              f"{r['search on'] - r['search off']:+.0f} ms | {r['lane2 off']:.0f} ms | {r['lane2 on']:.0f} ms | "
              f"{r['lane2 on'] - r['lane2 off']:+.0f} ms | {r['timed']['search on']}/{r['timed']['lane2 on']} |")
    print(f"\nrerank: local cross-encoder, {rows[0]['candidates']} candidates (the default), one thread")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--what", default="memory,sessions", help="memory (memory_search and lane 2), sessions, or both")
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--reps", type=int, default=2)
    args = p.parse_args(argv)
    what = {w.strip() for w in args.what.split(",")}
    if not what or what - {"memory", "sessions"}:
        p.error(f"--what {args.what!r} is not allowed; give memory, sessions or memory,sessions")
    queries = [q for q in nl_questions(args.queries * 2) if q.strip().endswith("?")][:args.queries]
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average at start: {Path('/proc/loadavg').read_text().split()[:3]}", file=sys.stderr)
    with make_progress() as progress:
        for name, measure_one, show in (("memory", measure, print_memory),
                                        ("sessions", measure_sessions, print_sessions)):
            if name in what:
                rows = []
                for n in sizes:
                    rows.append(measure_one(n, queries, args.reps, progress))
                    print(rows[-1], file=sys.stderr, flush=True)
                show(rows)
    print(f"load average at end: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
