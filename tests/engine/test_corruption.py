"""Damaged database files (security/robustness): real SQLite files with real damage.

* memory.sqlite is derived: it is moved aside and rebuilt from the Markdown on open or use.
* agent.sqlite is durable: never rebuilt automatically; a turn that hits damage says exactly
  what it had committed; `clawkeep doctor --repair` salvages it into a new file.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from clawkeep.errors import CorruptDatabaseError, StorageError
from clawkeep.memory import rebuild
from clawkeep.storage.sqlite.salvage import read_header, scan_leaf_rows
from tests.helpers.engine import open_engine

PAGE = 4096
DAY1, DAY3 = "2026-05-08T10:00:00Z", "2026-05-10T10:00:00Z"  # a daily reset falls between them


def agent_db(home: Path) -> Path:
    return home / "agents" / "main" / "agent.sqlite"


def memory_db(home: Path) -> Path:
    return home / "agents" / "main" / "memory.sqlite"


def damage(path: Path, pages: list[int], *, fill: bytes | None = b"\x5a", seed: int = 7) -> None:
    """Overwrite whole pages (1-based) in place: constant bytes, or random ones when fill is None."""
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    for page in pages:
        chunk = fill * PAGE if fill is not None else bytes(rng.getrandbits(8) for _ in range(PAGE))
        data[(page - 1) * PAGE:page * PAGE] = chunk
    path.write_bytes(bytes(data))


def garbage_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:1024] = b"\xab" * 1024
    path.write_bytes(bytes(data))


def message_pages(path: Path) -> dict[int, set[str]]:
    """Table-leaf page -> the message entry ids stored on it (read from the raw file)."""
    pages: dict[int, set[str]] = {}
    for page, _rowid, values in scan_leaf_rows(path.read_bytes(), PAGE):
        if len(values) >= 9 and values[0] is None and values[4] == "message":
            pages.setdefault(page, set()).add(values[1])
    return pages


def root_page(path: Path, name: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (name,)).fetchone()[0]


def fill_transcript(home: Path, count: int) -> list[str]:
    """`count` user messages with one unique search token each; returns their entry ids."""
    ids = []
    with open_engine(home) as eng:
        for i in range(count):
            result = eng.message(f"note {i}: the parcel tok{i}x goes to Berlin " + "and so on " * (i % 7),
                                 at=DAY1)
            ids.append(result.message_id)
    for suffix in ("-wal", "-shm"):
        assert not Path(f"{agent_db(home)}{suffix}").exists()  # closed cleanly: everything is in the file
    return ids


def write_memory(home: Path, notes: int = 40) -> None:
    folder = home / "workspace" / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for day in range(notes):
        (folder / f"2025-{1 + day // 28:02d}-{1 + day % 28:02d}.md").write_text(
            f"# note {day}\n\n- errand {day}: pick up the kayak{day} paddle from the shed\n"
            + "".join(f"- filler line {n} about gardening and tomatoes {day}\n" for n in range(20)))
    (folder / "2026-05-01.md").write_text("# 2026-05-01\n\n- The storage unit code is 4471\n")
    with open_engine(home) as eng:
        assert eng.memory_index()["chunks"] > notes


def check_consistent(path: Path) -> tuple[int, int]:
    """integrity ok, FTS consistent, one index row per user/assistant message; (messages, sessions)."""
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
        messages = conn.execute("SELECT count(*) FROM entries WHERE type = 'message'").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM entries_fts").fetchone()[0] == messages
        assert (conn.execute("SELECT sum(message_count) FROM sessions").fetchone()[0] or 0) == messages
        return messages, conn.execute("SELECT count(*) FROM sessions").fetchone()[0]


# --- 1. the memory index rebuilds itself ------------------------------------------------------
def _garbage(path: Path) -> None:
    garbage_header(path)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _random_middle(path: Path) -> None:
    pages = len(path.read_bytes()) // PAGE
    damage(path, list(range(2, pages)), fill=None)


MEMORY_DAMAGE = {"garbage-header": _garbage, "truncated": _truncated, "random-middle": _random_middle}


@pytest.mark.parametrize("how", list(MEMORY_DAMAGE))
def test_corrupt_memory_index_is_rebuilt_by_index_force_search_and_status(home, cli, how):
    write_memory(home)
    MEMORY_DAMAGE[how](memory_db(home))
    result = cli("memory", "index", "--force", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["rebuilt"] and report["chunks"] > 40
    moved = Path(report["corrupt"]["movedTo"])
    assert moved.exists() and moved.name.startswith("memory.sqlite.corrupt-")
    assert "corrupt" in report["corrupt"]["reason"]
    hit = cli("memory", "search", "kayak17 paddle", "--json")
    assert hit.code == 0 and hit.json()["results"][0]["path"] == "memory/2025-01-18.md"
    status = cli("memory", "status", "--json").json()
    assert status["index"]["lastCorruptRebuild"]["movedTo"] == str(moved)
    assert status["index"]["chunks"] == report["chunks"]


@pytest.mark.parametrize("how", list(MEMORY_DAMAGE))
def test_search_status_and_a_turn_rebuild_the_index_on_first_use(home, cli, how):
    write_memory(home)
    MEMORY_DAMAGE[how](memory_db(home))
    # Active Memory's lane two runs memory_search over the index (lane one reads MEMORY.md only)
    turn = cli("message", "what did I say about the storage unit code?", "--json")
    assert turn.code == 0, turn.stderr
    recalled = turn.json()["activeMemory"]
    assert recalled["status"] == "ok" and "4471" in recalled["summary"], recalled
    assert list(memory_db(home).parent.glob("memory.sqlite.corrupt-*"))
    MEMORY_DAMAGE[how](memory_db(home))
    status = cli("memory", "status", "--json")
    assert status.code == 0, status.stderr
    assert status.json()["index"]["chunks"] > 40 and status.json()["index"]["lastCorruptRebuild"]
    MEMORY_DAMAGE[how](memory_db(home))
    search = cli("memory", "search", "kayak3 paddle", "--json")
    assert search.code == 0 and search.json()["results"], search.stderr


def test_corrupt_copies_kept_are_bounded(home):
    write_memory(home, notes=3)
    for _ in range(rebuild.KEEP_CORRUPT + 2):
        garbage_header(memory_db(home))
        with open_engine(home) as eng:
            assert eng.memory_search("kayak1 paddle")["results"]
    kept = [p for p in memory_db(home).parent.glob("memory.sqlite.corrupt-*") if not p.name.endswith(("wal", "shm"))]
    assert len(kept) == rebuild.KEEP_CORRUPT


def test_unmovable_corrupt_index_is_a_clear_storage_error(home, monkeypatch):
    write_memory(home, notes=3)
    garbage_header(memory_db(home))

    def refuse(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied", str(memory_db(home)))

    monkeypatch.setattr(rebuild, "move_aside", refuse)
    with open_engine(home) as eng, pytest.raises(StorageError, match="cannot be moved aside") as caught:
        eng.memory_search("kayak1")
    assert memory_db(home).parent.name in str(caught.value)


def test_index_still_corrupt_after_moving_aside_does_not_loop(home, monkeypatch):
    write_memory(home, notes=3)
    garbage_header(memory_db(home))
    monkeypatch.setattr(rebuild, "move_aside", lambda path, *a, **k: path)  # "moved", but the bad file stays
    with open_engine(home) as eng, pytest.raises(StorageError, match="still unreadable"):
        eng.memory_index()


def test_read_only_agent_directory_is_a_clear_error(home, monkeypatch):
    """The directory refuses the rename (as a read-only mount or directory would; root ignores
    permission bits, so the refusal is made at the rename itself)."""
    write_memory(home, notes=3)
    garbage_header(memory_db(home))

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(src))

    monkeypatch.setattr("clawkeep.storage.sqlite.connection.os.replace", refuse)
    with open_engine(home) as eng, pytest.raises(StorageError, match="cannot be moved aside") as caught:
        eng.memory_search("kayak1")
    assert "Permission denied" in str(caught.value) and memory_db(home).exists()


# --- 2. a turn on a damaged agent.sqlite --------------------------------------------------------
def test_damaged_write_path_fails_the_turn_before_anything_commits(home, cli):
    fill_transcript(home, 60)
    path = agent_db(home)
    damage(path, [root_page(path, "entries_fts_content")])
    result = cli("message", "hello again", "--at", DAY3)  # stale session: an automatic reset is due
    assert result.code == 1 and "Traceback" not in result.stderr
    text = " ".join(result.stderr.split())
    assert "nothing was changed" in text and "clawkeep doctor --repair" in text and str(path) in text
    with sqlite3.connect(path) as conn:  # the entries table itself is intact: no reset was written
        assert conn.execute("SELECT count(*) FROM entries WHERE type = 'reset'").fetchone()[0] == 0


def test_damage_found_after_a_commit_is_reported_exactly(home, cli):
    fill_transcript(home, 60)
    path = agent_db(home)
    pages = sorted(message_pages(path))
    damage(path, [pages[len(pages) // 2]])  # a leaf inside the interval the reset hook reads
    result = cli("message", "hello again", "--at", DAY3)
    assert result.code == 1 and "Traceback" not in result.stderr
    text = " ".join(result.stderr.split())
    with sqlite3.connect(path) as conn:  # only the new rows: a full scan would hit the damaged page
        resets = [r[0] for r in conn.execute("SELECT entry_id FROM entries WHERE seq > 61 AND type = 'reset'")]
    assert len(resets) == 1
    assert "nothing was changed" not in text
    assert f"already committed: reset boundary {resets[0]} (daily)" in text
    assert "clawkeep doctor" in text


def test_corrupt_error_names_what_committed_in_process(home):
    fill_transcript(home, 40)
    path = agent_db(home)
    pages = sorted(message_pages(path))
    damage(path, [pages[len(pages) // 2]])
    with open_engine(home) as eng, pytest.raises(CorruptDatabaseError) as caught:
        eng.message("hello again", at=DAY3)
    assert caught.value.path == str(path) and len(caught.value.committed) == 1
    assert caught.value.committed[0].startswith("reset boundary")


# --- 3. doctor --------------------------------------------------------------------------------
def test_doctor_on_healthy_databases(home, cli):
    fill_transcript(home, 5)
    write_memory(home, notes=2)
    result = cli("doctor", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["healthy"] and {(f["kind"], f["status"]) for f in report["files"]} == {("agent", "ok"),
                                                                                          ("memory", "ok")}
    assert cli("doctor").code == 0


def _lost(before: dict[int, set[str]], pages: list[int]) -> set[str]:
    return set().union(*(before.get(p, set()) for p in pages))


def _repair(cli, path: Path, damaged: bytes) -> dict:
    check = cli("doctor", "--json")
    assert check.code == 1
    entry = next(f for f in check.json()["files"] if f["kind"] == "agent")
    assert entry["status"] == "corrupt" and entry["problems"]
    assert path.read_bytes() == damaged  # checking never writes
    result = cli("doctor", "--repair", "--json")
    assert result.code == 0, result.stderr
    report = next(f for f in result.json()["files"] if f["kind"] == "agent")
    assert report["status"] == "repaired"
    repair = report["repair"]
    kept = Path(repair["corruptKeptAt"])
    assert kept.name.startswith("agent.sqlite.corrupt-") and kept.read_bytes() == damaged  # original kept as it was
    assert cli("doctor", "--json").json()["healthy"]
    return repair


def test_doctor_repair_salvages_readable_messages_around_damaged_pages(home, cli):
    total = 400
    ids = fill_transcript(home, total)
    path = agent_db(home)
    before = message_pages(path)
    leaves = sorted(before)
    pages = [leaves[len(leaves) * k // 10] for k in (3, 5, 7)]  # 3 transcript pages in the middle
    damage(path, pages)
    lost = _lost(before, pages)
    assert 0 < len(lost) < total
    repair = _repair(cli, path, path.read_bytes())
    assert repair["messages"] == {"recovered": total - len(lost), "expected": total}
    assert repair["header"]["headerReadable"] and repair["entries"]["unreadableSeqRanges"]
    assert check_consistent(path) == (total - len(lost), 1)
    survivor = next(i for i, entry_id in enumerate(ids) if entry_id not in lost)
    victim = next(i for i, entry_id in enumerate(ids) if entry_id in lost)
    hits = cli("sessions", "search", f"tok{survivor}x", "--json").json()["hits"]
    assert [h["messageId"] for h in hits] == [ids[survivor]]
    assert cli("sessions", "search", f"tok{victim}x", "--json").json()["hits"] == []
    history = cli("sessions", "history", "agent:main:main", "--json")
    assert history.code == 0 and history.json()["messages"]
    assert cli("message", "after the repair tok9999x", "--json").code == 0
    assert cli("sessions", "search", "tok9999x", "--json").json()["hits"]


def test_doctor_repair_after_random_bytes_in_the_middle_of_the_file(home, cli):
    total = 300
    fill_transcript(home, total)
    path = agent_db(home)
    before = message_pages(path)
    count = len(path.read_bytes()) // PAGE
    pages = [count * 2 // 5, count // 2, count * 3 // 5]
    damage(path, pages, fill=None)
    assert cli("doctor", "--json").code == 1  # seeded bytes: the damage is the same every run
    repair = _repair(cli, path, path.read_bytes())
    assert repair["messages"]["recovered"] == total - len(_lost(before, pages))
    messages, _ = check_consistent(path)
    assert messages == repair["messages"]["recovered"]


def test_doctor_repair_with_a_garbage_header_recovers_every_message(home, cli):
    total = 200
    ids = fill_transcript(home, total)
    path = agent_db(home)
    garbage_header(path)
    assert not read_header(path.read_bytes())["valid"]
    assert cli("sessions", "list").code == 1
    repair = _repair(cli, path, path.read_bytes())
    assert not repair["header"]["headerReadable"] and repair["method"] == "python"
    assert repair["messages"]["recovered"] == total and repair["sessions"]["recovered"] == 1
    assert check_consistent(path) == (total, 1)
    assert cli("sessions", "search", "tok123x", "--json").json()["hits"][0]["messageId"] == ids[123]
    assert cli("sessions", "history", "agent:main:main", "--json").json()["messages"]


def test_lost_session_row_is_rebuilt_from_its_entries(home, cli):
    fill_transcript(home, 50)
    with open_engine(home) as eng:
        eng.message("a family group hello tokTGx", channel="telegram", chat_type="group", group="family",
                    sender="alice", at=DAY1)
    path = agent_db(home)
    damage(path, [root_page(path, "sessions")])  # the (single-page) sessions table
    repair = _repair(cli, path, path.read_bytes())
    assert repair["sessions"]["rebuiltFromEntries"] == 2 and repair["messages"]["recovered"] == 51
    keys = {s["key"] for s in cli("sessions", "list", "--json").json()}
    assert keys == {"agent:main:main", "agent:main:telegram:group:family"}
    assert cli("sessions", "search", "tokTGx", "--json").json()["hits"]
    assert cli("sessions", "history", "agent:main:main", "--json").code == 0


def test_doctor_repairs_a_corrupt_memory_index(home, cli):
    write_memory(home, notes=10)
    _random_middle(memory_db(home))
    check = cli("doctor", "--json")
    assert check.code == 1
    memory = next(f for f in check.json()["files"] if f["kind"] == "memory")
    assert memory["status"] == "corrupt"
    result = cli("doctor", "--repair", "--json")
    assert result.code == 0, result.stderr
    memory = next(f for f in result.json()["files"] if f["kind"] == "memory")
    assert memory["status"] == "rebuilt" and memory["rebuild"]["chunks"] > 0
    assert Path(memory["rebuild"]["movedTo"]).exists()
    assert cli("memory", "search", "kayak3 paddle", "--json").json()["results"]


def test_repair_refuses_a_database_another_process_is_writing(home, cli):
    fill_transcript(home, 30)
    path = agent_db(home)
    pages = sorted(message_pages(path))
    damage(path, [pages[1]])
    damaged = path.read_bytes()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = cli("doctor", "--repair", "--json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.code == 1
    entry = next(f for f in result.json()["files"] if f["kind"] == "agent")
    assert entry["status"] == "repair-failed" and "in use" in entry["error"]
    assert path.read_bytes() == damaged and not list(path.parent.glob("agent.sqlite.corrupt-*"))


def test_repair_uses_the_sqlite3_shell_recover_when_it_works(home, tmp_path, monkeypatch):
    """Debian 12's sqlite3 cannot `.recover` (no sqlite_dbpage); a working shell is preferred.
    The fake shell prints what `.recover` prints: SQL re-creating the tables, with the rows it
    could not place in lost_and_found."""
    total = 40
    ids = fill_transcript(home, total)
    path = agent_db(home)
    with sqlite3.connect(path) as conn:
        sessions = conn.execute("SELECT * FROM sessions").fetchall()
        session_sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'sessions'").fetchone()[0]
        entries_sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'entries'").fetchone()[0]
        entries = conn.execute("SELECT * FROM entries ORDER BY seq").fetchall()
    placed, orphan = entries[:-1], entries[-1]

    def literal(value):
        return "NULL" if value is None else str(value) if isinstance(value, int) else \
            "'" + str(value).replace("'", "''") + "'"

    lines = ["BEGIN;", f"{session_sql};", f"{entries_sql};"]
    lines += [f"INSERT INTO sessions VALUES({', '.join(map(literal, row))});" for row in sessions]
    lines += [f"INSERT INTO entries VALUES({', '.join(map(literal, row))});" for row in placed]
    fields = ", ".join(f"c{i}" for i in range(len(orphan)))
    lines.append(f"CREATE TABLE lost_and_found(rootpgno INTEGER, pgno INTEGER, nfield INTEGER, id INTEGER, {fields});")
    lines.append(f"INSERT INTO lost_and_found VALUES(9, 99, {len(orphan)}, {orphan[0]}, NULL, "
                 f"{', '.join(map(literal, orphan[1:]))});")
    lines.append("COMMIT;")
    dump = tmp_path / "recover.sql"
    dump.write_text("\n".join(lines))
    shell_dir = tmp_path / "bin"
    shell_dir.mkdir()
    fake = shell_dir / "sqlite3"
    fake.write_text(f"#!/bin/sh\ncat '{dump}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shell_dir}:{__import__('os').environ['PATH']}")
    damage(path, [sorted(message_pages(path))[2]])
    with open_engine(home) as eng:
        report = eng.doctor(repair=True)
    assert report["healthy"], json.dumps(report, indent=2)
    repair = next(f for f in report["files"] if f["kind"] == "agent")["repair"]
    assert repair["method"] == "sqlite3 .recover"
    assert repair["messages"] == {"recovered": total, "expected": total}
    assert repair["entries"]["foundByPageScan"] == 1  # the lost_and_found row
    with open_engine(home) as eng:
        assert eng.sessions_search(f"tok{total - 1}x")["hits"][0]["messageId"] == ids[-1]


@pytest.mark.parametrize("how", ["pages", "header"])
def test_doctor_repair_keeps_the_tokens_so_the_gateway_stays_closed(home, cli, how):
    fill_transcript(home, 200)
    assert cli("tokens", "create", "ops", "--scope", "operator").code == 0
    assert cli("tokens", "create", "bot", "--scope", "agent:main", "--expires", "30d").code == 0
    assert cli("tokens", "create", "old", "--scope", "session:agent:main:main").code == 0
    assert cli("tokens", "revoke", "old").code == 0
    before = {t["name"]: t for t in cli("tokens", "list", "--json").json()}
    path = agent_db(home)
    if how == "header":
        garbage_header(path)
    else:
        damage(path, sorted(message_pages(path))[2:4])
    repair = _repair(cli, path, path.read_bytes())
    assert repair["credentials"]["recovered"] == 3
    after = {t["name"]: t for t in cli("tokens", "list", "--json").json()}
    assert after == before  # scopes, expiry and the revocation all survive the salvage
