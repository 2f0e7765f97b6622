"""`python -m bench [--quick] [--only NAME[,NAME]]`: run the benchmarks, print Markdown tables,
and write them to `bench/results/latest.md` (+ `latest.json`).

Benchmarks: `append`, `search`, `locomo` (`perf` = append + search), …, `fuzz` (the
property-based fuzz suite with its long profile; `--quick` runs the CI profile) and
`write-filters` (precision/recall of the memory write filters on the labelled set), `tool-loop`
(the reply model's tool loop: overhead per tool step, scripted loopback model), `gateway`
(requests/s and latency over HTTP at 1/10/50 clients, memory_search over HTTP vs in process) and `mcp`
(memory_search / sessions_search through `clawkeep mcp`, stdio and HTTP, beside the in-process call) and
`dreaming` (a sweep over 30 days × 200 note lines and 10k recall traces: time, peak memory) and
`postgres` (PostgreSQL beside SQLite: append, sessions_search, memory_search, 1-3 instances) and
`pg-instances` (1/2/3 gateway processes on one PostgreSQL server over HTTP: turns/s, latency, CPU per turn of
the gateways and of the server beside one SQLite gateway; turn p50 with 1 ms per round trip),
`cold` (CPU and peak RSS of one cold CLI command beside the library import and OpenClaw's CLI) and
`client` (clawkeep.Client against the gateway beside Engine in process: message, sessions_search,
memory_search). Each section of latest.md is replaced only by a new run of the same benchmark and says
which mode produced it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from typing import Any

from .common import RESULTS, SCRATCH, Section, console, load_average, machine_info, machine_line, make_progress

NAMES = ("append", "search", "locomo", "recall", "memory-locomo", "memory-perf", "bilingual", "fuzz", "write-filters",
         "tool-loop", "gateway", "mcp", "dreaming", "postgres", "pg-instances", "cold", "client")
ALIASES = {"perf": ("append", "search"), "all": NAMES}
TITLE = "# clawkeep benchmarks"

FULL = {"append": 5_000, "search_sizes": [100_000, 1_000_000], "sessions": 1_000, "reps": 3, "nl": 50}
QUICK = {"append": 400, "search_sizes": [10_000], "sessions": 100, "reps": 2, "nl": 10}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    p.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(NAMES)} (or perf)")
    p.add_argument("--search-sizes", default="", help="stored-message counts, e.g. 100000,1000000")
    p.add_argument("--append-messages", type=int, default=0, help="messages per append run")
    p.add_argument("--no-concurrent", action="store_true", help="skip the 2-process append run")
    p.add_argument("--no-write", action="store_true", help="print only; leave bench/results untouched")
    return p.parse_args(argv)


def selected(only: str) -> list[str]:
    if not only:
        return list(NAMES)
    out: list[str] = []
    for raw in only.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        names = ALIASES.get(name, (name,))
        for n in names:
            if n not in NAMES:
                raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(NAMES)}, perf")
            if n not in out:
                out.append(n)
    return [n for n in NAMES if n in out]


def write_results(sections: list[Section], info: dict[str, str], mode: str, argv: list[str]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path = RESULTS / "latest.json"
    stored: dict[str, Any] = {}
    if json_path.exists():
        try:
            stored = json.loads(json_path.read_text()).get("sections", {})
        except (OSError, ValueError):
            stored = {}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
    command = "python -m bench " + " ".join(argv)
    for s in sections:
        if s.name == "targets":
            continue
        stored[s.name] = {"title": s.title, "markdown": s.markdown(), "data": s.data, "mode": mode,
                          "finished": stamp, "command": command.strip(), "machine": info}
    stored.pop("targets", None)
    from .sessions_perf import targets_block

    block = targets_block(stored.get("append", {}).get("data"), stored.get("search", {}).get("data"))
    if block:
        target = Section("targets", "Performance targets", [block, "Computed from the append and search sections "
                                                                   "above (each from its own run)."], {})
        stored["targets"] = {"title": target.title, "markdown": target.markdown(), "data": {}, "mode": mode,
                             "finished": stamp, "command": command.strip(), "machine": info}
    order = [*NAMES, "targets"]
    stored = {k: stored[k] for k in sorted(stored, key=lambda k: order.index(k) if k in order else 99)}
    json_path.write_text(json.dumps({"sections": stored}, indent=2, ensure_ascii=False, default=str) + "\n")
    parts = [TITLE, "",
             "Generated by `python -m bench` (see bench/__init__.py). Each section names the run that produced it.",
             ""]
    for entry in stored.values():
        parts.append(entry["markdown"].rstrip())
        parts.append("")
        parts.append(f"_Run: `{entry['command']}` ({entry['mode']} mode), finished {entry['finished']}. "
                     f"{machine_line(entry['machine'])}_")
        parts.append("")
    (RESULTS / "latest.md").write_text("\n".join(parts))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    names = selected(args.only)
    sizes = dict(QUICK if args.quick else FULL)
    if args.search_sizes:
        sizes["search_sizes"] = [int(x.replace("_", "")) for x in args.search_sizes.split(",") if x.strip()]
    if args.append_messages:
        sizes["append"] = args.append_messages
    mode = "quick" if args.quick else "full"
    info = machine_info()
    console.print(f"[bold]clawkeep benchmarks[/] ({mode}): {', '.join(names)}")
    console.print(machine_line(info))

    sections: list[Section] = []
    by_name: dict[str, Section] = {}
    with make_progress() as progress:
        for name in names:
            start = time.perf_counter()
            load_start = load_average()
            if name == "append":
                from .sessions_perf import bench_append

                section = bench_append(sizes["append"], progress, concurrent=not args.no_concurrent)
            elif name == "search":
                from .sessions_perf import bench_search

                section = bench_search(sizes["search_sizes"], sizes["sessions"], sizes["reps"], sizes["nl"],
                                       progress)
            elif name == "recall":
                from .recall_perf import section as recall_section

                section = recall_section(progress, quick=args.quick)
            elif name == "postgres":
                from .postgres_bench import run_bench as postgres_bench

                section = postgres_bench(progress, quick=args.quick,
                                         search_size=sizes["search_sizes"][-1] if args.search_sizes else None)
            elif name == "cold":
                from .cli_perf import run_bench as cold_bench

                section = cold_bench(progress, quick=args.quick)
            elif name == "mcp":
                from .mcp_bench import run_bench as mcp_bench

                section = mcp_bench(progress, quick=args.quick)
            elif name in ("memory-locomo", "memory-perf", "bilingual", "fuzz", "write-filters", "tool-loop",
                          "gateway", "dreaming", "pg-instances", "client"):
                from importlib import import_module

                module = import_module(f".{name.replace('-', '_')}", __package__)
                section = module.run_bench(progress, quick=args.quick)
            else:
                from .locomo_sessions import run_locomo

                section = run_locomo(progress, quick=args.quick)
            section.data["seconds"] = time.perf_counter() - start
            section.data["loadavg"] = {"start": load_start, "end": load_average()}
            section.blocks.append(f"_Load average (1/5/15 min) at start: {load_start}; at end: "
                                  f"{section.data['loadavg']['end']} (2 cores, shared with other work)._")
            sections.append(section)
            by_name[name] = section

    if "append" in by_name or "search" in by_name:
        from .sessions_perf import targets_block

        block = targets_block(by_name["append"].data if "append" in by_name else None,
                              by_name["search"].data if "search" in by_name else None)
        if block:
            sections.append(Section("targets", "Performance targets (this run)", [block], {}))
    with contextlib.suppress(OSError):
        SCRATCH.rmdir()  # only if empty: every benchmark removes its own scratch homes

    out = [f"{TITLE} ({mode})", "", machine_line(info), ""] + [s.markdown() for s in sections]
    print("\n".join(out))
    if not args.no_write:
        write_results(sections, info, mode, argv)
        console.print(f"written: {RESULTS / 'latest.md'}, {RESULTS / 'latest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
