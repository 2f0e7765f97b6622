"""`python -m bench --only pg-instances`: 1, 2 and 3 `clawkeep gateway` processes on one
PostgreSQL server, beside one gateway on SQLite, measured on this machine's 2 shared cores.

- Server: the `pgserver` bundle (PostgreSQL 16 + pgvector, as tests/helpers/pg_servers.py starts it) in a
  scratch data directory, Unix socket, fsync and synchronous_commit on; removed at the end.
- Load: record-mode user turns (`POST /v1/messages`, dmScope per-peer, no chat model) from a lean
  asyncio load generator in this process (one keep-alive HTTP/1.1 connection per client, bench/gateway.py's
  `_LeanClient`), the same number of clients for every configuration, spread round-robin over the
  gateways; no two clients ever write the same session. Each configuration runs for a bounded time
  and turn count after a short warm-up.
- CPU per turn: utime + stime from /proc/<pid>/stat before and after the timed window, for each
  gateway process and for the server (the postmaster, its children — backends, walwriter,
  checkpointer … — and, through the postmaster's cutime/cstime, children that exited meanwhile),
  divided by the turns acknowledged in the window. The load generator's own CPU is reported apart.
- Latency under injected round-trip time: one gateway, one client, its PostgreSQL connections
  through tests/helpers/pg_wire.py's loopback proxy, which counts round trips (Query, Sync, a lone Flush)
  and holds each back `delay` (1 ms: a database on another host); turn p50 and round trips per turn
  (the gateway's whole work in the window — background reads included — divided by its turns).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # tests/helpers/pg_wire.py: the round-trip counting, delaying proxy

from .common import Section, fmt_ms, load_average, make_progress, md_table, percentile, scratch_dir  # noqa: E402
from .gateway import RECORD_CONFIG, WORDS, _LeanClient, start_gateway, stop_gateway  # noqa: E402

FULL = {"seconds": 30.0, "turns": 30_000, "clients": 6, "warm_seconds": 3.0, "latency_seconds": 12.0}
QUICK = {"seconds": 5.0, "turns": 3_000, "clients": 6, "warm_seconds": 1.0, "latency_seconds": 3.0}
GATEWAY_COUNTS = (1, 2, 3)
PEERS_PER_CLIENT = 8  # senders (one session each) per client, none shared; the warm-up creates their sessions
CPU_TARGET = 2.0  # PostgreSQL turn CPU (gateways + server) ≤ 2× the SQLite turn's
LATENCY_TARGET_S = 0.012  # turn p50 with 1 ms per round trip
CONFIG = {**RECORD_CONFIG, "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- CPU from /proc ---------------------------------------------------------------------------------
def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3… of /proc/<pid>/stat (after the parenthesised command name), or None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw[raw.rindex(")") + 2:].split()


def _ticks(fields: list[str], *, reaped: bool) -> int:
    # fields[11:15] = utime, stime, cutime, cstime (stat fields 14-17)
    own = int(fields[11]) + int(fields[12])
    return own + (int(fields[13]) + int(fields[14]) if reaped else 0)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds of `pid`, its reaped children (cutime/cstime) and its live children: a child that
    exits between two readings moves from the live sum into the parent's cutime, so a difference of
    two readings counts it once."""
    fields = _stat_fields(pid)
    if fields is None:
        raise RuntimeError(f"process {pid} is gone")
    ticks = _ticks(fields, reaped=True)
    for child in _children(pid):
        child_fields = _stat_fields(child)
        if child_fields is not None:
            ticks += _ticks(child_fields, reaped=True)
    return ticks / CLK_TCK


def fdatasync_latency(directory: Path, n: int = 100) -> dict[str, float]:
    """p50/p95 seconds of writing 8 KiB and fdatasync in `directory` (what a commit waits on)."""
    path = directory / "fdatasync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"\0" * 8192)
            started = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()
    return {"p50": percentile(times, 50), "p95": percentile(times, 95)}


# --- the server ----------------------------------------------------------------------------------------
class BundledServer:
    """pgserver (PostgreSQL 16 + pgvector) in a scratch directory, as the tests start it."""

    def __init__(self) -> None:
        import pgserver

        self.dir = tempfile.mkdtemp(prefix="ck-pgbench-", dir="/tmp")  # short socket path
        self.server = pgserver.get_server(self.dir, cleanup_mode="stop")
        self.server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        self.url = self.server.get_uri()
        self.pid = int(self.server.get_pid())
        self.version = self.psql("SHOW server_version;").split("\n")[2].strip()

    def psql(self, command: str) -> str:
        return self.server.psql(command)

    def stop(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


# --- load ------------------------------------------------------------------------------------------------
async def _drive(urls: list[str], clients: int, seconds: float, max_turns: int, tag: str) -> tuple[float, list[float]]:
    """`clients` lean clients, client c on gateway c mod len(urls), until `seconds` pass or
    `max_turns` turns are acknowledged. Returns (elapsed seconds, latencies)."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def client(c: int) -> None:
        http = _LeanClient(urls[c % len(urls)])
        try:
            i = 0
            while time.perf_counter() < deadline and len(latencies) < max_turns:
                peer = f"{tag}-{c + (i % PEERS_PER_CLIENT) * clients}"
                payload = {"text": f"{WORDS[(c + i) % len(WORDS)]} note {i}", "sender": peer, "channel": "telegram"}
                started = time.perf_counter()
                status, body = await http.post("/v1/messages", payload)
                if status != 200:
                    raise RuntimeError(f"turn refused with {status}: {body[:300]!r}")
                latencies.append(time.perf_counter() - started)
                i += 1
        finally:
            await http.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    return time.perf_counter() - started, latencies


def measure(urls: list[str], gateway_pids: list[int], server: BundledServer | None, clients: int, seconds: float,
            max_turns: int, warm_seconds: float, tag: str) -> dict[str, Any]:
    """One timed window (after a warm-up): throughput, latency and CPU per turn by side. On
    PostgreSQL a CHECKPOINT first: the previous configuration's dirty pages are not this one's cost."""
    asyncio.run(_drive(urls, clients, warm_seconds, max_turns, tag))  # the window's sessions exist
    if server is not None:
        server.psql("CHECKPOINT;")
    server_pid = server.pid if server is not None else None
    load_start = load_average()
    gw0 = [tree_cpu(p) for p in gateway_pids]
    server0 = tree_cpu(server_pid) if server_pid else 0.0
    own0 = time.process_time()
    elapsed, lat = asyncio.run(_drive(urls, clients, seconds, max_turns, tag))
    own = time.process_time() - own0
    server_cpu = (tree_cpu(server_pid) - server0) if server_pid else 0.0
    gateways = sum(tree_cpu(p) - c for p, c in zip(gateway_pids, gw0, strict=True))
    turns = len(lat)
    return {"turns": turns, "seconds": elapsed, "turns_per_s": turns / elapsed,
            "p50": percentile(lat, 50), "p95": percentile(lat, 95),
            "gateway_cpu_per_turn": gateways / turns, "server_cpu_per_turn": server_cpu / turns,
            "cpu_per_turn": (gateways + server_cpu) / turns, "loadgen_cpu_per_turn": own / turns,
            "cpu_busy_cores": (gateways + server_cpu + own) / elapsed,
            "loadavg": {"start": load_start, "end": load_average()}}


def delayed_turns(scratch: Path, server: BundledServer, delay_ms: float, seconds: float, turns: int,
                  warm: float) -> dict[str, Any]:
    """One gateway whose PostgreSQL connections go through the counting proxy, `delay_ms` per round trip."""
    from tests.helpers.pg_wire import WireCounter

    with WireCounter(server.url, delay_ms=delay_ms) as proxy:
        def body(urls: list[str], pids: list[int]) -> dict[str, Any]:
            asyncio.run(_drive(urls, 1, warm, turns, f"px{delay_ms}"))  # pool filled, the sessions exist
            proxy.reset()
            out = measure(urls, pids, server, 1, seconds, turns, 0.0, f"px{delay_ms}")
            out["trips_per_turn"] = proxy.trips / out["turns"]
            return out

        return run_gateways(scratch, [pg_config(proxy.url, "lat")], body)


def pg_config(url: str, schema: str) -> dict[str, Any]:
    return {**CONFIG, "storage": {"url": url, "schema": schema}}


def run_gateways(scratch: Path, configs: list[dict[str, Any]], body: Any) -> Any:
    """Start one gateway per config (one after another: the first creates the schemas), run
    `body(urls, pids)`, stop them all."""
    procs: list[Any] = []
    try:
        urls = []
        for i, config in enumerate(configs):
            home = scratch / f"gw{len(list(scratch.iterdir()))}-{i}"
            home.mkdir()
            proc, url = start_gateway(home, config)
            procs.append(proc)
            urls.append(url)
        return body(urls, [p.pid for p in procs])
    finally:
        for proc in procs:
            stop_gateway(proc)


# --- report --------------------------------------------------------------------------------------------
def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _load(d: dict[str, Any]) -> str:
    return f"{d['loadavg']['start'].split()[0]} → {d['loadavg']['end'].split()[0]}"


def throughput_table(data: dict[str, Any]) -> str:
    base = data["sqlite"]["cpu_per_turn"]
    rows = []
    for name, d in [("SQLite, 1 gateway (baseline)", data["sqlite"])] + [
            (f"PostgreSQL, {n} gateway{'s' if n > 1 else ''}", data["postgresql"][n]) for n in GATEWAY_COUNTS]:
        ratio = d["cpu_per_turn"] / base
        verdict = "" if d is data["sqlite"] else (" ✅" if ratio <= CPU_TARGET else " ✗")
        rows.append([name, f"{d['turns']:,}", f"{d['turns_per_s']:,.0f}", f"{fmt_ms(d['p50'])} / {fmt_ms(d['p95'])}",
                     _ms(d["gateway_cpu_per_turn"]), _ms(d["server_cpu_per_turn"]) if d is not data["sqlite"] else "–",
                     _ms(d["cpu_per_turn"]), f"{ratio:.2f}×{verdict}", _ms(d["loadgen_cpu_per_turn"]), _load(d)])
    return md_table(["configuration", "turns", "turns/s", "p50 / p95 ms", "gateway CPU ms/turn",
                     "server CPU ms/turn", "total CPU ms/turn", f"vs SQLite (target ≤ {CPU_TARGET:g}×)",
                     "load generator CPU ms/turn", "load avg (1 min)"], rows)


def latency_table(data: dict[str, Any]) -> str:
    rows = []
    for key, label in (("sqlite", "SQLite"), ("direct", "PostgreSQL, Unix socket"),
                       ("proxy0", "PostgreSQL through the proxy, +0 ms"),
                       ("proxy1", "PostgreSQL through the proxy, +1 ms per round trip")):
        d = data[key]
        target = ""
        if key == "proxy1":
            target = " ✅" if d["p50"] <= LATENCY_TARGET_S else " ✗"
        trips = f"{d['trips_per_turn']:.1f}" if "trips_per_turn" in d else "–"
        rows.append([label, f"{d['turns']:,}", f"{fmt_ms(d['p50'])}{target}", fmt_ms(d["p95"]), trips,
                     _ms(d["cpu_per_turn"]), _load(d)])
    return md_table(["1 gateway, 1 client", "turns", f"p50 ms (target ≤ {LATENCY_TARGET_S * 1000:g} with +1 ms)",
                     "p95 ms", "round trips per turn", "total CPU ms/turn", "load avg (1 min)"], rows)


def run_bench(progress: Any = None, quick: bool = False) -> Section:
    sizes = QUICK if quick else FULL
    seconds, turns, clients, warm = sizes["seconds"], sizes["turns"], sizes["clients"], sizes["warm_seconds"]
    lat_s = sizes["latency_seconds"]
    scratch = scratch_dir("pg-instances-")
    server = BundledServer()
    data: dict[str, Any] = {"server": f"pgserver, PostgreSQL {server.version} + pgvector", "clients": clients,
                            "seconds": seconds, "max_turns": turns, "postgresql": {}, "latency": {}}
    try:
        data["fdatasync"] = fdatasync_latency(Path(server.dir))
        data["sqlite"] = run_gateways(scratch, [CONFIG], lambda urls, pids: measure(
            urls, pids, None, clients, seconds, turns, warm, "sq"))
        data["latency"]["sqlite"] = run_gateways(scratch, [CONFIG], lambda urls, pids: measure(
            urls, pids, None, 1, lat_s, turns, warm, "sql"))
        for n in GATEWAY_COUNTS:
            config = pg_config(server.url, f"inst{n}")
            data["postgresql"][n] = run_gateways(scratch, [config] * n, lambda urls, pids, n=n: measure(
                urls, pids, server, clients, seconds, turns, warm, f"pg{n}"))
        data["latency"]["direct"] = run_gateways(scratch, [pg_config(server.url, "lat")], lambda urls, pids: measure(
            urls, pids, server, 1, lat_s, turns, warm, "pgd"))
        for delay_ms in (0, 1):
            data["latency"][f"proxy{delay_ms}"] = delayed_turns(scratch, server, delay_ms, lat_s, turns, warm)
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    notes = (f"Server: {data['server']} (pgserver, Unix socket, fsync and synchronous_commit on), started by the "
             f"bench. Every configuration: {clients} concurrent clients (lean asyncio load generator in the bench "
             f"process), record-mode user turns over HTTP into existing sessions (dmScope per-peer, "
             f"{PEERS_PER_CLIENT} senders per client, no two clients on one session, created in the warm-up), "
             f"{seconds:g} s or {turns:,} turns after {warm:g} s of warm-up; `memorySearch.provider: none` "
             "and Active Memory off on both backends. CPU: utime+stime of each gateway process and of the "
             "postmaster with all its children (backends and auxiliary processes), read from /proc before and "
             "after the window, per acknowledged turn; SQLite has no server. All processes share 2 cores with "
             "other work (load average at start → end of each window); the bench runs niced. The latency rows: "
             f"one client, {lat_s:g} s each; the proxy (tests/helpers/pg_wire.py) counts Query/Sync/Flush messages and "
             "sleeps 1 ms for each before forwarding (a sleep can overshoot on a loaded machine); its round trips "
             "per turn include whatever else the gateway read in the window (timed checks, background jobs). "
             "Each PostgreSQL commit waits for its WAL flush (fsync on, as a production server runs); SQLite's "
             f"default `synchronous: NORMAL` does not flush per commit. fdatasync of 8 KiB on the server's disk "
             f"at the start of this run: p50 {data['fdatasync']['p50'] * 1000:.2f} ms, "
             f"p95 {data['fdatasync']['p95'] * 1000:.2f} ms — a floor under every PostgreSQL turn's latency, "
             "not its CPU.")
    blocks = [throughput_table(data), latency_table(data["latency"]), notes]
    return Section("pg-instances", "Several instances on PostgreSQL", blocks, data)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pg_instances")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    with make_progress() as progress:
        section = run_bench(progress, quick=args.quick)
    print(section.markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
