"""LoCoMo retrieval of `memory_search` over indexed transcripts (M3, M6), through the real Engine.

Protocol (/work/shared/eval/locomo/README.md): one home per conversation with the default
memory configuration plus transcript indexing (`experimental.sessionMemory`, sources
memory + sessions); speaker_a is the user and speaker_b the assistant; every text is
prefixed with the speaker's name, a shared photo becomes `[shares a photo of …]`; every
LoCoMo session is ingested at its own date with a `/reset` before it (turns 30 s apart);
the client message id is `conv-XX:D<n>:<i>`. Then `memory_index()` and, for every category
1–4 question with evidence, `memory_search(question, limit=LIMIT)`.

Metric, recall@budget: walk the results in rank order adding the characters of each
result's returned text (its `snippet`) and stop before the first result that no longer
fits the budget (1,800 and 4,000 characters). A result covers an evidence turn when the
turn's rendered text (`Speaker: text`, whitespace collapsed) occurs in its snippet — a turn
cut by a snippet window is not covered. Per question, the fraction of its evidence turns
covered; averaged per category and overall. Evidence ids absent from the conversation count
as misses (1,033 questions, as in BASELINES.md).

Homes (transcripts + index) are cached under `.bench-data/memory-locomo/<provider>/`; the
index is re-synced on every run, so a change of rendering or chunking is picked up, and the
embedding cache makes an unchanged chunk free. Tuning used the DEV conversations only;
HELD_OUT are reported separately.

    python -m bench --only memory-locomo          # via the bench runner
    python -m bench.memory_locomo [--conversations conv-26,conv-30] [--e5] [--dump FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/memory_locomo.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep import Engine  # noqa: E402

from .common import BENCH_DATA, Section, console, fmt_ms, make_progress, md_table, percentile  # noqa: E402
from .corpus import Conversation, load_locomo  # noqa: E402
from .locomo_sessions import ingest  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BUDGETS = (1800, 4000)
LIMIT = 25  # results asked per question (the budget walk usually stops earlier)
MODES = ("hybrid", "keyword", "vector")
DEV = ("conv-26", "conv-30", "conv-41", "conv-42")  # tuning was done on these only
HELD_OUT = ("conv-43", "conv-44", "conv-47")
TARGETS = {1800: 0.76, 4000: 0.85}  # issue 14
INGEST_VERSION = "1"  # bump when the ingestion protocol changes (cached homes are rebuilt)
CACHE = BENCH_DATA / "memory-locomo"

# BASELINES.md (same protocol): r@1800c, r@4000c.
BASELINES = (
    ("chunks hybrid e5 0.7 / FTS-OR 0.3 (best offline measured)", 0.615, 0.747),
    ("chunks (400 tok / 80 overlap) FTS-OR", 0.584, 0.717),
    ("chunks hybrid USE 0.7 / FTS-OR 0.3", 0.538, 0.703),
    ("chunks dense e5", 0.465, 0.622),
    ("OpenClaw 2026.9.6 CLI, lexical (100 sampled questions)", 0.115, 0.194),
)


SEARCH_OVERRIDES: dict[str, Any] = {}  # `--config`: merged into memorySearch (a variant to measure)


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def memory_config(provider: str) -> dict[str, Any]:
    """The default memory configuration with transcript indexing switched on (M6), plus `--config`."""
    search = {"provider": provider, "experimental": {"sessionMemory": True}, "sources": ["memory", "sessions"]}
    return {"agents": {"defaults": {"memorySearch": _merged(search, SEARCH_OVERRIDES)}}}


def _home_name(provider: str) -> str:
    """Homes per provider, and per `--config` variant that sets one (runs of two variants may overlap)."""
    if "provider" not in SEARCH_OVERRIDES and "onnx" not in SEARCH_OVERRIDES:
        return provider
    variant = json.dumps(SEARCH_OVERRIDES, sort_keys=True)
    return f"{provider}-{hashlib.sha256(variant.encode()).hexdigest()[:8]}"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _stamp(conv: Conversation) -> str:
    digest = hashlib.sha256()
    for session in conv.sessions:
        digest.update(session.when.isoformat().encode())
        for turn in session.turns:
            digest.update(f"{turn.dia_id}\x00{turn.speaker}\x00{turn.text}\x01".encode())
    return f"{INGEST_VERSION}:{digest.hexdigest()[:16]}"


def prepared_engine(conv: Conversation, provider: str) -> tuple[Engine, dict[str, str], dict[str, float]]:
    """An engine over the conversation's cached home (ingested once), with a fresh index sync."""
    home = CACHE / _home_name(provider) / conv.conv_id
    marker = home / ".ingested"
    timings: dict[str, float] = {}
    if not marker.exists() or marker.read_text() != _stamp(conv):
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        eng = Engine.open(home=home, config=memory_config(provider))
        start = time.perf_counter()
        ingest(eng, conv)
        timings["ingest_s"] = time.perf_counter() - start
        eng.close()
        marker.write_text(_stamp(conv))
    eng = Engine.open(home=home, config=memory_config(provider))
    start = time.perf_counter()
    report = eng.memory_index()
    timings["index_s"] = time.perf_counter() - start
    timings["reindexed_files"] = len(report["indexed"])
    timings["chunks"] = report["chunks"]
    texts = {t.dia_id: _flat(f"{t.speaker}: {t.text}") for s in conv.sessions for t in s.turns}
    return eng, texts, timings


def covered(results: Sequence[dict[str, Any]], evidence: Sequence[str], texts: dict[str, str],
            budget: int) -> tuple[set[str], int, int]:
    """(evidence turns covered within the budget, characters used, results used)."""
    used, found, n = 0, set(), 0
    for hit in results:
        snippet = _flat(hit["snippet"])
        if used + len(snippet) > budget:
            break
        used += len(snippet)
        n += 1
        found |= {dia for dia in evidence if dia in texts and texts[dia] in snippet}
    return found, used, n


def questions(conv: Conversation) -> list[Any]:
    return [q for q in conv.questions if q.category in CATEGORIES and q.raw_evidence]


def evaluate(conversations: Sequence[Conversation], provider: str, modes: Sequence[str], limit: int,
             progress: Any = None, dump: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per mode: {conv_id: [(category, {budget: recall}), …]}, plus latencies and index info."""
    per: dict[str, dict[str, list[tuple[int, dict[int, float]]]]] = {m: defaultdict(list) for m in modes}
    latency: dict[str, list[float]] = {m: [] for m in modes}
    conv_info: dict[str, dict[str, float]] = {}
    total = sum(len(questions(c)) for c in conversations) * len(modes)
    task = progress.add_task(f"memory_search LoCoMo ({provider})", total=total) if progress else None
    for conv in conversations:
        eng, texts, info = prepared_engine(conv, provider)
        conv_info[conv.conv_id] = info
        try:
            for mode in modes:
                for q in questions(conv):
                    t0 = time.perf_counter()
                    results = eng.memory_search(q.question, limit=limit, mode=mode)["results"]
                    latency[mode].append(time.perf_counter() - t0)
                    scores = {}
                    for budget in BUDGETS:
                        found, used, n = covered(results, q.evidence, texts, budget)
                        scores[budget] = len(found) / len(q.evidence)
                    per[mode][conv.conv_id].append((q.category, scores))
                    if dump is not None:
                        dump.append({"conv": conv.conv_id, "mode": mode, "q": q.question, "cat": q.category,
                                     "evidence": list(q.evidence), "scores": scores,
                                     "results": [{"snippet": r["snippet"], "score": r["score"],
                                                  "ids": r.get("messageIds", [])} for r in results]})
                    if task is not None:
                        progress.advance(task)
        finally:
            eng.close()
    return {"per": per, "latency": latency, "conv_info": conv_info}


def _mean(values: Sequence[float]) -> float:
    return statistics.mean(values) if values else float("nan")


def summarise(rows: dict[str, list[tuple[int, dict[int, float]]]], convs: Sequence[str] | None = None
              ) -> dict[str, dict[str, float]]:
    """{category name | 'overall': {'n', 'r@1800c', 'r@4000c'}} over the chosen conversations."""
    picked = [r for cid, rs in rows.items() if convs is None or cid in convs for r in rs]
    out: dict[str, dict[str, float]] = {}
    for cat, name in CATEGORIES.items():
        mine = [s for c, s in picked if c == cat]
        if mine:
            out[name] = {"n": len(mine), **{f"r@{b}c": _mean([s[b] for s in mine]) for b in BUDGETS}}
    out["overall"] = {"n": len(picked), **{f"r@{b}c": _mean([s[b] for _, s in picked]) for b in BUDGETS}}
    return out


def _cell(v: float) -> str:
    return f"{v:.3f}"


def category_table(result: dict[str, Any], modes: Sequence[str], convs: Sequence[str] | None) -> str:
    sums = {m: summarise(result["per"][m], convs) for m in modes}
    headers = ["category", "questions"] + [f"{m} r@{b}c" for m in modes for b in BUDGETS]
    rows = []
    for name in [*CATEGORIES.values(), "overall"]:
        first = sums[modes[0]].get(name)
        if not first:
            continue
        label = f"**{name}**" if name == "overall" else name
        rows.append([label, int(first["n"])] + [_cell(sums[m][name][f"r@{b}c"]) for m in modes for b in BUDGETS])
    return md_table(headers, rows)


def run(conversations: Sequence[Conversation], *, e5: bool = False, limit: int = LIMIT, progress: Any = None,
        dump: list[dict[str, Any]] | None = None, modes: Sequence[str] = MODES, provider: str = "local") -> Section:
    start = time.perf_counter()
    result = evaluate(conversations, provider, modes, limit, progress, dump)
    e5_result = evaluate(conversations, "local-e5", ("hybrid",), limit, progress) if e5 else None
    ids = [c.conv_id for c in conversations]
    held = [c for c in ids if c in HELD_OUT]
    dev = [c for c in ids if c in DEV]
    blocks = ["**All conversations** (" + ", ".join(ids) + f"); default config with `provider: {provider}` "
              f"(`local`: USE multilingual v3), `limit={limit}`:", category_table(result, modes, None)]
    if held and len(held) < len(ids):
        blocks += [f"**Held out** ({', '.join(held)}; never used for tuning):", category_table(result, modes, held)]
    if dev and len(dev) < len(ids):
        blocks += [f"**Dev** ({', '.join(dev)}; tuning set):", category_table(result, modes, dev)]

    overall = {m: summarise(result["per"][m])["overall"] for m in modes}
    held_overall = {m: summarise(result["per"][m], held)["overall"] for m in modes} if held else {}
    cmp_rows = []
    for m in modes:
        label = f"clawkeep memory_search {m}" + (" (default)" if m == "hybrid" else "")
        row = [f"**{label}**" if m == "hybrid" else label]
        row += [_cell(overall[m][f"r@{b}c"]) for b in BUDGETS]
        row += [_cell(held_overall[m][f"r@{b}c"]) if held else "–" for b in BUDGETS]
        cmp_rows.append(row)
    if e5_result:
        o = summarise(e5_result["per"]["hybrid"])["overall"]
        h = summarise(e5_result["per"]["hybrid"], held)["overall"] if held else None
        cmp_rows.append(["clawkeep memory_search hybrid, provider local-e5 (option)"]
                        + [_cell(o[f"r@{b}c"]) for b in BUDGETS]
                        + [_cell(h[f"r@{b}c"]) if h else "–" for b in BUDGETS])
    cmp_rows += [[f"BASELINES.md: {name}", _cell(a), _cell(b), "–", "–"] for name, a, b in BASELINES]
    blocks.append(md_table(["method", "r@1800c", "r@4000c", "held-out r@1800c", "held-out r@4000c"], cmp_rows))

    hyb = overall["hybrid"]
    verdicts = [f"r@{b}c {hyb[f'r@{b}c']:.3f} ≥ {t:.2f}: **{'PASS' if hyb[f'r@{b}c'] >= t else 'FAIL'}**"
                for b, t in TARGETS.items()]
    lat = {m: result["latency"].get(m, []) for m in MODES}
    info = result["conv_info"]
    chunks = sum(int(i["chunks"]) for i in info.values())
    blocks.append(
        "Targets for the default (hybrid) configuration: " + "; ".join(verdicts) + ". "
        f"Search latency (hybrid, all questions, includes the staleness sync): "
        f"p50 {fmt_ms(percentile(lat['hybrid'], 50))} ms, p95 {fmt_ms(percentile(lat['hybrid'], 95))} ms; "
        f"keyword p50 {fmt_ms(percentile(lat['keyword'], 50))} ms; vector p50 "
        f"{fmt_ms(percentile(lat['vector'], 50))} ms. Index: {chunks:,} chunks over {len(info)} conversations. "
        "Budgets count the characters of each returned snippet in rank order; a turn counts only when its whole "
        "rendered text is inside a snippet.")
    data = {"overall": overall, "held_out": held_overall, "limit": limit, "conversations": ids,
            "per_mode": {m: summarise(result["per"][m]) for m in modes},
            "latency_p50": {m: percentile(lat[m], 50) for m in modes}, "chunks": chunks,
            "seconds": time.perf_counter() - start}
    if e5_result:
        data["e5_hybrid"] = summarise(e5_result["per"]["hybrid"])
    return Section("memory-locomo", "LoCoMo retrieval: memory_search over indexed transcripts", blocks, data)


def run_bench(progress: Any, quick: bool = False) -> Section:
    """Entry point for `python -m bench --only memory-locomo`."""
    conversations = load_locomo()
    if quick:
        conversations = tuple(c for c in conversations if c.conv_id == "conv-30")
    return run(conversations, progress=progress)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conversations", default="", help="comma-separated ids (default: all 7); 'dev' or 'held-out'")
    p.add_argument("--limit", type=int, default=LIMIT)
    p.add_argument("--provider", default="local", help="embedding provider of the main run, e.g. onnx "
                   "(homes are cached per provider)")
    p.add_argument("--e5", action="store_true", help="also run hybrid with provider local-e5 (slow to index)")
    p.add_argument("--modes", default=",".join(MODES), help="subset of hybrid,keyword,vector (hybrid first)")
    p.add_argument("--dump", default="", help="write per-question results as JSON lines to this file")
    p.add_argument("--config", default="", help="JSON merged into memorySearch, e.g. "
                   "'{\"query\": {\"hybrid\": {\"mmr\": {\"enabled\": true}}}}' (a variant to compare)")
    args = p.parse_args(argv)
    if args.config:
        try:
            extra = json.loads(args.config)
        except ValueError as exc:
            p.error(f"--config is not JSON ({exc}); give a JSON object such as '{{\"query\": {{}}}}'")
        if not isinstance(extra, dict):
            p.error(f"--config must be a JSON object, not {type(extra).__name__}")
        SEARCH_OVERRIDES.update(extra)
    conversations = load_locomo()
    wanted = {"dev": DEV, "held-out": HELD_OUT}.get(args.conversations) or \
        tuple(x.strip() for x in args.conversations.split(",") if x.strip())
    if wanted:
        conversations = tuple(c for c in conversations if c.conv_id in wanted)
    dump: list[dict[str, Any]] | None = [] if args.dump else None
    with make_progress() as progress:
        section = run(conversations, e5=args.e5, limit=args.limit, progress=progress, dump=dump,
                      modes=[m for m in args.modes.split(",") if m], provider=args.provider)
    if dump is not None:
        Path(args.dump).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump))
        console.print(f"per-question results: {args.dump}")
    print(section.markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
