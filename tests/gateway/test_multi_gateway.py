"""SPEC D2 through the real surface: three `clawkeep gateway` processes (three homes) on one
PostgreSQL database, 30 concurrent HTTP clients spreading every session's messages over all
three, one gateway SIGKILLed mid-load. Clients retry a failed request at another gateway with
the same message id. Afterwards every acknowledged message is stored, none twice, each client's
messages in order; a memory written on one gateway is read on another; a memory edited on two
gateways at once (two HTTP edits, or a human's edit of one mirror against the other gateway's
HTTP write) ends as a reported conflict with both versions kept (D4), recorded once even when a
starting gateway's first calls race each other; a CLI writing beside a gateway is no conflict."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import psycopg
import pytest

from clawkeep.storage.postgres.connection import lock_id, schema_name
from tests.helpers.gateway_process import GatewayProcess

CONFIG = {"session": {"dmScope": "per-peer", "reset": {"mode": "none"}},
          "agents": {"defaults": {"memorySearch": {"provider": "none"}}},
          "plugins": {"entries": {"active-memory": {"enabled": False}}}}
UNWATCHED = {**CONFIG, "gateway": {"watch": False}}  # a mirror syncs only when a request uses memory
CLIENTS, PEERS, PER_CLIENT = 30, 10, 20


def gateway_env(pgvector_url: str, prefix: str) -> dict[str, str]:
    return {"CLAWKEEP_STORAGE_URL": pgvector_url, "CLAWKEEP_STORAGE_SCHEMA": prefix}


@contextmanager
def started_gateways(tmp_path, pgvector_url, count: int, config: dict = CONFIG):
    """`count` gateway processes, each with its own home (and workspace mirror), on one database."""
    prefix = "gw" + uuid.uuid4().hex[:10]
    env = gateway_env(pgvector_url, prefix)
    started = []
    try:
        for n in range(count):
            home = tmp_path / f"gw{n}"
            home.mkdir()
            started.append(GatewayProcess(home, config=config, env=env))
        yield started, prefix
    finally:
        for gw in started:
            gw.stop()
        with psycopg.connect(pgvector_url, autocommit=True) as conn:
            for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                        (prefix + "%",)).fetchall():
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')


@pytest.fixture
def gateways(tmp_path, pgvector_url):
    with started_gateways(tmp_path, pgvector_url, 3) as (started, _prefix):
        yield started


@pytest.fixture
def two_gateways(tmp_path, pgvector_url):
    with started_gateways(tmp_path, pgvector_url, 2) as (started, prefix):
        yield started, prefix


@pytest.fixture
def two_unwatched_gateways(tmp_path, pgvector_url):
    """No file watcher: a mirror syncs only when a request uses memory, so the test decides
    whether a human's save lands before or after the mirror learns of the other gateway's write."""
    with started_gateways(tmp_path, pgvector_url, 2, UNWATCHED) as (started, prefix):
        for gw in started:  # a warm-up still to come would sync the mirror at a moment the test does not choose
            gw.wait_warm()
        yield started, prefix


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


def _items(http: httpx.Client) -> list[dict]:
    found = http.get("/v1/memory/items")
    assert found.status_code == 200, found.text
    body = found.json()
    return body["items"] if isinstance(body, dict) else body


def _conflicts(http: httpx.Client) -> list[dict]:
    status = http.get("/v1/memory/status")
    assert status.status_code == 200, status.text
    return status.json()["documents"]["conflicts"]


def _stored_documents(url: str, prefix: str) -> dict[str, str]:
    """Every memory document in the database (path -> text), read with SQL, not through clawkeep."""
    with psycopg.connect(url, autocommit=True) as conn:
        (schema,) = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s AND nspname LIKE "
                                 "'%%agent%%'", (prefix + "%",)).fetchone()
        return dict(conn.execute(f'SELECT path, text FROM "{schema}".documents WHERE NOT deleted').fetchall())


def test_one_item_edited_on_two_gateways_at_once_ends_as_a_reported_conflict(two_gateways, pgvector_url):
    """Two Control UI users, one on each gateway, edit the same item from the same text at the
    same moment (PUT /v1/memory/items/{id} with the text each editor showed). One edit becomes the
    item; the other is refused with 409 naming where it was kept; the kept copy holds that edit;
    both gateways' memory status report the conflict and both mirrors hold both texts."""
    (gw_a, gw_b), prefix = two_gateways
    a, b = gw_a.client(), gw_b.client()
    with a, b:
        stored = a.post("/v1/memory/remember", json={"text": "Remember that the backup server is in Lisbon"})
        assert stored.status_code == 200, stored.text
        [item] = [i for i in _items(b) if "Lisbon" in i["text"]]  # b's mirror pulls it
        edits = {"a": "the backup server is in Porto", "b": "the backup server is in Faro"}
        barrier = threading.Barrier(2)
        answers: dict[str, httpx.Response] = {}

        def edit(name: str, http: httpx.Client) -> None:
            barrier.wait()
            answers[name] = http.put(f"/v1/memory/items/{item['id']}",
                                     json={"text": edits[name], "baseText": item["text"]})

        threads = [threading.Thread(target=edit, args=pair) for pair in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.status_code for r in answers.values())
        assert codes == [200, 409], {n: (r.status_code, r.text) for n, r in answers.items()}
        winner = next(n for n, r in answers.items() if r.status_code == 200)
        loser = "b" if winner == "a" else "a"
        refusal = answers[loser].json()["error"]
        assert refusal["code"] == "conflict" and "kept as memory/.conflicts/" in refusal["message"], refusal

        for http in (a, b):  # both gateways: one item with the winner's text, one reported conflict
            assert [i["text"] for i in _items(http) if "backup server" in i["text"]] == [edits[winner]]
            [conflict] = _conflicts(http)
            assert conflict["path"] == "MEMORY.md" and conflict["keptAs"] in refusal["message"]
        for gw in (gw_a, gw_b):  # both mirrors: the document and the kept copy, each edit in one of them
            ws = gw.home / "workspace"
            memory_md = (ws / "MEMORY.md").read_text()
            assert edits[winner] in memory_md and edits[loser] not in memory_md
            assert edits[loser] in (ws / conflict["keptAs"]).read_text()
        docs = _stored_documents(pgvector_url, prefix)  # and the database, read with SQL
        assert edits[winner] in docs["MEMORY.md"] and edits[loser] in docs[conflict["keptAs"]]
        assert "Lisbon" not in docs["MEMORY.md"]


def test_a_human_edit_of_one_mirror_against_an_http_write_on_the_other_gateway(two_unwatched_gateways, pgvector_url):
    """A human edits gateway b's mirrored MEMORY.md while gateway a writes the same document over
    HTTP, and saves before b has pulled a's write: a's write stays the document, the human's file
    is kept as a conflict copy, and both gateways report it. (A save after b pulled a's write is an
    edit of the newer file as far as the mirror can tell: the editor is what warns that the file
    changed on disk. With the watcher on, b pulls within its debounce, so the order is up to
    timing; it is off here.)"""
    (gw_a, gw_b), prefix = two_unwatched_gateways
    a, b = gw_a.client(), gw_b.client()
    with a, b:
        assert a.post("/v1/memory/remember", json={"text": "Remember that the wifi is called Gull"}).status_code == 200
        [item] = [i for i in _items(b) if "Gull" in i["text"]]
        mirror = gw_b.home / "workspace" / "MEMORY.md"
        human = mirror.read_text() + "- the spare key is under the blue pot\n"  # the human's editor opens the file
        edited = a.put(f"/v1/memory/items/{item['id']}", json={"text": "the wifi is called Tern",
                                                               "baseText": item["text"]})
        assert edited.status_code == 200, edited.text
        mirror.write_text(human)  # ...and saves it over the mirror after a's write landed
        _items(b)  # b syncs: its push loses the compare-and-set
        for http in (a, b):
            [conflict] = _conflicts(http)
            assert conflict["path"] == "MEMORY.md" and conflict["keptAs"].startswith("memory/.conflicts/")
            assert [i["text"] for i in _items(http) if "wifi" in i["text"]] == ["the wifi is called Tern"]
        for gw in (gw_a, gw_b):
            assert (gw.home / "workspace" / conflict["keptAs"]).read_text() == human
            assert "Tern" in (gw.home / "workspace" / "MEMORY.md").read_text()
        docs = _stored_documents(pgvector_url, prefix)
        assert docs[conflict["keptAs"]] == human and "Tern" in docs["MEMORY.md"]


def _sessions_waiting_for(observer: psycopg.Connection, holder: psycopg.Connection) -> int:
    """How many database sessions wait for a lock that `holder` holds."""
    return observer.execute("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                            (holder.info.backend_pid,)).fetchone()[0]


def _let_them_pile_up(observer: psycopg.Connection, holder: psycopg.Connection, racers: int) -> int:
    """Wait until a gateway thread waits for `holder`'s lock, then until all `racers` do or a
    second has passed (a gateway that serialises them itself keeps all but one away from the
    database: they wait in the process). How many wait."""
    deadline = time.monotonic() + 60
    while not _sessions_waiting_for(observer, holder):
        assert time.monotonic() < deadline, "no gateway thread ever reached the database lock"
        time.sleep(0.02)
    settle = time.monotonic() + 1
    while (waiting := _sessions_waiting_for(observer, holder)) < racers and time.monotonic() < settle:
        time.sleep(0.02)
    return waiting


def _start_with_racing_first_calls(home, pgvector_url: str, prefix: str) -> tuple[GatewayProcess, str]:
    """Start the gateway of `home` and make its warm-up and two requests use the agent store for
    the first time at once, then sync the mirror at once. Two locks held from other database
    sessions line them up: the migration lock every opening of the store takes, then a lock on
    the documents table that holds back every write. The started gateway, and how many threads
    each lock held."""
    schema = schema_name(prefix, "agent", "main")
    with psycopg.connect(pgvector_url, autocommit=True) as observer, \
            psycopg.connect(pgvector_url, autocommit=True) as opening, psycopg.connect(pgvector_url) as writing:
        opening.execute("SELECT pg_advisory_lock(%s)", (lock_id("migrate", schema),))
        writing.execute(f'LOCK TABLE "{schema}".documents IN EXCLUSIVE MODE')  # reads pass, writes wait
        gateway = GatewayProcess(home, config=UNWATCHED, env=gateway_env(pgvector_url, prefix))
        answers: list[httpx.Response] = []
        try:
            with gateway.client() as http:
                threads = [threading.Thread(target=lambda: answers.append(http.get("/v1/memory/items")))
                           for _ in range(2)]
                for t in threads:
                    t.start()
                opened = _let_them_pile_up(observer, opening, racers=3)  # two requests and the warm-up
                opening.execute("SELECT pg_advisory_unlock_all()")
                syncing = _let_them_pile_up(observer, writing, racers=3)
                writing.rollback()
                for t in threads:
                    t.join()
            assert [r.status_code for r in answers] == [200, 200], [r.text for r in answers]
        except BaseException:
            gateway.stop()
            raise
    return gateway, f"{opened} threads opened the store together, {syncing} wrote the mirror back together"


def test_a_conflict_found_by_a_starting_gateway_s_racing_first_calls_is_recorded_once(
        two_unwatched_gateways, pgvector_url):
    """A human edits gateway b's mirrored MEMORY.md while b is down, and gateway a changes the same
    document over HTTP meanwhile. When b starts, its warm-up and two requests all make b's first
    use of the agent store at once, and each syncs the mirror, which finds the human's edit beaten
    by a's write. That is one conflict: one kept copy, one entry in both gateways' status."""
    (gw_a, gw_b), prefix = two_unwatched_gateways
    with gw_a.client() as a:
        assert a.post("/v1/memory/remember", json={"text": "Remember that the wifi is called Gull"}).status_code == 200
        with gw_b.client() as b:
            [item] = [i for i in _items(b) if "Gull" in i["text"]]
        gw_b.stop()
        edited = a.put(f"/v1/memory/items/{item['id']}", json={"text": "the wifi is called Tern",
                                                               "baseText": item["text"]})
        assert edited.status_code == 200, edited.text
        mirror = gw_b.home / "workspace" / "MEMORY.md"
        human = mirror.read_text() + "- the spare key is under the blue pot\n"
        mirror.write_text(human)  # saved over b's mirror, which still holds the Gull version
        restarted, raced = _start_with_racing_first_calls(gw_b.home, pgvector_url, prefix)
        try:
            with restarted.client() as b:
                for http in (a, b):
                    found = _conflicts(http)
                    assert len(found) == 1, (f"{len(found)} conflicts ({raced})", found)
                    [conflict] = found
                    assert conflict["path"] == "MEMORY.md" and conflict["keptAs"].startswith("memory/.conflicts/")
                    assert [i["text"] for i in _items(http) if "wifi" in i["text"]] == ["the wifi is called Tern"]
        finally:
            restarted.stop()
    kept = sorted((gw_b.home / "workspace" / "memory" / ".conflicts").glob("*.md"))
    assert [k.read_text() for k in kept] == [human]
    docs = _stored_documents(pgvector_url, prefix)
    assert [p for p in docs if p.startswith("memory/.conflicts/")] == [conflict["keptAs"]]
    assert docs[conflict["keptAs"]] == human and "Tern" in docs["MEMORY.md"]


def test_a_cli_write_beside_a_running_gateway_is_no_conflict(two_unwatched_gateways, pgvector_url):
    """`clawkeep memory remember` run on gateway b's home while b runs: both processes mirror the
    same workspace, so b must take the files the CLI wrote (and the mirror state it saved) for
    what they are, the database's documents, not for a human's edits beaten by another writer:
    b lists both items and no gateway reports a conflict."""
    (gw_a, gw_b), prefix = two_unwatched_gateways
    with gw_a.client() as a, gw_b.client() as b:
        assert b.post("/v1/memory/remember", json={"text": "Remember that the wifi is called Gull"}).status_code == 200
        env = {**os.environ, **gateway_env(pgvector_url, prefix)}
        env.pop("CLAWKEEP_HOME", None)
        done = subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(gw_b.home), "memory", "remember",
                               "Remember that the printer is on floor 3"], capture_output=True, text=True, env=env,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        for http in (b, a):
            assert sorted(i["text"] for i in _items(http)) == ["The printer is on floor 3", "The wifi is called Gull"]
            assert _conflicts(http) == []
    assert not [p for p in _stored_documents(pgvector_url, prefix) if p.startswith("memory/.conflicts/")]
