"""Freshness of memory_search between turns (M2): an edited note is found by the very next tool
call, whether the engine walks the notes (a stat each), asks the kernel's change queue
(memory/changes.py, Linux inotify) or also runs the watcher a gateway runs — the watcher's
debounce never makes a search stale. Real files, a real SQLite index, a scripted model on
loopback."""

import json
import os
import sys
from pathlib import Path

import pytest

from clawkeep.memory import service
from clawkeep.memory.changes import open_queue
from tests.helpers import model_replies
from tests.helpers.engine import open_engine
from tests.helpers.scripted_server import ScriptedServer

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the change queue is Linux inotify")


def completion(text="", query=None):
    """A plain answer, or (given a query) a memory_search tool call."""
    return model_replies.completion(text, calls=[("memory_search", {"query": query})] if query is not None else ())


def searching_model(request):
    """Every user message: search memory for it; after the result: answer."""
    body = request.json()
    last = body["messages"][-1]
    if "tools" not in body:
        return completion("NONE")
    if last["role"] == "tool":
        return completion("done")
    return completion("", query=last["content"])


@pytest.fixture
def server():
    with ScriptedServer(searching_model) as srv:
        yield srv


def config_for(server, **sync):
    return {
        "models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": 5000,
                                           "retries": 0, "models": {"scripted-1": {"contextWindow": 32768}}}}},
        "agents": {"defaults": {"model": {"primary": "local/scripted-1"},
                                "memorySearch": {"provider": "none", "sync": sync}}},
        "plugins": {"entries": {"active-memory": {"enabled": False}}},
    }


def found_by_the_tool(server, eng, thread, question):
    """The snippets memory_search handed the model in this turn."""
    mark = len(server.requests)
    result = eng.message(question, session=thread)
    assert result.tool_calls == [{"name": "memory_search", "isError": False}]
    answered = server.requests[-1].json()["messages"]  # the call after the tool ran: its result is last
    tool = answered[-1]
    assert len(server.requests) == mark + 2 and tool["role"] == "tool"
    return " | ".join(hit["snippet"] for hit in json.loads(tool["content"])["results"])


MODES = {
    "kernel queue": ({}, False),  # the default on Linux: the change queue, no watcher
    "kernel queue and watcher": ({}, True),  # the gateway: a watcher re-indexes 1.5 s after an edit
    "stat per file": ({"kernelEvents": False}, False),  # no queue: every search walks the notes
}


@pytest.mark.parametrize("mode", list(MODES))
def test_a_note_edited_between_turns_is_what_the_next_tool_call_finds(home, server, mode):
    sync, watch = MODES[mode]
    eng = open_engine(home, config_for(server, **sync))
    workspace = Path(eng.memory_status()["workspace"])
    (workspace / "memory").mkdir(parents=True)
    note = workspace / "memory" / "2026-03-02.md"
    note.write_text("- the bike is parked on level three\n")
    thread = eng.sessions_create()["key"]
    if watch:
        eng.memory_watch()
    assert "level three" in found_by_the_tool(server, eng, thread, "where is the bike parked")

    note.write_text("- the bike is parked on level seven now\n")  # rewritten in place
    assert "level seven" in found_by_the_tool(server, eng, thread, "where is the bike parked")

    with note.open("a") as handle:  # appended to
        handle.write("- the scooter is charging in the cellar\n")
    assert "cellar" in found_by_the_tool(server, eng, thread, "where is the scooter charging")

    draft = note.with_name("2026-03-02.md.tmp")  # an editor's atomic save: a temporary renamed over it
    draft.write_text("- the bike is parked by the bakery\n")
    os.replace(draft, note)
    assert "bakery" in found_by_the_tool(server, eng, thread, "where is the bike parked")

    (workspace / "memory" / "trips").mkdir()  # a new folder, and a note in it
    (workspace / "memory" / "trips" / "alps.md").write_text("- the alps trip starts at the glacier hut\n")
    assert "glacier hut" in found_by_the_tool(server, eng, thread, "where does the alps trip start")

    (workspace / "memory" / "trips" / "alps.md").unlink()
    assert "glacier" not in found_by_the_tool(server, eng, thread, "where does the alps trip start")

    (workspace / "MEMORY.md").write_text("- the spare helmet hangs behind the door\n")
    assert "behind the door" in found_by_the_tool(server, eng, thread, "where is the spare helmet")
    eng.close()


def index_of(eng):
    return service.open_index(eng.runtime)


@linux_only
def test_with_the_queue_an_unchanged_workspace_is_not_walked_and_an_edit_is(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    workspace = Path(eng.memory_status()["workspace"])
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "a.md").write_text("- apples in the blue crate\n")
    index = index_of(eng)
    assert index.change_queue() is not None
    assert index.refresh().indexed == ["memory/a.md"]  # the first check of a process walks
    assert index.refresh() is None  # nothing changed: no walk
    # what the index never reads is no reason to walk: other files of the workspace, hidden
    # notes, an editor's temporary file, the engine's write lock
    (workspace / "SOUL.md").write_text("be kind\n")
    (workspace / "memory" / ".draft.md").write_text("- hidden\n")
    (workspace / "memory" / "a.md.swp").write_text("swap\n")
    (workspace / ".clawkeep").mkdir(exist_ok=True)  # PostgreSQL: the mirror keeps its state here already
    (workspace / ".clawkeep" / "write.lock").write_text("")
    assert index.refresh() is None
    (workspace / "memory" / "a.md").write_text("- apples in the red crate\n")
    report = index.refresh()
    assert report is not None and report.indexed == ["memory/a.md"]
    assert "red crate" in eng.memory_search("apples crate")["results"][0]["snippet"]
    eng.close()


@linux_only
def test_a_linked_note_is_walked_every_time_since_its_target_changes_elsewhere(home):
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    workspace = Path(eng.memory_status()["workspace"])
    (workspace / "memory").mkdir(parents=True)
    (workspace / "projects").mkdir()  # inside the workspace, but not a folder the queue watches
    target = workspace / "projects" / "plan.md"
    target.write_text("- the kiln is fired on Fridays\n")
    (workspace / "memory" / "plan.md").symlink_to(target)
    assert "Fridays" in eng.memory_search("when is the kiln fired")["results"][0]["snippet"]
    target.write_text("- the kiln is fired on Mondays\n")  # no event in the notes folder
    assert "Mondays" in eng.memory_search("when is the kiln fired")["results"][0]["snippet"]
    eng.close()


@linux_only
def test_another_writer_of_the_index_makes_the_next_check_walk(home):
    config = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
    eng = open_engine(home, config)
    workspace = Path(eng.memory_status()["workspace"])
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "a.md").write_text("- the boat is moored at jetty four\n")
    index = index_of(eng)
    index.refresh()
    assert index.refresh() is None
    other = open_engine(home, config)  # another process's engine on the same index, here in-process
    other.memory_index(force=True)  # cleared and rebuilt: this engine must not trust its last walk
    assert index.refresh() is not None
    assert index.refresh() is None
    assert "jetty four" in eng.memory_search("where is the boat moored")["results"][0]["snippet"]
    other.close()
    eng.close()


@linux_only
def test_a_forked_child_never_reads_its_parents_queue(tmp_path):
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    queue = open_queue(workspace)
    assert queue is not None and queue.changed()  # never armed: nothing is known
    queue.take()
    assert not queue.changed()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the inherited queue knows nothing about this process
        os.close(read)
        os.write(write, b"1" if queue.changed() else b"0")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    assert answer == b"1"
    assert not queue.changed()  # the parent's events are still its own
    (workspace / "memory" / "b.md").write_text("- new\n")
    assert queue.changed()
    queue.close()
    assert queue.changed()  # closed: nothing is known any more


@linux_only
def test_a_workspace_reached_through_a_link_that_is_pointed_elsewhere_is_walked_again(home, tmp_path):
    first, second = tmp_path / "ws-one", tmp_path / "ws-two"
    for folder, where in ((first, "the attic"), (second, "the garage")):
        (folder / "memory").mkdir(parents=True)
        (folder / "memory" / "tools.md").write_text(f"- the ladder is in {where}\n")
    link = tmp_path / "workspace"
    link.symlink_to(first)
    eng = open_engine(home, {"agents": {"defaults": {"workspace": str(link), "memorySearch": {"provider": "none"}}}})
    assert "attic" in eng.memory_search("where is the ladder")["results"][0]["snippet"]
    swap = tmp_path / "workspace.new"  # retargeted the way `ln -sfn` does it: no event in either folder
    swap.symlink_to(second)
    os.replace(swap, link)
    found = eng.memory_search("where is the ladder")["results"][0]["snippet"]
    if eng.config.storage.url is None:  # the files are the memory: the new folder's are indexed
        assert "garage" in found
    else:  # PostgreSQL: the shared documents are; the new folder's other text is kept aside, not lost
        assert "attic" in found
        kept = list((second / "memory" / ".conflicts").glob("*.md"))
        assert [p.read_text() for p in kept] == ["- the ladder is in the garage\n"]
    eng.close()
