"""SPEC D4: memory documents in PostgreSQL mode. Two instances (two homes, two workspace
mirrors) on one database: every write is a compare-and-set, human edits of a mirrored file go
back through the same check, a collision keeps both versions and is reported."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import psycopg
import pytest

from clawkeep import Engine
from clawkeep.errors import ConflictError
from clawkeep.memory import items


@pytest.fixture
def two(tmp_path, pgvector_url):
    prefix = "d" + uuid.uuid4().hex[:10]
    config = {"storage": {"url": pgvector_url, "schema": prefix}}
    a = Engine.open(home=tmp_path / "a", config=config)
    b = Engine.open(home=tmp_path / "b", config=config)
    yield a, b
    a.close()
    b.close()
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                    (prefix + "%",)).fetchall():
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def ws(engine):
    return Path(engine.status().home) / "workspace"


def test_a_remembered_fact_reaches_the_other_instance(two):
    a, b = two
    a.memory_remember("Remember that I prefer TypeScript")
    assert not (ws(b) / "MEMORY.md").exists()  # nothing is shared through the file system
    assert [i.text for i in b.memory_items()] == ["I prefer TypeScript"]
    assert "TypeScript" in (ws(b) / "MEMORY.md").read_text()
    hits = b.memory_search("which language do I prefer?").to_json()["results"]
    assert hits and "TypeScript" in hits[0]["snippet"]


def test_concurrent_writes_on_two_instances_all_land(two):
    a, b = two
    facts = {a: [f"my colleague number {n} is called Alpha{n}" for n in range(6)],
             b: [f"my neighbour number {n} is called Beta{n}" for n in range(6)]}
    errors = []

    def write(engine):
        for fact in facts[engine]:
            try:
                engine.memory_remember(fact, force=True)
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(e,)) for e in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    want = sorted(f.lower() for f in facts[a] + facts[b])
    assert sorted(i.text.lower() for i in a.memory_items()) == want
    assert sorted(i.text.lower() for i in b.memory_items()) == want  # b's mirror converged too


def test_a_human_edit_of_a_mirror_goes_back_through_the_check(two):
    a, b = two
    a.memory_remember("Remember that my favourite tea is sencha")
    b.memory_items()  # b mirrors it
    mirror = ws(b) / "MEMORY.md"
    mirror.write_text(mirror.read_text() + "- I keep bees on the roof\n")
    b.memory_items()  # b syncs: the edit is written back (its version was current)
    assert "I keep bees on the roof" in [i.text for i in a.memory_items()]
    assert "bees" in (ws(a) / "MEMORY.md").read_text()
    assert a.memory_status().to_json()["documents"]["conflicts"] == []


def test_a_human_edit_colliding_with_another_write_keeps_both_and_is_reported(two):
    a, b = two
    a.memory_remember("Remember that my favourite tea is sencha")
    b.memory_items()
    mirror = ws(b) / "MEMORY.md"
    human = mirror.read_text() + "- edited by hand on b\n"
    a.memory_remember("Remember that my desk is by the window")  # a writes first...
    mirror.write_text(human)  # ...while a human edits b's (now stale) mirror
    texts = [i.text for i in b.memory_items()]  # b syncs: its push loses the compare-and-set
    assert "my desk is by the window" in " ".join(texts).lower()  # the database's version stays the document
    conflicts = b.memory_status().to_json()["documents"]["conflicts"]
    assert len(conflicts) == 1 and conflicts[0]["path"] == "MEMORY.md"
    kept = ws(b) / conflicts[0]["keptAs"]
    assert kept.read_text() == human  # the human's version is kept, not overwritten
    assert any("kept as" in w for w in b.runtime.warnings)
    assert a.memory_status().to_json()["documents"]["conflicts"] == conflicts  # every instance sees it
    assert (ws(a) / conflicts[0]["keptAs"]).read_text() == human


def test_an_edit_of_an_item_another_instance_changed_is_refused_and_kept(two):
    a, b = two
    a.memory_remember("Remember that the garage code word is marigold")
    item_id = a.memory_items()[0].id
    b.memory_items()  # b's mirror holds the old text
    a.memory_edit(item_id, "the garage code word is sunflower")
    with pytest.raises(ConflictError, match="your edit was not applied to MEMORY.md but kept as") as refused:
        items.edit_item(ws(b), item_id, "the garage code word is tulip")  # b still shows the old text
    assert [i.text for i in b.memory_items()] == ["the garage code word is sunflower"]
    for engine in (a, b):  # the refused edit is a conflict copy every instance reports and mirrors
        [conflict] = engine.memory_status().to_json()["documents"]["conflicts"]
        assert conflict["path"] == "MEMORY.md" and conflict["keptAs"] in str(refused.value)
        assert "code word is tulip" in (ws(engine) / conflict["keptAs"]).read_text()


def test_an_edit_from_a_stale_base_text_is_kept_as_a_conflict(two):
    """The Control UI sends the text its editor showed: a save after another instance's edit of
    the same item, even seconds later, is a conflict and never overwrites it."""
    a, b = two
    a.memory_remember("Remember that the boat is called Osprey")
    [item] = b.memory_items()
    a.memory_edit(item.id, "the boat is called Heron", base_text=item.text)
    with pytest.raises(ConflictError, match="kept as memory/.conflicts/"):
        b.memory_edit(item.id, "the boat is called Petrel", base_text=item.text)  # b synced: no race, still stale
    with pytest.raises(ConflictError, match="kept as memory/.conflicts/"):  # again, within the same second
        b.memory_edit(item.id, "the boat is called Gannet", base_text=item.text)
    assert [i.text for i in a.memory_items()] == ["the boat is called Heron"]
    second, first = a.memory_status().to_json()["documents"]["conflicts"]  # newest first, each its own copy
    assert first["keptAs"] != second["keptAs"]
    assert "the boat is called Petrel" in (ws(a) / first["keptAs"]).read_text()
    assert "the boat is called Gannet" in (ws(a) / second["keptAs"]).read_text()


def test_two_instances_never_sweep_at_once(two):
    """Dreaming's sweep lock across hosts (Dr, D2): the database lease. Instance b cannot sweep
    while a holds the lease (their file locks are in different homes), and can once a lets go."""
    from clawkeep.dreaming.store import DreamsDir, shared_store

    a, b = two
    a.memory_remember("The team meets on Thursdays")
    b.memory_remember("The office is in Porto")
    lock_a = DreamsDir(ws(a)).sweep_lock(shared_store(a.runtime))
    lease = lock_a.acquire("sweep-on-a")
    assert lease is not None
    try:
        blocked = b.dream()
        assert blocked["status"] == "locked" and blocked["holder"]["lease"] == "dreaming-sweep"
    finally:
        lease.release()
    assert b.dream()["status"] == "ok"


# --- a mirrored path that is no longer a regular file inside the workspace (QA pgm 1, 2) ---------
def _stored(engine, rel):
    doc = engine.runtime.store().doc_get(rel)
    return None if doc is None or doc.deleted else doc.text


@pytest.mark.parametrize("rel", ["MEMORY.md", "memory/2026-01-05-0930.md"])
def test_a_mirrored_file_replaced_by_a_symlink_out_of_the_workspace_is_never_pushed(two, tmp_path, rel):
    a, b = two
    a.memory_remember("Remember that my favourite tea is sencha")
    if rel != "MEMORY.md":  # a session-memory excerpt, written like the hook writes it
        from clawkeep.memory.documents import for_workspace
        for_workspace(ws(a)).create(rel, "# Session excerpt\n\nwe talked about tea\n")
    b.memory_items()  # b mirrors it
    before = _stored(a, rel)
    private = tmp_path / "private.txt"
    private.write_text("- the root password of the build box is hunter2\n")
    (ws(b) / rel).unlink()
    (ws(b) / rel).symlink_to(private)
    b.memory_status()
    b.memory_search("tea")
    assert _stored(a, rel) == before  # the outside file never reached the database
    a.memory_items()
    assert "hunter2" not in (ws(a) / rel).read_text()  # nor the other host's mirror
    assert private.read_text() == "- the root password of the build box is hunter2\n"  # never written through
    assert (ws(b) / rel).is_file() and not (ws(b) / rel).is_symlink()  # the database's text is back
    assert (ws(b) / rel).read_text() == before
    assert any(rel in w and "not a regular file" in w for w in b.runtime.warnings)


def test_a_fifo_at_a_mirrored_path_never_blocks_a_read(two):
    a, b = two
    a.memory_remember("Remember that my favourite tea is sencha")
    b.memory_items()
    before = _stored(a, "MEMORY.md")
    fifo = ws(b) / "MEMORY.md"
    fifo.unlink()
    os.mkfifo(fifo)
    done = threading.Event()

    def use():
        b.memory_status()
        b.memory_search("tea")
        done.set()

    worker = threading.Thread(target=use, daemon=True)
    worker.start()
    try:
        assert done.wait(20), "a FIFO at a mirrored path blocked the memory read"
    finally:
        if not done.is_set():  # free the blocked reader: a writer that opens and closes gives it EOF
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            worker.join(10)
    assert _stored(a, "MEMORY.md") == before
    assert fifo.is_file() and fifo.read_text() == before


def test_a_directory_at_a_mirrored_path_is_left_alone_and_reported(two):
    a, b = two
    a.memory_remember("Remember that my favourite tea is sencha")
    b.memory_items()
    before = _stored(a, "MEMORY.md")
    (ws(b) / "MEMORY.md").unlink()
    (ws(b) / "MEMORY.md").mkdir()
    a.memory_remember("Remember that my desk is by the window")  # b's pull cannot write over a directory
    status = b.memory_status().to_json()["documents"]
    assert status["notMirrored"] == [{"path": "MEMORY.md", "reason": "a directory"}]
    assert (ws(b) / "MEMORY.md").is_dir()
    assert "desk is by the window" in _stored(a, "MEMORY.md") and "sencha" in before
    (ws(b) / "MEMORY.md").rmdir()  # once it is gone, the database's version comes back, never deleted
    b.memory_items()
    assert (ws(b) / "MEMORY.md").read_text() == _stored(a, "MEMORY.md")
    assert b.memory_status().to_json()["documents"]["notMirrored"] == []


# --- supersession decided against the text actually written (QA pgm 3) -------------------------
def test_contradicting_facts_remembered_at_once_on_two_instances_leave_one_active(two):
    a, b = two
    start = threading.Barrier(2)
    errors = []

    def remember(engine, building):
        start.wait()
        try:
            engine.memory_remember(f"My office is in building {building}")
        except Exception as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=remember, args=(e, x)) for e, x in ((a, "A1"), (b, "B1"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for engine in (a, b):
        active = [i.text for i in engine.memory_items(status="active")]
        assert len(active) == 1 and "office is in building" in active[0], active


def test_three_contradicting_facts_at_once_on_one_instance_leave_one_active(two):
    a, _ = two
    start = threading.Barrier(3)
    errors = []

    def remember(building):
        start.wait()
        try:
            a.memory_remember(f"My office is in building {building}")
        except Exception as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=remember, args=(x,)) for x in ("A1", "B1", "C1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    active = [i.text for i in a.memory_items(status="active")]
    assert len(active) == 1, active


def test_a_file_written_where_a_mirrored_directory_stood_is_an_edit(two):
    a, b = two
    a.memory_remember("Remember that my favourite tea is sencha")
    b.memory_items()
    (ws(b) / "MEMORY.md").unlink()
    (ws(b) / "MEMORY.md").mkdir()
    b.memory_status()
    (ws(b) / "MEMORY.md").rmdir()
    (ws(b) / "MEMORY.md").write_text("# Memory\n\n- I keep bees on the roof\n")
    b.memory_items()  # b pushes the human's file through the usual check (its base version is current)
    assert [i.text for i in a.memory_items()] == ["I keep bees on the roof"]
    assert b.memory_status().to_json()["documents"]["notMirrored"] == []
