"""Group commit in the SQLite agent store, with real threads, real files and real processes:
concurrent writers share a COMMIT, each is answered only after a COMMIT that includes it, a
failing writer loses only its own writes, readers see committed rows only, nested transactions
and the commit journal still work, other processes still write through busy_timeout, and a
SIGKILL mid-burst loses nothing a writer was told was stored."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from clawkeep.errors import ConflictError, DuplicateError, StorageError
from clawkeep.storage import EntryRecord, SessionRecord
from clawkeep.storage.journal import commit_journal
from clawkeep.storage.sqlite import SqliteAgentStore


def open_store(path: Path) -> SqliteAgentStore:
    return SqliteAgentStore(path, "main", synchronous="FULL")


@pytest.fixture()
def store(tmp_path: Path):
    s = open_store(tmp_path / "agent.sqlite")
    s.insert_session(SessionRecord("s1", "agent:main:main", "main", 1, 1))
    yield s
    s.close()


def entry(n: int | str) -> EntryRecord:
    return EntryRecord(f"e{n}", "s1", "message", 1, role="user", content=[{"type": "text", "text": f"m {n}"}])


def seen_elsewhere(path: str, *entry_ids: str) -> set[str]:
    """The entry ids another connection (as another process would) can read."""
    conn = sqlite3.connect(path)
    try:
        if not entry_ids:
            return {r[0] for r in conn.execute("SELECT entry_id FROM entries WHERE type = 'message'")}
        marks = ", ".join("?" for _ in entry_ids)
        return {r[0] for r in conn.execute(f"SELECT entry_id FROM entries WHERE entry_id IN ({marks})", entry_ids)}
    finally:
        conn.close()


def test_writers_queued_behind_a_transaction_share_its_commit(store):
    start = threading.Barrier(4)
    visible_at_answer: dict[int, bool] = {}

    def write(n: int) -> None:
        start.wait()
        if n == 0:
            with store.transaction():
                store.append_entry(entry(n), index_text=f"m {n}")
                time.sleep(0.3)  # the others queue up behind this open transaction
        else:
            time.sleep(0.05)
            store.append_entry(entry(n), index_text=f"m {n}")
        visible_at_answer[n] = seen_elsewhere(store.path, f"e{n}") == {f"e{n}"}

    before = store.commits
    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.commits - before == 1  # all four in one COMMIT
    assert visible_at_answer == {0: True, 1: True, 2: True, 3: True}  # nobody answered before its COMMIT


def test_a_failing_writer_loses_only_its_own_writes(store):
    store.append_entry(entry(1), index_text="m 1")
    inside = threading.Event()
    errors: list[BaseException] = []

    def good() -> None:
        with store.transaction():
            store.append_entry(entry(2), index_text="m 2")
            inside.set()
            time.sleep(0.2)  # the failing writer queues behind us and joins our group

    def failing() -> None:
        inside.wait(5)
        try:
            with store.transaction():
                store.append_entry(entry(3), index_text="m 3")  # rolled back with its savepoint
                store.append_entry(entry(1), index_text="m 1 again")
        except DuplicateError as exc:
            errors.append(exc)

    def late() -> None:
        inside.wait(5)
        time.sleep(0.05)
        store.append_entry(entry(4), index_text="m 4")

    before = store.commits
    threads = [threading.Thread(target=f) for f in (good, failing, late)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 1
    assert store.commits - before == 1  # the good writers shared a COMMIT despite the failure between them
    assert seen_elsewhere(store.path) == {"e1", "e2", "e4"}
    assert store.get_entry("e3") is None


def test_a_writer_failing_first_in_its_group_spares_the_writers_queued_behind_it(store):
    inside = threading.Event()

    def failing() -> None:
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.append_entry(entry(5), index_text="m 5")
                inside.set()
                time.sleep(0.2)  # the good writer queues behind this one
                raise RuntimeError("the caller's own failure")

    def good() -> None:
        inside.wait(5)
        store.append_entry(entry(6), index_text="m 6")

    threads = [threading.Thread(target=f) for f in (failing, good)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen_elsewhere(store.path) == {"e6"}


def test_a_failing_writer_alone_releases_the_write_lock(store):
    store.append_entry(EntryRecord("x", "s1", "message", 1))
    with pytest.raises(DuplicateError):
        store.append_entry(EntryRecord("x", "s1", "message", 1))
    other = sqlite3.connect(store.path, timeout=0.5)
    try:
        other.execute("BEGIN IMMEDIATE")  # would time out if the failed group kept the lock
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert seen_elsewhere(store.path) == {"x"}


def test_eight_threads_all_durable_after_reopen_with_fewer_commits(tmp_path: Path):
    path = tmp_path / "agent.sqlite"
    store = open_store(path)
    store.insert_session(SessionRecord("s1", "agent:main:main", "main", 1, 1))
    per_thread = 60
    start = threading.Barrier(8)

    def write(k: int) -> None:
        start.wait()
        for i in range(per_thread):
            store.append_entry(entry(f"{k}-{i}"), index_text=f"walrus {k} {i}")

    before = store.commits
    threads = [threading.Thread(target=write, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    commits = store.commits - before
    store.close()
    reopened = open_store(path)
    try:
        assert reopened.count_entries("s1", types=["message"]) == 8 * per_thread
        assert reopened.document_frequency(["walrus"]) == {"walrus": 8 * per_thread}
        seqs = [e.seq for e in reopened.iter_entries("s1")]
        assert len(seqs) == len(set(seqs))
    finally:
        reopened.close()
    assert commits < 8 * per_thread  # writers shared COMMITs


class HeldTransaction:
    """A writer thread holding one transaction open — its row written, not committed — until
    `finish()` (or `wait` seconds)."""

    def __init__(self, store: SqliteAgentStore, record: EntryRecord, text: str, wait: float = 30.0):
        self.release, inside = threading.Event(), threading.Event()

        def hold() -> None:
            with store.transaction():
                store.append_entry(record, index_text=text)
                inside.set()
                self.release.wait(wait)

        self.thread = threading.Thread(target=hold)
        self.thread.start()
        inside.wait(5)

    def finish(self) -> None:
        self.release.set()
        self.thread.join()


def test_a_read_never_sees_an_uncommitted_group_and_does_not_end_it(store):
    store.append_entry(entry(6), index_text="m 6")
    held = HeldTransaction(store, entry(7), "m 7", wait=5)
    before = store.commits
    seen: list[object] = []
    reader = threading.Thread(target=lambda: seen.extend([store.get_entry("e7"), store.get_entry("e6"),
                                                          store.count_entries("s1")]))
    reader.start()
    reader.join(5)  # the reader does not wait for the writer's open transaction...
    assert seen[0] is None and seen[1] is not None and seen[2] == 1  # ...and sees the last COMMIT only
    assert store.commits == before  # nor did it commit the writer's group early
    held.finish()
    assert store.get_entry("e7") is not None  # committed: now every reader sees it
    assert seen_elsewhere(store.path) == {"e6", "e7"}


def test_reads_outside_a_transaction_keep_up_with_commits_and_the_cached_counts(store):
    store.append_entry(entry(1), index_text="walrus one")
    assert store.document_frequency(["walrus"]) == {"walrus": 1}
    assert store.document_frequency(["walrus"]) == {"walrus": 1}  # cached until the next COMMIT
    done = threading.Barrier(4)

    def write(k: int) -> None:
        done.wait()
        for i in range(10):
            store.append_entry(entry(f"{k}-{i}"), index_text=f"walrus {k} {i}")
            # read right after the answer, on whichever connection: the writer's own row is there
            assert store.get_entry(f"e{k}-{i}") is not None

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.document_frequency(["walrus"]) == {"walrus": 41}
    assert store.indexed_documents() == store.count_entries("s1") == 41
    with store.transaction():  # inside a transaction the writer's connection answers, own rows included
        store.append_entry(entry("in"), index_text="walrus inside")
        assert store.document_frequency(["walrus"]) == {"walrus": 42}
        assert store.get_entry("ein") is not None
    assert store.document_frequency(["walrus"]) == {"walrus": 42}


def test_failing_writers_inside_shared_groups_lose_only_their_own_writes(tmp_path: Path):
    """Sixteen writers, a transaction body like a recorded message (entry, index row, session
    counters); every third one fails after writing (its own error, a duplicate id or a stale
    session version). All the others are stored, each failure is reported to its own caller."""
    path = tmp_path / "agent.sqlite"
    store = open_store(path)
    writers, per = 16, 30
    for k in range(writers):
        store.insert_session(SessionRecord(f"s{k}", f"agent:main:w{k}", "main", 1, 1))
    start = threading.Barrier(writers)
    failures: dict[str, int] = {"own": 0, "duplicate": 0, "conflict": 0}
    wrong: list[BaseException] = []
    count_lock = threading.Lock()

    def write(k: int) -> None:
        session = store.get_session(f"s{k}")
        start.wait()
        for i in range(per):
            eid = f"w{k}-{i}"
            kind = ("ok", "own", "ok", "duplicate", "ok", "conflict")[i % 6]
            try:
                with store.transaction():
                    store.append_entry(EntryRecord(eid, f"s{k}", "message", 1, role="user",
                                                   content=[{"type": "text", "text": eid}]), index_text=eid)
                    if kind == "own":
                        raise RuntimeError("the caller's own failure")
                    if kind == "duplicate":
                        store.append_entry(EntryRecord(f"w{k}-0", f"s{k}", "message", 1))
                    stale = SessionRecord(**{**session.__dict__, "meta": dict(session.meta)})
                    if kind == "conflict":
                        stale.version -= 1
                    stale.message_count += 1
                    store.update_session(stale)
                    session = stale
            except (RuntimeError, DuplicateError, ConflictError) as exc:
                expected = {"own": RuntimeError, "duplicate": DuplicateError, "conflict": ConflictError}.get(kind)
                if expected is None or not isinstance(exc, expected):
                    wrong.append(exc)
                with count_lock:
                    failures[kind] += 1

    threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert not wrong
    assert failures == {"own": writers * per // 6, "duplicate": writers * per // 6, "conflict": writers * per // 6}
    reopened = open_store(path)
    try:
        for k in range(writers):
            kept = {e.entry_id for e in reopened.iter_entries(f"s{k}")}
            assert kept == {f"w{k}-{i}" for i in range(per) if i % 2 == 0}
            assert reopened.get_session(f"s{k}").message_count == per // 2
        assert reopened.document_frequency(["w0"]) == {"w0": per // 2}
    finally:
        reopened.close()


def test_incognito_store_in_memory_still_reads_committed_rows_only(tmp_path: Path):
    store = SqliteAgentStore(":memory:", "main")
    store.insert_session(SessionRecord("s1", "agent:main:main", "main", 1, 1))
    store.append_entry(entry(1), index_text="m 1")
    with store.transaction():
        store.append_entry(entry(2), index_text="m 2")
        assert store.get_entry("e2") is not None
    assert {e.entry_id for e in store.iter_entries("s1")} == {"e1", "e2"}
    store.close()


def test_nested_transactions_are_one_unit_and_journal_notes_follow_the_commit(store):
    with commit_journal() as notes:
        with store.transaction():
            store.append_entry(entry(1), index_text="m 1")
            with store.transaction():
                store.append_entry(entry(2), index_text="m 2")
            assert store.get_entry("e2") is not None  # this writer reads its own rows
        assert notes  # recorded once the group committed
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.append_entry(entry(3), index_text="m 3")
            with store.transaction():
                store.append_entry(entry(4), index_text="m 4")
                raise RuntimeError("boom")
    assert seen_elsewhere(store.path) == {"e1", "e2"}


def test_close_commits_an_open_group_and_later_writers_get_an_error(tmp_path: Path):
    store = open_store(tmp_path / "agent.sqlite")
    store.insert_session(SessionRecord("s1", "agent:main:main", "main", 1, 1))
    store.append_entry(entry(1))
    store.close()
    with pytest.raises(StorageError):
        store.append_entry(entry(2))
    assert seen_elsewhere(str(tmp_path / "agent.sqlite")) == {"e1"}


WRITER = textwrap.dedent("""
    import sys, threading
    from clawkeep.storage import EntryRecord, SessionRecord
    from clawkeep.storage.sqlite import SqliteAgentStore
    path, tag, threads, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store = SqliteAgentStore(path, "main", synchronous="FULL")
    if store.get_session("s1") is None:
        try:
            store.insert_session(SessionRecord("s1", "agent:main:main", "main", 1, 1))
        except Exception:
            pass
    out = threading.Lock()
    print("ready", flush=True)
    def write(k):
        for i in range(count):
            eid = f"{tag}-{k}-{i}"
            store.append_entry(EntryRecord(eid, "s1", "message", 1, role="user",
                                           content=[{"type": "text", "text": eid}]), index_text=eid)
            with out:  # printed only after append_entry returned: acknowledged
                print(eid, flush=True)
    workers = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    store.close()
""")


def start_writer(path: Path, tag: str, threads: int, count: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, str(threads), str(count)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_two_processes_write_one_file_through_busy_timeout(tmp_path: Path):
    path = tmp_path / "agent.sqlite"
    open_store(path).close()
    procs = [start_writer(path, tag, 4, 40) for tag in ("a", "b")]
    outputs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    acknowledged = {eid for out in outputs for eid in out}
    assert len(acknowledged) == 2 * 4 * 40
    assert seen_elsewhere(str(path)) == acknowledged


def test_sigkill_mid_burst_loses_no_acknowledged_message(tmp_path: Path):
    path = tmp_path / "agent.sqlite"
    proc = start_writer(path, "k", 4, 100_000)
    acknowledged = []
    while len(acknowledged) < 300:
        acknowledged.append(proc.stdout.readline().strip())
    proc.send_signal(signal.SIGKILL)  # mid-burst: groups open, members waiting
    rest, _ = proc.communicate(timeout=30)
    acknowledged += rest.split()
    assert proc.returncode == -signal.SIGKILL
    on_disk = seen_elsewhere(str(path))
    assert set(acknowledged) <= on_disk
    reopened = open_store(path)  # the WAL recovers and the store opens for writing
    try:
        reopened.append_entry(EntryRecord("after", "s1", "message", 1))
        assert reopened.count_entries("s1", types=["message"]) == len(on_disk) + 1
    finally:
        reopened.close()


ENGINE_CONFIG = {"session": {"dmScope": "per-peer", "reset": {"mode": "none"}},
                 "plugins": {"entries": {"active-memory": {"enabled": False}}},
                 "storage": {"synchronous": "FULL"}}


@pytest.mark.parametrize("role", ["assistant", "user"])
def test_engine_messages_join_an_open_group_instead_of_committing_it(tmp_path: Path, role: str):
    """A turn reads before it writes (duplicate check, its session, the entry id): those reads
    must not commit another writer's open group, so concurrent turns share one COMMIT. The user
    role runs a record-mode turn (no model)."""
    from clawkeep import Engine

    eng = Engine.open(home=tmp_path / "home", config=ENGINE_CONFIG)
    try:
        writers = 3
        for k in range(writers):
            eng.message(f"warm-up {k}", sender=f"w{k}", role=role)
        store = eng.runtime.store()
        holder_session = store.get_session_by_key(eng.message("holder", sender="holder").session_key)
        held = HeldTransaction(store, EntryRecord("held", holder_session.session_id, "message", 1, role="user",
                                                  content=[{"type": "text", "text": "held"}]), "held")
        before = store.commits
        results: list[object] = []
        turns = [threading.Thread(target=lambda k=k: results.append(
            eng.message(f"hello from {k}", sender=f"w{k}", role=role, message_id=f"id-{k}")))
            for k in range(writers)]
        for t in turns:
            t.start()
        deadline = time.monotonic() + 30
        while store._queued < writers and time.monotonic() < deadline:  # every turn reached the write lock
            time.sleep(0.01)
        queued = store._queued
        held.finish()
        for t in turns:
            t.join()
        assert queued == writers  # their reads ran beside the open group without ending it...
        assert len(results) == writers
        assert store.commits - before <= 2  # ...so they joined it or the next one: not one COMMIT per turn
        for k in range(writers):
            session = store.get_session_by_key(results[k].session_key)
            assert store.count_entries(session.session_id, types=["message"]) == 2
    finally:
        eng.close()
    store_file = str(tmp_path / "home" / "agents" / "main" / "agent.sqlite")
    assert seen_elsewhere(store_file, "held", "id-0") == {"held", "id-0"}
