"""sessions_search on LoCoMo with a cross-encoder rerank of its first hits, replayed offline (issue 34).

sessions_search has no rerank stage; this measures whether one would help before building it. For
every category 1-4 question with evidence, on memory_locomo's cached homes (same ingestion), the
first CANDIDATES hits of `sessions_search(question, limit=CANDIDATES)` are scored once by the
bundled cross-encoder (cached in a JSON file, conversation by conversation in turn, so a run
stopped early covers every conversation), then fused with the search's own order as the product's
memory_search stage does (`memory.search.rerank.fused_order`) for each setting of the grid.
Leave one conversation out: the setting best on the other six (r@10) is measured on the one left
out against rerank off.

    python -m bench.rerank_sessions_locomo [--max-questions N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep.models.rerank_stage import applies, fused_order  # noqa: E402
from clawkeep.models.rerank import LocalCrossEncoder  # noqa: E402

from .common import BENCH_DATA, md_table  # noqa: E402
from .corpus import load_locomo  # noqa: E402
from .memory_locomo import CATEGORIES, prepared_engine, questions  # noqa: E402

CANDIDATES = 20
GRID = list(itertools.product((10, 15, 20), (0.3, 0.5, 0.7, 1.0), (5, 20)))
CACHE = BENCH_DATA / "rerank-sessions-locomo"
Row = dict[str, Any]


def hits() -> list[Row]:
    path = CACHE / "hits.jsonl"
    if path.exists():
        return [json.loads(line) for line in path.read_text().splitlines()]
    rows = []
    for conv in load_locomo():
        eng, texts, _ = prepared_engine(conv, "none")  # sessions_search reads no vectors
        try:
            prefix = conv.conv_id + ":"
            for q in questions(conv):
                found = eng.sessions_search(q.question, limit=CANDIDATES)["hits"]
                ids = [h["messageId"][len(prefix):] for h in found if h["messageId"].startswith(prefix)]
                rows.append({"conv": conv.conv_id, "q": q.question, "cat": q.category, "evidence": list(q.evidence),
                             "ids": ids, "texts": [texts.get(i, "") for i in ids]})
        finally:
            eng.close()
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def _key(row: Row) -> str:
    return f"{row['conv']}\x00{row['q']}"


def scores(rows: list[Row], max_questions: int | None) -> dict[str, list[float]]:
    path = CACHE / "scores.json"
    cache: dict[str, list[float]] = json.loads(path.read_text()) if path.exists() else {}
    by_conv: dict[str, list[Row]] = {}
    for row in rows:
        by_conv.setdefault(row["conv"], []).append(row)
    model, started, done = LocalCrossEncoder(threads=1), time.perf_counter(), 0
    for row in (r for g in itertools.zip_longest(*by_conv.values()) for r in g if r is not None):
        if max_questions is not None and len(cache) >= max_questions:
            break
        if _key(row) in cache:
            continue
        cache[_key(row)] = model.score(row["q"], row["texts"]) if applies(row["q"]) and row["texts"] else []
        done += 1
        if done % 20 == 0:
            path.write_text(json.dumps(cache))
            print(f"scored {len(cache)}/{len(rows)}, {(time.perf_counter() - started) / done:.2f} s a question",
                  file=sys.stderr, flush=True)
    path.write_text(json.dumps(cache))
    return cache


def order(row: Row, cache: dict[str, list[float]], setting: tuple[int, float, int] | None) -> list[str]:
    found = cache.get(_key(row), [])
    if setting is None or len(found) < 2:
        return row["ids"]
    candidates, weight, k = setting
    head = row["ids"][:candidates]
    return [head[i] for i in fused_order(len(head), found[:len(head)], weight, k)] + row["ids"][candidates:]


def recall(rows: list[Row], cache: dict[str, list[float]], setting: Any, k: int = 10) -> float:
    values = [len(set(order(r, cache, setting)[:k]) & set(r["evidence"])) / len(r["evidence"]) for r in rows]
    return statistics.mean(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-questions", type=int, default=None, help="stop scoring after this many questions")
    args = p.parse_args(argv)
    if args.max_questions is not None and args.max_questions < 1:
        p.error(f"--max-questions {args.max_questions} is not allowed; give a whole number ≥ 1")
    rows = hits()
    cache = scores(rows, args.max_questions)
    rows = [r for r in rows if _key(r) in cache]
    convs = sorted({r["conv"] for r in rows})
    fold_rows, deltas = [], []
    for conv in convs:
        train, test = [r for r in rows if r["conv"] != conv], [r for r in rows if r["conv"] == conv]
        best = max(GRID, key=lambda s: recall(train, cache, s))
        off, on = recall(test, cache, None), recall(test, cache, best)
        deltas.append(on - off)
        fold_rows.append([conv, f"{best[0]} candidates, weight {best[1]}, k {best[2]}", f"{off:.3f}", f"{on:.3f}"])
    print(f"{len(rows)} questions scored.\n")
    print(md_table(["left out", "setting chosen on the other six", "r@10 off", "on"], fold_rows))
    print(f"\nbetter on {sum(d > 5e-4 for d in deltas)} of {len(deltas)}, worse on {sum(d < -5e-4 for d in deltas)} "
          f"({min(deltas):+.3f} … {max(deltas):+.3f}, mean {statistics.mean(deltas):+.3f})\n")
    best = max(GRID, key=lambda s: recall(rows, cache, s))
    table = []
    for cat, name in CATEGORIES.items():
        mine = [r for r in rows if r["cat"] == cat]
        table.append([name, len(mine), f"{recall(mine, cache, None):.3f}", f"{recall(mine, cache, best):.3f}"])
    table.append(["**overall**", len(rows), f"{recall(rows, cache, None):.3f}", f"{recall(rows, cache, best):.3f}"])
    print(md_table(["category", "questions", "r@10 off", f"on ({best[0]} candidates, weight {best[1]}, k {best[2]})"],
                   table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
