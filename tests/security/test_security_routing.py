"""Names a caller controls never lose or merge data (issue: security review items 4, 5, 8).

- incognito comes only from `sessions create --incognito`, never from a sender/group/thread id;
- client message ids are unique per conversation (channel + account + chat), not per agent;
- keys are injective: ids are escaped, not folded, and a key's kind is read by position.
"""

import pytest

from clawkeep.config import SessionConfig
from clawkeep.routing import Inbound, parse_key, route
from tests.helpers.engine import open_engine


def cfg(**kw) -> SessionConfig:
    return SessionConfig.model_validate(kw)


@pytest.mark.parametrize("inbound", [
    Inbound(channel="telegram", sender="incognito-alice"),
    Inbound(channel="telegram", sender="a", chat_type="group", group="incognito-room"),
    Inbound(channel="telegram", sender="a", chat_type="group", group="g1", thread="incognito-t"),
    Inbound(channel="incognito-chat", sender="bob"),
])
def test_caller_ids_starting_incognito_are_stored_on_disk(home, inbound):
    engine = open_engine(home, {"session": {"dmScope": "per-channel-peer"}})
    sent = engine.message("the parcel code is 7781", channel=inbound.channel, sender=inbound.sender,
                          chat_type=inbound.chat_type, group=inbound.group, thread=inbound.thread)
    assert not parse_key(sent.session_key).incognito
    engine.close()
    reopened = open_engine(home, {"session": {"dmScope": "per-channel-peer"}})
    hits = reopened.sessions_search("7781")["hits"]
    assert [h["messageId"] for h in hits] == [sent.message_id]  # acknowledged and durable


def test_only_sessions_create_makes_an_incognito_thread(engine):
    thread = engine.sessions_create(incognito=True)
    assert parse_key(thread["key"]).incognito
    assert not parse_key("agent:main:telegram:direct:incognito-x").incognito
    assert not parse_key("agent:main:slack:group:incognito-x").incognito
    assert not parse_key("agent:main:coding:incognito-x").incognito


def test_client_message_ids_are_scoped_to_the_conversation(home):
    engine = open_engine(home, {"session": {"dmScope": "per-channel-peer"}})
    bob = engine.message("bob's order 1001", channel="telegram", sender="bob", message_id="1001")
    alice = engine.message("alice's order 1001", channel="telegram", sender="alice", message_id="1001")
    assert not alice.duplicate and bob.message_id == "1001"
    assert alice.session_key != bob.session_key and bob.session_key not in str(alice.to_json())
    assert alice.message_id.startswith("1001#") and alice.client_message_id == "1001"  # bob's id is taken
    # same number in a group, on another account, or on another channel: all different messages
    group = engine.message("group 1001", channel="telegram", sender="bob", chat_type="group", group="g",
                           message_id="1001")
    other_account = engine.message("acct 1001", channel="telegram", account="bot2", sender="bob",
                                   message_id="1001")
    other_channel = engine.message("slack 1001", channel="slack", sender="bob", message_id="1001")
    assert not any(r.duplicate for r in (group, other_account, other_channel))
    # a real re-delivery from the same chat is still recognised
    again = engine.message("bob's order 1001", channel="telegram", sender="bob", message_id="1001")
    assert again.duplicate and again.message_id == bob.message_id
    assert len(engine.sessions_search("1001")["hits"]) == 5


def test_client_message_id_reopens_its_interval(engine):
    first = engine.message("before the reset", channel="telegram", sender="a", message_id="77")
    engine.message("/reset", channel="telegram", sender="a")
    view = engine.sessions_history(first.session_key, message_id="77")
    assert [m["text"] for m in view["messages"]] == ["before the reset"]
    assert view["messages"][0]["clientMessageId"] == "77"


# (`cron`, `hook`, `heartbeat` and `subagent` as a channel name mean a system origin by design.)
@pytest.mark.parametrize("channel", ["dm", "direct", "dashboard", "thread", "main", "coding", "group"])
def test_a_channel_named_like_a_key_word_keeps_its_group_kind(channel):
    group = route(Inbound(channel=channel, sender="a", chat_type="group", group="g1"), "main", cfg())
    assert (group.kind, group.chat_type) == ("group", "group")
    thread = route(Inbound(channel=channel, sender="a", chat_type="group", group="g1", thread="t"), "main", cfg())
    assert (thread.kind, thread.chat_type) == ("thread", "group")


@pytest.mark.parametrize("group", ["direct", "dm", "thread", "group"])
def test_a_group_named_like_a_key_word_stays_a_group(group):
    routed = route(Inbound(channel="slack", sender="a", chat_type="group", group=group), "main", cfg())
    assert routed.kind == "group"


def test_an_account_named_group_keeps_a_dm_a_dm():
    c = cfg(dmScope="per-account-channel-peer")
    routed = route(Inbound(channel="telegram", account="group", sender="bob"), "main", c)
    assert routed.kind == "direct" and routed.chat_type == "direct"


def test_peer_ids_are_not_merged():
    c = cfg(dmScope="per-channel-peer")
    senders = ["@alice:example.org", "@alice-example.org", "@alice example.org", "@alice%3aexample.org",
               "@alice_example.org", "@alice\texample.org"]
    keys = {route(Inbound(channel="matrix", sender=s), "main", c).key for s in senders}
    assert len(keys) == len(senders)
    for key in keys:
        assert parse_key(key).kind == "direct"


def test_peers_that_differ_only_in_case_are_one_peer():
    """Decision: ids are case-insensitive, as in OpenClaw (and identityLinks, SPEC S1)."""
    c = cfg(dmScope="per-channel-peer")
    assert route(Inbound(channel="x", sender="ALICE"), "main", c).key == route(
        Inbound(channel="x", sender="alice"), "main", c).key


def test_identity_links_match_raw_ids_with_colons():
    c = cfg(dmScope="per-peer", identityLinks={"alice": ["matrix:@alice:example.org", "telegram:alice"]})
    assert route(Inbound(channel="matrix", sender="@Alice:example.org"), "main", c).key == "agent:main:direct:alice"
    assert route(Inbound(channel="matrix", sender="@alice-example.org"), "main", c).key != "agent:main:direct:alice"


def test_escaped_keys_round_trip_through_parse():
    routed = route(Inbound(channel="matrix", sender="@bob:ex.org", thread="a b"), "main",
                   cfg(dmScope="per-channel-peer"))
    assert routed.key == "agent:main:matrix:direct:@bob%3Aex.org:thread:a%20b"
    assert parse_key(routed.key).kind == "thread"


@pytest.mark.sqlite_only
def test_a_version_2_database_gains_scoped_client_ids(home):
    import sqlite3

    engine = open_engine(home)
    old = engine.message("written before the upgrade")
    engine.close()
    path = home / "agents" / "main" / "agent.sqlite"
    with sqlite3.connect(path) as conn:  # make it look like schema 2: no client columns
        conn.execute("DROP INDEX entries_client")
        conn.execute("DROP INDEX entries_client_id")
        conn.execute("ALTER TABLE entries DROP COLUMN client_scope")
        conn.execute("ALTER TABLE entries DROP COLUMN client_id")
        conn.execute("PRAGMA user_version = 2")
    engine = open_engine(home)
    first = engine.message("after the upgrade", message_id="9")
    assert engine.message("after the upgrade", message_id="9").duplicate
    assert [m["messageId"] for m in engine.sessions_history(first.session_key)["messages"]] == [
        old.message_id, first.message_id]
