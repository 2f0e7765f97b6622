"""sessions_search on LoCoMo with its rerank stage (issue 34): offline replay of the product's rule.

For every category 1-4 question with evidence, on memory_locomo's cached homes (same ingestion),
the first CANDIDATES hits of `sessions_search(question, limit=CANDIDATES)` with the stage off are
scored once by the bundled cross-encoder on their message text, as the stage reads it (cached in a
JSON file, conversation by conversation in turn, so a run stopped early covers every conversation),
then fused with the search's own order by the stage's own functions (`models.rerank_stage`:
`applies`, `fused_order`) for the product's default setting (`tools.sessions.search.rerank`) and
each setting of the grid. Leave one conversation out: the setting best on the other six (r@10) is
measured on the one left out against rerank off.

`--check N`: the first N scored questions of the first conversation are asked again through
`Engine.sessions_search` with the stage on (provider local, the defaults), and its first 10 hits
compared with the replay's: the replay is the product's rule only if they agree.

    python -m bench.rerank_sessions_locomo [--max-questions N] [--check N]
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

from clawkeep import Engine  # noqa: E402
from clawkeep.config import config_from_dict  # noqa: E402
from clawkeep.models.rerank import LocalCrossEncoder  # noqa: E402
from clawkeep.models.rerank_stage import FUSION_K, applies, fused_order  # noqa: E402

from .common import BENCH_DATA, md_table  # noqa: E402
from .corpus import load_locomo  # noqa: E402
from .memory_locomo import CACHE as HOMES  # noqa: E402
from .memory_locomo import CATEGORIES, memory_config, prepared_engine, questions  # noqa: E402

CANDIDATES = 20
GRID = list(itertools.product((10, 15, 20), (0.3, 0.5, 0.7, 1.0), (5, 20)))
CACHE = BENCH_DATA / "rerank-sessions-locomo"
_DEFAULTS = config_from_dict({}).tools.sessions.search.rerank
DEFAULT = (_DEFAULTS.candidates, _DEFAULTS.weight, FUSION_K)  # the product's setting
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


def check(rows: list[Row], cache: dict[str, list[float]], count: int) -> tuple[int, int]:
    """(agreeing, asked): the product's first 10 hits with the stage on against the replay's."""
    conv = rows[0]["conv"]
    mine = [r for r in rows if r["conv"] == conv][:count]
    config = memory_config("none")
    config["tools"] = {"sessions": {"search": {"rerank": {"provider": "local"}}}}
    eng, prefix = Engine.open(home=HOMES / "none" / conv, config=config), conv + ":"
    try:
        same = 0
        for row in mine:
            found = [h["messageId"][len(prefix):] for h in eng.sessions_search(row["q"], limit=10)["hits"]]
            same += found == order(row, cache, DEFAULT)[:10]
        return same, len(mine)
    finally:
        eng.close()


def _setting(s: tuple[int, float, int]) -> str:
    return f"{s[0]} candidates, weight {s[1]}, k {s[2]}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-questions", type=int, default=None, help="stop scoring after this many questions")
    p.add_argument("--check", type=int, default=0, help="ask this many questions through the product, stage on")
    args = p.parse_args(argv)
    if args.max_questions is not None and args.max_questions < 1:
        p.error(f"--max-questions {args.max_questions} is not allowed; give a whole number ≥ 1")
    rows = hits()
    cache = scores(rows, args.max_questions)
    rows = [r for r in rows if _key(r) in cache]
    convs = sorted({r["conv"] for r in rows})
    fold_rows, deltas, default_deltas = [], [], []
    for conv in convs:
        train, test = [r for r in rows if r["conv"] != conv], [r for r in rows if r["conv"] == conv]
        best = max(GRID, key=lambda s: recall(train, cache, s))
        off, on, default = recall(test, cache, None), recall(test, cache, best), recall(test, cache, DEFAULT)
        deltas.append(on - off)
        default_deltas.append(default - off)
        fold_rows.append([conv, len(test), f"{off:.3f}", f"{default:.3f}", _setting(best), f"{on:.3f}"])
    print(f"{len(rows)} questions scored.\n")
    print(md_table(["left out", "questions", "r@10 off", f"on, default ({_setting(DEFAULT)})",
                    "setting chosen on the other six", "on, chosen"], fold_rows))
    for name, values in (("default setting", default_deltas), ("setting chosen on the other six", deltas)):
        print(f"\n{name}: better on {sum(d > 5e-4 for d in values)} of {len(values)}, worse on "
              f"{sum(d < -5e-4 for d in values)} ({min(values):+.3f} … {max(values):+.3f}, "
              f"mean {statistics.mean(values):+.3f})")
    table = []
    for cat, name in list(CATEGORIES.items()) + [(None, "**overall**")]:
        mine = [r for r in rows if cat is None or r["cat"] == cat]
        table.append([name, len(mine), *(f"{recall(mine, cache, s, k):.3f}" for k in (5, 10) for s in (None, DEFAULT))])
    print()
    print(md_table(["category", "questions", "r@5 off", "on", "r@10 off", f"on ({_setting(DEFAULT)})"], table))
    grid_rows = [[_setting(s), f"{recall(rows, cache, s):.3f}"] for s in GRID]
    print()
    print(md_table(["setting", "r@10, all scored"], [["off", f"{recall(rows, cache, None):.3f}"]] + grid_rows))
    if args.check:
        same, asked = check(rows, cache, args.check)
        print(f"\nproduct path (Engine.sessions_search, stage on, local, defaults): the same first 10 hits as the "
              f"replay for {same} of {asked} questions of {rows[0]['conv']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
