"""`python -m bench --only gateway`: the gateway's throughput and overhead, over real HTTP.

1. Record-mode turns through `POST /v1/messages` at 1, 10 and 50 concurrent clients (asyncio +
   httpx, one connection each; the gateway is `clawkeep gateway` in its own process): requests/s
   and p50/p95 latency. Baseline in the same run: the same turns through `Engine.message` in
   one process (no HTTP).
2. memory_search: p50 through `GET /v1/memory/search` beside the same query through
   `Engine.memory_search` in process, on the same home and index (hybrid with the bundled
   model, and keyword only) — the gateway's overhead as a ratio.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from clawkeep import Engine

from .common import REPO, Section, fmt_ms, md_table, percentile, scratch_dir

FULL = {"turns": {1: 600, 10: 3000, 50: 5000}, "sessions": 200, "notes": 3000, "queries": 200}
QUICK = {"turns": {1: 100, 10: 400, 50: 500}, "sessions": 50, "notes": 300, "queries": 30}
FULL_SYNC_CLIENTS = 10  # the synchronous FULL rows (group commit off / on)
TARGET_TURNS = 2_000  # record-mode user turns/s at 10 clients, FULL, group commit on
RECORD_CONFIG = {"session": {"dmScope": "per-peer", "reset": {"mode": "none"}},
                 "plugins": {"entries": {"active-memory": {"enabled": False}}}}
WORDS = ("invoice budget kayak lisbon venue garden roof parcel train ticket sister birthday dentist "
         "coffee tea python typescript deploy server backup laptop passport hotel dinner").split()


def start_gateway(home: Path, config: dict[str, Any]) -> tuple[subprocess.Popen, str]:
    (home / "clawkeep.json5").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_GATEWAY_TOKEN")}
    proc = subprocess.Popen([sys.executable, "-m", "clawkeep", "--home", str(home), "gateway", "--port", "0",
                             "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=REPO)
    assert proc.stdout is not None
    url = proc.stdout.readline().decode().strip().split()[-1]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # ready once the warm-up job has run (model loaded, index synced)
        try:
            status = httpx.get(url + "/v1/status", timeout=5).json()
            if status["gateway"]["background"][0].get("runs"):
                return proc, url
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("gateway did not become ready")


def stop_gateway(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


class _LeanClient:
    """A load generator that costs the shared cores almost nothing: one keep-alive HTTP/1.1
    connection on asyncio streams, a request written as bytes, the reply read by Content-Length.
    httpx spends ≈1 ms of CPU per request here, which the gateway then does not get."""

    def __init__(self, url: str):
        self.host, port = url.split("//", 1)[1].rstrip("/").split(":")
        self.port = int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        body = json.dumps(payload).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def _turns(url: str, clients: int, total: int, sessions: int, tag: str,
                 lean: bool = False) -> tuple[float, list[float]]:
    latencies: list[float] = []
    per_client = total // clients

    async def client(c: int) -> None:
        async with contextlib.AsyncExitStack() as stack:
            if lean:
                http = _LeanClient(url)
                stack.push_async_callback(http.close)
            else:
                http = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60))
            for i in range(per_client):
                peer = f"{tag}-{(c + i * clients) % sessions}"
                payload = {"text": f"{random.choice(WORDS)} note {i}", "sender": peer, "channel": "telegram"}
                started = time.perf_counter()
                if lean:
                    status, text = await http.post("/v1/messages", payload)
                else:
                    response = await http.post("/v1/messages", json=payload)
                    status, text = response.status_code, response.content
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    raise RuntimeError(f"{status}: {text[:200]!r}")

    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    return time.perf_counter() - started, latencies


def in_process_turns(home: Path, total: int, sessions: int) -> tuple[float, list[float]]:
    latencies = []
    with Engine.open(home=home, config=RECORD_CONFIG) as engine:
        started = time.perf_counter()
        for i in range(total):
            t0 = time.perf_counter()
            engine.message(f"{random.choice(WORDS)} note {i}", sender=f"inproc-{i % sessions}", channel="telegram")
            latencies.append(time.perf_counter() - t0)
        return time.perf_counter() - started, latencies


def seed_notes(home: Path, n: int, rng: random.Random) -> list[str]:
    notes = home / "workspace" / "memory"
    notes.mkdir(parents=True, exist_ok=True)
    facts = []
    for day in range(max(1, n // 20)):
        lines = []
        for _ in range(20):
            words = rng.sample(WORDS, 4)
            fact = f"- The {words[0]} for the {words[1]} is near the {words[2]} ({words[3]} {rng.randint(1, 999)})"
            lines.append(fact)
            facts.append(fact)
        (notes / f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}.md").write_text("\n".join(lines) + "\n")
    return facts


def search_latencies(call: Any, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        call(q)
        out.append(time.perf_counter() - t0)
    return out


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values)}


def run_bench(progress: Any = None, quick: bool = False) -> Section:
    sizes = QUICK if quick else FULL
    rng = random.Random(20261201)
    scratch = scratch_dir("gateway-")
    rows, data = [], {"turns": {}, "search": {}}
    try:
        # --- record-mode turns -----------------------------------------------------------------
        home = scratch / "turns"
        home.mkdir()
        base_s, base_lat = in_process_turns(scratch / "inproc", sizes["turns"][1], sizes["sessions"])
        data["turns"]["in-process"] = {"per_s": len(base_lat) / base_s, **stats(base_lat)}
        proc, url = start_gateway(home, RECORD_CONFIG)
        try:
            for clients, total in sizes["turns"].items():
                elapsed, lat = asyncio.run(_turns(url, clients, total, sizes["sessions"], f"c{clients}"))
                data["turns"][clients] = {"per_s": len(lat) / elapsed, **stats(lat)}
            elapsed, lat = asyncio.run(_turns(url, FULL_SYNC_CLIENTS, sizes["turns"][FULL_SYNC_CLIENTS],
                                              sizes["sessions"], "lean", lean=True))
            data["turns"]["lean"] = {"per_s": len(lat) / elapsed, **stats(lat)}
        finally:
            stop_gateway(proc)
        clients = FULL_SYNC_CLIENTS
        for group in (False, True):  # durable against power loss: the same turns with synchronous FULL
            full_home = scratch / f"turns-full-{'group' if group else 'single'}"
            full_home.mkdir()
            proc, url = start_gateway(full_home, {**RECORD_CONFIG,
                                                  "storage": {"synchronous": "FULL", "groupCommit": group}})
            try:
                elapsed, lat = asyncio.run(_turns(url, clients, sizes["turns"][clients], sizes["sessions"], "full"))
                data["turns"][f"FULL-{'on' if group else 'off'}"] = {"per_s": len(lat) / elapsed, **stats(lat)}
                if group:
                    elapsed, lat = asyncio.run(_turns(url, clients, sizes["turns"][clients], sizes["sessions"],
                                                      "full-lean", lean=True))
                    data["turns"]["FULL-on-lean"] = {"per_s": len(lat) / elapsed, **stats(lat)}
            finally:
                stop_gateway(proc)
        base = data["turns"]["in-process"]
        rows.append(["record-mode turns, in process (`Engine.message`, 1 caller): baseline",
                     f"{base['per_s']:,.0f}", fmt_ms(base["p50"]), fmt_ms(base["p95"]), "1.00×"])
        for clients in sizes["turns"]:
            d = data["turns"][clients]
            rows.append([f"record-mode turns over HTTP, {clients} concurrent client{'s' if clients > 1 else ''}",
                         f"{d['per_s']:,.0f}", fmt_ms(d["p50"]), fmt_ms(d["p95"]),
                         f"{d['per_s'] / base['per_s']:.2f}×"])
        d = data["turns"]["lean"]
        rows.append([f"record-mode turns over HTTP, {FULL_SYNC_CLIENTS} concurrent clients, lean load generator",
                     f"{d['per_s']:,.0f}", fmt_ms(d["p50"]), fmt_ms(d["p95"]), f"{d['per_s'] / base['per_s']:.2f}×"])
        for mode in ("off", "on", "on-lean"):
            d = data["turns"][f"FULL-{mode}"]
            verdict = "✅" if d["per_s"] >= TARGET_TURNS else "✗"
            label = "on, lean load generator" if mode == "on-lean" else mode
            rows.append([f"record-mode turns over HTTP, {FULL_SYNC_CLIENTS} clients, `synchronous: FULL`, group commit "
                         f"{label} (target ≥ {TARGET_TURNS:,}/s {verdict if mode != 'off' else 'n/a'})",
                         f"{d['per_s']:,.0f}", fmt_ms(d["p50"]), fmt_ms(d["p95"]),
                         f"{d['per_s'] / base['per_s']:.2f}×"])
        # --- memory_search over HTTP vs in process ---------------------------------------------
        home = scratch / "search"
        facts = seed_notes(home, sizes["notes"], rng)
        queries = [" ".join(f.split()[2:6:2]) + "?" for f in rng.sample(facts, sizes["queries"])]
        proc, url = start_gateway(home, {"plugins": {"entries": {"active-memory": {"enabled": False}}}})
        try:
            with httpx.Client(base_url=url, timeout=60) as http, Engine.open(home=home) as engine:
                engine.memory_watch()  # like the gateway: no per-call file check
                for mode in ("hybrid", "keyword"):
                    local = search_latencies(lambda q, m=mode: engine.memory_search(q, mode=m), queries)
                    remote = search_latencies(lambda q, m=mode: http.get(
                        "/v1/memory/search", params={"q": q, "mode": m}).raise_for_status(), queries)
                    data["search"][mode] = {"in_process": stats(local), "http": stats(remote)}
                    ratio = percentile(remote, 50) / percentile(local, 50)
                    rows.append([f"memory_search {mode}, in process (baseline) / over HTTP", "–",
                                 f"{fmt_ms(percentile(local, 50))} / {fmt_ms(percentile(remote, 50))}",
                                 f"{fmt_ms(percentile(local, 95))} / {fmt_ms(percentile(remote, 95))}",
                                 f"{ratio:.2f}× (p50)"])
        finally:
            stop_gateway(proc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    table = md_table(["what", "per s", "p50 ms", "p95 ms", "vs baseline"], rows)
    notes = (f"`clawkeep gateway` in its own process on loopback, record mode (no chat model; Active Memory off; "
             f"dmScope per-peer, {sizes['sessions']} senders), SQLite `synchronous: NORMAL` (the default; group "
             "commit on) except the `FULL` rows (a fresh gateway each, `storage.groupCommit` off then on). "
             "Clients: asyncio + httpx in the bench process, one connection per client, sharing the same 2 "
             "cores as the gateway — so the figures include the client's own CPU; the `lean load generator` "
             "rows send the same requests over one raw keep-alive HTTP/1.1 connection per client (asyncio "
             "streams, ≈0.1 ms of client CPU per request instead of httpx's ≈1 ms), the nearest this machine "
             "gets to clients on other hosts. memory_search: "
             f"{sizes['notes']:,} note lines in {max(1, sizes['notes'] // 20)} daily notes, {sizes['queries']} "
             "queries, the bundled local embedding model for hybrid; the in-process engine watches the "
             "workspace like the gateway does, so neither runs the per-call file check.")
    return Section("gateway", "Gateway: HTTP throughput and overhead", [table, notes], data)
