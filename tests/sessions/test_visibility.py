"""Visibility (S8): self / tree / agent / all, enforced in every read path; hidden == missing."""

import pytest

from clawkeep.errors import NotFoundError
from tests.helpers.engine import open_engine


def setup(home, visibility, **session_cfg):
    cfg = {"session": {"dmScope": "per-channel-peer", **session_cfg}, "tools": {"sessions": {"visibility": visibility}}}
    eng = open_engine(home, cfg)
    alice = eng.message("alice flies to lisbon", channel="telegram", sender="alice")
    bob = eng.message("bob flies to oslo", channel="telegram", sender="bob")
    child = eng.sessions_fork(alice.session_key)
    eng.message("alice child note about lisbon hotels", session=child["key"])
    grandchild = eng.sessions_fork(child["key"])
    return eng, alice, bob, child, grandchild


def keys_seen(eng, caller):
    return {row["key"] for row in eng.sessions_list(caller=caller)}


def search_keys(eng, query, caller):
    return {h["sessionKey"] for h in eng.sessions_search(query, caller=caller)["hits"]}


def test_tree_is_the_default_and_sees_own_and_spawned(home):
    eng, alice, bob, child, grandchild = setup(home, "tree")
    assert eng.config.tools.sessions.visibility == "tree"
    assert keys_seen(eng, alice.session_key) == {alice.session_key, child["key"], grandchild["key"]}
    assert keys_seen(eng, child["key"]) == {child["key"], grandchild["key"]}
    assert search_keys(eng, "flies", alice.session_key) == {alice.session_key}
    assert search_keys(eng, "lisbon", alice.session_key) == {alice.session_key, child["key"]}


def test_self_sees_only_itself(home):
    eng, alice, bob, child, _ = setup(home, "self")
    assert keys_seen(eng, alice.session_key) == {alice.session_key}
    assert search_keys(eng, "lisbon", alice.session_key) == {alice.session_key}


def test_agent_sees_all_of_the_agent_but_not_other_agents(home):
    eng, alice, bob, *_ = setup(home, "agent")
    other = open_engine(home, {"session": {"dmScope": "per-channel-peer"}}, agent="ops")
    other.message("ops agent flies too", channel="telegram", sender="carol")
    assert bob.session_key in keys_seen(eng, alice.session_key)
    assert search_keys(eng, "flies", alice.session_key) == {alice.session_key, bob.session_key}


def test_all_crosses_agents(home):
    eng, alice, bob, *_ = setup(home, "all")
    other = open_engine(home, {"session": {"dmScope": "per-channel-peer"}}, agent="ops")
    carol = other.message("ops agent flies too", channel="telegram", sender="carol")
    assert carol.session_key in search_keys(eng, "flies", alice.session_key)
    assert carol.session_key in keys_seen(eng, alice.session_key)


def test_operator_sees_everything(home):
    eng, alice, bob, child, grandchild = setup(home, "self")
    assert {alice.session_key, bob.session_key, child["key"]} <= keys_seen(eng, None)


def test_hidden_session_is_indistinguishable_from_missing(home):
    eng, alice, bob, *_ = setup(home, "tree")
    with pytest.raises(NotFoundError) as hidden:
        eng.sessions_history(bob.session_key, caller=alice.session_key)
    with pytest.raises(NotFoundError) as missing:
        eng.sessions_history("agent:main:telegram:direct:nobody", caller=alice.session_key)
    assert str(hidden.value).replace(bob.session_key, "K") == str(missing.value).replace(
        "agent:main:telegram:direct:nobody", "K")
    with pytest.raises(NotFoundError):
        eng.session_status(bob.session_id, caller=alice.session_key)
    with pytest.raises(NotFoundError):
        eng.sessions_history(bob.session_key, message_id=bob.message_id, caller=alice.session_key)
    with pytest.raises(NotFoundError):
        eng.sessions_fork(bob.session_key, caller=alice.session_key)
    with pytest.raises(NotFoundError):
        eng.sessions_reset(bob.session_key, caller=alice.session_key)


def test_filter_applies_before_the_limit(home):
    eng, alice, bob, *_ = setup(home, "self")
    for i in range(30):
        eng.message(f"bob mentions lisbon again {i}", channel="telegram", sender="bob")
    hits = eng.sessions_search("lisbon", caller=alice.session_key, limit=5)["hits"]
    assert [h["sessionKey"] for h in hits] == [alice.session_key]


def test_main_session_tree_widens_to_its_agent(home):
    eng = open_engine(home, {"session": {"dmScope": "main"}})
    main = eng.message("owner says hi")
    group = eng.message("group chatter about kites", channel="telegram", chat_type="group", group="g1")
    assert group.session_key in keys_seen(eng, main.session_key)
    assert search_keys(eng, "kites", main.session_key) == {group.session_key}
    assert search_keys(eng, "kites", group.session_key) == {group.session_key}
    assert main.session_key not in keys_seen(eng, group.session_key)


def test_sandboxed_callers_are_clamped_to_tree(home):
    from clawkeep.sessions import service
    from clawkeep.visibility import Caller
    eng, alice, bob, *_ = setup(home, "agent")
    rows = service.list_sessions(eng.runtime, caller=Caller(alice.session_key, sandboxed=True))
    assert bob.session_key not in {r["key"] for r in rows}


@pytest.mark.sqlite_only
def test_incognito_sessions_are_private_and_never_on_disk(home):
    eng = open_engine(home, {"tools": {"sessions": {"visibility": "all"}}})
    secret = eng.sessions_create(incognito=True)
    eng.message("my incognito secret is pineapple", session=secret["key"])
    assert "incognito-" in secret["key"]
    assert [m["text"] for m in eng.sessions_history(secret["key"])["messages"]] == ["my incognito secret is pineapple"]
    main = eng.message("hello")
    assert eng.sessions_search("pineapple", caller=main.session_key)["hits"] == []
    assert eng.sessions_search("pineapple")["hits"] == []
    assert secret["key"] not in keys_seen(eng, main.session_key)
    db = (home / "agents" / "main" / "agent.sqlite").read_bytes()
    assert b"pineapple" not in db
    eng.close()
    again = open_engine(home)
    with pytest.raises(NotFoundError):
        again.sessions_history(secret["key"])


def test_unknown_calling_session_is_an_error(home):
    eng = open_engine(home)
    with pytest.raises(NotFoundError, match="calling session"):
        eng.sessions_list(caller="agent:main:telegram:direct:ghost")
