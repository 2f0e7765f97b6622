"""Conformance: list_sessions / count_sessions answer the filter themselves, newest first."""

from clawkeep.storage import SessionFilter

from ..records import session


def ids(store, **flt):
    return [s.session_id for s in store.list_sessions(SessionFilter(**flt))]


def test_kind_label_activity_limit_and_order(store):
    rows = [session(kind="direct", label="Trip", updated_at=3_000, session_id="a"),
            session(kind="group", label="trip", updated_at=5_000, session_id="b"),
            session(kind="direct", label=None, updated_at=1_000, session_id="c"),
            session(kind="cron", label="ÉTÉ", updated_at=4_000, session_id="d")]
    for r in rows:
        store.insert_session(r)
    assert ids(store) == ["b", "d", "a", "c"]
    assert ids(store, kinds=("direct",)) == ["a", "c"]
    assert ids(store, kinds=("direct", "cron")) == ["d", "a", "c"]
    assert ids(store, kinds=()) == []
    assert ids(store, label="TRIP") == ["b", "a"]
    assert ids(store, label="été") == ["d"]  # case-insensitive beyond ASCII
    assert ids(store, updated_since=3_000) == ["b", "d", "a"]
    assert ids(store, updated_since=-(10**30)) == ["b", "d", "a", "c"]
    assert ids(store, updated_since=10**30) == []
    assert ids(store, limit=2) == ["b", "d"]
    assert store.count_sessions() == 4
    assert store.count_sessions(SessionFilter(kinds=("direct",), updated_since=2_000)) == 1


def test_archived_sessions_only_on_request(store):
    live, gone = session(session_id="live"), session(session_id="gone", archived_at=9)
    store.insert_session(live)
    store.insert_session(gone)
    assert ids(store) == ["live"]
    assert sorted(ids(store, include_archived=True)) == ["gone", "live"]
    assert store.count_sessions(SessionFilter(include_archived=True)) == 2


def test_children_and_descendants(store):
    tree = {"root": None, "c1": "root", "c2": "root", "g1": "c1", "gg1": "g1", "x": None, "xc": "x",
            "arch": "c2", "below-arch": "arch"}
    for n, (sid, parent) in enumerate(tree.items()):
        store.insert_session(session(session_id=sid, parent_session_id=parent, updated_at=n,
                                     archived_at=1 if sid == "arch" else None))
    assert sorted(ids(store, parent_session_id="root")) == ["c1", "c2"]
    # an archived session ends its branch: neither it nor what hangs below it is reached
    assert sorted(ids(store, descendants_of=("root",))) == ["c1", "c2", "g1", "gg1"]
    assert sorted(ids(store, descendants_of=("root",), include_archived=True)) == [
        "arch", "below-arch", "c1", "c2", "g1", "gg1"]
    assert sorted(ids(store, descendants_of=("c1", "x"))) == ["g1", "gg1", "xc"]
    assert ids(store, descendants_of=("gg1",)) == []
    assert ids(store, descendants_of=()) == []
    assert sorted(ids(store, descendants_of=("root",), kinds=("direct",))) == ["c1", "c2", "g1", "gg1"]


def test_a_parent_cycle_does_not_loop(store):
    store.insert_session(session(session_id="p", parent_session_id="q"))
    store.insert_session(session(session_id="q", parent_session_id="p"))
    assert sorted(ids(store, descendants_of=("p",))) == ["p", "q"]
