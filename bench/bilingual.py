"""Bilingual memory_search check (M3, M5): Chinese and English notes in one workspace.

Data: `bench/data/bilingual.json` — 30 Chinese and 30 English one-line notes, each written
as its own memory file (`memory/zh-01.md`, `memory/en-01.md`, …) in a fresh home. Three
query sets, each query having exactly one right note among the 60:

- zh→zh paraphrase: a Chinese question reworded away from the note's words
  (家门的另一把钥匙藏在哪里？ for 我家的备用钥匙放在门口第三个花盆下面。);
- zh→en: a Chinese question about an English note;
- en→zh: an English question about a Chinese note.

For hybrid, keyword and vector modes: r@1 and r@5 (the right note's file among the first
1 / 5 results) and MRR over the first 10. `--provider local-e5` runs the same check with
the e5 option instead of the default local model.

    python -m bench --only bilingual
    python -m bench.bilingual [--provider local-e5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/bilingual.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from clawkeep import Engine  # noqa: E402

from .common import Section, console, fmt_ms, md_table, percentile, scratch_dir  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "bilingual.json"
MODES = ("hybrid", "keyword", "vector")
SETS = (("zh→zh paraphrase", "zh", "zh"), ("zh→en (Chinese question, English note)", "en", "zh"),
        ("en→zh (English question, Chinese note)", "zh", "en"))
DEPTH = 10
EXTRA: dict[str, Any] = {}  # `--config`: merged into memorySearch for every provider (a variant to compare)


def load() -> dict[str, list[dict[str, str]]]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def write_notes(workspace: Path, data: dict[str, list[dict[str, str]]]) -> None:
    notes = workspace / "memory"
    notes.mkdir(parents=True, exist_ok=True)
    for lang in ("zh", "en"):
        for i, item in enumerate(data[lang], start=1):
            (notes / f"{lang}-{i:02d}.md").write_text(f"- {item['note']}\n", encoding="utf-8")


def run_provider(provider: str) -> dict[str, Any]:
    data = load()
    home = scratch_dir("bilingual-")
    try:
        config = {"agents": {"defaults": {"memorySearch": {**EXTRA, "provider": provider}}}}
        eng = Engine.open(home=home, config=config)
        workspace = Path(eng.memory_status()["workspace"])
        write_notes(workspace, data)
        start = time.perf_counter()
        report = eng.memory_index()
        index_s = time.perf_counter() - start
        out: dict[str, Any] = {"chunks": report["chunks"], "index_s": index_s, "sets": {}, "latency": []}
        for label, note_lang, query_lang in SETS:
            per_mode: dict[str, dict[str, float]] = {}
            for mode in MODES:
                r1, r5, rr = [], [], []
                for i, item in enumerate(data[note_lang], start=1):
                    want = f"memory/{note_lang}-{i:02d}.md"
                    t0 = time.perf_counter()
                    hits = eng.memory_search(item[query_lang], limit=DEPTH, mode=mode)["results"]
                    out["latency"].append(time.perf_counter() - t0)
                    paths = [h["path"] for h in hits]
                    rank = paths.index(want) + 1 if want in paths else None
                    r1.append(1.0 if rank == 1 else 0.0)
                    r5.append(1.0 if rank and rank <= 5 else 0.0)
                    rr.append(1.0 / rank if rank else 0.0)
                per_mode[mode] = {"r@1": statistics.mean(r1), "r@5": statistics.mean(r5), "mrr": statistics.mean(rr),
                                  "n": len(r1)}
            out["sets"][label] = per_mode
        eng.close()
        return out
    finally:
        shutil.rmtree(home, ignore_errors=True)


# --- the fact-recall set (issue 14): one MEMORY.md of 100 facts and a month of daily notes ---------
FACTS = Path(__file__).resolve().parent / "data" / "bilingual_facts.json"
TOP = 3  # the right line must be among the first TOP results ...
MAX_WINDOW_LINES = 3  # ... in a result of at most this many lines (the line, not the whole file)
FACT_TARGET = 0.85
LANG_NAMES = {"en": "en", "zh": "zh", "ja": "ja", "ko": "ko"}


def _language(text: str) -> str:
    if any("\uac00" <= ch <= "\ud7af" for ch in text):
        return "ko"
    if any("\u3040" <= ch <= "\u30ff" for ch in text):
        return "ja"
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        return "zh"
    return "en"


def fact_cases(data: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """({relative path: file text}, [{query, lang pair, path, line, split}]) of the fact set."""
    files = {"MEMORY.md": "# Memory\n\n" + "".join(f"- {fact}\n" for fact, _ in data["memory"])}
    cases = []
    for n, (fact, queries) in enumerate(data["memory"], start=1):
        for lang, query in queries.items():
            cases.append({"query": query, "pair": f"{_language(fact)}→{lang}" if lang != _language(fact)
                          else f"{lang} paraphrase", "path": "MEMORY.md", "line": n + 2, "text": fact,
                          "split": "dev" if n % 2 else "held-out"})
    for day, lines, asked in data["notes"]:
        rel = f"memory/{day}.md"
        files[rel] = f"# {day}\n\n" + "".join(f"- {line}\n" for line in lines)
        for index, queries in asked.items():
            fact = lines[int(index)]
            for lang, query in queries.items():
                cases.append({"query": query, "pair": f"{_language(fact)}→{lang}" if lang != _language(fact)
                              else f"{lang} paraphrase", "path": rel, "line": int(index) + 3, "text": fact,
                              "split": "dev" if int(day[-2:]) % 2 else "held-out"})
    return files, cases


def _found(hits: list[dict[str, Any]], case: dict[str, Any]) -> tuple[bool, bool]:
    """(the line is in a small result among the first TOP, that result is exactly the line)."""
    for hit in hits[:TOP]:
        if hit["path"] == case["path"] and hit["startLine"] <= case["line"] <= hit["endLine"]:
            size = hit["endLine"] - hit["startLine"] + 1
            return size <= MAX_WINDOW_LINES, size == 1
    return False, False


def run_facts(provider: str = "local", rerank: str = "none") -> dict[str, Any]:
    files, cases = fact_cases(json.loads(FACTS.read_text(encoding="utf-8")))
    home = scratch_dir("bilingual-facts-")
    try:
        eng = Engine.open(home=home, config={"agents": {"defaults": {"memorySearch": {
            **EXTRA, "provider": provider, "rerank": {"provider": rerank}}}}})
        workspace = Path(eng.memory_status()["workspace"])
        for rel, text in files.items():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (workspace / rel).write_text(text, encoding="utf-8")
        start = time.perf_counter()
        report = eng.memory_index()
        index_s = time.perf_counter() - start
        latency, misses = [], []
        for case in cases:
            t0 = time.perf_counter()
            hits = eng.memory_search(case["query"])["results"]
            latency.append(time.perf_counter() - t0)
            case["ok"], case["exact"] = _found(hits, case)
            if not case["ok"]:
                misses.append({"query": case["query"], "want": case["text"],
                               "got": [h["snippet"][:80] for h in hits[:TOP]]})
        eng.close()
        return {"cases": cases, "chunks": report["chunks"], "index_s": index_s, "latency": latency,
                "misses": misses}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def fact_table(result: dict[str, Any]) -> tuple[str, dict[str, float]]:
    cases = result["cases"]

    def share(rows: list[dict[str, Any]], key: str = "ok") -> str:
        return f"{statistics.mean(1.0 if r[key] else 0.0 for r in rows):.2f}" if rows else "–"

    rows = []
    for pair in sorted({c["pair"] for c in cases}):
        mine = [c for c in cases if c["pair"] == pair]
        rows.append([pair, len(mine), share([c for c in mine if c["split"] == "dev"]),
                     share([c for c in mine if c["split"] == "held-out"]), share(mine), share(mine, "exact")])
    dev = [c for c in cases if c["split"] == "dev"]
    held = [c for c in cases if c["split"] == "held-out"]
    rows.append(["**all**", len(cases), f"**{share(dev)}**", f"**{share(held)}**", f"**{share(cases)}**",
                 share(cases, "exact")])
    summary = {"all": float(share(cases)), "dev": float(share(dev)), "held_out": float(share(held)),
               "exact": float(share(cases, "exact")), "n": len(cases)}
    return md_table(["fact language → query", "queries", "dev", "held-out", f"top-{TOP}", "exactly the line"],
                    rows), summary


def run(providers: tuple[str, ...] = ("local",)) -> Section:
    blocks: list[str] = []
    data: dict[str, Any] = {}
    for provider in providers:
        result = run_provider(provider)
        data[provider] = result
        rows = []
        for label, per_mode in result["sets"].items():
            n = next(iter(per_mode.values()))["n"]
            rows.append([label, n] + [f"{per_mode[m][k]:.2f}" for m in MODES for k in ("r@1", "r@5")])
        overall = {m: {k: statistics.mean(s[m][k] for s in result["sets"].values()) for k in ("r@1", "r@5")}
                   for m in MODES}
        rows.append(["**all**", sum(next(iter(s.values()))["n"] for s in result["sets"].values())]
                    + [f"**{overall[m][k]:.2f}**" for m in MODES for k in ("r@1", "r@5")])
        name = "default `local` (USE multilingual v3)" if provider == "local" else f"`{provider}`"
        p50 = fmt_ms(percentile(result["latency"], 50))
        blocks.append(f"Provider {name}: 60 notes (30 zh, 30 en) as 60 memory files, {result['chunks']} chunks, "
                      f"indexed in {result['index_s']:.1f} s; search p50 {p50} ms.")
        blocks.append(md_table(["query set", "queries"] + [f"{m} {k}" for m in MODES for k in ("r@1", "r@5")], rows))
    blocks.append("Each query has exactly one right note; r@k = the right note's file is among the first k results. "
                  "Keyword search cannot cross languages (only shared tokens such as `AB`, `MySQL` or digits "
                  "match), so cross-language recall comes from the vector path.")
    for provider in providers:
        facts = run_facts(provider)
        table, summary = fact_table(facts)
        data.setdefault(provider, {})["facts"] = {**summary, "misses": facts["misses"]}
        verdict = "PASS" if summary["all"] >= FACT_TARGET else "FAIL"
        blocks.append(f"**Fact recall** (`bench/data/bilingual_facts.json`, provider `{provider}`, default limit): a "
                      f"MEMORY.md of 100 one-line facts (35 en, 35 zh, 15 ja, 15 ko) and 30 daily notes of 3 lines, "
                      f"{summary['n']} queries; a query counts when its line is in one of the first {TOP} results and "
                      f"that result spans at most {MAX_WINDOW_LINES} lines. Target ≥ {FACT_TARGET:.2f}: **{verdict}** "
                      f"({summary['all']:.2f}); index {facts['chunks']} chunks in {facts['index_s']:.1f} s, search p50 "
                      f"{fmt_ms(percentile(facts['latency'], 50))} ms. Dev = odd facts and odd days. "
                      "No weight was fitted to this set (fact lines use the configured vector/text weights, "
                      "chosen on LoCoMo dev), but the variants compared in the README were each run on both halves.")
        blocks.append(table)
    return Section("bilingual", "Bilingual memory_search (Chinese and English notes)", blocks, data)


def run_bench(progress: Any = None, quick: bool = False) -> Section:
    """Entry point for `python -m bench --only bilingual`."""
    return run(("local",))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--provider", default="local", help="comma-separated providers (default: local)")
    p.add_argument("--rerank-facts", action="store_true",
                   help="only the fact recall set, with the rerank stage off and on (docs/rerank.md)")
    p.add_argument("--config", default="", help="JSON merged into memorySearch, e.g. '{\"onnx\": {\"localShare\": "
                   "0.5}}'")
    args = p.parse_args(argv)
    EXTRA.update(json.loads(args.config) if args.config else {})
    if args.rerank_facts:
        for rerank in ("none", "local"):
            table, summary = fact_table(run_facts(args.provider.split(",")[0], rerank))
            print(f"rerank {rerank}: top-{TOP} {summary['all']:.2f} (dev {summary['dev']:.2f}, held-out "
                  f"{summary['held_out']:.2f})\n{table}\n")
        return 0
    providers = tuple(x.strip() for x in args.provider.split(",") if x.strip())
    console.print(f"bilingual check: {', '.join(providers)}")
    print(run(providers).markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
