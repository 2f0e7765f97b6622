"""The fuzz suite with the `long` hypothesis profile: many more random inputs than `make test`.

python bench/fuzz.py            # long profile (1,000 examples per target; CI runs 120)
python bench/fuzz.py --quick    # the CI profile (what `make test` runs)
python -m bench --only fuzz     # the same, as a section of bench/results/latest.md

Runs pytest on tests/engine/test_fuzz.py with CLAWKEEP_FUZZ_PROFILE and reports how many inputs were
tried (per API method, CLI verb and the config loader) and whether any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # `python bench/fuzz.py`
    sys.path.insert(0, str(ROOT))
    from bench.common import Section, console
else:
    from .common import Section, console


def run_fuzz(profile: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="clawkeep-fuzz-") as scratch:
        stats = Path(scratch) / "tried.json"
        env = {**os.environ, "CLAWKEEP_FUZZ_PROFILE": profile, "CLAWKEEP_FUZZ_STATS": str(stats)}
        env.pop("CLAWKEEP_DEBUG", None)
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                               str(Path(scratch) / "tmp"), "tests/engine/test_fuzz.py"], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        tried = json.loads(stats.read_text()) if stats.exists() else {}
    summary = (proc.stdout.strip().splitlines() or [""])[-1]
    failed = int(m.group(1)) if (m := re.search(r"(\d+) failed", summary)) else 0
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
    return {"profile": profile, "seconds": seconds, "tried": tried, "total": sum(tried.values()),
            "passed": passed, "failed": failed, "returncode": proc.returncode, "summary": summary,
            "failures": [line for line in proc.stdout.splitlines() if line.startswith("FAILED")][:20]}


def section(result: dict[str, Any]) -> Section:
    tried = result["tried"]
    groups: dict[str, list[int]] = {}
    for name, count in tried.items():
        groups.setdefault(name.split(".")[0], []).append(count)
    rows = ["| surface | targets | inputs tried |", "|---|---|---|"]
    labels = {"api": "Engine methods", "cli": "CLI verbs", "config": "config documents (JSON5 loader + engine)"}
    for group, counts in sorted(groups.items()):
        rows.append(f"| {labels.get(group, group)} | {len(counts)} | {sum(counts):,} |")
    rows.append(f"| **total** | {len(tried)} | **{result['total']:,}** |")
    outcome = ("no failures" if result["returncode"] == 0 else
               f"**{result['failed']} failing test(s)**: " + "; ".join(result["failures"]))
    blocks = ["\n".join(rows),
              f"Profile `{result['profile']}` (CLAWKEEP_FUZZ_PROFILE), {result['seconds']:.0f} s, "
              f"pytest: {result['summary']} — {outcome}. Allowed outcomes: success, or a ClawkeepError "
              "(CLI exit 0 or 2; 1 only for a StorageError; never a traceback)."]
    return Section("fuzz", "Fuzzing (property-based, tests/engine/test_fuzz.py)", blocks, result)


def run_bench(progress: Any = None, quick: bool = False) -> Section:
    """Entry point for `python -m bench --only fuzz`: the long profile (the CI one with --quick)."""
    return section(run_fuzz("ci" if quick else "long"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the CI profile instead of the long one")
    args = p.parse_args(argv)
    profile = "ci" if args.quick else "long"
    console.print(f"fuzzing with the {profile} profile …")
    result = run_fuzz(profile)
    print(section(result).markdown())
    return 0 if result["returncode"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
