"""Bad input and resource bounds: every mistake is an InputError naming the input (CLI exit 2),
never a raw Python exception (CLI exit 1 "internal error")."""

from __future__ import annotations

import pytest

from clawkeep import Engine
from clawkeep.errors import InputError, NotFoundError
from clawkeep.timeutil import now_ms
from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine

BAD = "\udc80"  # what an undecodable byte (0x80) on the command line becomes


@pytest.fixture
def seeded(home):
    eng = open_engine(home)
    sent = eng.message("hello there", message_id="m-1")
    eng.memory_remember("I prefer TypeScript")
    yield eng, sent.session_key
    eng.close()


# --- invalid UTF-8 / lone surrogates ------------------------------------------------------------
API_CALLS = {
    "message text": lambda e, k: e.message("hi" + BAD),
    "message id": lambda e, k: e.message("hi", message_id="x" + BAD),
    "message session": lambda e, k: e.message("hi", session=k + BAD),
    "system_event session": lambda e, k: e.system_event(k + BAD, "x"),
    "system_event text": lambda e, k: e.system_event(k, "x" + BAD),
    "sessions_list label": lambda e, k: e.sessions_list(label="x" + BAD),
    "sessions_history session": lambda e, k: e.sessions_history(k + BAD),
    "sessions_history message id": lambda e, k: e.sessions_history(k, message_id="x" + BAD),
    "sessions_search query": lambda e, k: e.sessions_search("hello" + BAD),
    "session_status session": lambda e, k: e.session_status(k + BAD),
    "sessions_reset session": lambda e, k: e.sessions_reset(k + BAD),
    "sessions_fork label": lambda e, k: e.sessions_fork(k, label="x" + BAD),
    "sessions_create label": lambda e, k: e.sessions_create(label="x" + BAD),
    "memory_search query": lambda e, k: e.memory_search("tea" + BAD),
    "memory_get path": lambda e, k: e.memory_get("MEMORY" + BAD + ".md"),
    "memory_remember text": lambda e, k: e.memory_remember("I like tea" + BAD),
    "memory_items status": lambda e, k: e.memory_items(status="active" + BAD),
    "memory_edit text": lambda e, k: e.memory_edit("m-1", "x" + BAD),
    "memory_delete id": lambda e, k: e.memory_delete("m" + BAD),
    "recall text": lambda e, k: e.recall("what did I say" + BAD, session=k),
    "recall session": lambda e, k: e.recall("what did I say", session=k + BAD),
    "classify text": lambda e, k: e.classify("what did I say" + BAD),
}


@pytest.mark.parametrize("name", list(API_CALLS))
def test_api_refuses_invalid_utf8_naming_the_argument(seeded, name):
    eng, key = seeded
    with pytest.raises(InputError) as err:
        API_CALLS[name](eng, key)
    assert "UTF-8" in str(err.value), str(err.value)


def test_open_refuses_invalid_utf8_home_config_and_agent(home):
    for kwargs, what in ((dict(home=str(home) + BAD), "home"), (dict(home=home, config=str(home) + BAD), "config"),
                         (dict(home=home, agent="main" + BAD), "agent")):
        with pytest.raises(InputError, match=what):
            Engine.open(**kwargs)


CLI_CASES = [
    ("message", "hi" + BAD),
    ("message", "hi", "--message-id", "m" + BAD),
    ("sessions", "history", "agent:main:main" + BAD),
    ("sessions", "status", "agent:main:main" + BAD),
    ("sessions", "notify", "agent:main:main", "event" + BAD),
    ("memory", "remember", "I like tea" + BAD),
    ("memory", "get", "MEMORY" + BAD + ".md"),
    ("sessions", "search", "hello" + BAD),
    ("recall", "what did I say" + BAD, "--session", "agent:main:main"),
]


def test_cli_refuses_undecodable_bytes_with_exit_2(home):
    assert run_cli(home, "message", "hello").code == 0
    for args in CLI_CASES:
        result = run_cli(home, *args)
        assert result.code == 2, (args, result.code, result.stderr)
        assert "UTF-8" in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)


# --- times and integers -------------------------------------------------------------------------
@pytest.mark.parametrize("at", ["0001-01-01", "9999-12-31T23:59:59-14:00", "1969-12-31T23:00:00Z", "2201-01-01",
                                "2150-01-01T00:00:00Z"])
@pytest.mark.in_process_only  # the Engine names its flag --at; over HTTP the JSON field `at` (docs/gateway.md)
def test_at_outside_the_window_is_refused(engine, at):
    with pytest.raises(InputError, match="--at"):
        engine.message("hi", at=at)


@pytest.mark.parametrize("at", [10**20, -1, 2**63, 1.5, True])
@pytest.mark.in_process_only  # the Engine names its flag --at; over HTTP the JSON field `at` (docs/gateway.md)
def test_api_timestamps_out_of_range(engine, at):
    with pytest.raises(InputError, match="--at"):
        engine.message("hi", at=at)


def test_at_a_day_ahead_of_the_clock_is_refused_but_an_hour_is_fine(engine):
    now = now_ms()
    assert engine.message("soon", at=now + 3_600_000).message_id
    with pytest.raises(InputError, match="24 hours"):
        engine.message("far", at=now + 25 * 3_600_000)
    with pytest.raises(InputError, match="24 hours"):
        engine.sessions_reset("agent:main:main", at=now + 48 * 3_600_000)


def test_cli_at_bounds_exit_2(cli):
    for at in ("0001-01-01", "9999-12-31T23:59:59-14:00"):
        result = cli("message", "hi", "--at", at)
        assert result.code == 2 and "--at" in result.stderr, result.stderr


def test_session_status_survives_a_far_future_stored_time(engine):
    """A session stamped near year 9999 before times were bounded must still show its status."""
    sent = engine.message("hello")
    store = engine.runtime.store()
    session = store.get_session_by_key(sent.session_key)
    session.session_started_at = session.last_interaction_at = 253_402_300_799_000  # 9999-12-31T23:59:59Z
    store.update_session(session)
    status = engine.session_status(sent.session_key)
    assert status["key"] == sent.session_key and status["nextResetAt"] is None


@pytest.mark.parametrize("call", [
    lambda e: e.sessions_search("hello", limit=0),
    lambda e: e.sessions_search("hello", limit=10**30),
    lambda e: e.memory_search("hello", limit=0),
    lambda e: e.memory_search("hello", limit=51),
    lambda e: e.memory_search("hello", limit=True),
    lambda e: e.memory_get("MEMORY.md", from_line=0),
    lambda e: e.memory_get("MEMORY.md", from_line=10**30),
    lambda e: e.memory_get("MEMORY.md", lines=10**9),
    lambda e: e.sessions_list(active_minutes=10**30),
    lambda e: e.sessions_list(active_minutes="5"),
])
def test_api_integers_out_of_range(engine, call):
    with pytest.raises(InputError, match="range|integer"):
        call(engine)


@pytest.mark.parametrize(("call", "name"), [
    (lambda e: e.sessions_search("x", limit=True), "limit"),
    (lambda e: e.memory_search("x", limit=0), "limit"),
    (lambda e: e.memory_get("MEMORY.md", lines=999999), "lines"),
    (lambda e: e.memory_get("MEMORY.md", from_line=0), "from_line"),
    (lambda e: e.sessions_list(active_minutes=True), "active_minutes"),
    (lambda e: e.memory_promote(min_score=2.0), "min_score"),
    (lambda e: e.memory_promote(min_unique_queries=33), "min_unique_queries"),
    (lambda e: e.sessions_list(kind="bogus"), "kind"),
])
def test_api_errors_name_the_parameter_not_a_cli_flag(engine, call, name):
    """The Engine said `--limit must be an integer…` to a Python caller: each surface names its own input."""
    with pytest.raises(InputError) as refused:
        call(engine)
    message = str(refused.value)
    assert message.startswith(f"{name} ") and "--" not in message, message
    assert "allowed" in message or " in " in message, message  # what is allowed: a range or the values


def test_cli_names_its_flags_and_refuses_an_unknown_kind(cli):
    for args, flag, allowed in ((("sessions", "search", "x", "--limit", "0"), "--limit", "1-25"),
                                (("memory", "search", "x", "--limit", "51"), "--limit", "1-50"),
                                (("memory", "get", "MEMORY.md", "--lines", "999999"), "--lines", "1-2000"),
                                (("memory", "get", "MEMORY.md", "--from", "0"), "--from", "1-"),
                                (("sessions", "list", "--active", "-5"), "--active", "1-"),
                                (("memory", "promote", "--min-score", "2"), "--min-score", "0-1"),
                                (("sessions", "list", "--kind", "bogus"), "--kind", "direct, group")):
        result = cli(*args)
        assert result.code == 2 and "Traceback" not in result.stderr, (args, result.stderr)
        assert flag in result.stderr and allowed in result.stderr, (args, result.stderr)
    assert cli("sessions", "list", "--kind", "direct", "--json").json() == []


def test_cli_limit_zero_is_refused_with_the_range(cli):
    result = cli("sessions", "search", "hello", "--limit", "0")
    assert result.code == 2 and "1-25" in result.stderr, result.stderr
    result = cli("memory", "search", "hello", "--limit", "0")
    assert result.code == 2 and "1-50" in result.stderr, result.stderr


def test_empty_session_option_is_refused(cli):
    result = cli("message", "hi", "--session", "")
    assert result.code == 2 and "session" in result.stderr, result.stderr


@pytest.mark.parametrize("call", [
    lambda e, k: e.message("hi", message_id="abc\n"),
    lambda e, k: e.session_status(k + "\n"),
    lambda e, k: e.sessions_history(k, message_id="m-1\n"),
    lambda e, k: e.memory_delete("m-1\n"),
    lambda e, k: e.memory_edit("m-1\n", "x"),
    lambda e, k: e.sessions_reset(k + "\n"),
])
def test_ids_with_a_trailing_newline_are_refused(seeded, call):
    eng, key = seeded
    with pytest.raises(InputError, match="control character") as err:
        call(eng, key)
    assert not isinstance(err.value, NotFoundError)


def test_system_event_has_the_message_size_limit(home):
    eng = open_engine(home, {"session": {"maxMessageChars": 1000}})
    key = eng.message("hello").session_key
    assert eng.system_event(key, "x" * 1000)["eventId"]
    with pytest.raises(InputError, match="maxMessageChars"):
        eng.system_event(key, "x" * 1001)
    eng.close()


def test_cli_notify_over_the_limit_exits_2(cli, tmp_path):
    config = tmp_path / "small.json5"
    config.write_text("{session: {maxMessageChars: 1000}}")
    cli("message", "hello", config=config)
    result = cli("sessions", "notify", "agent:main:main", "x" * 1001, config=config)
    assert result.code == 2 and "maxMessageChars" in result.stderr, result.stderr


# --- config loading -----------------------------------------------------------------------------
from clawkeep.config import load_config  # noqa: E402


@pytest.mark.parametrize(("document", "names"), [
    ("{a:" * 5000 + "1" + "}" * 5000, ["nest", "32"]),
    ("{session: " + "[" * 40 + "]" * 40 + "}", ["session", "32"]),
    ('{session: {maintenance: {pruneAfter: "99999999999999999999d"}}}', ["pruneAfter", "36500d"]),
    ('{agents: {defaults: {contextPruning: {ttl: "999999999999d"}}}}', ["ttl", "36500d"]),
    ("{plugins: {entries: 5}}", ["plugins.entries", "object"]),
    ('{plugins: {entries: {"active-memory": 5}}}', ["plugins.entries.active-memory", "object"]),
    ('{agents: {list: [{id: "main", workspace: 5}]}}', ["agents.list.0.workspace", "path"]),
    ('{agents: {list: [{id: 5}]}}', ["agents.list.0.id", "agent id"]),
    ('{agents: {defaults: {workspace: "/tmp/a\\u0000b"}}}', ["agents.defaults.workspace", "NUL"]),
    ('{agents: {list: [{id: "main", workspace: "/tmp/a\\u0000b"}]}}', ["agents.list.0.workspace", "NUL"]),
    ('{agents: {defaults: {memorySearch: {extraPaths: ["a\\u0000b"]}}}}', ["extraPaths", "NUL"]),
    ("{session: {maxMessageChars: true}}", ["session.maxMessageChars", "boolean", "1-10000000"]),
    ("{session: {reset: {atHour: true}}}", ["session.reset.atHour", "boolean", "0-23"]),
    ("{session: {maxMessageChars: 1e30}}", ["session.maxMessageChars", "1e+30", "1-10000000"]),
    ("{storage: {busyTimeoutMs: 1e30}}", ["storage.busyTimeoutMs", "0-3600000"]),
    ("{storage: {busyTimeoutMs: 99999999999999999999999}}", ["storage.busyTimeoutMs", "3600000"]),
    ('{session: {reset: {mode: "idle", idleMinutes: 99999999999999999999}}}', ["idleMinutes", "5256000"]),
    ("{agents: {defaults: {memorySearch: {query: {hybrid: {temporalDecay: {halfLifeDays: Infinity}}}}}}}",
     ["halfLifeDays", "finite"]),
])
def test_config_errors_name_the_key_value_and_what_is_allowed(tmp_path, document, names):
    path = tmp_path / "clawkeep.json5"
    path.write_text(document)
    with pytest.raises(InputError) as err:
        load_config(path)
    for name in names:
        assert name in str(err.value), (name, str(err.value))
    assert len(str(err.value)) < 1000


def test_config_file_size_is_bounded(tmp_path):
    path = tmp_path / "clawkeep.json5"
    path.write_text("{plugins: {x: '" + "a" * 300_000 + "'}}")
    with pytest.raises(InputError, match="256 KiB"):
        load_config(path)


def test_config_path_with_nul_and_python_dict_depth(home):
    with pytest.raises(InputError, match="NUL"):
        load_config("/tmp/a\x00b.json5")
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(InputError, match="nested"):
        Engine.open(home=home, config={"plugins": deep})


def test_cli_bad_config_exits_2(cli, tmp_path):
    for document in ('{session: {maintenance: {pruneAfter: "99999999999999999999d"}}}', "{plugins: {entries: 5}}",
                     '{agents: {list: [{id: "main", workspace: 5}]}}', "{a:" * 3000 + "1" + "}" * 3000):
        config = tmp_path / "c.json5"
        config.write_text(document)
        result = cli("status", config=config)
        assert result.code == 2 and "Traceback" not in result.stderr, result.stderr


# --- reads never create an agent database -------------------------------------------------------
def test_reads_for_an_unknown_agent_create_nothing(home):
    with open_engine(home) as eng:
        eng.message("hello main")
    before = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    with open_engine(home, agent="ghost") as ghost:
        assert ghost.sessions_list() == [s for s in ghost.sessions_list() if s["agentId"] == "main"]
        assert ghost.sessions_search("hello")["hits"]  # the operator still sees every agent's sessions
        assert ghost.memory_search("hello")["results"] == []
        with pytest.raises(NotFoundError):
            ghost.memory_get("MEMORY.md")
        for call in (lambda: ghost.sessions_history("agent:ghost:main"),
                     lambda: ghost.session_status("agent:ghost:main"),
                     lambda: ghost.session_status("agent:nobody:main"),
                     lambda: ghost.sessions_list(caller="agent:ghost:main")):
            with pytest.raises(NotFoundError):
                call()
        status = ghost.status()
        assert status["sessions"] == 0 and status["database"] is None
        ghost.memory_status()
        assert ghost.sessions_cleanup(dry_run=True)["sessions"] == 0
    after = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    assert after == before


def test_cli_reads_for_an_unknown_agent_create_nothing(cli, home):
    cli("message", "hello main")
    before = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    for args in (("sessions", "list"), ("sessions", "search", "hello"), ("status",), ("memory", "search", "hello"),
                 ("memory", "get", "MEMORY.md"), ("sessions", "history", "agent:ghost:main"),
                 ("sessions", "status", "agent:ghost:main")):
        result = cli("--agent", "ghost", *args, "--json")
        assert result.code in (0, 2) and "Traceback" not in result.stderr, (args, result.stderr)
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == before


# --- memory files -------------------------------------------------------------------------------
import os  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

from clawkeep.memory import service as memory_service  # noqa: E402


def test_memory_get_caps_characters_per_answer(engine, home):
    notes = home / "workspace" / "memory"
    notes.mkdir(parents=True, exist_ok=True)  # a gateway on the home (--engine-backend client) made it
    (notes / "big.md").write_text("x" * 5_000_000 + "\nsecond line\n")
    got = engine.memory_get("memory/big.md")
    assert len(got["text"]) == memory_service.MAX_GET_CHARS == got["maxChars"]
    assert got["truncated"] is True and got["omittedChars"] == 5_000_000 + 12 - 100_000
    assert (got["from"], got["to"], got["totalLines"]) == (1, 1, 2)
    (notes / "lines.md").write_text("\n".join(f"line {i} " + "y" * 80 for i in range(2000)) + "\n")
    first = engine.memory_get("memory/lines.md")
    assert first["truncated"] and first["text"].endswith("y") and len(first["text"]) <= 100_000
    rest = engine.memory_get("memory/lines.md", from_line=first["to"] + 1)
    assert rest["truncated"] is False and rest["to"] == 2000
    assert first["text"] + "\n" + rest["text"] == (notes / "lines.md").read_text().rstrip("\n")
    small = engine.memory_get("memory/lines.md", lines=3)
    assert small["truncated"] is False and "omittedChars" not in small


def test_cli_memory_get_reports_truncation(cli, home):
    notes = home / "workspace" / "memory"
    notes.mkdir(parents=True)
    (notes / "big.md").write_text("z" * 300_000 + "\n")
    result = cli("memory", "get", "memory/big.md")
    assert result.code == 0 and len(result.stdout) == 100_001 and "truncated" in result.stderr
    data = cli("memory", "get", "memory/big.md", "--json").json()
    assert data["truncated"] is True and data["omittedChars"] == 200_000


@pytest.mark.in_process_only  # times the Engine's own check, not an HTTP round trip
def test_deep_memory_paths_are_refused_quickly(engine):
    for path in ("a/" * 5000 + "x.md", "a/" * 600 + "x.md", "a//" * 100 + "x.md"):
        started = time.perf_counter()
        with pytest.raises(InputError, match="at most"):
            engine.memory_get(path)
        assert time.perf_counter() - started < 0.05


@pytest.mark.in_process_only  # reads the Engine's runtime warnings (a gateway's are in its own process)
def test_a_non_utf8_note_does_not_block_items_or_remember(engine, home, caplog):
    engine.memory_remember("I prefer TypeScript")
    notes = home / "workspace" / "memory"
    (notes / "2026-01-01.md").write_bytes(b"- caf\xe9 latte\n")
    listed = engine.memory_items()
    assert [i["text"] for i in listed] == ["I prefer TypeScript"]
    assert any("2026-01-01.md" in w and "UTF-8" in w for w in engine.runtime.warnings)
    assert engine.memory_remember("I like green tea")["status"] == "stored"
    assert engine.memory_edit(listed[0]["id"], "I prefer Go")["text"] == "I prefer Go"
    assert engine.memory_delete(listed[0]["id"])["deleted"] == listed[0]["id"]


def test_cli_memory_items_names_the_bad_note(cli, home):
    cli("memory", "remember", "I prefer TypeScript")
    (home / "workspace" / "memory" / "bad.md").write_bytes(b"\xff\xfe- x\n")
    result = cli("memory", "items", "--json")
    assert result.code == 0 and len(result.json()) == 1 and "bad.md" in result.stderr


def _read_only(monkeypatch, root: pathlib.Path) -> None:
    """chmod -w on `root`; root ignores file modes, so there the writes are made to fail instead."""
    if os.geteuid() != 0:
        for path in [root, *root.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return
    real_write, real_mkdir = pathlib.Path.write_text, pathlib.Path.mkdir

    def write_text(self, *args, **kwargs):
        if str(self).startswith(str(root)):
            raise PermissionError(13, "Permission denied", str(self))
        return real_write(self, *args, **kwargs)

    def mkdir(self, *args, **kwargs):
        if str(self).startswith(str(root)) and not self.exists():
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)


@pytest.mark.in_process_only  # as root, makes this process's writes fail: a gateway process writes on
def test_read_only_workspace_is_an_input_error_naming_the_file(engine, home, monkeypatch):
    item = engine.memory_remember("I prefer TypeScript")["item"]
    workspace = home / "workspace"
    _read_only(monkeypatch, workspace)
    try:
        for call in (lambda: engine.memory_remember("I like black coffee"),
                     lambda: engine.memory_remember("next Tuesday I fly to Oslo"),
                     lambda: engine.memory_edit(item["id"], "I prefer Go"),
                     lambda: engine.memory_delete(item["id"])):
            with pytest.raises(InputError, match="cannot be written") as err:
                call()
            assert str(workspace) in str(err.value) and "writable" in str(err.value)
        assert [i["text"] for i in engine.memory_items()] == ["I prefer TypeScript"]
    finally:
        for path in [workspace, *workspace.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)


# --- sessions history reads newest first, in pages, until 80 KB are full -----------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from clawkeep.sessions import history as history_module  # noqa: E402
from clawkeep.sessions import transcript  # noqa: E402
from clawkeep.sessions.history_view import build_history_view  # noqa: E402
from clawkeep.storage import EntryRecord  # noqa: E402


def _append(store, session_id, role, content):
    return store.append_entry(EntryRecord(transcript.new_entry_id(), session_id, "message", 1_700_000_000_000,
                                          role=role, content=content))


def test_history_of_a_long_interval_reads_only_what_fits(engine, monkeypatch):
    sent = engine.message("first")
    store = engine.runtime.store()
    with store.transaction():
        for i in range(3000):
            _append(store, sent.session_id, "user" if i % 2 else "assistant",
                    transcript.text_blocks(f"{i} " + "lorem ipsum " * 170))
    read = []
    real = type(store).iter_entries

    def counting(self, *args, **kwargs):
        for entry in real(self, *args, **kwargs):
            read.append(entry.seq)
            yield entry

    monkeypatch.setattr(type(store), "iter_entries", counting)
    view = engine.sessions_history(sent.session_key)
    assert view["truncated"] and view["droppedMessages"] + len(view["messages"]) == 3001
    assert len(read) < 200, len(read)  # was 3001: the whole interval


_BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t},
              st.one_of(st.text(max_size=30), st.sampled_from(["", "  ", "<think>x</think>"]),
                        st.integers(0, 9000).map(lambda n: "w " * n))),
    st.just({"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}),
    st.just({"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"cmd": "ls"}}),
    st.just({"type": "toolResult", "toolCallId": "c1", "content": "ok", "isError": False}),
    st.just({"type": "thinking", "thinking": "hmm"}),
)
_BIG = {"type": "text", "text": "big " * 1100}  # 4,400 characters: cut to 4,000 in the view
_ROLES = st.sampled_from(["user", "assistant", "tool", "toolResult", "system"])
_MESSAGES = st.lists(st.one_of(
    st.tuples(_ROLES, st.lists(_BLOCKS, max_size=3)),
    st.tuples(_ROLES, st.integers(1, 25).map(lambda n: [_BIG] * n)),  # up to one row larger than 80 KB
), max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(parent=_MESSAGES, child=_MESSAGES, include_tools=st.booleans(), fork=st.booleans())
def test_paged_history_equals_reading_the_whole_interval(tmp_path_factory, parent, child, include_tools, fork):
    home = tmp_path_factory.mktemp("paged")
    with open_engine(home) as eng:
        sent = eng.message("start")
        store = eng.runtime.store()
        for role, blocks in parent:
            _append(store, sent.session_id, role, blocks)
        key = eng.sessions_fork(sent.session_key)["key"] if fork else sent.session_key
        session = store.get_session_by_key(key)
        for role, blocks in child:
            _append(store, session.session_id, role, blocks)
        new = eng.sessions_history(key, include_tools=include_tools)
        whole = history_module.interval_messages(eng.runtime, store, session, None)
        old = build_history_view([history_module._as_message(e) for e in whole], include_tools).to_json()
    blank_sanitised = any(b.get("text") == "<think>x</think>" for _, blocks in parent + child for b in blocks)
    assert new["messages"] == old["messages"]
    assert (new["truncated"], new["bytes"]) == (old["truncated"], old["bytes"])
    if not blank_sanitised:  # a text block that sanitises to nothing is counted by role and blocks only
        assert new["droppedMessages"] == old["droppedMessages"]
    if not old["truncated"]:
        assert (new["contentTruncated"], new["contentRedacted"]) == (old["contentTruncated"], old["contentRedacted"])


@pytest.mark.parametrize(("agent", "expected"), [
    ("CON", "is invalid; use 1-64 characters a-z, 0-9, '_' or '-'"),
    ("Main", "is invalid; use 1-64 characters a-z, 0-9, '_' or '-'"),
    (" main", "is invalid; use 1-64 characters a-z, 0-9, '_' or '-'"),
    ("main\n", "contains a control character"),
])
def test_agent_id_is_taken_exactly_or_refused(home, agent, expected):
    """QA: `--agent CON` quietly became agent `con` while every message says lowercase only."""
    done = run_cli(home, "--agent", agent, "status", "--json")
    assert done.code == 2 and "Traceback" not in done.stderr
    said = " ".join(done.stderr.split())
    assert f"agent id {agent!r} " in said and expected in said, said
    with pytest.raises(InputError, match="agent id"):
        Engine.open(home=home, agent=agent)
    assert not (home / "agents").exists()


@pytest.mark.parametrize("text, what", [("   ", "text is empty"), ("one\ntwo", "text has a line break")])
def test_memory_edit_names_the_text_and_what_is_wrong_with_it(engine, text, what):
    """QA: `PUT /v1/memory/items/{id}` with empty text answered a sentence naming no field."""
    item = engine.memory_remember("I prefer TypeScript")
    listed = engine.memory_items()
    with pytest.raises(InputError, match=what) as refused:
        engine.memory_edit(listed[0]["id"], text)
    assert "one non-empty line" in str(refused.value)
    assert [i["text"] for i in engine.memory_items()] == ["I prefer TypeScript"], item  # nothing lost
