"""ClawkeepStore (langgraph from PyPI) against LangGraph's own InMemoryStore on the same operations,
clawkeep's search, namespaces kept apart, TTL, and a LangGraph graph that writes a memory in one
thread and finds it from another — on an Engine and through clawkeep.Client."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from clawkeep.integrations.langgraph import ClawkeepStore, namespace_path  # noqa: E402


def _plain(items: list[Any]) -> list[tuple]:
    return sorted((tuple(i.namespace), i.key, i.value) for i in items)


def _script(store: BaseStore) -> list[Any]:
    """One run of LangGraph store calls; the answers, comparable across stores."""
    store.put(("users", "ada"), "tea", {"kind": "drink", "name": "jasmine tea", "rating": 5})
    store.put(("users", "ada"), "bike", {"kind": "thing", "name": "green Gazelle", "rating": 3})
    store.put(("users", "bob"), "tea", {"kind": "drink", "name": "builder's tea", "rating": 4})
    store.put(("users", "ada", "work"), "desk", {"kind": "thing", "name": "standing desk", "rating": 2})
    store.put(("users", "ada"), "bike", {"kind": "thing", "name": "red Gazelle", "rating": 4})  # an update
    out: list[Any] = []
    got = store.get(("users", "ada"), "bike")
    out.append((got.key, got.value, tuple(got.namespace)))
    out.append(store.get(("users", "ada"), "nope"))
    out.append(_plain(store.search(("users", "ada"), limit=20)))
    out.append(_plain(store.search(("users",), filter={"kind": "drink"})))
    out.append(_plain(store.search(("users",), filter={"rating": {"$gte": 4}})))
    out.append(_plain(store.search(("users",), filter={"rating": {"$lt": 4}, "kind": {"$ne": "drink"}})))
    out.append(len(store.search(("users",), limit=2, offset=1)))
    out.append(sorted(store.list_namespaces()))
    out.append(sorted(store.list_namespaces(prefix=("users", "ada"))))
    out.append(sorted(store.list_namespaces(max_depth=2)))
    out.append(sorted(store.list_namespaces(suffix=("work",))))
    store.delete(("users", "bob"), "tea")
    out.append(store.get(("users", "bob"), "tea"))
    out.append([r if r is None else (r.key, r.value) for r in store.batch([])])
    return out


def test_same_answers_as_langgraphs_in_memory_store(target) -> None:
    store, _ = target
    ours = ClawkeepStore(store)
    assert _script(ours) == _script(InMemoryStore())
    # InMemoryStore keeps a namespace once named (a get creates it; deleting its last item keeps it); like
    # LangGraph's PostgresStore, a namespace here exists while it holds an item: asked of ours only
    assert ours.get(("users", "carol"), "tea") is None
    assert ours.list_namespaces() == [("users", "ada"), ("users", "ada", "work")]


def test_notes_are_markdown_and_search_is_clawkeeps(target) -> None:
    store, engine = target
    kv = ClawkeepStore(store)
    kv.put(("users", "ada"), "tea", {"text": "Ada drinks jasmine tea every morning", "mood": "calm"},
           index=["text"])
    kv.put(("users", "bob"), "tea", {"text": "Bob drinks jasmine tea at night"})
    kv.put(("users", "ada"), "secret", {"text": "jasmine code word"}, index=False)
    text = engine.memory_store_read(namespace_path(("users", "ada"))).text
    bullets = {line.split(" <!--")[0] for line in text.splitlines() if line.startswith("- ")}
    assert bullets == {"- tea: Ada drinks jasmine tea every morning", "- secret"}  # the indexed fields only
    hits = kv.search(("users", "ada"), query="jasmine tea morning")
    assert [h.key for h in hits][:1] == ["tea"] and all(h.namespace == ("users", "ada") for h in hits)
    assert hits[0].score is not None and hits[0].value["mood"] == "calm"
    bob = kv.search(("users", "bob"), query="jasmine")
    assert [(h.namespace, h.key) for h in bob] == [(("users", "bob"), "tea")]  # never Ada's lines
    assert engine.memory_search("Ada drinks jasmine", corpus="memory").results  # the notes are memory
    assert engine.memory_items() == []  # but not remembered facts: no supersession, Dreaming or edits
    assert kv.search(("users", "ada"), query="jasmine", filter={"mood": "calm"})[0].key == "tea"


def test_ttl_hides_expired_items_and_refresh_extends(target) -> None:
    store, engine = target
    kv = ClawkeepStore(store)
    kv.put(("cache",), "short", {"v": 1}, ttl=0.0005)  # minutes: 30 ms
    kv.put(("cache",), "long", {"v": 2}, ttl=60)
    kv.put(("cache",), "kept", {"v": 3})
    time.sleep(0.05)
    assert kv.get(("cache",), "short") is None
    assert [i.key for i in kv.search(("cache",))] == ["long", "kept"]
    before = _expiry(engine, "long")
    assert kv.get(("cache",), "long").value == {"v": 2}
    assert _expiry(engine, "long") >= before  # refreshed on read
    assert kv.get(("cache",), "long", refresh_ttl=False) is not None


def _expiry(engine, key: str) -> datetime:
    import json
    import re

    text = engine.memory_store_read(namespace_path(("cache",))).text
    meta = [json.loads(m) for m in re.findall(r"<!-- clawkeep-item (\{.*\}) -->", text)]
    return datetime.fromisoformat(next(m["expiresAt"] for m in meta if m["key"] == key))


def test_abatch_and_odd_namespace_labels(target) -> None:
    store, engine = target
    kv = ClawkeepStore(store)

    async def run() -> Any:
        await kv.aput(("a/b", "%2F", "ü"), "k", {"x": "slash"})
        return await kv.aget(("a/b", "%2F", "ü"), "k"), await kv.alist_namespaces()

    got, spaces = asyncio.run(run())
    assert got.value == {"x": "slash"} and spaces == [("a/b", "%2F", "ü")]
    assert [f.path for f in engine.memory_store_files()] == [namespace_path(("a/b", "%2F", "ü"))]
    assert datetime.now(UTC) - got.updated_at < timedelta(minutes=5)


class State(TypedDict):
    text: str
    reply: str


def scripted_model(state: State, config: RunnableConfig, *, store: BaseStore) -> dict:
    """A stand-in model: "remember …" stores a memory for the user, anything else looks one up."""
    user = config["configurable"]["user_id"]
    if state["text"].startswith("remember "):
        fact = state["text"].removeprefix("remember ")
        store.put(("memories", user), f"m{len(store.search(('memories', user)))}", {"text": fact})
        return {"reply": "Saved."}
    found = store.search(("memories", user), query=state["text"])
    return {"reply": found[0].value["text"] if found else "I don't know."}


def test_a_graph_remembers_in_one_thread_and_finds_it_in_another(target) -> None:
    store, _ = target
    builder = StateGraph(State)
    builder.add_node("model", scripted_model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=InMemorySaver(), store=ClawkeepStore(store))
    ada_1 = {"configurable": {"thread_id": "t1", "user_id": "ada"}}
    ada_2 = {"configurable": {"thread_id": "t2", "user_id": "ada"}}
    bob = {"configurable": {"thread_id": "t3", "user_id": "bob"}}
    assert graph.invoke({"text": "remember my locker is number 12", "reply": ""}, ada_1)["reply"] == "Saved."
    assert graph.invoke({"text": "which locker is mine", "reply": ""}, ada_2)["reply"] == "my locker is number 12"
    assert graph.invoke({"text": "which locker is mine", "reply": ""}, bob)["reply"] == "I don't know."
