"""SPEC D3: `clawkeep migrate` copies an embedded home into PostgreSQL and back, verified by
counts and checksums, resumable after an interruption."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from conftest import run_cli

from clawkeep import Engine
from clawkeep.errors import InputError
from clawkeep.migrate import migrate


@pytest.fixture
def pg(pgvector_url):
    prefix = "mg" + uuid.uuid4().hex[:10]
    yield pgvector_url, prefix
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                    (prefix + "%",)).fetchall():
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


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
