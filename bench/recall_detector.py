"""Precision/recall of the A3 past-question detector on the labelled set, per language and split.

python bench/recall_detector.py            # Markdown tables (dev, test) + timing
python bench/recall_detector.py --errors   # also list every misclassified sentence
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clawkeep.recall.detector import classify

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "recall_intent.jsonl"
LANGS = ("en", "zh", "ja", "ko")


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def add(self, gold: bool, predicted: bool) -> None:
        if gold and predicted:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif gold:
            self.fn += 1
        else:
            self.tn += 1


def load(path: Path = DATA) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def evaluate(rows: list[dict], split: str) -> tuple[dict[str, Counts], list[tuple[dict, str]]]:
    """Counts per language (plus "all") and the misclassified rows with the detector's reason."""
    counts = {lang: Counts() for lang in (*LANGS, "all")}
    errors: list[tuple[dict, str]] = []
    for row in rows:
        if row.get("split", "dev") != split:
            continue
        result = classify(row["text"])
        counts[row["language"]].add(row["past"], result.past_question)
        counts["all"].add(row["past"], result.past_question)
        if result.past_question != row["past"]:
            errors.append((row, result.reason))
    return counts, errors


def table(counts: dict[str, Counts], split: str) -> str:
    lines = [
        f"**{split}**",
        "",
        "| language | n | positives | TP | FP | FN | TN | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lang, c in counts.items():
        n = c.tp + c.fp + c.fn + c.tn
        lines.append(
            f"| {lang} | {n} | {c.tp + c.fn} | {c.tp} | {c.fp} | {c.fn} | {c.tn} | {c.precision:.3f} | {c.recall:.3f} |"
        )
    return "\n".join(lines)


def timing(rows: list[dict], rounds: int = 20) -> float:
    texts = [row["text"] for row in rows]
    start = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            classify(text)
    return (time.perf_counter() - start) / (rounds * len(texts)) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", action="store_true", help="list misclassified sentences")
    args = parser.parse_args(argv)
    rows = load()
    print(f"# Past-question detector (A3) — {len(rows)} labelled sentences from {DATA.name}\n")
    for split in ("dev", "test"):
        counts, errors = evaluate(rows, split)
        print(table(counts, split))
        print()
        if args.errors and errors:
            for row, reason in errors:
                kind = "FN" if row["past"] else "FP"
                print(f"- {kind} [{row['language']}] {row['text']!r} ({row['note']}; reason={reason})")
            print()
    print(f"mean classify() time: {timing(rows):.1f} µs/message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
