"""Compare sessions_search variants on LoCoMo conversation by conversation (issue 34).

Input: per-question dumps of `python -m bench.locomo_sessions --dump FILE`, the first the
baseline, the others a variant each (a code change, or a constant set differently). For each
variant: r@5 and r@10 overall and per category, and how many of the 7 conversations it makes
better / worse (a fixed rule has no setting to choose: this is its leave-one-out). With two
variants or more, also the leave-one-out choice among them: for each conversation, the variant
best on the other six (r@10), measured on the one left out against the baseline.

    python -m bench.sessions_variants BASE.jsonl VARIANT.jsonl [...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from .common import md_table  # noqa: E402
from .locomo_sessions import CATEGORIES  # noqa: E402

Row = dict[str, Any]


def recall(row: Row, k: int) -> float:
    evidence = set(row["evidence"])
    return len(evidence & set(row["ids"][:k])) / len(evidence)


def mean(rows: list[Row], k: int, conv: str | None = None, cat: int | None = None,
         without: str | None = None) -> float:
    values = [recall(r, k) for r in rows if conv in (None, r["conv"]) and cat in (None, r["cat"])
              and r["conv"] != without]
    return statistics.mean(values) if values else float("nan")


def folds(rows: list[Row], base: list[Row], k: int) -> str:
    deltas = [mean(rows, k, c) - mean(base, k, c) for c in conversations(base)]
    return (f"{sum(d > 5e-4 for d in deltas)}+ / {sum(d < -5e-4 for d in deltas)}− "
            f"({min(deltas):+.3f} … {max(deltas):+.3f})")


def conversations(rows: list[Row]) -> list[str]:
    return sorted({r["conv"] for r in rows}, key=lambda c: int(c.split("-")[-1]))


def load(path: Path) -> list[Row]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dumps", nargs="+", type=Path, help="the baseline's dump first, then one per variant")
    args = p.parse_args(argv)
    runs = {path.stem: load(path) for path in args.dumps}
    base = next(iter(runs.values()))
    table = []
    for name, rows in runs.items():
        table.append([name, f"{mean(rows, 5):.3f}", f"{mean(rows, 10):.3f}",
                      *(f"{mean(rows, 5, cat=c):.3f} / {mean(rows, 10, cat=c):.3f}" for c in CATEGORIES),
                      folds(rows, base, 5), folds(rows, base, 10)])
    print(md_table(["variant", "r@5", "r@10", *(f"{n} r@5 / r@10" for n in CATEGORIES.values()),
                    "conversations better / worse, r@5 (range)", "r@10 (range)"], table))
    variants = dict(list(runs.items())[1:])
    if len(variants) >= 2:
        chosen_rows, deltas = [], []
        for conv in conversations(base):
            best = max(variants, key=lambda n: mean(variants[n], 10, without=conv))
            on, off = mean(variants[best], 10, conv), mean(base, 10, conv)
            deltas.append(on - off)
            chosen_rows.append([conv, best, f"{off:.3f}", f"{on:.3f}", f"{on - off:+.3f}"])
        print()
        print(md_table(["left out", "variant best on the other six", "r@10 baseline", "r@10 chosen", "change"],
                       chosen_rows))
        print(f"\nbetter on {sum(d > 5e-4 for d in deltas)} of {len(deltas)}, worse on "
              f"{sum(d < -5e-4 for d in deltas)} ({min(deltas):+.3f} … {max(deltas):+.3f}, "
              f"mean {statistics.mean(deltas):+.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
