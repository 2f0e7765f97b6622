"""Compare memory_search variants on LoCoMo conversation by conversation (issue 34).

Input: per-question dumps of `python -m bench.memory_locomo --modes hybrid --dump FILE`, the first
one the baseline, the others a variant each (e.g. `--config '{"query": {"hybrid": {"mmr":
{"enabled": true}}}}'`, or a code change). Also replays on the baseline's own results a
session cap: at most N windows of one LoCoMo session before the others (diversity in the top of
the list, so one session does not fill the budget), for every question or only those asking for
several things (`text.dialogue.asks_for_several`).

For each variant: recall within 1,800 / 4,000 characters overall and per category, and per
conversation the change against the baseline: a variant is worth keeping only if it helps on most
of the 7 conversations (a fixed rule has no setting to choose, so leaving one conversation out is
the same as counting the conversations it helps). No rule here names LoCoMo's speakers or dates.

    python -m bench.locomo_variants BASE.jsonl [VARIANT.jsonl ...] [--session-caps 1,2,3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep.text.dialogue import asks_for_several  # noqa: E402

from .common import md_table  # noqa: E402
from .corpus import load_locomo  # noqa: E402
from .memory_locomo import BUDGETS, CATEGORIES, _flat, covered  # noqa: E402

Row = dict[str, Any]
_DAY = re.compile(r"^\s*\[?(\d{4}-\d\d-\d\d)")
Scores = dict[str, list[tuple[int, dict[int, float]]]]  # {conversation: [(category, {budget: recall})]}


def _texts() -> dict[str, dict[str, str]]:
    return {c.conv_id: {t.dia_id: _flat(f"{t.speaker}: {t.text}") for s in c.sessions for t in s.turns}
            for c in load_locomo()}


def score(rows: list[Row], texts: dict[str, dict[str, str]], order: Callable[[Row], list[Row]]) -> Scores:
    out: Scores = defaultdict(list)
    for row in rows:
        results = order(row)
        out[row["conv"]].append((row["cat"], {
            b: len(covered(results, row["evidence"], texts[row["conv"]], b)[0]) / len(row["evidence"])
            for b in BUDGETS}))
    return out


def mean(scores: Scores, budget: int, conv: str | None = None, cat: int | None = None) -> float:
    picked = [s[budget] for c, rows in scores.items() if conv in (None, c) for k, s in rows if cat in (None, k)]
    return statistics.mean(picked) if picked else float("nan")


def session_of(result: Row) -> str:
    """The LoCoMo session of a result (its first message id, `conv-XX:D<n>:<i>` → `D<n>`)."""
    ids = result.get("ids") or []
    if ids and ids[0].count(":") >= 2:
        return ids[0].split(":")[1]
    day = _DAY.match(result["snippet"])  # a transcript window starts with its date
    return day.group(1) if day else result["snippet"][:40]


def session_cap(cap: int, only_several: bool) -> Callable[[Row], list[Row]]:
    def order(row: Row) -> list[Row]:
        if only_several and not asks_for_several(row["q"]):
            return row["results"]
        first, later, seen = [], [], defaultdict(int)
        for result in row["results"]:
            key = session_of(result)
            (later if seen[key] >= cap else first).append(result)
            seen[key] += 1
        return first + later
    return order


def misses(rows: list[Row], texts: dict[str, dict[str, str]]) -> list[list[Any]]:
    """Per category, where the evidence turns are: within 4,000 characters, among the results but
    past the budget, or in none of them (only the first two can a reordering reach)."""
    out = []
    for cat, name in CATEGORIES.items():
        within = past = absent = 0
        for row in (r for r in rows if r["cat"] == cat):
            t = texts[row["conv"]]
            got = covered(row["results"], row["evidence"], t, 4000)[0]
            for dia in row["evidence"]:
                if dia in got:
                    within += 1
                elif dia in t and any(t[dia] in _flat(r["snippet"]) for r in row["results"]):
                    past += 1
                else:
                    absent += 1
        out.append([name, within, past, absent])
    return out


def compare(name: str, base: Scores, variant: Scores) -> list[Any]:
    convs = sorted(base)
    row: list[Any] = [name]
    for b in BUDGETS:
        row.append(f"{mean(variant, b):.3f}")
    row.append(" / ".join(f"{mean(variant, 4000, cat=k):.3f}" for k in CATEGORIES))
    for b in BUDGETS:
        deltas = [mean(variant, b, c) - mean(base, b, c) for c in convs]
        better, worse = sum(d > 5e-4 for d in deltas), sum(d < -5e-4 for d in deltas)
        row.append(f"{better}+ / {worse}− ({min(deltas):+.3f} … {max(deltas):+.3f})")
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dumps", nargs="+", help="baseline dump first, then variant dumps")
    p.add_argument("--session-caps", default="1,2,3", help="session caps replayed on the baseline ('' for none)")
    args = p.parse_args(argv)
    texts = _texts()
    loaded = []
    for path in args.dumps:
        try:
            loaded.append((Path(path).stem, [json.loads(line) for line in Path(path).read_text().splitlines()]))
        except (OSError, ValueError) as exc:
            p.error(f"cannot read dump {path}: {exc}; give a file written by memory_locomo --dump")
    base_rows = loaded[0][1]
    as_is: Callable[[Row], list[Row]] = lambda row: row["results"]  # noqa: E731
    base = score(base_rows, texts, as_is)
    table = [compare(f"{loaded[0][0]} (baseline)", base, base)]
    for name, rows in loaded[1:]:
        table.append(compare(name, base, score(rows, texts, as_is)))
    for cap in (int(x) for x in args.session_caps.split(",") if x.strip()):
        for several in (False, True):
            label = f"session cap {cap}" + (", list questions only" if several else ", every question")
            table.append(compare(label, base, score(base_rows, texts, session_cap(cap, several))))
    headers = ["variant", "r@1800c", "r@4000c", "r@4000c " + " / ".join(CATEGORIES.values()),
               "conversations better / worse, r@1800c (range)", "r@4000c (range)"]
    print(md_table(headers, table))
    print()
    print(md_table(["category (baseline)", "evidence turns within 4,000 chars", "in the results, past it",
                    "in none of the results"], misses(base_rows, texts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
