"""Corrections of remembered items by a conversation (the model's memory_edit and memory_forget,
issue 33 item 10), with undo.

A correction never rewrites or deletes a line: the trail is kept, as with supersession (M8).

- edit: the new text goes through the write filters and supersession exactly as
  `memory_remember` does (`service.plan_remember`); it is written as a new line carrying
  `edits=<old id>`, and the old line is marked `supersededBy=<new id>`. When an active line
  already says the new text, the old line is superseded by that one (`mergedBy=edit`).
- forget: the line is marked `forgotten=<day>` (and `supersededBy=forgotten`, so every reader
  that leaves superseded lines out — search for a session, recall, the bootstrap files,
  Dreaming — leaves it out too).
- undo (by the id a correction answered with as `undo`): a forgotten line is active again; the
  line an edit wrote is retired (`undone=<day>`) and the lines it superseded are active again.

Owner boundary: a conversation corrects only lines it may see and owns — its own lines, and
shared lines (no owner) where memory is shared across conversations anyway, the same rule that
lets its `memory_remember` supersede a line (`service._writable_by`). A line it may not see is
"not found", exactly like a missing one. The operator (owner None) may correct any line.
"""

from __future__ import annotations

from .. import api
from ..config.active_memory import remember_across_conversations
from ..errors import InputError, NotFoundError
from ..events import MemoryRefused, MemoryWritten
from ..routing.keys import parse_key
from ..runtime import Runtime
from . import items, service
from .owners import visible_to
from .workspace import ensure_workspace

FORGOTTEN = "forgotten"  # the supersededBy value of a forgotten line (no item has this id)
_UNFORGET = ("forgotten", "forgottenBy", "supersededBy")


def resolve(rt: Runtime, item_id: str | None, old_text: str | None, owner: str | None) -> str:
    """The id of the line to correct: `item_id`, or the one active line `owner` may correct whose
    text is `old_text` (as memory_search or memory_get showed it; else the one line containing it)."""
    if (item_id is None) == (old_text is None):
        raise InputError("name the line to correct with exactly one of itemId (the id memory_remember answered "
                         "with) or oldText (the line's current text, as memory_search or memory_get showed it)")
    if item_id is not None:
        return item_id
    assert old_text is not None
    wanted = " ".join(old_text.split()).strip(" -").lower()
    if not wanted:
        raise InputError("oldText is empty; give the line's current text")
    day, across = service.today(rt), remember_across_conversations(rt.config)
    mine = [i for i in service.writable_items(rt, owner, day)
            if visible_to(i.attrs.get("session"), owner, across=across)]
    found = [i for i in mine if i.text.strip().lower() == wanted] or [i for i in mine if wanted in i.text.lower()]
    if not found:
        raise NotFoundError(f"no active memory line you may correct says {old_text[:80]!r}; memory_search shows "
                            "the lines with their text")
    if len(found) > 1:
        listed = "; ".join(f"{i.id}: {i.text[:60]}" for i in found[:5])
        raise InputError(f"oldText {old_text[:80]!r} matches {len(found)} lines ({listed}); give more of the text "
                         "or the itemId")
    return found[0].id


def edit(rt: Runtime, item_id: str, text: str, owner: str | None) -> api.MemoryChange:
    """Correct item `item_id` to `text` as the conversation `owner` (see the module docstring)."""
    _writable_workspace(rt, owner)
    old = _own_active_item(rt, item_id, owner)
    day = service.today(rt)
    if items.neutralise(items.strip_request(text)).strip() == old.text.strip():
        return api.MemoryChange(status="unchanged", item=old.shape(day))
    active = [i for i in service.writable_items(rt, owner, day) if i.id != old.id]
    plan = service.plan_remember(rt, text, owner=owner, active=active)
    if plan.status == "refused":
        rt.events.publish(MemoryRefused(rt.now(), rt.agent_id, _source(owner), plan.reason or "", plan.fact, owner))
        return api.MemoryChange(status="refused", reason=plan.reason, item=old.shape(day))
    ws = ensure_workspace(service.workspace(rt))
    new = None
    if plan.status == "store":
        plan, new = service._store(rt, ws, text, plan, force=False, owner=owner, day=day,
                                   extra={"edits": old.id}, leave_out=old.id)
    if new is None:  # an active line already says it: the old one is merged into that line
        assert plan.same is not None
        items.set_attr(ws, old, supersededBy=plan.same.id, mergedBy="edit")
        _written(rt, "edit", old, owner)
        return api.MemoryChange(status="edited", item=plan.same.shape(day), previous=_now(rt, old).shape(day),
                                undo=old.id)
    items.set_attr(ws, old, supersededBy=new.id)
    superseded = [i.id for i in plan.conflicts or []]
    _written(rt, "edit", new, owner, superseded=(old.id, *superseded))
    return api.MemoryChange(status="edited", item=new.shape(day), previous=_now(rt, old).shape(day),
                            superseded=superseded or None, undo=new.id)


def forget(rt: Runtime, item_id: str, owner: str | None) -> api.MemoryChange:
    """Retire item `item_id` as the conversation `owner`; kept in its file, undoable."""
    _writable_workspace(rt, owner)
    old = _own_active_item(rt, item_id, owner)
    day = service.today(rt)
    marks = {"supersededBy": FORGOTTEN, "forgotten": day.isoformat()}
    if owner is not None:
        marks["forgottenBy"] = owner
    items.set_attr(service.workspace(rt), old, **marks)
    _written(rt, "forget", old, owner)
    return api.MemoryChange(status="forgotten", previous=_now(rt, old).shape(day), undo=old.id)


def undo(rt: Runtime, item_id: str, owner: str | None) -> api.MemoryChange:
    """Undo the correction that answered with `undo: item_id`."""
    _writable_workspace(rt, owner)
    item = _own_item(rt, item_id, owner)
    ws, day = service.workspace(rt), service.today(rt)
    if item.attrs.get("forgotten"):
        items.clear_attrs(ws, item, *_UNFORGET)
        _written(rt, "undo", item, owner)
        return api.MemoryChange(status="undone", item=_now(rt, item).shape(day))
    if item.attrs.get("mergedBy") == "edit" and item.superseded_by:
        items.clear_attrs(ws, item, "supersededBy", "mergedBy")
        _written(rt, "undo", item, owner)
        return api.MemoryChange(status="undone", item=_now(rt, item).shape(day))
    edited = item.attrs.get("edits")
    if not edited or item.attrs.get("undone"):
        raise InputError(f"memory item {item_id!r} is not the result of a correction that can be undone; pass the "
                         "`undo` id a memory_edit or memory_forget answered with")
    restored = [i for i in items.all_items(ws) if i.superseded_by == item.id and _owns(rt, i, owner)]
    items.set_attr(ws, item, supersededBy=edited, undone=day.isoformat())
    for earlier in restored:
        items.clear_attrs(ws, earlier, "supersededBy")
    _written(rt, "undo", item, owner)
    back = next((i for i in restored if i.id == edited), None)
    superseded = [i.id for i in restored if i.id != edited]
    return api.MemoryChange(status="undone", item=_now(rt, back).shape(day) if back else None,
                            previous=_now(rt, item).shape(day), superseded=superseded or None)


# --- the owner boundary ------------------------------------------------------------------------
def _writable_workspace(rt: Runtime, owner: str | None) -> None:
    if rt.config.agents.defaults.workspace_access != "rw":
        raise InputError("the workspace is read-only (agents.defaults.workspaceAccess); nothing was written")
    if owner is not None and parse_key(owner).incognito:
        raise InputError("an incognito thread writes nothing to memory: it is never stored; nothing was written")


def _owns(rt: Runtime, item: items.Item, owner: str | None) -> bool:
    return service._writable_by(item, owner, rt)


def _own_item(rt: Runtime, item_id: str, owner: str | None) -> items.Item:
    """The item, when `owner` may see and correct it. One it may not see is "not found" (its
    existence is not told); one it sees but does not own is refused, naming why."""
    missing = NotFoundError(f"memory item {item_id!r} not found; memory_search or memory_get show the lines you "
                            "may correct")
    try:
        item = items.find_item(service.workspace(rt), item_id)
    except NotFoundError:
        raise missing from None
    across = remember_across_conversations(rt.config)
    if not visible_to(item.attrs.get("session"), owner, across=across):
        raise missing
    if not _owns(rt, item, owner):
        raise InputError(f"memory item {item_id!r} belongs to another conversation; a conversation corrects only "
                         "its own lines (and shared ones where memory is shared across conversations)")
    return item


def _own_active_item(rt: Runtime, item_id: str, owner: str | None) -> items.Item:
    item = _own_item(rt, item_id, owner)
    status = item.status(service.today(rt))
    if status in ("superseded", "forgotten"):
        newer = f" by {item.superseded_by}" if status == "superseded" else ""
        raise InputError(f"memory item {item_id!r} is {status}{newer}; only an active line can be corrected")
    return item


def _now(rt: Runtime, item: items.Item) -> items.Item:
    """The item as its file says now (after a correction marked it)."""
    try:
        return items.find_item(service.workspace(rt), item.id)
    except NotFoundError:
        return item


def _source(owner: str | None) -> str:
    return "tool" if owner is not None else "remember"


def _written(rt: Runtime, action: str, item: items.Item, owner: str | None,
             superseded: tuple[str, ...] = ()) -> None:
    rt.events.publish(MemoryWritten(rt.now(), rt.agent_id, action, item.path, item.id, session_key=owner,
                                    superseded=superseded))
    service.sync_index(rt)
