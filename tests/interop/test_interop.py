"""Import from OpenClaw and export / re-import (SPEC G4), on real SQLite files and real files.

Fixtures (tests/data/openclaw/): `sqlite-home` is a real OpenClaw 2026.9.6 state directory
(its per-agent database, produced by OpenClaw's gateway talking to a scripted model: tool
calls and results, two resets, a compaction; sanitised, unrelated tables dropped);
`legacy-home` is built by build_legacy.py from those real events in the legacy layout
(sessions.json, rotations, topic file, zstd archive) plus a few hand-written documented events.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import zstandard

from clawkeep import Engine
from clawkeep.config import load_config
from clawkeep.errors import InputError
from tests.helpers.cli import run_cli

DATA = Path(__file__).parents[1] / "data" / "openclaw"
SQLITE_HOME = DATA / "sqlite-home"
LEGACY_HOME = DATA / "legacy-home"
LEGACY_REAL = DATA / "legacy-2026.7.1"  # written by OpenClaw 2026.7.1, the last release before SQLite
MAIN_ID = "68fbf2df-eb9b-485e-af6d-a0574c7ceded"
PROJECT_ID = "764e5532-1a22-4cde-ac9d-c040e4616e36"


def _copy(source: Path, tmp_path: Path, name: str = "openclaw") -> Path:
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


def _entries(engine: Engine, session_id: str) -> list:
    store = engine.runtime.store("main")
    return list(store.iter_entries(session_id))


def _export_digest(engine: Engine, out: Path) -> dict[str, str]:
    engine.export_all(out)
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*.jsonl"))}


# --- the real SQLite database -----------------------------------------------------------------
def test_import_real_sqlite_database(tmp_path: Path, home: Path) -> None:
    source = _copy(SQLITE_HOME, tmp_path)
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source)
        assert report["errors"] == []
        assert report["sessions"] == {"imported": 2, "updated": 0, "unchanged": 0, "failed": 0}
        assert report["entries"]["reset"] == 2 and report["entries"]["compaction"] == 1
        # extension state that never reached the model is reported, with an example and where
        custom = report["unmapped"]["custom:openclaw.cache-ttl (extension state, never in the model's context)"]
        assert custom["count"] > 0 and "openclaw-agent.sqlite session" in custom["where"]
        entries = _entries(engine, MAIN_ID)
        assert entries[0].type == "session" and entries[0].meta["key"] == "agent:main:main"
        by_type = {e.type for e in entries}
        assert {"session", "message", "reset", "compaction", "model_change"} <= by_type
        # tool call and its result, with OpenClaw's ids
        call = next(e for e in entries if e.role == "assistant" and any(b["type"] == "toolCall" for b in e.content))
        block = next(b for b in call.content if b["type"] == "toolCall")
        result = next(e for e in entries if e.role == "tool" and e.content[0]["toolCallId"] == block["id"])
        assert block["name"] == "read" and "INV-4471" in result.content[0]["content"]
        assert call.meta["model"] == "scripted/m1" and call.meta["usage"]["inputTokens"] == 100
        # the compaction keeps pointing at the entry it kept (OpenClaw's firstKeptEntryId)
        compaction = next(e for e in entries if e.type == "compaction")
        kept = engine.runtime.store("main").get_entry(compaction.meta["firstKeptEntryId"])
        assert kept is not None and kept.seq == compaction.meta["firstKeptSeq"] and kept.seq < compaction.seq
        assert "INV-4471" in compaction.meta["summary"]
        # the current interval starts after the last reset; an older message re-opens its interval
        history = engine.sessions_history("agent:main:main").to_json()
        texts = [m["text"] for m in history["messages"]]
        assert any("Post-reset message" in t for t in texts) and not any("Fresh start" in t for t in texts)
        old = next(e for e in entries if e.role == "user" and "Fresh start" in e.content[0]["text"])
        closed = engine.sessions_history("agent:main:main", message_id=old.client_id).to_json()
        assert any("Fresh start" in m["text"] for m in closed["messages"])
        assert engine.sessions_search("上海")["hits"][0]["sessionKey"] == "agent:main:main"
        status = engine.session_status("agent:main:main").to_json()
        assert status["resetCount"] == 2 and status["compactionCount"] == 1
        # memory files and the config
        assert "TypeScript" in (home / "workspace" / "MEMORY.md").read_text(encoding="utf-8")
        assert report["config"]["written"] == str(home / "clawkeep.json5")
    config = load_config(home / "clawkeep.json5")
    assert config.warnings == [] and config.agents.defaults.compaction.keep_recent_tokens == 2000
    assert config.session.reset.mode == "none"


def test_reimport_changes_nothing(tmp_path: Path, home: Path) -> None:
    source = _copy(SQLITE_HOME, tmp_path)
    with Engine.open(home=home) as engine:
        first = engine.import_openclaw(source)
        before = _export_digest(engine, tmp_path / "before")
        db = home / "agents" / "main" / "agent.sqlite"
        conn = sqlite3.connect(db)
        rows_before = conn.execute("SELECT count(*), max(seq) FROM entries").fetchone()
        versions_before = conn.execute("SELECT session_id, version FROM sessions ORDER BY 1").fetchall()
        conn.close()
        second = engine.import_openclaw(source)
        after = _export_digest(engine, tmp_path / "after")
    assert second["sessions"] == {"imported": 0, "updated": 0, "unchanged": 2, "failed": 0}
    assert second["entries"] == {} and second["alreadyImportedEntries"] == sum(first["entries"].values())
    assert before == after
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*), max(seq) FROM entries").fetchone() == rows_before
    assert conn.execute("SELECT session_id, version FROM sessions ORDER BY 1").fetchall() == versions_before
    assert [m["action"] for m in second["memory"]] == ["unchanged", "unchanged"]
    assert second["config"]["action"].startswith("unchanged")


def test_dry_run_writes_nothing(tmp_path: Path, home: Path) -> None:
    source = _copy(SQLITE_HOME, tmp_path)
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source, dry_run=True)
    assert report["dryRun"] and report["sessions"]["imported"] == 2 and report["entries"]["message"] > 10
    assert sorted(p.name for p in home.rglob("*")) == []


def test_archived_transcripts_in_the_database_are_reported(tmp_path: Path, home: Path) -> None:
    source = _copy(SQLITE_HOME, tmp_path)
    conn = sqlite3.connect(source / "agents/main/agent/openclaw-agent.sqlite")
    # the fixture dropped this (empty) table; its columns as OpenClaw 2026.9.6 declares them, in short
    conn.execute("CREATE TABLE session_transcript_cold_archives (session_id TEXT NOT NULL PRIMARY KEY, "
                 "generation TEXT NOT NULL, archive_name TEXT NOT NULL UNIQUE, archive_sha256 TEXT NOT NULL, "
                 "event_count INTEGER NOT NULL, storage TEXT NOT NULL, archive_blob BLOB)")
    conn.execute("INSERT INTO session_transcript_cold_archives VALUES (?, 'g', 'cold-1.jsonl.zst', ?, 3, 'file', "
                 "NULL)", (PROJECT_ID, "0" * 64))
    conn.commit()
    conn.close()
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source, config="skip")
    archived = [v for k, v in report["unmapped"].items() if k.startswith("transcript archived inside the database")]
    assert archived and archived[0]["count"] == 1 and "cold-1.jsonl.zst" in archived[0]["example"]


def test_compressed_event_in_the_database_is_read(tmp_path: Path, home: Path) -> None:
    """Schema 23 keeps events over 1 KiB as zstd frames (`event_zstd`): this copy has one."""
    source = _copy(SQLITE_HOME, tmp_path)
    conn = sqlite3.connect(source / "agents/main/agent/openclaw-agent.sqlite")
    conn.execute("PRAGMA ignore_check_constraints = 1")
    seq, text = conn.execute("SELECT seq, event_json FROM transcript_events WHERE session_id = ? AND event_json "
                             "LIKE '%\"type\":\"compaction\"%'", (MAIN_ID,)).fetchone()
    packed = zstandard.ZstdCompressor(level=1).compress(text.encode("utf-8"))
    conn.execute("UPDATE transcript_events SET event_json = NULL, event_zstd = ?, event_utf8_bytes = ?, "
                 "navigation_json = '{}' WHERE session_id = ? AND seq = ?", (packed, len(text.encode()), MAIN_ID, seq))
    conn.commit()
    conn.close()
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source, config="skip")
        assert report["entries"]["compaction"] == 1
        compaction = next(e for e in _entries(engine, MAIN_ID) if e.type == "compaction")
        assert "INV-4471" in compaction.meta["summary"]


# --- the legacy layout ----------------------------------------------------------------------
def test_import_legacy_layout(tmp_path: Path, home: Path) -> None:
    source = _copy(LEGACY_HOME, tmp_path)
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source)
        assert report["errors"] == [] and report["sessions"]["imported"] == 4
        keys = {s.key for s in engine.sessions_list()}
        assert keys == {"agent:main:main", "agent:main:telegram:group:-100123:thread:42",
                        "agent:main:cron:nightly-report",
                        "agent:main:openclaw-orphan:0d9e2c1a-5b4f-4e3d-9c2b-1a0f9e8d7c6b"}
        renamed = report["renamedKeys"]
        assert any("topic" in why for why in renamed) and any("cron" in why for why in renamed)
        # two reset rotations (one zstd-compressed) + the current file: one session, two boundaries
        main = _entries(engine, MAIN_ID)
        assert [e.type for e in main].count("reset") == 2 and [e.type for e in main].count("session") == 1
        assert any(e.role == "user" and "Fresh start" in e.content[0]["text"] for e in main)  # from the .zst
        history = engine.sessions_history("agent:main:main").to_json()
        assert any("Post-reset" in m["text"] for m in history["messages"])
        assert not any("Fresh start" in m["text"] for m in history["messages"])
        # the topic file: abandoned branch reported, branch summary and custom message kept
        topic = _entries(engine, PROJECT_ID)
        texts = [b.get("text", "") for e in topic if e.type == "message" for b in e.content]
        assert "abandoned question" not in texts and "abandoned answer" not in texts
        assert report["unmapped"]["event off the active branch (left behind by a rewind or branch)"]["count"] == 2
        events = [e for e in topic if e.type == "system_event"]
        assert {e.meta["openclaw"]["type"] for e in events} == {"branch_summary", "custom_message"}
        unknown = report["unmapped"]["unknown entry type future_thing"]
        assert unknown["count"] == 1 and unknown["where"].endswith("-topic-42.jsonl:16")
        deleted = [k for k in report["unmapped"] if k.startswith("deleted archive")]
        assert len(deleted) == 1
        session = engine.session_status(PROJECT_ID)
        # the session's own model choice is listed, not applied, without --accept-models
        assert "modelOverride" not in session and session.label == "project x"
        overrides = report["models"]["sessionOverrides"]
        assert {"session": session.key, "model": "scripted/m1", "applied": False} in overrides
        assert report["models"]["applied"] is False and "--accept-models" in report["models"]["applyCommand"]
        assert engine.sessions_search("杭州")["hits"][0]["sessionKey"].startswith("agent:main:openclaw-orphan:")
    config = load_config(home / "clawkeep.json5")
    assert config.warnings == []
    assert config.session.reset.mode == "idle" and config.session.reset.idle_minutes == 120
    assert config.session.reset_by_type["direct"].idle_minutes == 60
    assert config.plugins.entries.active_memory.config.circuit_breaker.max_timeouts == 5
    assert config.agents.defaults.memory_search.query.max_results == 8
    assert config.tools.sessions.visibility == "agent"
    unmapped = {item["key"]: item["reason"] for item in report["config"]["unmapped"]}
    assert "channels" in unmapped and "gateway" in unmapped and "agents.defaults.workspace" in unmapped
    assert config.gateway.port != 18789  # OpenClaw's gateway port is not carried over
    assert "clawkeep refuses the value" in unmapped["session.maintenance.maxEntries"]  # 0: at least 1 is allowed
    assert config.plugins.entries.memory_core.config.dreaming.enabled  # Dreaming maps as it is


def test_import_real_legacy_files(tmp_path: Path, home: Path) -> None:
    """sessions.json + <sessionId>.jsonl exactly as OpenClaw 2026.7.1 wrote them (absolute
    sessionFile paths of another machine, trajectory traces beside the transcripts)."""
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(_copy(LEGACY_REAL, tmp_path), config="skip")
        assert report["errors"] == [] and report["sessions"]["imported"] == 2
        assert {s.key for s in engine.sessions_list()} == {"agent:main:main", "agent:main:explicit:legacy-x"}
        trajectories = [k for k in report["unmapped"] if k.startswith("trajectory file")]
        assert len(trajectories) == 1 and report["unmapped"][trajectories[0]]["count"] == 2
        store = engine.runtime.store("main")
        main = store.get_session_by_key("agent:main:main")
        entries = list(store.iter_entries(main.session_id))
        call = next(b for e in entries if e.role == "assistant" for b in e.content if b["type"] == "toolCall")
        result = next(e for e in entries if e.role == "tool")
        assert call["name"] == "read" and result.content[0]["toolCallId"] == call["id"]
        assert "INV-4471" in result.content[0]["content"]
        assert main.message_count == 6 and main.meta["openclaw"]["source"] == "legacy"  # 2 turns, one with a tool
        assert engine.sessions_search("上海")["hits"][0]["sessionKey"] == "agent:main:explicit:legacy-x"


def test_memory_files_merge_without_overwriting(tmp_path: Path, home: Path) -> None:
    source = _copy(LEGACY_HOME, tmp_path)
    workspace = home / "workspace"
    (workspace / "memory").mkdir(parents=True)
    ours = "# My notes\n\n- User prefers TypeScript for new projects.\n- Lives in Berlin.\n"
    (workspace / "MEMORY.md").write_text(ours, encoding="utf-8")
    (workspace / "memory" / "2026-11-29.md").write_text("# 2026-11-29\n\n- 去杭州看房\n", encoding="utf-8")
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source, config="skip")
        actions = {m["file"]: m["action"] for m in report["memory"]}
        assert actions == {"MEMORY.md": "appended", "memory/2026-11-29.md": "unchanged"}
        merged = (workspace / "MEMORY.md").read_text(encoding="utf-8")
        assert merged.startswith(ours)  # ours first, untouched
        assert "## Imported from OpenClaw (MEMORY.md)" in merged and "Project X demo on 2026-12-10" in merged
        assert merged.count("User prefers TypeScript") == 1  # a line we had is not repeated
        again = engine.import_openclaw(source, config="skip")
        assert {m["action"] for m in again["memory"]} == {"unchanged"}
        assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == merged


def test_existing_config_is_kept_unless_forced(tmp_path: Path, home: Path) -> None:
    source = _copy(LEGACY_HOME, tmp_path)
    mine = '{ session: { dmScope: "per-peer" } }\n'
    (home / "clawkeep.json5").write_text(mine, encoding="utf-8")
    with Engine.open(home=home) as engine:
        kept = engine.import_openclaw(source)
        assert (home / "clawkeep.json5").read_text(encoding="utf-8") == mine
        beside = Path(kept["config"]["written"])
        assert beside.name == "clawkeep.openclaw-import.json5" and "per-channel-peer" in beside.read_text()
        forced = engine.import_openclaw(source, config="force")
    assert load_config(home / "clawkeep.json5").session.dm_scope == "per-channel-peer"
    assert Path(forced["config"]["backup"]).read_text(encoding="utf-8") == mine


# --- export and the round trip ----------------------------------------------------------------
def test_round_trip_is_lossless(tmp_path: Path, home: Path) -> None:
    """OpenClaw import + native clawkeep sessions (reset, compaction, fork) → export → import
    into a fresh home → export again: byte-identical files, and the same views."""
    small = {"agents": {"defaults": {"compaction": {"keepRecentTokens": 60}}}}
    with Engine.open(home=home, config=small) as engine:
        engine.import_openclaw(_copy(LEGACY_HOME, tmp_path), config="skip")
        for n in range(30):
            engine.message(f"native message {n} about invoice INV-{1000 + n}", sender="bob", channel="slack",
                           message_id=f"m{n}")
            engine.message(f"reply {n}", role="assistant", sender="bob", channel="slack")
        key = "agent:main:main"
        engine.message("/compact", sender="owner")
        engine.sessions_reset("agent:main:main")
        engine.message("after the native reset", sender="owner")
        fork = engine.sessions_fork("agent:main:main").to_json()
        store = engine.runtime.store("main")
        native = [e for e in store.iter_entries(MAIN_ID, types=("compaction",)) if e.meta["summarizer"] != "openclaw"]
        assert native and native[0].meta["firstKeptSeq"] < 2**62
        assert store.get_session(fork["sessionId"]).meta["forkedFromSeq"] > 0
        first = _export_digest(engine, tmp_path / "one")
        view = engine.sessions_history(key).to_json()
    fresh = tmp_path / "fresh"
    with Engine.open(home=fresh, config=small) as engine:
        report = engine.import_jsonl([tmp_path / "one"])
        assert report["errors"] == [] and report["sessions"]["imported"] == len(first)
        assert engine.import_jsonl([tmp_path / "one"])["sessions"]["unchanged"] == len(first)
        second = _export_digest(engine, tmp_path / "two")
        assert engine.sessions_history(key).to_json() == view
        assert engine.sessions_search("INV-1007")["hits"]
    assert first == second and len(first) == 5


def test_export_one_session_cli(tmp_path: Path, home: Path) -> None:
    with Engine.open(home=home) as engine:
        engine.import_openclaw(_copy(SQLITE_HOME, tmp_path), config="skip")
    out = tmp_path / "main.jsonl"
    done = run_cli(home, "export", "agent:main:main", "--format", "jsonl", "--out", str(out), "--json")
    assert done.code == 0, done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["format"] == "clawkeep-transcript"
    assert json.loads(lines[-1])["end"]["entries"] == len(lines) - 2 == done.json()["entries"]
    stdout = run_cli(home, "export", MAIN_ID)
    assert stdout.code == 0 and stdout.stdout == out.read_text(encoding="utf-8")
    bad = run_cli(home, "export", "agent:main:main", "--format", "csv")
    assert bad.code == 2 and "jsonl" in bad.stderr


def test_export_to_an_unwritable_path_is_an_input_error(tmp_path: Path, home: Path) -> None:
    """Found by the fuzz suite: a file name over the system's limit raised OSError (exit 1, a
    traceback). Every path the system refuses names --out and what was wrong, and leaves nothing."""
    with Engine.open(home=home) as engine:
        engine.import_openclaw(_copy(SQLITE_HOME, tmp_path), config="skip")
    for target, reason in ((tmp_path / ("n" * 300) / "x.jsonl", "File name too long"),
                           (tmp_path / "missing" / "x.jsonl", "No such file or directory")):
        done = run_cli(home, "export", "agent:main:main", "--out", str(target))
        assert done.code == 2 and "Traceback" not in done.stderr
        assert "--out" in done.stderr and reason in done.stderr.replace("\n", " ")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert not list(tmp_path.glob(".*.tmp"))


def test_export_to_a_pipe_closed_early_is_not_an_input_error(home: Path) -> None:
    """QA: `clawkeep export KEY | head -1` printed "error: a file: Broken pipe" and exited 2, as if
    the user had named a bad path; a reader that stops early now ends the export silently."""
    with Engine.open(home=home) as engine:
        for n in range(300):  # ~300 KB of JSONL: more than a pipe's buffer
            engine.message(f"message {n} " + "x" * 1000)
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")}
    proc = subprocess.Popen([sys.executable, "-m", "clawkeep", "--home", str(home), "export", "agent:main:main"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline().startswith(b'{"format"')
    proc.stdout.close()  # the reader leaves, as `head -1` does
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1 and stderr == b"", stderr


# --- bad input ------------------------------------------------------------------------------
def test_truncated_line_fails_that_session_only(tmp_path: Path, home: Path) -> None:
    source = _copy(LEGACY_HOME, tmp_path)
    topic = source / "agents/main/sessions" / f"{PROJECT_ID}-topic-42.jsonl"
    data = topic.read_bytes()
    topic.write_bytes(data[: len(data) - 40])  # the last line is cut mid-write
    lines = data[: len(data) - 40].count(b"\n") + 1
    done = run_cli(home, "import", "openclaw", str(source), "--json")
    assert done.code == 2
    report = done.json()
    assert report["sessions"]["failed"] == 1 and report["sessions"]["imported"] == 3
    message = report["errors"][0]["message"]
    assert f"-topic-42.jsonl:{lines}" in message and "truncated" in message and "nothing of this session" in message
    assert f"-topic-42.jsonl:{lines}" in done.stderr
    with Engine.open(home=home) as engine:
        assert engine.runtime.store("main").get_session(PROJECT_ID) is None
        assert not [e for e in engine.runtime.store("main").iter_entries(PROJECT_ID)]
    topic.write_bytes(data)  # fixed: the next import picks up just that session
    with Engine.open(home=home) as engine:
        again = engine.import_openclaw(source, config="skip")
    assert again["sessions"] == {"imported": 1, "updated": 0, "unchanged": 3, "failed": 0}


def test_database_of_another_version_is_refused(tmp_path: Path, home: Path) -> None:
    source = _copy(SQLITE_HOME, tmp_path)
    db = source / "agents/main/agent/openclaw-agent.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 16")
    conn.execute("UPDATE schema_meta SET schema_version = 16, app_version = '2026.7.9'")
    conn.commit()
    conn.close()
    done = run_cli(home, "import", "openclaw", str(source))
    assert done.code == 2 and "Traceback" not in done.stderr
    assert str(db) in done.stderr and "schema version 16" in done.stderr and "2026.7.9" in done.stderr
    assert "doctor --fix" in done.stderr
    assert not (home / "agents").exists() and not (home / "workspace").exists()


def test_not_an_openclaw_home(tmp_path: Path, home: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    for path, expected in ((tmp_path / "empty", "is not an OpenClaw home"), (tmp_path / "file.txt", "not a directory"),
                           (tmp_path / "missing", "does not exist")):
        done = run_cli(home, "import", "openclaw", str(path))
        assert done.code == 2 and expected in done.stderr and str(path) in done.stderr
    with Engine.open(home=home) as engine, pytest.raises(InputError, match="no OpenClaw agent 'nobody'"):
        engine.import_openclaw(SQLITE_HOME, agent="nobody")


def test_bad_export_files(tmp_path: Path, home: Path) -> None:
    with Engine.open(home=home) as engine:
        engine.import_openclaw(_copy(SQLITE_HOME, tmp_path), config="skip")
        engine.export_all(tmp_path / "out")
    files = sorted((tmp_path / "out").rglob("*.jsonl"))
    cut, edited = files[0], files[1]
    text = cut.read_text(encoding="utf-8")
    cut.write_text(text[: text.rindex('{"end"')], encoding="utf-8")  # the end line is missing
    lines = edited.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace('"entry":{', '"entry": {', 1)  # same JSON, other bytes: still caught
    edited.write_text("".join(lines), encoding="utf-8")
    fresh = tmp_path / "fresh"
    with Engine.open(home=fresh) as engine:
        report = engine.import_jsonl([tmp_path / "out"])
        assert report["sessions"]["failed"] == 2 and report["sessions"]["imported"] == 0
        messages = " ".join(e["message"] for e in report["errors"])
        assert "no end line" in messages and "changed or cut" in messages
        assert engine.sessions_list() == []


def test_large_transcript_is_streamed(tmp_path: Path, home: Path) -> None:
    """A transcript far larger than what the import holds in memory at once (the 2 GB case,
    scaled down): Python's peak allocation stays a fraction of the file."""
    source = tmp_path / "big"
    sessions = source / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    sid = "f0000000-0000-4000-8000-000000000001"
    filler = "lorem ipsum dolor sit amet " * 800  # ~21 KB per tool result (not indexed: the test stays quick)
    with open(sessions / f"{sid}.jsonl", "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-01T00:00:00Z"})
                     + "\n")
        parent = None
        for n in range(1800):
            event_id = f"e{n:07d}"
            if n % 3 == 0:
                message = {"role": "user", "content": f"question {n}"}
            elif n % 3 == 1:
                message = {"role": "assistant", "content": [{"type": "toolCall", "id": f"c{n}", "name": "read",
                                                             "arguments": {"path": f"f{n}"}}]}
            else:
                message = {"role": "toolResult", "toolCallId": f"c{n - 1}", "toolName": "read",
                           "content": [{"type": "text", "text": f"{n} {filler}"}], "isError": False}
            handle.write(json.dumps({"type": "message", "id": event_id, "parentId": parent,
                                     "timestamp": "2026-11-01T00:00:01Z", "message": message}) + "\n")
            parent = event_id
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": sid}}))
    size = (sessions / f"{sid}.jsonl").stat().st_size
    assert size > 12 * 1024 * 1024
    with Engine.open(home=home) as engine:
        engine.import_openclaw(_copy(LEGACY_REAL, tmp_path, "warm-up"), config="skip")  # lazy imports and caches
        tracemalloc.start()
        report = engine.import_openclaw(source, config="skip")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert report["entries"]["message"] == 1800 and report["errors"] == []
        assert peak < size / 4, f"peak {peak} bytes for a {size}-byte transcript"
        with open(tmp_path / "big.jsonl", "w", encoding="utf-8") as out:
            tracemalloc.start()
            engine.export_session("agent:main:main", out)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert peak < size / 4, f"export peak {peak} bytes for {size}"


def test_cli_import_human_output(tmp_path: Path, home: Path) -> None:
    done = run_cli(home, "import", "openclaw", str(_copy(LEGACY_HOME, tmp_path)), "--skip-config")
    assert done.code == 0, done.stderr
    assert "4 new sessions" in done.stdout and "unknown entry type future_thing" in done.stdout
    assert "agent:main:telegram:group:-100123:thread:42" in done.stdout
    both = run_cli(home, "import", "openclaw", str(tmp_path / "openclaw"), "--force-config", "--skip-config")
    assert both.code == 2 and "exclude each other" in both.stderr


def test_every_seed_key_maps_or_says_why() -> None:
    """SPEC G4: each OpenClaw key the seeds name is honoured, or refused naming what to use instead."""
    from clawkeep.interop.config_map import DEFAULT_REASON, translate

    seeds = {
        "agents": {"defaults": {
            "compaction": {"keepRecentTokens": 1000, "maxActiveTranscriptBytes": 4096, "truncateAfterCompaction": True,
                           "model": None, "memoryFlush": {"model": None}},
            "memorySearch": {"provider": "local", "extraPaths": ["notes"], "experimental": {"sessionMemory": True},
                             "local": {"modelPath": "/models/x.gguf"}, "documentInputType": "document",
                             "queryInputType": "query", "sync": {"embeddingBatchTimeoutSeconds": 30}}}},
        "memory": {"citations": "on", "dreamDiary": True,
                   "qmd": {"paths": ["a"], "scope": "x", "searchMode": "query", "limits": {"timeoutMs": 1},
                           "update": {"startup": True}}},
        "plugins": {"slots": {"memory": "memory-core"}, "entries": {
            "active-memory": {"enabled": True, "config": {"agents": ["main"], "enabled": True}},
            "memory-core": {"config": {"dreaming": {"enabled": False}},
                            "subagent": {"allowModelOverride": True, "allowedModels": ["a/b"]}}}},
        "session": {"dmScope": "per-peer", "identityLinks": {}, "reset": {"mode": "idle", "idleMinutes": 30},
                    "maintenance": {"mode": "enforce"}, "agentToAgent": {"maxPingPongTurns": 3}},
        "tools": {"profile": "coding", "sessions": {"visibility": "self"}},
    }
    data, _, unmapped, _ = translate(seeds)
    generic = [item["key"] for item in unmapped if item["reason"] == DEFAULT_REASON]
    assert generic == [], f"give these a reason (or map them): {generic}"
    kept = load_config_from(data)
    assert kept.session.agent_to_agent.max_ping_pong_turns == 3 and kept.memory.citations == "on"
    assert kept.agents.defaults.compaction.truncate_after_compaction is True
    assert {item["key"] for item in unmapped} >= {"memory.qmd", "plugins.slots", "tools.profile",
                                                   "plugins.entries.memory-core.subagent"}


def load_config_from(data: dict):
    from clawkeep.config import config_from_dict

    config = config_from_dict(data)
    assert config.warnings == []
    return config


def test_event_mapping_details() -> None:
    """Pieces the fixtures do not show: inter-session provenance, images in a tool result,
    unknown content blocks (kept, reported), a tool result's duplicated `details`."""
    from clawkeep.interop.events import map_event

    provenance = {"kind": "inter_session", "sourceSessionKey": "agent:main:main", "sourceTool": "sessions_send"}
    sent = map_event({"type": "message", "id": "a", "message": {"role": "user", "content": "hi",
                                                                  "provenance": provenance}}, 5)
    assert sent.entry.meta["provenance"] == provenance and sent.entry.timestamp == 5
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    result = map_event({"type": "message", "id": "b", "message": {
        "role": "toolResult", "toolCallId": "c1", "toolName": "shot", "isError": False,
        "content": [{"type": "text", "text": "done"}, image], "details": {"content": "x", "ms": 3}}}, 6)
    block = result.entry.content[0]
    assert result.entry.role == "tool" and block["content"][1] == image  # not text only: the blocks stay
    assert result.entry.meta["openclaw"]["message"]["details"] == {"content": "x", "ms": 3}
    text = map_event({"type": "message", "id": "c", "message": {
        "role": "toolResult", "toolCallId": "c2", "toolName": "read", "content": [{"type": "text", "text": "abc"}],
        "details": {"content": "abc", "kind": "text"}}}, 7)
    assert text.entry.content[0]["content"] == "abc"
    assert text.entry.meta["openclaw"]["message"]["details"] == {"kind": "text"}  # the copy of the result dropped
    odd = map_event({"type": "message", "id": "d", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "x"}, {"type": "audio", "data": "…"}]}}, 8)
    assert odd.entry.content[1]["type"] == "audio" and odd.notes[0][0].startswith("content block audio")


# --- ids that would name files outside their folder (QA) ---------------------------------------
def _forge(source: Path, target: Path, **session: object) -> None:
    """`source` (an export) with its header's fields replaced, fresh entry ids and a matching end
    line, as someone editing an export by hand would write it."""
    import uuid  # noqa: PLC0415

    def dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    lines = source.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    head["session"].update(session)
    body = []
    for line in lines[1:-1]:
        entry = json.loads(line)
        entry["entry"]["id"] = str(uuid.uuid4())
        body.append(dumps(entry))
    digest = hashlib.sha256(("\n".join(body) + "\n").encode("utf-8")).hexdigest()
    end = dumps({"end": {"entries": len(body), "sha256": digest}})
    target.write_text("\n".join([dumps(head), *body, end]) + "\n", encoding="utf-8")


def test_import_refuses_ids_that_are_not_ids(tmp_path: Path, home: Path) -> None:
    """A forged header could put `../../x` into a session id or agent id (later export and
    cleanup built file names from them, outside their folder) or a key of another agent."""
    with Engine.open(home=home) as engine:
        engine.message("hello there", sender="owner")
        with open(tmp_path / "ex.jsonl", "w", encoding="utf-8") as handle:
            engine.export_session("agent:main:main", handle)
    sid = "0f8c2d4e-1b6a-4c3e-9d7f-2a5b8c1e4f60"
    cases = {
        "dotdot": ({"session_id": "../../../escaped", "key": "agent:main:foo"}, "session.session_id"),
        "absolute": ({"session_id": "/abs/path/sid", "key": "agent:main:foo"}, "session.session_id"),
        "agent": ({"session_id": sid, "key": "agent:main:foo", "agent_id": "../../evilagent"}, "session.agent_id"),
        "other": ({"session_id": sid, "key": "agent:other:foo"}, "session.agent_id"),
        "badkey": ({"session_id": sid, "key": "agent:../x:foo"}, "session.key"),
        "upper": ({"session_id": sid.upper(), "key": "agent:main:foo"}, "session.session_id"),
    }
    for name, (fields, what) in cases.items():
        _forge(tmp_path / "ex.jsonl", tmp_path / f"{name}.jsonl", **fields)
        done = run_cli(tmp_path / f"home-{name}", "import", "jsonl", str(tmp_path / f"{name}.jsonl"), "--json")
        assert done.code == 2 and "Traceback" not in done.stderr, (name, done.stderr)
        report = done.json()
        message = report["errors"][0]["message"]
        assert f"{name}.jsonl:1: {what}" in message and "nothing of this file was imported" in message, message
        assert report["sessions"]["imported"] == 0 and not (tmp_path / f"home-{name}" / "agents").exists()
    # an entry id with a control character is refused by its line
    lines = (tmp_path / "ex.jsonl").read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[2])
    entry["entry"]["id"] = "bad\nid"
    body = [lines[1], json.dumps(entry, ensure_ascii=False, sort_keys=True, separators=(",", ":"))]
    digest = hashlib.sha256(("\n".join(body) + "\n").encode("utf-8")).hexdigest()
    end = json.dumps({"end": {"entries": 2, "sha256": digest}}, sort_keys=True, separators=(",", ":"))
    (tmp_path / "entry.jsonl").write_text("\n".join([lines[0], *body, end]) + "\n", encoding="utf-8")
    with Engine.open(home=tmp_path / "home-entry") as engine:
        report = engine.import_jsonl([tmp_path / "entry.jsonl"])
    message = report["errors"][0]["message"]
    assert "entry.jsonl:3: entry.id" in message and "control character" in message


def _plant(engine: Engine, session_id: str, agent_id: str = "main", key: str = "agent:main:cron:job1") -> None:
    """A row as a store written before import checked ids could hold it."""
    from clawkeep.storage import SessionRecord  # noqa: PLC0415

    store = engine.runtime.store("main")
    good = store.get_session_by_key("agent:main:main")
    assert good is not None
    row = {**good.__dict__, "session_id": session_id, "agent_id": agent_id, "key": key, "kind": "cron",
           "created_at": 1000, "updated_at": 1000, "last_interaction_at": 1000, "meta": {}, "version": 0}
    with store.transaction():
        store.insert_session(SessionRecord(**row))


def test_export_all_refuses_a_stored_row_whose_ids_leave_the_folder(tmp_path: Path, home: Path) -> None:
    with Engine.open(home=home) as engine:
        engine.message("hello there", sender="owner")
        _plant(engine, "../../../escaped", agent_id="../../evilagent")
    out = tmp_path / "a" / "b" / "c" / "out"  # deep enough that the old escape stayed inside tmp_path
    done = run_cli(home, "export", "--all", "--out", str(out))
    assert done.code == 2 and "Traceback" not in done.stderr
    said = " ".join(done.stderr.split())
    assert "'../../evilagent'" in said and "not exported" in said and "The other 1 were written" in said
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.jsonl"))
    assert len(written) == 1 and written[0].startswith("a/b/c/out/main/")
    assert not list(tmp_path.rglob("evilagent")) and not list(tmp_path.rglob("escaped*"))


def test_cleanup_keeps_a_stored_row_whose_id_leaves_the_archive(tmp_path: Path, home: Path) -> None:
    with Engine.open(home=home) as engine:
        engine.message("hello there", sender="owner")
        _plant(engine, "../../../../escaped-archive")
    done = run_cli(home, "sessions", "cleanup", "--enforce", "--json")
    assert done.code == 2 and "Traceback" not in done.stderr
    report = done.json()
    assert report["archives"] == [] and report["refused"][0]["key"] == "agent:main:cron:job1"
    assert "cannot name a file" in report["refused"][0]["reason"]
    assert not list(tmp_path.rglob("escaped-archive*"))
    with Engine.open(home=home) as engine:  # nothing stored is lost
        assert engine.runtime.store("main").get_session("../../../../escaped-archive") is not None


def _reseal(source: Path, target: Path, edit) -> None:  # noqa: ANN001
    """`source` (an export) with its entry lines passed through `edit` (a list of dicts → the
    new list) and a matching end line: a file that passes the checksum, bad or not."""

    def dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    lines = source.read_text(encoding="utf-8").splitlines()
    body = [dumps(e) for e in edit([json.loads(line) for line in lines[1:-1]])]
    digest = hashlib.sha256(("\n".join(body) + "\n").encode("utf-8")).hexdigest()
    end = dumps({"end": {"entries": len(body), "sha256": digest}})
    target.write_text("\n".join([lines[0], *body, end]) + "\n", encoding="utf-8")


def _one_export(tmp_path: Path) -> Path:
    with Engine.open(home=tmp_path / "origin") as engine:
        engine.message("first message", sender="owner", message_id="m1")
        engine.message("second message", sender="owner", message_id="m2")
        with open(tmp_path / "ex.jsonl", "w", encoding="utf-8") as handle:
            engine.export_session("agent:main:main", handle)
    return tmp_path / "ex.jsonl"


def _refused(tmp_path: Path, name: str, *parts: str) -> None:
    done = run_cli(tmp_path / f"home-{name}", "import", "jsonl", str(tmp_path / f"{name}.jsonl"), "--json")
    assert done.code == 2 and "Traceback" not in done.stderr, (name, done.stderr)
    report = done.json()
    message = report["errors"][0]["message"]
    for part in (*parts, "nothing of this file was imported"):
        assert part in message, (name, message)
    assert report["sessions"]["imported"] == 0 and not (tmp_path / f"home-{name}" / "agents").exists()


def test_import_jsonl_refuses_an_entry_id_used_twice(tmp_path: Path) -> None:
    """Two entries with one id: the second (other content) was skipped as "already imported"."""
    source = _one_export(tmp_path)

    def twice(entries: list) -> list:
        messages = [i for i, e in enumerate(entries) if e["entry"]["type"] == "message"]
        entries[messages[1]]["entry"]["id"] = entries[messages[0]]["entry"]["id"]
        entries[messages[1]]["entry"]["clientId"] = None
        return entries

    _reseal(source, tmp_path / "dup.jsonl", twice)
    lines = (tmp_path / "dup.jsonl").read_text(encoding="utf-8").splitlines()
    dup_id = json.loads(lines[-2 if json.loads(lines[-2])["entry"]["type"] == "message" else -3])["entry"]["id"]
    numbers = [n + 1 for n, line in enumerate(lines) if f'"id":"{dup_id}"' in line]
    assert len(numbers) == 2
    _refused(tmp_path, "dup", f"dup.jsonl:{numbers[1]}: entry.id", dup_id, f"line {numbers[0]}")


def test_import_jsonl_checks_entry_fields(tmp_path: Path) -> None:
    """content 42 / meta [1] crashed with a TypeError (exit 1); an unknown role or type was stored."""
    source = _one_export(tmp_path)
    cases = {
        "content": ("content", 42, "a list of content blocks"),
        "meta": ("meta", [1], "a JSON object"),
        "role": ("role", "wizard", "allowed values: user, assistant, system, tool"),
        "type": ("type", "bogus", "allowed values: session, message"),
    }
    for name, (field_name, value, allowed) in cases.items():
        def edit(entries: list, field_name: str = field_name, value: object = value) -> list:
            target = next(e for e in entries if e["entry"]["type"] == "message")
            target["entry"][field_name] = value
            return entries

        _reseal(source, tmp_path / f"{name}.jsonl", edit)
        lines = (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        edited = json.dumps({field_name: value}, separators=(",", ":"))[1:-1]  # '"content":42', not a stray 42
        number = next(n + 1 for n, line in enumerate(lines) if edited in line)
        _refused(tmp_path, name, f"{name}.jsonl:{number}: entry.{field_name}", allowed)


def test_import_jsonl_duplicate_client_id_in_one_session(tmp_path: Path) -> None:
    """Two entries of one file with one client id were said to clash with "another session"."""
    source = _one_export(tmp_path)

    def same_client(entries: list) -> list:
        messages = [e for e in entries if e["entry"]["type"] == "message" and e["entry"].get("clientId")]
        messages[1]["entry"]["clientId"] = messages[0]["entry"]["clientId"]
        return entries

    _reseal(source, tmp_path / "client.jsonl", same_client)
    _refused(tmp_path, "client", "entry.clientId 'm1' is also the clientId of the entry on line")
    # against the database: the entry m1 of this very session, already imported under another id
    with Engine.open(home=tmp_path / "home-db") as engine:
        assert engine.import_jsonl([source])["errors"] == []

    def new_id(entries: list) -> list:
        for e in entries:
            if e["entry"].get("clientId") == "m1":
                e["entry"]["id"] = "another-entry-id"
        return entries

    _reseal(source, tmp_path / "again.jsonl", new_id)
    with Engine.open(home=tmp_path / "home-db") as engine:
        report = engine.import_jsonl([tmp_path / "again.jsonl"])
    message = report["errors"][0]["message"]
    assert "in this session" in message and "another session" not in message, message


def test_openclaw_duplicate_event_id_is_reported_as_such(tmp_path: Path, home: Path) -> None:
    """A second event with an id already used (other content) dropped events as "off the active
    branch"; now that transcript is refused naming both lines. An exact repeat is imported once
    and reported as a repeat."""
    source = _copy(LEGACY_HOME, tmp_path)
    path = source / "agents" / "main" / "sessions" / f"{MAIN_ID}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    numbers = [n for n, e in enumerate(events) if e.get("type") == "message"]
    first, second = numbers[0], numbers[3]
    events[second]["id"] = events[first]["id"]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source, config="skip")
        failed = [e for e in report["errors"] if e["where"] == "agent:main:main"]
        assert len(failed) == 1, report["errors"]
        message = failed[0]["message"]
        assert f"{path}:{second + 1}: event id {events[first]['id']!r}" in message, message
        assert f"{path}:{first + 1}" in message and "nothing of this session was imported" in message
        assert engine.runtime.read_store("main").get_session(MAIN_ID) is None
    # the same event written twice: imported once, reported as a repeat
    clean = _copy(LEGACY_HOME, tmp_path, "clean")
    with Engine.open(home=tmp_path / "h1") as engine:
        off = {k: v for k, v in engine.import_openclaw(clean, config="skip")["unmapped"].items() if "off the" in k}
        wanted = [(e.type, e.content) for e in _entries(engine, MAIN_ID)]
    repeated = _copy(LEGACY_HOME, tmp_path, "repeated")
    path = repeated / "agents" / "main" / "sessions" / f"{MAIN_ID}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(numbers[2] + 1, lines[numbers[2]])
    path.write_text("".join(lines), encoding="utf-8")
    with Engine.open(home=tmp_path / "h2") as engine:
        report = engine.import_openclaw(repeated, config="skip")
        assert report["errors"] == [], report["errors"]
        assert [(e.type, e.content) for e in _entries(engine, MAIN_ID)] == wanted
        kinds = json.dumps(report["unmapped"])
        assert "repeated with the same id and content" in kinds
        assert {k: v["count"] for k, v in report["unmapped"].items() if "off the" in k} == {
            k: v["count"] for k, v in off.items()}


def test_openclaw_unreadable_session_entry_is_reported(tmp_path: Path, home: Path) -> None:
    """A malformed entry_json lost the session's label and meta.openclaw without a word."""
    source = _copy(SQLITE_HOME, tmp_path)
    database = next(source.rglob("*.sqlite"))
    with sqlite3.connect(database) as db:
        db.execute("UPDATE session_nodes SET entry_json='[1,2' WHERE session_key='agent:main:main'")
    db.close()
    with Engine.open(home=home) as engine:
        report = engine.import_openclaw(source, config="skip")
        kinds = json.dumps(report["unmapped"])
        assert "entry_json" in kinds and "agent:main:main" in kinds, kinds
        session = engine.runtime.read_store("main").get_session_by_key("agent:main:main")
        assert session is not None and session.meta["openclaw"]["entryJson"] == "[1,2"


def test_credentials_in_openclaw_notes_are_redacted_on_the_way_in(tmp_path: Path, home: Path) -> None:
    source = _copy(LEGACY_HOME, tmp_path)
    notes = source / "workspace"
    secret_lines = ["- The wifi password is hunter2-Quokka-77",
                    "- Deploy key: sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
                    "- 我的银行卡号 4111 1111 1111 1111"]
    original = "# Notes\n\n- Prefers oat milk.\n" + "\n".join(secret_lines) + "\n"
    (notes / "memory").mkdir(parents=True, exist_ok=True)
    (notes / "memory" / "2026-11-02.md").write_text(original, encoding="utf-8")
    with Engine.open(home=home, config={"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}) as engine:
        report = engine.import_openclaw(source, config="skip")
        entry = next(m for m in report["memory"] if m["file"] == "memory/2026-11-02.md")
        assert entry["action"] == "copied" and entry["redactedLines"] == 3
        copied = (home / "workspace" / "memory" / "2026-11-02.md").read_text(encoding="utf-8")
        assert "Prefers oat milk." in copied
        for leaked in ("hunter2-Quokka-77", "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "4111 1111 1111 1111"):
            assert leaked not in copied
        assert engine.memory_search("hunter2-Quokka-77")["results"] == []
        assert (notes / "memory" / "2026-11-02.md").read_text(encoding="utf-8") == original  # theirs untouched
        again = engine.import_openclaw(source, config="skip")
        assert {m["action"] for m in again["memory"]} == {"unchanged"}
