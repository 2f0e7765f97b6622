"""SPEC D4: memory documents in PostgreSQL mode. Two instances (two homes, two workspace
mirrors) on one database: every write is a compare-and-set, human edits of a mirrored file go
back through the same check, a collision keeps both versions and is reported."""

from __future__ import annotations

import threading
import uuid

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
    return engine.runtime.home / "workspace"


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
