"""LoCoMo with the rerank stage off and on, and its settings chosen leave-one-conversation-out.

Input: the per-question dump of `python -m bench.memory_locomo --modes hybrid --dump FILE` (rerank
off, `limit=25`: the results in the search's own order with their snippets). Each question's first
MAX_CANDIDATES snippets are scored once by the rerank model (cached in a JSON file beside the dump,
so a stopped run resumes), then every setting of the grid is replayed with the product's own rule
(`models.rerank_stage`: `applies`, Latin-script passages only, `fused_order`) and scored with
memory_locomo's recall@budget. The replay is the product's answer: memory_search builds
max(limit, candidates) windows, and with limit 25 that is the dump's list.

Leave-one-conversation-out: for each conversation, the setting best on the other six (mean of
r@1800c and r@4000c over their questions) is measured on it against rerank off. A setting is kept
as the default only if it helps on most folds.

    python -m bench.rerank_locomo --dump /tmp/base.jsonl [--threads 1] [--max-questions N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep.models.rerank import LocalCrossEncoder  # noqa: E402
from clawkeep.models.rerank_stage import LATIN, applies, fused_order  # noqa: E402
from clawkeep.text.tokens import scripts  # noqa: E402

from .corpus import load_locomo  # noqa: E402
from .memory_locomo import BUDGETS, CATEGORIES, _flat, covered  # noqa: E402

MAX_CANDIDATES = 10
GRID = {"candidates": (5, 10), "share": (0.5, 0.7, 1.0), "k": (5, 20)}


def score_all(rows: list[dict[str, Any]], cache_path: Path, threads: int) -> dict[str, list[float]]:
    """{question key: cross-encoder scores of its first MAX_CANDIDATES snippets}, cached."""
    cache: dict[str, list[float]] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    model = LocalCrossEncoder(threads=threads)
    started, done = time.perf_counter(), 0
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_conv[row["conv"]].append(row)
    # conversation by conversation in turn, so a run stopped early (--scored-only) covers them all
    interleaved = [r for group in itertools.zip_longest(*by_conv.values()) for r in group if r is not None]
    for row in interleaved:
        key = _key(row)
        if key in cache:
            continue
        snippets = [r["snippet"] for r in row["results"][:MAX_CANDIDATES]]
        cache[key] = model.score(row["q"], snippets) if applies(row["q"]) else []
        done += 1
        if done % 25 == 0:
            cache_path.write_text(json.dumps(cache))
            print(f"scored {len(cache)}/{len(rows)} questions, {(time.perf_counter() - started) / done:.2f} s each",
                  file=sys.stderr, flush=True)
    cache_path.write_text(json.dumps(cache))
    return cache


def _key(row: dict[str, Any]) -> str:
    return f"{row['conv']}\x00{row['q']}"


def replay(row: dict[str, Any], scores: list[float], candidates: int, share: float, k: int) -> list[dict[str, Any]]:
    """The results as memory_search answers them with this rerank setting (same rule as the product)."""
    results = row["results"]
    if not scores or share == 0:
        return results
    head = results[:candidates]
    slots = [i for i, r in enumerate(head) if scripts(r["snippet"]) <= LATIN]
    if len(slots) < 2:
        return results
    picked = [scores[i] for i in slots]
    order = fused_order(len(slots), picked, share, k)
    reordered = list(head)
    for slot, pick in zip(slots, order, strict=True):
        reordered[slot] = head[slots[pick]]
    return reordered + results[candidates:]


def recall(row: dict[str, Any], results: list[dict[str, Any]], texts: dict[str, str]) -> dict[int, float]:
    return {b: len(covered(results, row["evidence"], texts, b)[0]) / len(row["evidence"]) for b in BUDGETS}


def evaluate(rows, cache, texts, setting) -> list[tuple[str, int, dict[int, float]]]:
    """[(conversation, category, {budget: recall})] for one setting (None: rerank off)."""
    out = []
    for row in rows:
        results = row["results"] if setting is None else replay(row, cache.get(_key(row), []), *setting)
        out.append((row["conv"], row["cat"], recall(row, results, texts[row["conv"]])))
    return out


def mean_of(rows, convs=None, cat=None, budget=None) -> float:
    picked = [s for c, k, s in rows if (convs is None or c in convs) and (cat is None or k == cat)]
    if not picked:
        return float("nan")
    if budget is None:
        return statistics.mean((s[1800] + s[4000]) / 2 for s in picked)
    return statistics.mean(s[budget] for s in picked)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", required=True, help="memory_locomo --dump output (hybrid, limit 25)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="", help="write the results as JSON here")
    p.add_argument("--scored-only", action="store_true", help="only the questions already scored (no model)")
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in Path(args.dump).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["mode"] == "hybrid"]
    texts = {c.conv_id: {t.dia_id: _flat(f"{t.speaker}: {t.text}") for s in c.sessions for t in s.turns}
             for c in load_locomo()}
    cache_path = Path(args.dump + ".scores.json")
    if args.scored_only:  # what an earlier run scored, without scoring more
        cache = json.loads(cache_path.read_text())
        rows = [r for r in rows if _key(r) in cache]
    else:
        cache = score_all(rows, cache_path, args.threads)
    convs = sorted({r["conv"] for r in rows})
    off = evaluate(rows, cache, texts, None)
    settings = list(itertools.product(*GRID.values()))
    runs = {s: evaluate(rows, cache, texts, s) for s in settings}
    folds = []
    for held in convs:
        train = [c for c in convs if c != held]
        best = max(settings, key=lambda s: mean_of(runs[s], train) - mean_of(off, train))
        folds.append({"held": held, "setting": dict(zip(GRID, best, strict=True)),
                      **{f"off r@{b}c": mean_of(off, [held], budget=b) for b in BUDGETS},
                      **{f"on r@{b}c": mean_of(runs[best], [held], budget=b) for b in BUDGETS}})
    chosen = max(settings, key=lambda s: mean_of(runs[s]) - mean_of(off))
    table = {}
    for cat, name in [*CATEGORIES.items(), (None, "overall")]:
        table[name] = {"n": sum(1 for _, k, _ in off if cat is None or k == cat),
                       **{f"off r@{b}c": mean_of(off, cat=cat, budget=b) for b in BUDGETS},
                       **{f"on r@{b}c": mean_of(runs[chosen], cat=cat, budget=b) for b in BUDGETS}}
    every = {json.dumps(dict(zip(GRID, s, strict=True))): {f"r@{b}c": mean_of(runs[s], budget=b) for b in BUDGETS}
             for s in settings}
    result = {"folds": folds, "chosen_all": dict(zip(GRID, chosen, strict=True)), "table": table, "grid": every}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    _print(result)
    return 0


def _print(result: dict[str, Any]) -> None:
    print("| held-out conversation | setting chosen on the other six | off r@1800c | on r@1800c | off r@4000c | "
          "on r@4000c |\n|---|---|---|---|---|---|")
    for f in result["folds"]:
        s = f["setting"]
        print(f"| {f['held']} | {s['candidates']} cand., share {s['share']}, k {s['k']} | {f['off r@1800c']:.3f} | "
              f"{f['on r@1800c']:.3f} | {f['off r@4000c']:.3f} | {f['on r@4000c']:.3f} |")
    deltas = {b: [f[f"on r@{b}c"] - f[f"off r@{b}c"] for f in result["folds"]] for b in BUDGETS}
    for b, d in deltas.items():
        print(f"\nr@{b}c change per fold: mean {statistics.mean(d):+.3f}, min {min(d):+.3f}, max {max(d):+.3f}, "
              f"helped {sum(x > 0 for x in d)}/{len(d)}")
    print(f"\nsetting best on all seven: {result['chosen_all']}\n")
    print("| category | questions | off r@1800c | on r@1800c | off r@4000c | on r@4000c |\n|---|---|---|---|---|---|")
    for name, r in result["table"].items():
        print(f"| {name} | {r['n']} | {r['off r@1800c']:.3f} | {r['on r@1800c']:.3f} | {r['off r@4000c']:.3f} | "
              f"{r['on r@4000c']:.3f} |")
    by_setting = defaultdict(dict)
    for s, r in result["grid"].items():
        by_setting[s] = r
    print("\n" + "\n".join(f"{s}: r@1800c {r['r@1800c']:.3f} r@4000c {r['r@4000c']:.3f}"
                           for s, r in by_setting.items()))


if __name__ == "__main__":
    raise SystemExit(main())
