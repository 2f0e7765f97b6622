"""SPEC D2 through the real surface: three `clawkeep gateway` processes (three homes) on one
PostgreSQL database, 30 concurrent HTTP clients spreading every session's messages over all
three, one gateway SIGKILLed mid-load. Clients retry a failed request at another gateway with
the same message id. Afterwards every acknowledged message is stored, none twice, each client's
messages in order; a memory written on one gateway is read on another."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from gateway_process import GatewayProcess

CONFIG = {"session": {"dmScope": "per-peer", "reset": {"mode": "none"}},
          "agents": {"defaults": {"memorySearch": {"provider": "none"}}},
          "plugins": {"entries": {"active-memory": {"enabled": False}}}}
CLIENTS, PEERS, PER_CLIENT = 30, 10, 20


@pytest.fixture
def gateways(tmp_path, pgvector_url):
    prefix = "gw" + uuid.uuid4().hex[:10]
    env = {"CLAWKEEP_STORAGE_URL": pgvector_url, "CLAWKEEP_STORAGE_SCHEMA": prefix}
    started = []
    try:
        for n in range(3):
            home = tmp_path / f"gw{n}"
            home.mkdir()
            started.append(GatewayProcess(home, config=CONFIG, env=env))
        yield started
    finally:
        for gw in started:
            gw.stop()
        with psycopg.connect(pgvector_url, autocommit=True) as conn:
            for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                        (prefix + "%",)).fetchall():
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def run_clients(urls: list[str], dead: set[int], acked: dict[str, list[int]], latencies: list[float],
                killed: threading.Event) -> None:
    lock = threading.Lock()

    def client(c: int) -> None:
        peer = f"peer{c % PEERS}"
        clients = [httpx.Client(base_url=u, timeout=60) for u in urls]
        try:
            for n in range(PER_CLIENT):
                body = {"text": f"c{c} {n}", "sender": peer, "channel": "telegram", "messageId": f"c{c}-{n}"}
                started = time.perf_counter()
                for attempt in range(30):  # round robin over the gateways; a dead one is skipped
                    g = (c + n + attempt) % len(urls)
                    if g in dead:
                        continue
                    try:
                        response = clients[g].post("/v1/messages", json=body)
                    except httpx.HTTPError:
                        continue  # the gateway died under us: the same id goes to another one
                    if response.status_code == 200:
                        with lock:
                            acked[f"c{c}"].append(n)
                            latencies.append(time.perf_counter() - started)
                        break
                    time.sleep(0.05)  # 503 (busy session / lost connection): retry
                else:
                    raise AssertionError(f"c{c}-{n} was never acknowledged")
                if c == 0 and n == PER_CLIENT // 3:
                    killed.set()  # the test kills a gateway now, mid-load
        finally:
            for http in clients:
                http.close()

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(client, range(CLIENTS)))


def test_three_gateways_thirty_clients_and_a_sigkill(gateways):
    urls = [gw.url for gw in gateways]
    acked: dict[str, list[int]] = defaultdict(list)
    latencies: list[float] = []
    dead: set[int] = set()
    killed = threading.Event()

    def killer() -> None:
        killed.wait(300)
        dead.add(1)
        gateways[1].signal(signal.SIGKILL)

    k = threading.Thread(target=killer)
    k.start()
    started = time.perf_counter()
    run_clients(urls, dead, acked, latencies, killed)
    wall = time.perf_counter() - started
    k.join()
    assert gateways[1].proc.returncode == -signal.SIGKILL
    with httpx.Client(base_url=urls[2], timeout=60) as http:
        per_client: dict[str, list[int]] = defaultdict(list)
        for p in range(PEERS):
            history = http.get(f"/v1/sessions/agent:main:direct:peer{p}/history").json()
            assert not history["truncated"]
            for m in history["messages"]:
                client, number = m["text"].split()
                per_client[client].append(int(number))
    for c in range(CLIENTS):
        assert per_client[f"c{c}"] == list(range(PER_CLIENT)), (c, per_client[f"c{c}"])  # once each, in order
        assert sorted(acked[f"c{c}"]) == list(range(PER_CLIENT))
    latencies.sort()
    print(f"\n3 gateways, {CLIENTS} clients, one SIGKILLed: {len(latencies)} turns in {wall:.1f} s "
          f"({len(latencies) / wall:.0f}/s), p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
          f"p95 {latencies[int(len(latencies) * 0.95)] * 1000:.0f} ms")


def test_memory_written_on_one_gateway_is_read_on_another(gateways):
    a, b = (gw.client() for gw in gateways[:2])
    with a, b:
        written = a.post("/v1/memory/remember", json={"text": "Remember that the staging password rotates on Mondays"})
        assert written.status_code == 200, written.text
        items = b.get("/v1/memory/items").json()
        texts = [i["text"] for i in (items["items"] if isinstance(items, dict) else items)]
        assert any("rotates on Mondays" in t for t in texts)
