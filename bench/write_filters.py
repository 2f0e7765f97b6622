"""Precision/recall of the memory write filters (M7) on the labelled set, per class and language.

python bench/write_filters.py              # Markdown tables for the dev and the held-out (test) part
python bench/write_filters.py --errors     # also list the misclassified dev sentences
python -m bench --only write-filters       # the same, as a section of bench/results/latest.md

The set is tests/data/write_filters.jsonl (text, language, expected: keep | secret |
operational | venting, split: dev | test, note). The rules were developed on the dev part;
the test part is held out and only measured. `--errors` lists dev mistakes only unless
`--split test` is given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # `python bench/write_filters.py`
    sys.path.insert(0, str(ROOT))
    from bench.common import Section, md_table
else:
    from .common import Section, md_table

from clawkeep.memory.filters import KINDS, classify  # noqa: E402

DATA = ROOT / "tests" / "data" / "write_filters.jsonl"
LANGS = ("en", "zh", "ja", "ko")
SPLITS = ("dev", "test")


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def load(path: Path = DATA) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def evaluate(rows: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """Per (class, language) counts, overall accuracy and the misclassified rows."""
    counts = {(kind, lang): Counts() for kind in KINDS for lang in (*LANGS, "all")}
    errors: list[tuple[dict[str, Any], str, str]] = []
    n = correct = 0
    for row in rows:
        if row["split"] != split:
            continue
        verdict = classify(row["text"])
        n += 1
        correct += verdict.kind == row["expected"]
        for lang in (row["language"], "all"):
            if verdict.kind == row["expected"]:
                counts[(verdict.kind, lang)].tp += 1
            else:
                counts[(verdict.kind, lang)].fp += 1
                counts[(row["expected"], lang)].fn += 1
        if verdict.kind != row["expected"]:
            errors.append((row, verdict.kind, verdict.cue or ""))
    return {"n": n, "accuracy": correct / n if n else None, "counts": counts, "errors": errors}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def table(result: dict[str, Any]) -> str:
    headers = ["class"] + [f"{lang} P / R" for lang in (*LANGS, "all")]
    rows = []
    for kind in KINDS:
        cells = []
        for lang in (*LANGS, "all"):
            c = result["counts"][(kind, lang)]
            cells.append(f"{_pct(c.precision)} / {_pct(c.recall)} ({c.tp + c.fn})")
        rows.append([kind, *cells])
    return md_table(headers, rows)


def timing(rows: list[dict[str, Any]], rounds: int = 20) -> float:
    texts = [row["text"] for row in rows]
    start = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            classify(text)
    return (time.perf_counter() - start) / (rounds * len(texts)) * 1e6


def section(rows: list[dict[str, Any]]) -> Section:
    blocks, data = [], {}
    for split in SPLITS:
        result = evaluate(rows, split)
        label = "dev (rules developed on it)" if split == "dev" else "test (held out, measured only)"
        blocks.append(f"**{label}**: {result['n']} sentences, accuracy {_pct(result['accuracy'])}; "
                      "cells are precision / recall (labelled count)")
        blocks.append(table(result))
        data[split] = {"n": result["n"], "accuracy": result["accuracy"],
                       "classes": {f"{k}/{lang}": {"tp": c.tp, "fp": c.fp, "fn": c.fn}
                                   for (k, lang), c in result["counts"].items()}}
    micros = timing(rows)
    blocks.append(f"Labelled set: `{DATA.relative_to(ROOT)}` ({len(rows)} sentences, en/zh/ja/ko). "
                  f"Mean classify() time {micros:.0f} µs a sentence.")
    data["meanMicros"] = micros
    return Section("write-filters", "Memory write filters (M7): precision / recall per class and language",
                   blocks, data)


def run_bench(progress: Any = None, quick: bool = False) -> Section:
    """Entry point for `python -m bench --only write-filters`."""
    return section(load())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true", help="list misclassified sentences")
    parser.add_argument("--split", choices=SPLITS, default="dev", help="which part --errors lists (default dev)")
    args = parser.parse_args(argv)
    rows = load()
    print(section(rows).markdown())
    if args.errors:
        for row, got, cue in evaluate(rows, args.split)["errors"]:
            print(f"- [{row['language']}] expected {row['expected']}, got {got}: {row['text']!r} "
                  f"({row['note']}; cue={cue!r})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
