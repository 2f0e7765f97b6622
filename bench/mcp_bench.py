"""MCP overhead: memory_search and sessions_search through `clawkeep mcp` (stdio and streamable
HTTP, the official SDK client) beside the same call on an in-process Engine, in the same run.

    python -m bench --only mcp [--quick]

Store: the Active Memory bench's seeded home (`bench/recall_perf.py`, cached under
`.bench-data/recall-perf-*`: ~10k memory chunks indexed with provider "none", ~100k stored
messages; `--quick`: 1.5k chunks, 10k messages), copied to a scratch home. Record mode (no chat
model), Active Memory off, provider "none" (keyword memory search: the figure is the transport's
cost, not the embedding model's).

Calls: the same query list (planted-fact subjects and topic word pairs of the corpus) for each
path, every query warmed once untimed, then N calls interleaved: each query goes through every
path in turn (rotating order), so a busy machine slows all paths alike. In-process =
`Engine.memory_search(q)` / `Engine.sessions_search(q)` and the result's `to_json()`; MCP =
`ClientSession.call_tool(name, args)` from request to parsed result, the server spawned as a
subprocess (`clawkeep mcp` over stdio; `clawkeep mcp --http PORT` on 127.0.0.1). Ratio = MCP p50
/ in-process p50 of the same operation.
"""

from __future__ import annotations

import gc
import json
import random
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from clawkeep import Engine

from . import recall_perf
from .common import Section, fmt_ms, md_table, percentile, scratch_dir
from .tool_loop import queries

FULL = {"store": dict(recall_perf.FULL), "calls": 300, "queries": 40}
QUICK = {"store": dict(recall_perf.QUICK), "calls": 60, "queries": 20}
CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}},
          "plugins": {"entries": {"active-memory": {"enabled": False}}},
          "session": {"reset": {"mode": "none"}}}
OPERATIONS = ("memory_search", "sessions_search")


PATHS = ("in-process", "MCP stdio", "MCP streamable HTTP")


def server_command(home: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "clawkeep", "--home", str(home), "mcp", *extra]


@contextmanager
def http_server(home: Path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(server_command(home, "--http", str(port)), stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("clawkeep mcp --http did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(30)


async def measure(home: Path, url: str, texts: list[str], calls: int, progress: Any) -> dict[str, Any]:
    """Interleaved: for each call, the same query through each path in turn (the order rotates),
    so a busy machine slows every path alike and the ratios stay fair."""
    command = server_command(home)
    params = StdioServerParameters(command=command[0], args=command[1:])
    times: dict[tuple[str, str], list[float]] = {(p, n): [] for p in PATHS for n in OPERATIONS}
    errors = dict.fromkeys(times, 0)
    with Engine.open(home=home) as eng:
        methods = {"memory_search": eng.memory_search, "sessions_search": eng.sessions_search}
        async with stdio_client(params) as (r1, w1), ClientSession(r1, w1) as stdio, \
                streamable_http_client(url) as (r2, w2), ClientSession(r2, w2) as http:
            await stdio.initialize()
            await http.initialize()

            async def one(path: str, name: str, text: str) -> tuple[float, bool]:
                start = time.perf_counter()
                if path == "in-process":
                    methods[name](text).to_json()
                    return time.perf_counter() - start, False
                result = await (stdio if path == "MCP stdio" else http).call_tool(name, {"query": text})
                json.loads(result.content[0].text)
                return time.perf_counter() - start, bool(result.is_error)

            for text in texts:  # warm every path and query once
                for path in PATHS:
                    for name in OPERATIONS:
                        await one(path, name, text)
            gc.collect()
            gc.freeze()  # the benchmark's own heap (corpus, clients) must not tax the in-process path's GC
            task = progress.add_task("mcp: interleaved calls", total=calls) if progress else None
            for i in range(calls):
                order = PATHS[i % 3:] + PATHS[:i % 3]
                for name in OPERATIONS:
                    for path in order:
                        spent, failed = await one(path, name, texts[i % len(texts)])
                        times[(path, name)].append(spent)
                        errors[(path, name)] += failed
                if task is not None:
                    progress.advance(task)
            gc.unfreeze()
    return {f"{path}|{name}": {"p50": percentile(v, 50), "p95": percentile(v, 95), "n": len(v),
                               "errors": errors[(path, name)]} for (path, name), v in times.items()}


def run_bench(progress: Any, quick: bool = False) -> Section:
    """Entry point for `python -m bench --only mcp`."""
    sizes = QUICK if quick else FULL
    n_calls = sizes["calls"]
    cached, manifest = recall_perf.prepared_home(sizes["store"], fresh=False)
    scratch = scratch_dir("mcp-")
    home = scratch / "home"
    try:
        shutil.copytree(cached, home)
        (home / "clawkeep.json5").write_text(json.dumps(CONFIG))
        texts = queries(random.Random(20261202), sizes["queries"])
        with http_server(home) as url:
            found = anyio.run(measure, home, url, texts, n_calls, progress)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    rows = []
    for name in OPERATIONS:
        base = found[f"in-process|{name}"]
        for path in PATHS:
            r = found[f"{path}|{name}"]
            vs = "1.00×" if path == "in-process" else \
                f"**{r['p50'] / base['p50']:.2f}×** (+{fmt_ms(r['p50'] - base['p50'])} ms)"
            rows.append([f"`{name}` {path}", fmt_ms(r["p50"]), fmt_ms(r["p95"]), vs, r["errors"]])
    table = md_table(["call (ms)", "p50", "p95", "p50 vs in-process (same run)", "errors"], rows)
    notes = (f"{n_calls} timed calls per path and operation over {len(texts)} corpus queries (each warmed once), "
             "interleaved: each query goes through the in-process Engine, the stdio server and the HTTP server in "
             f"turn (rotating order). Record mode, provider \"none\". Store: {manifest.chunks:,} memory chunks, "
             f"{manifest.messages:,} stored messages (seeded by bench/recall_perf.py). MCP times run from "
             "`call_tool` to the parsed JSON result in the official SDK client; each server (a subprocess) runs a "
             "call in a worker thread on its one warm Engine.")
    data = {"results": found, "calls": n_calls, "queries": len(texts),
            "store": {"chunks": manifest.chunks, "messages": manifest.messages}}
    return Section("mcp", "MCP server overhead (memory_search, sessions_search)", [table, notes], data)
