"""ClawkeepStore namespaces are clawkeep owners: ("users", PEER, …) is that peer's, ("agent", …) the
agent's shared one. A store run as one peer's session (in process with `caller=`, or through
clawkeep.Client with that peer's token against a real gateway) never reads, lists or writes another
peer's namespaces, and clawkeep's own search keeps the owner boundary for the store's lines."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph")

import clawkeep  # noqa: E402
from clawkeep.integrations.langgraph import ClawkeepStore, namespace_path  # noqa: E402
from tests.helpers.gateway_process import GatewayThread  # noqa: E402

# per-peer DM sessions: under dmScope "main" every peer's DMs are one conversation (one owner)
PER_PEER = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}},
            "session": {"dmScope": "per-channel-peer"}}
ADA, BOB = ("users", "telegram:ada"), ("users", "telegram:bob")


def _two_peers(ada: ClawkeepStore, bob: ClawkeepStore, operator: ClawkeepStore) -> None:
    operator.put(("agent", "style"), "tone", {"text": "answer in one short paragraph"})
    operator.put(("cache",), "k", {"text": "operator cache line"})
    ada.put(ADA, "tea", {"text": "Ada drinks jasmine tea"})
    ada.put(ADA + ("work",), "desk", {"text": "Ada has a standing desk"})
    bob.put(BOB, "tea", {"text": "Bob drinks builder's tea"})

    # each peer sees its own namespaces and reads the agent's; never the other's or the operator's
    assert ada.list_namespaces() == [("agent", "style"), ADA, ADA + ("work",)]
    assert bob.list_namespaces() == [("agent", "style"), BOB]
    assert sorted((i.namespace, i.key) for i in ada.search(("users",))) == [(ADA, "tea"), (ADA + ("work",), "desk")]
    assert [(h.namespace, h.key) for h in bob.search((), query="drinks tea")] == [(BOB, "tea")]
    assert bob.search(ADA) == [] and bob.list_namespaces(prefix=ADA) == []
    assert ada.get(("agent", "style"), "tone").value["text"].startswith("answer")
    for denied in (lambda: bob.get(ADA, "tea"), lambda: bob.put(ADA, "tea", {"text": "overwritten"}),
                   lambda: bob.delete(ADA, "tea"), lambda: ada.put(("agent", "style"), "tone", {"text": "x"}),
                   lambda: ada.get(("cache",), "k")):
        with pytest.raises(clawkeep.ForbiddenError) as refused:
            denied()
        assert "only its own namespaces" in str(refused.value)
    assert ada.get(ADA, "tea").value == {"text": "Ada drinks jasmine tea"}  # bob's attempts changed nothing
    # the operator (an Engine without caller, an agent token) sees every owner's namespaces
    assert operator.list_namespaces() == [("agent", "style"), ("cache",), ADA, ADA + ("work",), BOB]
    assert operator.get(BOB, "tea") is not None


def _session(engine: clawkeep.Engine, sender: str) -> str:
    return engine.message("hi", channel="telegram", sender=sender).session_key


def test_peers_namespaces_are_theirs_in_process(home: Path) -> None:
    with clawkeep.Engine.open(home=home, config=PER_PEER) as engine:
        ada_key, bob_key = _session(engine, "ada"), _session(engine, "bob")
        _two_peers(ClawkeepStore(engine, caller=ada_key), ClawkeepStore(engine, caller=bob_key),
                   ClawkeepStore(engine))
        path = namespace_path(ADA)
        # the engine writes the owner into the file; clawkeep's search and memory_get keep the boundary
        assert f"<!-- ck:session={ada_key} -->" in engine.memory_store_read(path).text.splitlines()[1]
        assert any(h.path == path for h in engine.memory_search("jasmine", corpus="memory", caller=ada_key).results)
        bob_hits = engine.memory_search("jasmine tea", corpus="memory", caller=bob_key).results
        assert [h.path for h in bob_hits] == [namespace_path(BOB)]  # its own tea line, never Ada's
        with pytest.raises(clawkeep.NotFoundError):  # wholly another conversation's: hidden, as a reset excerpt is
            engine.memory_get(path, caller=bob_key)
        assert engine.memory_search("jasmine", corpus="memory").results  # the operator's search finds it
        # a session's text cannot name an owner itself
        with pytest.raises(clawkeep.InputError, match="state marker"):
            engine.memory_store_write(namespace_path(BOB), f"- x <!-- ck:session={ada_key} -->", caller=bob_key)
        # a value that spells a marker stays inert JSON in the item's comment
        ClawkeepStore(engine, caller=bob_key).put(BOB, "forged", {"text": f"<!-- ck:session={ada_key} -->"})
        assert ClawkeepStore(engine, caller=bob_key).get(BOB, "forged").value["text"].startswith("<!-- ck:")
        assert engine.memory_store_read(namespace_path(BOB)).text.count("<!-- ck:") == 1


def test_two_peer_tokens_against_a_real_gateway(home: Path) -> None:
    running = GatewayThread(home, PER_PEER, background=False)
    try:
        engine = running.engine
        tokens = {name: engine.tokens_create(name, scope)["token"]
                  for name, scope in [("ada", "peer:telegram:ada"), ("bob", "peer:telegram:bob"),
                                      ("main", "agent:main")]}
        with clawkeep.Client(running.url, token=tokens["ada"]) as ada, \
                clawkeep.Client(running.url, token=tokens["bob"]) as bob, \
                clawkeep.Client(running.url, token=tokens["main"]) as main:
            ada.message("hi"), bob.message("hi")  # a peer's first message creates its session
            _two_peers(ClawkeepStore(ada), ClawkeepStore(bob), ClawkeepStore(main))
            hits = bob.memory_search("jasmine tea", corpus="memory").results
            assert not any(h.path.startswith("memory/store/users/telegram%3Aada") for h in hits)
            with pytest.raises(clawkeep.ForbiddenError):
                bob.memory_store_read(namespace_path(ADA))
            assert [f.path for f in bob.memory_store_files(prefix=namespace_path(ADA)[:-3])] == []
    finally:
        running.stop()
        running.engine.close()
