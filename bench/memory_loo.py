"""Leave one conversation out over memory_search's ranking constants (issue 34).

The turn ranking of memory_search (`clawkeep.memory.search.windows`) weighs a dozen signals with
constants chosen on LoCoMo: the chunk's score, the line's vector, the turns before and after, the
speaker a question names, the asking share, the session's best turns, the question's dates, the
pools of lines. This bench asks whether those choices generalise: for each constant it runs a few
values (the default among them, 0 meaning "rule off"), and for each of the 7 conversations picks
the value best on the other six (mean of recall within 1,800 and 4,000 characters) and measures
it on the one left out, against the default. A constant whose default every fold picks is not
fitted to any single conversation; one where the folds pick another value, better on most of
them, is a change worth making.

The values are set on the modules for the length of a run and restored after it (a parameter
sweep; the product reads them as constants). Protocol and metric: bench/memory_locomo.py (default
configuration with transcript indexing, `limit` 25, the same cached homes).

    python -m bench.memory_loo [--constants TURN_BACK,SESSION_SHARE] [--conversations conv-26,…]

A study, not part of `make bench`: all 12 constants take about 27 minutes on this machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):  # `python bench/memory_loo.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep.memory import search as search_module  # noqa: E402
from clawkeep.memory.search import windows as windows_module  # noqa: E402

from .common import Section, make_progress, md_table  # noqa: E402
from .corpus import Conversation, load_locomo  # noqa: E402
from .memory_locomo import BUDGETS, CATEGORIES, LIMIT, covered, prepared_engine, questions  # noqa: E402

# constant -> (module, values tried); each list holds the default
GRID: dict[str, tuple[ModuleType, tuple[float, ...]]] = {
    "CHUNK_SHARE": (windows_module, (0.4, 0.6, 0.8)),
    "TURN_VECTOR": (windows_module, (0.3, 0.5, 0.7)),
    "TURN_BACK": (windows_module, (0.0, 0.3, 0.4, 0.5)),
    "LIST_TURN_BACK": (windows_module, (0.0, 0.2, 0.4)),
    "TURN_FORWARD": (windows_module, (0.0, 0.2, 0.3)),
    "SPEAKER_SHARE": (windows_module, (0.0, 0.3, 0.5, 0.7)),
    "SESSION_SHARE": (windows_module, (0.0, 0.1, 0.2, 0.3)),
    "DATE_SHARE": (windows_module, (0.0, 0.3, 0.5)),
    "QUESTION_SHARE": (windows_module, (0.0, 0.3, 0.5, 0.7)),
    "TURN_MIN_SHARE": (windows_module, (0.0, 0.3, 0.4)),
    "LINE_POOL": (windows_module, (20, 30, 40)),
    "WINDOW_SHARE": (search_module, (0.4, 0.7, 1.0)),
}
QUICK_CONSTANTS = ("TURN_BACK", "SESSION_SHARE")

Scores = dict[str, list[tuple[int, dict[int, float]]]]  # conv id -> [(category, {budget: recall})]


@contextmanager
def constant(module: ModuleType, name: str, value: float):
    """`module.name` = value for the block (the search reads it at call time)."""
    kept = getattr(module, name)
    setattr(module, name, type(kept)(value))
    try:
        yield
    finally:
        setattr(module, name, kept)


def measure(conversations: Sequence[Conversation], names: Sequence[str], progress: Any = None
            ) -> dict[tuple[str, float], Scores]:
    """{(constant, value): per-conversation scores}; ("default", 0) is the configuration as shipped.
    Each conversation's engine is opened once and every variant asked over it."""
    variants: list[tuple[str, float]] = [("default", 0.0)]
    for name in names:
        module, values = GRID[name]
        variants += [(name, v) for v in values if v != getattr(module, name)]
    out: dict[tuple[str, float], Scores] = {v: {} for v in variants}
    total = sum(len(questions(c)) for c in conversations) * len(variants)
    task = progress.add_task("memory_search LoCoMo, leave one out", total=total) if progress else None
    for conv in conversations:
        eng, texts, _ = prepared_engine(conv, "local")
        try:
            for name, value in variants:
                with (constant(*_where(name), value) if name != "default" else _nothing()):
                    out[(name, value)][conv.conv_id] = _ask(eng, conv, texts)
                if task is not None:
                    progress.advance(task, len(questions(conv)))
        finally:
            eng.close()
    return out


def _where(name: str) -> tuple[ModuleType, str]:
    return GRID[name][0], name


@contextmanager
def _nothing():
    yield


def _ask(eng: Any, conv: Conversation, texts: dict[str, str]) -> list[tuple[int, dict[int, float]]]:
    rows = []
    for q in questions(conv):
        results = eng.memory_search(q.question, limit=LIMIT, mode="hybrid")["results"]
        rows.append((q.category, {b: len(covered(results, q.evidence, texts, b)[0]) / len(q.evidence)
                                  for b in BUDGETS}))
    return rows


def recall(scores: Scores, convs: Sequence[str], budget: int, category: int | None = None) -> float:
    values = [s[budget] for c in convs for cat, s in scores[c] if category is None or cat == category]
    return statistics.mean(values) if values else float("nan")


def _both(scores: Scores, convs: Sequence[str]) -> float:
    return statistics.mean(recall(scores, convs, b) for b in BUDGETS)


def leave_one_out(results: dict[tuple[str, float], Scores], name: str) -> dict[str, Any]:
    """Per left-out conversation: the value best on the others, and its change there."""
    default = results[("default", 0.0)]
    module, _ = GRID[name]
    shipped = getattr(module, name)
    candidates = {shipped: default} | {v: s for (n, v), s in results.items() if n == name}
    convs = sorted(default)
    folds = []
    for held in convs:
        others = [c for c in convs if c != held]
        pick = max(candidates, key=lambda v: (_both(candidates[v], others), v == shipped))
        folds.append({"held": held, "pick": pick,
                      **{f"d{b}": recall(candidates[pick], [held], b) - recall(default, [held], b) for b in BUDGETS}})
    return {"shipped": shipped, "values": {v: {b: recall(s, convs, b) for b in BUDGETS} for v, s in candidates.items()},
            "folds": folds}


def _spread(folds: list[dict[str, Any]], budget: int) -> str:
    d = [f[f"d{budget}"] for f in folds]
    better, worse = sum(x > 1e-9 for x in d), sum(x < -1e-9 for x in d)
    return f"{statistics.mean(d):+.3f} ({min(d):+.3f} … {max(d):+.3f}; {better}+ / {worse}−)"


def report(results: dict[tuple[str, float], Scores], names: Sequence[str]) -> Section:
    default = results[("default", 0.0)]
    convs = sorted(default)
    cat_rows = [[CATEGORIES[c], *(f"{recall(default, convs, b, c):.3f}" for b in BUDGETS)] for c in CATEGORIES]
    cat_rows.append(["**overall**", *(f"{recall(default, convs, b):.3f}" for b in BUDGETS)])
    conv_rows = [[c, *(f"{recall(default, [c], b):.3f}" for b in BUDGETS)] for c in convs]
    rows, data = [], {}
    for name in names:
        loo = leave_one_out(results, name)
        data[name] = loo
        tried = ", ".join(f"{v:g}{'*' if v == loo['shipped'] else ''}: {s[1800]:.3f}/{s[4000]:.3f}"
                          for v, s in sorted(loo["values"].items()))
        picks = [f["pick"] for f in loo["folds"]]
        chosen = ", ".join(f"{v:g}×{picks.count(v)}" for v in sorted(set(picks)))
        rows.append([name, tried, chosen, _spread(loo["folds"], 1800), _spread(loo["folds"], 4000)])
    blocks = [
        f"The default configuration on {len(convs)} conversations ({sum(len(default[c]) for c in convs)} questions), "
        "per category and per conversation (recall within 1,800 / 4,000 characters):",
        md_table(["category", "r@1800c", "r@4000c"], cat_rows),
        md_table(["conversation", "r@1800c", "r@4000c"], conv_rows),
        "Each constant: the values tried (`*` the shipped one; all conversations, r@1800c/r@4000c), the value "
        "each left-out fold picked on the other six, and the change that pick made on the conversation left "
        "out (mean, range, folds better / worse):",
        md_table(["constant", "values tried", "picked by the folds", "r@1800c change", "r@4000c change"], rows),
    ]
    return Section("memory-loo", "memory_search constants, leave one conversation out (LoCoMo)", blocks,
                   {"constants": data, "conversations": convs})


def run_bench(progress: Any, quick: bool = False) -> Section:
    """The study as a bench Section (`quick`: two constants only)."""
    names = QUICK_CONSTANTS if quick else tuple(GRID)
    return report(measure(load_locomo(), names, progress), names)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--constants", default="", help=f"comma-separated, of: {', '.join(GRID)} (default: all)")
    p.add_argument("--conversations", default="", help="comma-separated ids (default: all 7)")
    args = p.parse_args(argv)
    names = tuple(x.strip() for x in args.constants.split(",") if x.strip()) or tuple(GRID)
    unknown = [n for n in names if n not in GRID]
    if unknown:
        p.error(f"--constants: {', '.join(unknown)} not known; allowed: {', '.join(GRID)}")
    conversations = load_locomo()
    wanted = {x.strip() for x in args.conversations.split(",") if x.strip()}
    if wanted:
        conversations = tuple(c for c in conversations if c.conv_id in wanted)
    start = time.perf_counter()
    with make_progress() as progress:
        section = report(measure(conversations, names, progress), names)
    print(section.markdown())
    print(f"_{time.perf_counter() - start:.0f} s_")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
