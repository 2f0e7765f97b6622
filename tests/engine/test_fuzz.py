"""Property-based fuzzing of every CLI verb, every public Engine method and the config loader.

The only allowed outcomes are success or a `ClawkeepError`: on the CLI exit 0 or 2 (1 only for
a StorageError), never a traceback; a successful answer must be JSON that encodes as UTF-8
(what `--json` prints). Inputs: random text with lone surrogates, NUL, RTL marks and a few
strings up to ~1 MB; session keys and ids (real ones, mangled ones, trailing newlines);
paths; ISO dates and epoch integers far out of range; limits of every type; random JSON5
config documents.

Profiles (CLAWKEEP_FUZZ_PROFILE): `ci`, the default, keeps this file to about a minute;
`long` tries ~8× more inputs (`python -m bench --only fuzz`). CLAWKEEP_FUZZ_STATS=FILE
writes how many inputs each test tried (JSON) when the module finishes.
"""

from __future__ import annotations

import io
import json
import os
import string
import time
from collections import Counter
from pathlib import Path
from typing import Any

import json5
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typer.testing import CliRunner

from clawkeep import Engine
from clawkeep.cli.main import app, as_json_data
from clawkeep.config import Config, load_config
from clawkeep.config.active_memory import ActiveMemoryConfig
from clawkeep.errors import ClawkeepError, InputError, StorageError
from clawkeep.turns.messages import MessageRequest
from clawkeep.turns.turn import Turn
from clawkeep.visibility import Limit

settings.register_profile(
    "ci", max_examples=120, deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
settings.register_profile("long", settings.get_profile("ci"), max_examples=1000)
PROFILE = os.environ.get("CLAWKEEP_FUZZ_PROFILE", "ci")
settings.load_profile(PROFILE)
EXAMPLES = settings.get_profile(PROFILE).max_examples

TRIED: Counter[str] = Counter()  # inputs tried per test (bench/fuzz.py reports the sum)
SLOW_S = 30.0  # no single call may take longer, whatever the input (resource bounds)


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    target = os.environ.get("CLAWKEEP_FUZZ_STATS")
    if target:
        Path(target).write_text(json.dumps(dict(TRIED), indent=1))


def examples(share: float) -> settings:
    """This test's share of the profile's example budget."""
    return settings(max_examples=max(3, int(EXAMPLES * share)))


# --- strategies ---------------------------------------------------------------------------------
ANY_CHAR = st.characters(blacklist_categories=())  # surrogates (Cs) and control characters included
SPECIAL = ["", " ", "\n", "\x00", "\udc80", "\ud800x", "\u202eevil\u202c", "\u200f", "\ufeff", "a\nb", "x\r\n",
           "\t", "💥", "上海出差", "<think>x</think>", "/reset", "/new hi", "/status", "/compact", "/active-memory off",
           "/active-memory on --global", "/verbose on", "/trace on", "/dreaming on", "%", "%00", "..", "../../etc",
           "agent:main:main", "what did I say last week?", "remember that I prefer tea", "I prefer coffee",
           "next Tuesday I fly to Oslo", "sk-" + "a" * 40, "[Tool Call: x]", "<|im_start|>system"]
# A few very long strings (up to ~1 MB), built by repetition so drawing them stays cheap.
BIG_TEXT = st.builds(lambda unit, n: unit * n, st.sampled_from(["x", "上", "\udc80", "ab ", "\n", "<think>", "a/"]),
                     st.integers(2_000, 1_000_000))
SMALL_TEXT = st.one_of(st.text(ANY_CHAR, max_size=40), st.sampled_from(SPECIAL), st.text(max_size=200),
                       st.builds(lambda a, b, c: a + b + c, st.text(max_size=10), st.sampled_from(SPECIAL),
                                 st.text(max_size=10)))
TEXT = st.integers(0, 24).flatmap(lambda k: BIG_TEXT if k == 0 else SMALL_TEXT)
ID_CHARS = st.sampled_from(string.ascii_lowercase + string.digits + "-_:.@%/ \n\x00\udc80é上")
IDISH = st.one_of(st.text(ID_CHARS, min_size=0, max_size=24), SMALL_TEXT)
SUFFIXES = ["", "", "\n", " ", "\x00", "\udc80", ":x", ":thread:1", ":", "X"]
ISO = st.datetimes().map(lambda d: d.isoformat())
DATES = st.one_of(
    st.none(), ISO, st.sampled_from(["0001-01-01", "9999-12-31T23:59:59-14:00", "1969-12-31", "2199-12-31",
                                     "2200-01-02", "2026-03-03T09:00:00+08:00", "yesterday", "", "2026-13-01"]),
    st.integers(-2**70, 2**70), st.integers(0, 8_000_000_000_000), SMALL_TEXT,
)
NUMBERS = st.one_of(st.none(), st.integers(-5, 60), st.integers(-2**70, 2**70), st.booleans(),
                    st.floats(allow_nan=True), SMALL_TEXT)
PATHS = st.one_of(
    st.sampled_from(["MEMORY.md", "memory/2026-01-01.md", "memory/nope.md", "DREAMS.md", "../../etc/passwd",
                     "/etc/passwd", "memory/../MEMORY.md", "memory/", "x.txt", "x.py", "~/x.md", ".", ""]),
    st.builds(lambda p, n: p * n + "x.md", st.sampled_from(["a/", "../", "./", "//"]), st.integers(1, 6000)),
    SMALL_TEXT, BIG_TEXT,
)
ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), SMALL_TEXT,
                     st.lists(st.integers(), max_size=2),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def maybe(strategy: st.SearchStrategy, other: st.SearchStrategy = ANYTHING) -> st.SearchStrategy:
    """Mostly the right kind of value, sometimes None, sometimes anything at all."""
    return st.one_of(strategy, strategy, strategy, st.none(), other)


def json_safe(value: Any) -> None:
    """What `--json` prints must be JSON that encodes as UTF-8 (results are contract models)."""
    json.dumps(as_json_data(value), ensure_ascii=False).encode("utf-8")


# --- the Engine API -----------------------------------------------------------------------------
OPENCLAW_FIXTURE = Path(__file__).parents[1] / "data" / "openclaw" / "sqlite-home"


class World:
    """One seeded home per module (not per example): sessions of several kinds, memory items."""

    def __init__(self, home: Path):
        self.home = home
        self.engine = Engine.open(home=home)
        eng = self.engine
        sent = eng.message("下周二我去上海出差 remember the invoice INV-42", channel="telegram", sender="alice",
                           message_id="tg-1")
        eng.message("Noted, safe travels!", role="assistant", channel="telegram", sender="alice")
        eng.message("group hello", channel="slack", chat_type="group", group="g1", sender="bob")
        eng.message("cron ran", channel="cron", sender="nightly")
        eng.memory_remember("I prefer TypeScript")
        eng.memory_remember("next Tuesday I fly to Oslo")
        self.dashboard = eng.sessions_create(label="fuzz")["key"]
        self.incognito = eng.sessions_create(incognito=True)["key"]
        self.main_key = sent.session_key

    def keys(self) -> list[str]:
        rows = self.engine.sessions_list()
        return [r["key"] for r in rows] + [r["sessionId"] for r in rows] + [self.incognito]

    def item_ids(self) -> list[str]:
        return [i["id"] for i in self.engine.memory_items()] or ["m-00000000"]

    def message_ids(self) -> list[str]:
        view = self.engine.sessions_history(self.main_key)
        return ["tg-1"] + [m["messageId"] for m in view["messages"]]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    made = World(tmp_path_factory.mktemp("fuzz-api"))
    yield made
    made.engine.close()


def pick(current) -> st.SearchStrategy:
    """One of `current()` (a list that changes as the fuzzer writes): always one integer drawn,
    so the shape of the data never depends on the state."""
    return st.integers(0, 2**16).map(lambda i: (found := current())[i % len(found)])


def key_strategy(world: World) -> st.SearchStrategy:
    real = pick(world.keys)
    mangled = st.builds(lambda k, s: k + s, real, st.sampled_from(SUFFIXES))
    made = st.builds(lambda a, b: f"agent:{a}:{b}", IDISH, IDISH)
    return st.one_of(real, real, mangled, made, st.uuids().map(str), SMALL_TEXT)


def id_strategy(ids) -> st.SearchStrategy:
    real = pick(ids) if callable(ids) else st.sampled_from(ids)
    return st.one_of(real, st.builds(lambda k, s: k + s, real, st.sampled_from(SUFFIXES)), IDISH)


def call_message(d, w: World):
    return w.engine.message(
        d.draw(TEXT), channel=d.draw(maybe(IDISH)), account=d.draw(maybe(IDISH)), sender=d.draw(maybe(IDISH)),
        chat_type=d.draw(maybe(st.sampled_from(["direct", "group", "channel", "room"]))),
        group=d.draw(maybe(IDISH)), thread=d.draw(maybe(IDISH)), role=d.draw(maybe(st.sampled_from(["user",
                                                                                                 "assistant"]))),
        message_id=d.draw(maybe(id_strategy(["tg-1", "m-2"]))), at=d.draw(DATES),
        session=d.draw(st.one_of(st.none(), st.none(), key_strategy(w))),
    ).to_json()


def call_stream(d, w: World):
    events = list(w.engine.message_stream(d.draw(TEXT), sender=d.draw(maybe(IDISH)), at=d.draw(DATES),
                                          message_id=d.draw(maybe(IDISH))))
    assert events and events[-1].kind in ("result", "error"), events
    if events[-1].kind == "error":
        assert isinstance(events[-1].data, ClawkeepError), events[-1].data
        raise events[-1].data
    return events[-1].data.to_json()


API: dict[str, Any] = {
    "message": call_message,
    "message_stream": call_stream,
    "request": lambda d, w: w.engine.request(
        d.draw(TEXT), channel=d.draw(maybe(IDISH)), sender=d.draw(maybe(IDISH)), message_id=d.draw(maybe(IDISH)),
        at=d.draw(DATES), session=d.draw(st.one_of(st.none(), key_strategy(w)))).text[:0] or {},
    "doctor": lambda d, w: w.engine.doctor(repair=d.draw(maybe(st.booleans())), agent=d.draw(maybe(IDISH))),
    "system_event": lambda d, w: w.engine.system_event(
        d.draw(key_strategy(w)), d.draw(TEXT), at=d.draw(DATES), queue=d.draw(maybe(st.booleans()))),
    "sessions_list": lambda d, w: w.engine.sessions_list(
        kind=d.draw(maybe(st.sampled_from(["main", "direct", "group", "cron", "dashboard"]))),
        label=d.draw(maybe(IDISH)), agent_id=d.draw(maybe(IDISH)), active_minutes=d.draw(NUMBERS),
        search_text=d.draw(maybe(TEXT)), preview=d.draw(maybe(st.booleans())), recent_messages=d.draw(NUMBERS),
        caller=d.draw(maybe(key_strategy(w)))),
    "sessions_history": lambda d, w: w.engine.sessions_history(
        d.draw(key_strategy(w)), message_id=d.draw(maybe(id_strategy(w.message_ids))),
        include_tools=d.draw(maybe(st.booleans())), caller=d.draw(maybe(key_strategy(w)))),
    "sessions_timeline": lambda d, w: w.engine.sessions_timeline(
        d.draw(key_strategy(w)), caller=d.draw(maybe(key_strategy(w)))),
    "sessions_search": lambda d, w: w.engine.sessions_search(
        d.draw(TEXT), limit=d.draw(NUMBERS), caller=d.draw(maybe(key_strategy(w)))),
    "session_status": lambda d, w: w.engine.session_status(
        d.draw(maybe(key_strategy(w))), caller=d.draw(maybe(key_strategy(w)))),
    "sessions_send": lambda d, w: w.engine.sessions_send(
        d.draw(key_strategy(w)), d.draw(TEXT), timeout_seconds=d.draw(st.one_of(NUMBERS, st.just(0), st.just(5))),
        caller=d.draw(maybe(key_strategy(w)))),
    "sessions_reset": lambda d, w: w.engine.sessions_reset(
        d.draw(key_strategy(w)), at=d.draw(DATES), caller=d.draw(maybe(key_strategy(w)))),
    "sessions_fork": lambda d, w: w.engine.sessions_fork(
        d.draw(key_strategy(w)), label=d.draw(maybe(IDISH)), caller=d.draw(maybe(key_strategy(w)))),
    "sessions_create": lambda d, w: w.engine.sessions_create(
        incognito=d.draw(maybe(st.booleans())), label=d.draw(maybe(IDISH))),
    "sessions_cleanup": lambda d, w: w.engine.sessions_cleanup(
        dry_run=d.draw(maybe(st.booleans())), enforce=d.draw(maybe(st.booleans())),
        fix_dm_scope=d.draw(maybe(st.booleans()))),
    "memory_search": lambda d, w: w.engine.memory_search(
        d.draw(TEXT), limit=d.draw(NUMBERS), mode=d.draw(maybe(st.sampled_from(["hybrid", "keyword", "vector"])))),
    "memory_get": lambda d, w: w.engine.memory_get(
        d.draw(maybe(PATHS)), from_line=d.draw(NUMBERS), lines=d.draw(NUMBERS)),
    "memory_remember": lambda d, w: w.engine.memory_remember(d.draw(TEXT), force=d.draw(maybe(st.booleans()))),
    "memory_items": lambda d, w: w.engine.memory_items(
        status=d.draw(maybe(st.sampled_from(["active", "superseded", "expired"])))),
    "memory_edit": lambda d, w: w.engine.memory_edit(d.draw(id_strategy(w.item_ids)), d.draw(TEXT),
                                                     base_text=d.draw(maybe(TEXT))),
    "memory_delete": lambda d, w: w.engine.memory_delete(d.draw(id_strategy(w.item_ids))),
    "memory_correct": lambda d, w: w.engine.memory_correct(
        d.draw(maybe(id_strategy(w.item_ids))), d.draw(TEXT), old_text=d.draw(maybe(TEXT)),
        caller=d.draw(maybe(key_strategy(w)))),
    "memory_forget": lambda d, w: w.engine.memory_forget(
        d.draw(maybe(id_strategy(w.item_ids))), old_text=d.draw(maybe(TEXT)), caller=d.draw(maybe(key_strategy(w)))),
    "memory_undo": lambda d, w: w.engine.memory_undo(d.draw(id_strategy(w.item_ids)),
                                                     caller=d.draw(maybe(key_strategy(w)))),
    "memory_sweep": lambda d, w: w.engine.memory_sweep(),
    "memory_refusals": lambda d, w: w.engine.memory_refusals(days=d.draw(NUMBERS)),
    "memory_index": lambda d, w: w.engine.memory_index(force=d.draw(maybe(st.booleans()))),
    "memory_status": lambda d, w: w.engine.memory_status(deep=d.draw(maybe(st.booleans()))),
    "memory_bootstrap": lambda d, w: w.engine.memory_bootstrap(
        chat_type=d.draw(maybe(st.sampled_from(["direct", "group"]))), new_session=d.draw(maybe(st.booleans()))),
    "recall": lambda d, w: w.engine.recall(d.draw(TEXT), session=d.draw(key_strategy(w))),
    "classify": lambda d, w: w.engine.classify(d.draw(TEXT)),
    "check_session_key": lambda d, w: w.engine.check_session_key(d.draw(st.one_of(TEXT, key_strategy(w)))),
    "check_storage": lambda d, w: w.engine.check_storage() or {},
    "tokens_create": lambda d, w: w.engine.tokens_create(
        d.draw(IDISH), d.draw(st.one_of(IDISH, st.sampled_from(["operator", "agent:main", "peer:cli:owner",
                                                                 "session:agent:main:main", "agent:", "peer:x"]))),
        expires=d.draw(maybe(st.one_of(IDISH, st.sampled_from(["30d", "1h", "0d", "-1d"])))),
        sandboxed=d.draw(maybe(st.booleans()))),
    "tokens_list": lambda d, w: w.engine.tokens_list(),
    "memory_store_read": lambda d, w: w.engine.memory_store_read(
        d.draw(st.one_of(IDISH, st.sampled_from(["memory/store/a.md", "memory/store/../../x.md", "MEMORY.md"])))),
    "memory_store_write": lambda d, w: w.engine.memory_store_write(
        d.draw(st.one_of(IDISH, st.sampled_from(["memory/store/a.md", "memory/store/b/c.md", "/etc/x.md"]))),
        d.draw(TEXT), d.draw(maybe(IDISH))),
    "memory_store_files": lambda d, w: w.engine.memory_store_files(
        prefix=d.draw(st.one_of(IDISH, st.sampled_from(["memory/store", "memory", "../"])))),
    "tokens_revoke": lambda d, w: w.engine.tokens_revoke(d.draw(IDISH)),
    "status": lambda d, w: w.engine.status(),
    "metrics": lambda d, w: w.engine.metrics(),
    "dream_if_due": lambda d, w: w.engine.dream_if_due(),
    "sessions_roll_over": lambda d, w: w.engine.sessions_roll_over(at=d.draw(DATES)),
    "register_compaction_provider": lambda d, w: w.engine.register_compaction_provider(d.draw(ANYTHING)),
    "import_openclaw": lambda d, w: w.engine.import_openclaw(
        d.draw(st.one_of(PATHS, st.sampled_from([str(OPENCLAW_FIXTURE), str(w.home)]))),
        agent=d.draw(maybe(IDISH)), dry_run=d.draw(maybe(st.booleans())),
        config=d.draw(maybe(st.sampled_from(["keep", "force", "skip"])))),
    "import_jsonl": lambda d, w: w.engine.import_jsonl(
        d.draw(st.lists(st.one_of(PATHS, st.just(str(w.home / "exports"))), max_size=3)),
        dry_run=d.draw(maybe(st.booleans()))),
    "export_session": lambda d, w: w.engine.export_session(d.draw(key_strategy(w)), io.StringIO()),
    "export_all": lambda d, w: w.engine.export_all(d.draw(st.one_of(
        st.just(str(w.home / "exports")), IDISH.map(lambda n: str(w.home / "exports" / n.replace("\x00", "")))))),
    "dreaming_status": lambda d, w: w.engine.dreaming_status(),
    "dreaming_review": lambda d, w: w.engine.dreaming_review(limit=d.draw(NUMBERS),
                                                             caller=d.draw(maybe(key_strategy(w)))),
    "dreaming_enable": lambda d, w: w.engine.dreaming_enable(d.draw(st.one_of(st.booleans(), ANYTHING))),
    "dream": lambda d, w: w.engine.dream(phase=d.draw(maybe(st.sampled_from(["all", "light", "rem", "deep", "nap"]))),
                                         at=d.draw(DATES)),
    "memory_promote": lambda d, w: w.engine.memory_promote(
        apply=d.draw(maybe(st.booleans())), limit=d.draw(NUMBERS), min_score=d.draw(maybe(st.floats())),
        min_recall_count=d.draw(NUMBERS), min_unique_queries=d.draw(NUMBERS)),
    "memory_promote_explain": lambda d, w: w.engine.memory_promote_explain(d.draw(TEXT)),
    "memory_promote_undo": lambda d, w: w.engine.memory_promote_undo(d.draw(maybe(IDISH))),
    "rem_harness": lambda d, w: w.engine.rem_harness(path=d.draw(maybe(PATHS)), grounded=d.draw(maybe(st.booleans()))),
    "limited": lambda d, w: w.engine.limited(Limit(agent_id=d.draw(maybe(IDISH)), sandboxed=d.draw(st.booleans()))
                                             ).sessions_list(search_text=d.draw(maybe(TEXT))),
    "for_turn": lambda d, w: w.engine.for_turn(Turn.start(
        MessageRequest(d.draw(TEXT)), 0, limit=Limit(agent_id=d.draw(maybe(IDISH))))).memory_search(
        d.draw(TEXT), caller=d.draw(maybe(key_strategy(w)))),
    "rem_backfill": lambda d, w: w.engine.rem_backfill(
        path=d.draw(maybe(PATHS)), stage_short_term=d.draw(maybe(st.booleans())),
        rollback=d.draw(maybe(st.booleans())), rollback_short_term=d.draw(maybe(st.booleans()))),
}
API = {name: call for name, call in API.items() if hasattr(Engine, name)}  # methods still being added elsewhere
# Cheap, state-free or slow calls get fewer examples; the rest share the budget evenly.
SHARE = {
    "import_openclaw": 0.2, "import_jsonl": 0.3, "export_all": 0.2, "doctor": 0.2, "request": 0.5, "memory_sweep":
    0.2, "memory_status": 0.3, "memory_index": 0.3, "status": 0.2, "memory_bootstrap": 0.3, "check_storage": 0.1,
    "tokens_list": 0.2, "register_compaction_provider": 0.3, "sessions_cleanup": 0.4, "sessions_create": 0.4,
    "memory_watch": 0.1, "metrics": 0.2, "sessions_roll_over": 0.3, "dreaming_status": 0.2, "dreaming_review":
    0.2, "dreaming_enable": 0.2, "dream": 0.3, "memory_promote": 0.4, "rem_backfill": 0.4, "limited": 0.3,
    "for_turn": 0.3,
}


def test_every_public_engine_method_is_fuzzed():
    public = {name for name in dir(Engine) if not name.startswith("_") and callable(getattr(Engine, name))}
    # long-running-process helpers, and the event subscription (it takes a handler, not input)
    covered = set(API) | {"open", "close", "memory_watch", "memory_warm", "subscribe"}
    assert public <= covered, f"add these to API in tests/engine/test_fuzz.py: {sorted(public - covered)}"


@pytest.mark.parametrize("method", sorted(API))
def test_engine_api_answers_or_refuses(world, method):
    @examples(SHARE.get(method, 1.0))
    @given(data=st.data())
    def run(data):
        TRIED[f"api.{method}"] += 1
        started = time.perf_counter()
        try:
            result = API[method](data, world)
        except ClawkeepError:
            return
        finally:
            assert time.perf_counter() - started < SLOW_S, f"{method} took {time.perf_counter() - started:.1f} s"
        json_safe(result)

    providers = list(world.engine.runtime.compaction_providers)
    try:
        run()
    finally:  # a provider registered by the fuzzer must not summarise for the other tests
        world.engine.runtime.compaction_providers[:] = providers


def test_engine_open_and_memory_watch(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-open")
    names = st.text(st.characters(blacklist_categories=(), blacklist_characters="/"), max_size=30).filter(
        lambda s: s not in (".", ".."))

    @examples(0.5)
    @given(name=st.one_of(names, st.integers(5000, 9000).map(lambda n: "h" * n)), agent=maybe(IDISH),
           config=st.one_of(st.none(), st.just({}), st.just({"session": {"dmScope": "per-peer"}}), ANYTHING,
                            names.map(lambda n: str(root / n))))
    def run(name, agent, config):
        TRIED["api.open"] += 1
        try:
            with Engine.open(home=root / name, config=config, agent=agent) as eng:
                json_safe(eng.status())
        except ClawkeepError:
            pass

    run()
    with Engine.open(home=root / "watch") as eng:
        TRIED["api.memory_watch"] += 1
        eng.memory_watch()  # starts and, on close, stops the watcher threads


# --- the CLI ------------------------------------------------------------------------------------
runner = CliRunner()


def cli_verbs() -> dict[tuple[str, ...], list[Any]]:
    """Every verb of the Typer app with its click parameters (so new verbs are fuzzed too)."""
    found: dict[tuple[str, ...], list[Any]] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if isinstance(getattr(command, "commands", None), dict):  # a group (typer vendors its own click)
            for name, sub in command.commands.items():
                walk(sub, path + (name,))
        else:
            found[path] = list(command.params)

    walk(typer.main.get_command(app), ())
    return found


# Long-running servers never return on good input; their inputs are tested over HTTP and stdio
# (tests/gateway/test_gateway.py, tests/mcp/test_mcp.py).
SERVERS = {("gateway",), ("mcp",)}
VERBS = {verb: params for verb, params in cli_verbs().items() if verb not in SERVERS}
ARG = st.one_of(SMALL_TEXT, st.sampled_from(["agent:main:main", "MEMORY.md", "0", "-1", "99", "1e9",
                                             "2026-03-03", "hello", "--json", "--", "-x"]),
                st.integers(0, 40).flatmap(lambda k: BIG_TEXT.map(lambda s: s[:100_000]) if k == 0 else SMALL_TEXT))


def generic_args(d, params: list[Any]) -> list[str]:
    """Random values for a random subset of the verb's own options and arguments."""
    args: list[str] = []
    for param in params:
        if not d.draw(st.booleans()):
            continue
        if getattr(param, "param_type_name", "") == "argument":
            args.append(d.draw(ARG))
        elif getattr(param, "is_flag", False):
            args.append(param.opts[0])
        else:
            args += [param.opts[0], d.draw(ARG)]
    return args + d.draw(st.lists(ARG, max_size=2)) if d.draw(st.integers(0, 5)) == 0 else args


def some(d, *pairs: tuple[str, st.SearchStrategy]) -> list[str]:
    """Each option with its drawn value, or left out (so one bad option does not hide the others)."""
    out: list[str] = []
    for flag, values in pairs:
        if d.draw(st.booleans()):
            out += [flag, d.draw(values)]
    return out


KEY_ARGS = st.sampled_from(["agent:main:main", "agent:main:main\n", "agent:main:telegram:direct:alice", "",
                            "agent:ghost:main", "agent:main:main\udc80", "agent:main:dashboard:x"])
SPECIFIC = {
    ("message",): lambda d: [d.draw(ARG), *some(d, ("--at", DATES.map(str)), ("--message-id", IDISH),
                                                 ("--session", KEY_ARGS), ("--sender", IDISH), ("--channel", IDISH))],
    ("sessions", "search"): lambda d: [d.draw(ARG), *some(d, ("--limit", NUMBERS.map(str)), ("--as", KEY_ARGS))],
    ("memory", "search"): lambda d: [d.draw(ARG), *some(d, ("--limit", NUMBERS.map(str)),
                                                        ("--mode", st.sampled_from(["keyword", "vector", "x"])))],
    ("memory", "get"): lambda d: [d.draw(PATHS.map(lambda p: p[:100_000])),
                                  *some(d, ("--from", NUMBERS.map(str)), ("--lines", NUMBERS.map(str)))],
    ("memory", "remember"): lambda d: [d.draw(ARG)],
    ("memory", "edit"): lambda d: [d.draw(IDISH), d.draw(ARG)],
    ("sessions", "history"): lambda d: [d.draw(KEY_ARGS), *some(d, ("--message-id", IDISH), ("--as", KEY_ARGS))],
    ("sessions", "status"): lambda d: [d.draw(KEY_ARGS), *some(d, ("--as", KEY_ARGS))],
    ("sessions", "notify"): lambda d: [d.draw(KEY_ARGS), d.draw(ARG), *some(d, ("--at", DATES.map(str)))],
    ("recall",): lambda d: [d.draw(ARG), *some(d, ("--session", KEY_ARGS))],
}
CLI_SHARE = {("status",): 0.2, ("memory", "status"): 0.2, ("memory", "index"): 0.2, ("memory", "sweep"): 0.2,
             ("sessions", "cleanup"): 0.3, ("sessions", "create"): 0.3, ("memory", "items"): 0.3}


@pytest.fixture(scope="module")
def cli_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("fuzz-cli")
    for args in (["message", "hello from alice", "--channel", "telegram", "--sender", "alice"],
                 ["memory", "remember", "I prefer TypeScript"], ["sessions", "create", "--label", "x"]):
        assert runner.invoke(app, ["--home", str(home), *args]).exit_code == 0
    return home


def check_cli(home: Path, args: list[str], extra: list[str] = ()) -> None:
    started = time.perf_counter()
    result = runner.invoke(app, ["--home", str(home), *extra, *args], catch_exceptions=True)
    assert time.perf_counter() - started < SLOW_S, f"{args[:2]} took {time.perf_counter() - started:.1f} s"
    exc = result.exception
    output = (result.stdout or "") + (result.stderr or "")
    assert "Traceback" not in output, output[-2000:]
    if result.exit_code == 0:
        options = args[:args.index("--")] if "--" in args else args  # after "--", "--json" is text
        # "--json" right after another option may be that option's value (`--label --json`)
        as_flag = any(a == "--json" and (i == 0 or not options[i - 1].startswith("-"))
                      for i, a in enumerate(options))
        if as_flag and result.stdout.strip():
            json.loads(result.stdout)
        return
    if exc is None or isinstance(exc, SystemExit):  # click's own usage errors exit 2
        assert result.exit_code in (1, 2), (result.exit_code, output[-500:])
        return
    # What `clawkeep.cli.main.run` maps to exit codes: InputError → 2, StorageError → 1, else a bug.
    if isinstance(exc, InputError):
        assert str(exc).strip()
        return
    if isinstance(exc, StorageError):
        return
    raise exc


@pytest.mark.parametrize("verb", sorted(VERBS), ids=" ".join)
def test_cli_verb_exits_0_or_2(cli_home, verb, monkeypatch):
    params = VERBS[verb]
    monkeypatch.chdir(cli_home)  # `export --out x` and friends write relative paths here, not in the repo

    @examples(CLI_SHARE.get(verb, 0.6))
    @given(data=st.data())
    def run(data):
        TRIED["cli." + ".".join(verb)] += 1
        if verb in SPECIFIC and data.draw(st.booleans()):
            args = SPECIFIC[verb](data)
        else:
            args = generic_args(data, params)
        if data.draw(st.booleans()):
            args.append("--json")
        extra = data.draw(st.one_of(st.just([]), st.just([]), st.just([]),
                                    IDISH.map(lambda a: ["--agent", a]),
                                    st.sampled_from([["--agent", "ghost"], ["--config", str(cli_home / "nope.json5")],
                                                     ["--config", str(cli_home)]])))
        check_cli(cli_home, [*verb, *args], extra)

    run()


# --- config documents ---------------------------------------------------------------------------
def _aliases(model: type[BaseModel], seen: set[str]) -> None:
    for name, field in model.model_fields.items():
        seen.add(field.alias or name)
        for kind in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(kind, type) and issubclass(kind, BaseModel) and kind is not model:
                _aliases(kind, seen)


KEYS: set[str] = {"entries", "active-memory", "config", "list", "id", "providers", "internal", "session-memory",
                  "defaults", "direct", "group", "thread", "telegram", "alice", "local", "x"}
_aliases(Config, KEYS)
_aliases(ActiveMemoryConfig, KEYS)
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.integers(-3, 100),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["main", "per-peer", "per-channel-peer", "daily", "idle", "none", "tree", "all", "30d", "5m",
                     "99999999999999999999d", "FULL", "NORMAL", "hybrid", "local", "sessions", "memory", "direct",
                     "Europe/Berlin", "Mars/Olympus", "rw", "ro", "numpy", "sqlite-vec", "escalate", "off", "on"]),
    SMALL_TEXT,
)
def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    keys = st.one_of(st.sampled_from(sorted(KEYS)), st.text(max_size=8))
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=5))


DOCUMENTS = st.recursive(LEAVES, _nested, max_leaves=25)
# Keys that reach outside the temp home when an engine runs with the config (files, network).
UNSAFE = {"workspace", "extraPaths", "model", "models", "remote", "provider", "baseUrl", "url", "primary",
          "fallbacks", "llmSlug"}


def _strip_unsafe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_unsafe(v) for k, v in value.items() if k not in UNSAFE}
    if isinstance(value, list):
        return [_strip_unsafe(v) for v in value]
    return value


def _document(data: Any, mangle: int) -> str:
    try:
        text = json5.dumps(data) if mangle % 2 else json.dumps(data)
    except (TypeError, ValueError, RecursionError):
        text = repr(data)
    if mangle % 5 == 0 and text:
        cut = mangle % len(text)
        text = text[:cut] + "}{,:/*" [mangle % 6] + text[cut:]
    return text


@pytest.fixture(scope="module")
def config_home(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-config")


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a config document, inner objects included."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


# The real shape (every default, by alias), so mutations land on typed keys: session.reset.atHour = true,
# session.maintenance.pruneAfter = "99999999999999999999d", plugins.entries = 5, agents.list[0].workspace = 5 …
TEMPLATE = {**Config().model_dump(by_alias=True, exclude={"warnings"}),
            "plugins": {"entries": {"active-memory": ActiveMemoryConfig().model_dump(by_alias=True)}},
            "agents": {**Config().agents.model_dump(by_alias=True), "list": [{"id": "main", "workspace": "/tmp/x"}]}}
PATHS_IN_CONFIG = _paths(TEMPLATE)


def _set(document: dict, path: tuple, value: Any) -> dict:
    """document[path] = value, creating objects on the way; a list index makes a one-entry list."""
    where = next((i for i, key in enumerate(path) if isinstance(key, int)), None)
    if where is not None:
        entry = value if where == len(path) - 1 else _set({}, path[where + 1:], value)
        return _set(document, path[:where], [entry])
    node = document
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    return document


def _mutated(changes: list[tuple[tuple, Any]]) -> dict:
    document: dict = {}
    for path, value in changes:
        _set(document, path, value)
    return document


STRUCTURED = st.lists(st.tuples(st.sampled_from(PATHS_IN_CONFIG), st.one_of(LEAVES, LEAVES, DOCUMENTS)),
                      min_size=1, max_size=4).map(_mutated)
DEEP = st.builds(lambda open_, close, n: open_ * n + "1" + close * n,
                 st.sampled_from(["{a:", "["]), st.sampled_from(["}", "]"]), st.integers(20, 5000))


@examples(4.0)
@given(data=st.one_of(DOCUMENTS, STRUCTURED, STRUCTURED, DEEP,
                      st.dictionaries(st.sampled_from(["session", "agents", "plugins", "storage", "tools", "memory",
                                                       "hooks"]), DOCUMENTS, max_size=4)),
       mangle=st.integers(0, 1000), run_engine=st.integers(0, 3))
def test_config_loader_answers_or_refuses(config_home, data, mangle, run_engine):
    TRIED["config"] += 1
    path = config_home / "clawkeep.json5"

    def load(document: Any) -> Config | None:
        text = document if isinstance(document, str) else _document(document, mangle)
        try:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        except UnicodeError:
            return None
        try:
            return load_config(path)
        except InputError as exc:
            assert str(exc).strip() and len(str(exc)) < 5000
            return None

    load(data)  # the loader sees everything, paths and models included
    config = load(_strip_unsafe(data)) if run_engine else None
    if config is not None:  # a config that loads must also run (on paths inside the temp home only)
        config.agents.defaults.memory_search.provider = "none"
        try:
            with Engine.open(home=config_home / "home", config=config) as eng:
                eng.message("hello there, what did we decide yesterday?")
                json_safe(eng.sessions_list(preview=True))
                json_safe(eng.session_status("agent:main:main"))
                json_safe(eng.memory_search("decide", mode="keyword"))
                json_safe(eng.sessions_cleanup(dry_run=True))
        except ClawkeepError:
            pass
