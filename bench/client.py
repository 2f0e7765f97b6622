"""`python -m bench --only client`: what `clawkeep.Client` costs over calling `Engine` in process.

One home, the same calls both ways in the same run: `message` (a record-mode user turn),
`sessions_search` and `memory_search` (keyword mode: the embedding model is left out so the
row measures the client and the HTTP hop, not the model). First in process through `Engine`,
then through `clawkeep.Client` against `clawkeep gateway` in its own process on loopback. The
ratio is client p50 ÷ in-process p50.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from typing import Any

import clawkeep

from .common import Section, fmt_ms, md_table, percentile, scratch_dir
from .gateway import RECORD_CONFIG, WORDS, seed_notes, start_gateway, stop_gateway

CONFIG = {**RECORD_CONFIG, "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
FULL = {"calls": 300, "notes": 3000, "history": 2000}
QUICK = {"calls": 40, "notes": 300, "history": 200}


def _timed(call: Any, arguments: list[Any]) -> list[float]:
    out = []
    for argument in arguments:
        started = time.perf_counter()
        call(argument)
        out.append(time.perf_counter() - started)
    return out


def _measure(target: Any, calls: int, rng: random.Random, tag: str) -> dict[str, list[float]]:
    for i in range(5):  # untimed: first calls build caches, open connections, load the tokenizer
        target.message(f"{tag} warm {i}", channel="bench", sender="warm")
        target.sessions_search("warm", limit=10)
        target.memory_search("warm", limit=10, mode="keyword")
    texts = [f"{tag} {' '.join(rng.sample(WORDS, 6))} {i}" for i in range(calls)]
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(calls)]
    return {
        "message": _timed(lambda t: target.message(t, channel="bench", sender=f"u{rng.randint(1, 50)}"), texts),
        "sessions_search": _timed(lambda q: target.sessions_search(q, limit=10), queries),
        "memory_search": _timed(lambda q: target.memory_search(q, limit=10, mode="keyword"), queries),
    }


def run_bench(progress: Any = None, quick: bool = False) -> Section:
    sizes = QUICK if quick else FULL
    rng = random.Random(31)
    home = scratch_dir("client-")
    try:
        (home / "clawkeep.json5").write_text(json.dumps(CONFIG))
        seed_notes(home, sizes["notes"], rng)
        with clawkeep.Engine.open(home=home) as engine:
            for i in range(sizes["history"]):
                engine.message(" ".join(rng.sample(WORDS, 8)), channel="bench", sender=f"u{i % 50}")
            engine.memory_index()
            engine.memory_search("warm up", mode="keyword")
            local = _measure(engine, sizes["calls"], rng, "local")
        proc, url = start_gateway(home, CONFIG)
        try:
            with clawkeep.Client(url) as client:
                client.status()
                remote = _measure(client, sizes["calls"], rng, "client")
        finally:
            stop_gateway(proc)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    rows, data = [], {}
    for name in local:
        here, there = percentile(local[name], 50), percentile(remote[name], 50)
        data[name] = {"engine_p50_s": here, "client_p50_s": there, "ratio": there / here, "calls": len(local[name])}
        rows.append([name, fmt_ms(here), fmt_ms(there), f"{there / here:.2f}×", fmt_ms(there - here)])
    table = md_table(["call", "Engine p50 (ms)", "Client p50 (ms)", "ratio", "added (ms)"], rows)
    note = (f"{sizes['calls']} calls each; {sizes['history']} stored messages, {sizes['notes']} note lines; "
            "memory_search in keyword mode; gateway in its own process on loopback.")
    return Section("client", "Python client overhead (clawkeep.Client vs Engine in process)", [table, note], data)
