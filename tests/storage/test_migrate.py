"""SPEC D3: `clawkeep migrate` copies an embedded home into PostgreSQL and back, verified by
counts and checksums, resumable after an interruption."""

from __future__ import annotations

import dataclasses
import uuid

import psycopg
import pytest

from clawkeep import Engine
from clawkeep.errors import InputError, StorageError
from clawkeep.migrate import migrate
from tests.helpers.cli import run_cli
from tests.helpers.pg_servers import scratch_schemas


@pytest.fixture
def pg(pgvector_url):
    yield from scratch_schemas(pgvector_url, "mg")


def build_home(home):
    """A home with what migrate must carry: CJK text, client ids, a reset, a fork, a compaction,
    remembered facts, a session-memory excerpt, a second agent."""
    with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
        first = eng.message("下周二我去上海出差", sender="alice", channel="telegram", message_id="tg-1")
        eng.message("Noted, safe travels!", role="assistant", sender="alice", channel="telegram")
        eng.message("please book the kayak for Lofoten", sender="bob", channel="slack", chat_type="group",
                    group="trips")
        eng.message("/reset", sender="alice", channel="telegram")
        eng.message("after the reset we talk about INV-2024-0042", sender="alice", channel="telegram")
        for n in range(6):
            eng.message(f"a longer chat line number {n} about invoices and walruses", sender="alice",
                        channel="telegram")
        eng.message("/compact keep the invoices", sender="alice", channel="telegram")
        eng.sessions_fork(first.session_key)
        eng.memory_remember("Remember that I prefer TypeScript")
        eng.memory_remember("next Tuesday I fly to Shanghai")
        key = first.session_key
        history = [m.text for m in eng.sessions_history(key).messages]
    with Engine.open(home=home, agent="helper", config={"storage": {"url": None}}) as other:
        other.message("the helper agent remembers the blue door")
    return key, first.message_id, history


def engine_on(url, prefix, home):
    return Engine.open(home=home, config={"storage": {"url": url, "schema": prefix}})


def test_home_to_postgres_and_back_is_verified_and_equal(tmp_path, pg):
    url, prefix = pg
    home = tmp_path / "home"
    key, first_id, history = build_home(home)
    result = run_cli(tmp_path / "unused", "migrate", "--from", str(home), "--to", url, "--schema", prefix, "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert sorted(a["agent"] for a in data["agents"]) == ["helper", "main"]
    main = next(a for a in data["agents"] if a["agent"] == "main")
    assert main["verified"] and main["entries"] > 10 and main["documents"] >= 2
    with engine_on(url, prefix, tmp_path / "instance") as eng:
        assert [m.text for m in eng.sessions_history(key).messages] == history
        hits = eng.sessions_search("上海").to_json()["hits"]
        assert [h["messageId"] for h in hits] == [first_id]
        closed = eng.sessions_history(key, message_id=first_id).to_json()["messages"]
        assert [m["text"] for m in closed][:1] == ["下周二我去上海出差"]  # the interval before the reset
        assert "TypeScript" in eng.memory_search("which language do I prefer").to_json()["results"][0]["snippet"]
        assert {i.text for i in eng.memory_items()} >= {"I prefer TypeScript"}
    back = tmp_path / "back"
    result = run_cli(tmp_path / "unused", "migrate", "--from", url, "--schema", prefix, "--to", str(back), "--json")
    assert result.code == 0, result.stderr
    returned = {a["agent"]: a for a in result.json()["agents"]}
    assert returned["main"]["checksums"] == main["checksums"]
    with Engine.open(home=back, config={"storage": {"url": None}}) as eng:
        assert [m.text for m in eng.sessions_history(key).messages] == history
        assert (back / "workspace" / "MEMORY.md").read_text() == (tmp_path / "home" / "workspace" /
                                                                  "MEMORY.md").read_text()


def test_an_interrupted_copy_resumes_without_duplicates(tmp_path, pg):
    url, prefix = pg
    home = tmp_path / "home"
    build_home(home)
    calls = []

    def stop_after_two_batches(agent, phase, done, total):
        calls.append((agent, phase, done))
        if phase == "entries" and done >= 10:
            raise KeyboardInterrupt  # Ctrl-C mid-copy

    with pytest.raises(KeyboardInterrupt):
        migrate(str(home), url, schema=prefix, agents=["main"], progress=stop_after_two_batches, batch_size=5)
    again = migrate(str(home), url, schema=prefix, agents=["main"], batch_size=5)
    main = again["agents"][0]
    assert main["verified"]
    with engine_on(url, prefix, tmp_path / "i") as eng:
        store = eng.runtime.store()
        ids = [e.entry_id for e in store.scan_entries(limit=10_000)]
        assert len(ids) == len(set(ids)) == main["entries"]
    assert migrate(str(home), url, schema=prefix, agents=["main"])["agents"][0]["checksums"] == main["checksums"]


def test_bad_endpoints_are_refused(tmp_path, pg):
    url, prefix = pg
    with pytest.raises(InputError, match="one home directory and one postgresql"):
        migrate(str(tmp_path / "a"), str(tmp_path / "b"))
    with pytest.raises(InputError, match="no such home directory"):
        migrate(str(tmp_path / "missing"), url, schema=prefix)
    other = tmp_path / "other"
    with Engine.open(home=other, config={"storage": {"url": None}}) as eng:
        eng.message("a different history")
    home = tmp_path / "home"
    build_home(home)
    migrate(str(other), url, schema=prefix, agents=["main"])
    with pytest.raises(InputError, match="already holds entries"):
        migrate(str(home), url, schema=prefix, agents=["main"])
    result = run_cli(tmp_path, "migrate", "--from", str(tmp_path / "a"), "--to", str(tmp_path / "b"))
    assert result.code == 2 and "Traceback" not in result.stderr


def test_an_unusable_home_path_is_an_input_error_not_a_crash(tmp_path):
    """A name component longer than the file system allows made `exists()` raise OSError (exit 1
    with a traceback); it is a user mistake, so exit 2 naming the argument."""
    too_long = str(tmp_path / ("x" * 300))
    result = run_cli(tmp_path, "migrate", "--from", too_long, "--to", "postgresql://127.0.0.1:1/none")
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr and "--from" in result.stderr and "postgresql://" in result.stderr
    with pytest.raises(InputError, match="contains a NUL"):
        migrate("bad\x00home", "postgresql://127.0.0.1:1/none")


# --- a re-run after the source moved on (QA: it could never finish) ---------------------------
def _sqlite_docs(home):
    ws = home / "workspace"
    return {p.relative_to(ws).as_posix(): p.read_text() for p in ws.rglob("*.md")
            if p.relative_to(ws).as_posix() == "MEMORY.md" or p.relative_to(ws).parts[0] == "memory"}


def _pg_docs(url, prefix, home):
    with engine_on(url, prefix, home) as eng:
        return {d.path: d.text for d in eng.runtime.store().doc_changes(0) if not d.deleted}


def _write_note(url, prefix, home, rel, text=None):
    """Write (or, text None, delete) a memory document at the source, as its own instance would."""
    if url is None:
        path = home / "workspace" / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return
    with engine_on(url, prefix, home) as eng:
        store = eng.runtime.store()
        current = store.doc_get(rel)
        if text is None:
            store.doc_delete(rel, current.version, "test")
        else:
            store.doc_put(rel, text, None if current is None or current.deleted else current.version, "test")


@pytest.mark.parametrize("direction", ["home-to-postgres", "postgres-to-home"])
def test_a_rerun_after_the_source_changed_catches_up_and_verifies(tmp_path, pg, direction):
    url, prefix = pg
    home = tmp_path / "home"
    src_url = None if direction == "home-to-postgres" else url
    config = {"storage": {"url": src_url, "schema": prefix}}
    with Engine.open(home=home, config=config) as eng:
        key = eng.message("first", sender="alice").session_key
        eng.message("second", sender="alice")
    _write_note(src_url, prefix, home, "memory/keep.md", "- kept note\n")
    _write_note(src_url, prefix, home, "memory/gone.md", "- a note deleted later\n")
    src, dst = (str(home), url) if src_url is None else (url, str(tmp_path / "back"))
    first = migrate(src, dst, schema=prefix, agents=["main"])["agents"][0]
    assert first["verified"] and first["entries"] >= 2

    with Engine.open(home=home, config=config) as eng:  # the source moves on
        eng.message("third", sender="alice")
        eng.sessions_reset(key)
        eng.message("fourth, after the reset", sender="alice")
        # a rotation (as compaction does): the row the target holds as the key's current one is
        # archived and a successor takes the key, so the target must archive before it inserts
        store = eng.runtime.store()
        old = store.get_session_by_key(key)
        successor = dataclasses.replace(old, session_id="rotated-" + uuid.uuid4().hex[:8], version=0)
        with store.transaction():
            old.archived_at = old.updated_at + 1
            store.update_session(old)
            store.insert_session(successor)
    _write_note(src_url, prefix, home, "memory/gone.md", None)
    _write_note(src_url, prefix, home, "memory/keep.md", "- kept note, edited\n")
    _write_note(src_url, prefix, home, "memory/new.md", "- a new note\n")

    again = migrate(src, dst, schema=prefix, agents=["main"])["agents"][0]
    assert again["verified"] and again["entries"] > first["entries"] and again["sessions"] == first["sessions"] + 1
    assert migrate(src, dst, schema=prefix, agents=["main"])["agents"][0]["checksums"] == again["checksums"]
    target_docs = _pg_docs(url, prefix, tmp_path / "i") if src_url is None else _sqlite_docs(tmp_path / "back")
    assert "memory/gone.md" not in target_docs
    assert target_docs["memory/keep.md"] == "- kept note, edited\n" and target_docs["memory/new.md"] == "- a new note\n"
    target = {"storage": {"url": url, "schema": prefix}} if src_url is None else {"storage": {"url": None}}
    with Engine.open(home=tmp_path / "i" if src_url is None else tmp_path / "back", config=target) as eng:
        assert eng.runtime.store().get_session_by_key(key).session_id == successor.session_id


@pytest.mark.parametrize("direction", ["home-to-postgres", "postgres-to-home"])
def test_a_document_the_migration_did_not_write_is_never_overwritten_or_deleted(tmp_path, pg, direction):
    url, prefix = pg
    home = tmp_path / "home"
    src_url = None if direction == "home-to-postgres" else url
    with Engine.open(home=home, config={"storage": {"url": src_url, "schema": prefix}}) as eng:
        eng.message("first", sender="alice")
    _write_note(src_url, prefix, home, "memory/a.md", "- from the source\n")
    src, dst = (str(home), url) if src_url is None else (url, str(tmp_path / "back"))
    assert migrate(src, dst, schema=prefix, agents=["main"])["agents"][0]["verified"]
    # someone works on the target: their writes are other data, not the migration's
    dst_url, dst_home = (url, tmp_path / "i") if src_url is None else (None, tmp_path / "back")
    _write_note(dst_url, prefix, dst_home, "memory/a.md", "- edited at the target\n")
    _write_note(dst_url, prefix, dst_home, "memory/mine.md", "- only at the target\n")
    with pytest.raises(InputError, match=r"memory/(a|mine)\.md") as refused:
        migrate(src, dst, schema=prefix, agents=["main"])
    assert "already holds" in str(refused.value)
    docs = _pg_docs(url, prefix, dst_home) if src_url is None else _sqlite_docs(dst_home)
    assert docs["memory/a.md"] == "- edited at the target\n" and docs["memory/mine.md"] == "- only at the target\n"


def test_a_note_with_a_nul_byte_is_refused_by_name_before_anything_is_written(tmp_path, pg):
    """PostgreSQL text cannot hold NUL: storing it as U+FFFD made the checksums differ forever."""
    url, prefix = pg
    home = tmp_path / "home"
    with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
        eng.message("first", sender="alice")
    _write_note(None, prefix, home, "memory/binary.md", "- before\x00after\n")
    with pytest.raises(InputError, match=r"memory/binary\.md.*NUL") as refused:
        migrate(str(home), url, schema=prefix, agents=["main"])
    assert "differs after the copy" not in str(refused.value)
    with psycopg.connect(url) as conn:  # refused before the target was written
        rows = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)).fetchone()
    assert rows[0] == 0 or not _pg_docs(url, prefix, tmp_path / "i")
    _write_note(None, prefix, home, "memory/binary.md", "- before after\n")  # fixed: now it goes through
    assert migrate(str(home), url, schema=prefix, agents=["main"])["agents"][0]["verified"]


def test_run_it_again_is_advised_only_when_it_can_succeed(tmp_path, pg):
    url, prefix = pg
    home = tmp_path / "home"
    with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
        eng.message("first", sender="alice")
    n = iter(range(1000))

    def busy_source(agent, phase, done, total):  # a source in use: every pass finds new messages
        if phase == "verify" and done == 0:
            with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
                eng.message(f"written during the copy {next(n)}", sender="alice")

    with pytest.raises(StorageError, match="kept changing.*run the command again when the source is not in use"):
        migrate(str(home), url, schema=prefix, agents=["main"], progress=busy_source)
    assert migrate(str(home), url, schema=prefix, agents=["main"])["agents"][0]["verified"]  # quiet: it catches up


def test_a_session_the_source_no_longer_has_is_refused_not_a_failed_verify(tmp_path, pg):
    """Maintenance at the source pruned a session after a copy: the target cannot tell it from other
    data, so it is kept and the run refused by name (it used to end in 'run it again', forever)."""
    url, prefix = pg
    home = tmp_path / "home"
    with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
        pruned = eng.message("in a group", sender="bob", channel="slack", chat_type="group", group="g").session_id
        eng.message("first", sender="alice")
    assert migrate(str(home), url, schema=prefix, agents=["main"])["agents"][0]["verified"]
    with Engine.open(home=home, config={"storage": {"url": None}}) as eng:
        eng.runtime.store().delete_session(pruned)
    with pytest.raises(InputError, match=f"already holds sessions.*{pruned}") as refused:
        migrate(str(home), url, schema=prefix, agents=["main"])
    assert "run the command again" not in str(refused.value)
    with engine_on(url, prefix, tmp_path / "i") as eng:
        assert eng.runtime.store().get_session(pruned) is not None  # left untouched
