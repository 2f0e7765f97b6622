"""Routing (S1): dmScope modes, identityLinks, key shapes with a kind, random ids."""

import uuid

import pytest

from clawkeep.config import SessionConfig
from clawkeep.errors import InputError
from clawkeep.routing import Inbound, parse_key, route
from clawkeep.routing.keys import dashboard_key, new_session_id


def cfg(**kw) -> SessionConfig:
    return SessionConfig.model_validate(kw)


DM = Inbound(channel="Telegram", account="Bot1", sender="Alice")


@pytest.mark.parametrize("scope, key", [
    ("main", "agent:main:main"),
    ("per-peer", "agent:main:direct:alice"),
    ("per-channel-peer", "agent:main:telegram:direct:alice"),
    ("per-account-channel-peer", "agent:main:telegram:bot1:direct:alice"),
])
def test_dm_scope_modes(scope, key):
    routed = route(DM, "main", cfg(dmScope=scope))
    assert routed.key == key
    assert routed.chat_type == "direct"
    assert routed.kind == ("main" if scope == "main" else "direct")


def test_per_account_defaults_account_to_default():
    routed = route(Inbound(channel="slack", sender="bob"), "main", cfg(dmScope="per-account-channel-peer"))
    assert routed.key == "agent:main:slack:default:direct:bob"


def test_identity_links_merge_channels_case_insensitively():
    links = {"alice": ["telegram:alice", "Slack:Alice_W"], "bob": ["bob123"]}
    c = cfg(dmScope="per-peer", identityLinks=links)
    tg = route(Inbound(channel="telegram", sender="ALICE"), "main", c)
    sl = route(Inbound(channel="slack", sender="alice_w"), "main", c)
    bare = route(Inbound(channel="discord", sender="bob123"), "main", c)
    assert tg.key == sl.key == "agent:main:direct:alice"
    assert bare.key == "agent:main:direct:bob"
    other = route(Inbound(channel="slack", sender="alice"), "main", c)
    assert other.key == "agent:main:direct:alice"  # slack:alice is not linked; raw id happens to be "alice"
    carol = route(Inbound(channel="slack", sender="carol"), "main", c)
    assert carol.key == "agent:main:direct:carol"


def test_identity_links_first_match_in_file_order_wins():
    c = cfg(dmScope="per-peer", identityLinks={"first": ["x:1"], "second": ["x:1"]})
    assert route(Inbound(channel="x", sender="1"), "main", c).key == "agent:main:direct:first"


def test_identity_links_ignored_under_main():
    c = cfg(dmScope="main", identityLinks={"alice": ["telegram:alice"]})
    assert route(Inbound(channel="telegram", sender="alice"), "main", c).key == "agent:main:main"


def test_group_channel_thread_keys():
    c = cfg(dmScope="per-channel-peer")
    group = route(Inbound(channel="telegram", sender="a", chat_type="group", group="-100123"), "main", c)
    assert (group.key, group.kind, group.chat_type) == ("agent:main:telegram:group:-100123", "group", "group")
    chan = route(Inbound(channel="slack", sender="a", chat_type="channel", group="C42"), "main", c)
    assert (chan.key, chan.kind) == ("agent:main:slack:channel:c42", "channel")
    thread = route(Inbound(channel="slack", sender="a", chat_type="channel", group="C42", thread="1700.1"), "main", c)
    assert (thread.key, thread.kind) == ("agent:main:slack:channel:c42:thread:1700.1", "thread")
    dm_thread = route(Inbound(channel="slack", sender="a", thread="t9"), "main", c)
    assert dm_thread.key == "agent:main:slack:direct:a:thread:t9" and dm_thread.kind == "thread"


def test_group_needs_group_id_and_chat_type_is_checked():
    with pytest.raises(InputError, match="needs a group id"):
        route(Inbound(chat_type="group"), "main", cfg())
    with pytest.raises(InputError, match="chat type 'room2' is not allowed"):
        route(Inbound(chat_type="room2"), "main", cfg())


@pytest.mark.parametrize("channel, sender, key, kind", [
    ("cron", "nightly-report", "agent:main:cron:nightly-report", "cron"),
    ("hook", "gh-push", "agent:main:hook:gh-push", "hook"),
    ("heartbeat", "x", "agent:main:heartbeat", "heartbeat"),
    ("subagent", "6d1f", "agent:main:subagent:6d1f", "subagent"),
])
def test_system_origins_get_their_own_key_shapes(channel, sender, key, kind):
    routed = route(Inbound(channel=channel, sender=sender), "main", cfg(dmScope="per-peer"))
    assert (routed.key, routed.kind, routed.origin) == (key, kind, kind)


def test_dashboard_and_incognito_keys():
    key = dashboard_key("main")
    parsed = parse_key(key)
    assert parsed.kind == "dashboard" and not parsed.incognito
    assert uuid.UUID(key.rsplit(":", 1)[1]).version == 4
    secret = parse_key(dashboard_key("main", incognito=True))
    assert secret.incognito and "incognito-" in secret.key


def test_key_kinds_classified():
    assert parse_key("agent:main:main").kind == "main"
    assert parse_key("agent:ops:coding:repo-x").kind == "coding"
    assert parse_key("agent:main:telegram:group:g1").kind == "group"
    assert parse_key("agent:main:direct:bob").kind == "direct"


@pytest.mark.parametrize("bad", ["", "main", "agent:", "agent:main", "agent:Main Bot:main", "agent:main::x",
                                 "agent:main:has space", "x" * 600])
def test_invalid_keys_are_rejected_with_a_message(bad):
    with pytest.raises(InputError, match="session key"):
        parse_key(bad)


def test_invalid_agent_id():
    with pytest.raises(InputError, match="agent id"):
        route(Inbound(), "Bad Agent!", cfg())


def test_session_ids_are_random_v4():
    ids = {new_session_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(uuid.UUID(i).version == 4 for i in ids)
