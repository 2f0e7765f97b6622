"""What Dreaming did, for review (the Control UI's Dreams tab, `memory dreams`): DREAMS.md's
phase blocks, the Dream Diary as entries, and every promotion run with its items — each marked
still in MEMORY.md or not, and undone or not. Reads only; undo is `service.undo`.

The operator sees everything. A session caller sees only the promoted items its conversation
may see (`owners.visible_to`, as recall decides) and no DREAMS.md text: the blocks and the diary
summarise every conversation's claims at once.
"""

from __future__ import annotations

import re
from typing import Any

from .. import api
from ..config.active_memory import remember_across_conversations
from ..memory import items
from ..memory import service as memory
from ..memory.owners import UNKNOWN_OWNER, visible_to
from ..memory.workspace import MEMORY_FILE
from ..runtime import Runtime
from . import dreams_file, promotions
from .deep import read_memory
from .schedule import settings
from .store import DreamsDir

MAX_LIMIT = 200
PHASES = ("light", "rem", "deep")
_ENTRY = re.compile(r"^### ", re.MULTILINE)
_RUN_ID = re.compile(r"\bd-\d{8}-\d{4}-[0-9a-f]+\b")


def review(rt: Runtime, *, limit: int = 20, caller: str | None = None) -> api.DreamsReview:
    """The newest `limit` promotion runs and diary entries (1-MAX_LIMIT), and the phase blocks."""
    workspace = memory.workspace(rt)
    dreams = DreamsDir(workspace)
    current = read_memory(workspace) if workspace.is_dir() else None
    present = {i.id: i for i in items.parse_items(MEMORY_FILE, current or "")}
    across = remember_across_conversations(rt.config)
    runs = []
    for record in reversed(promotions.records(dreams) if dreams.root.is_dir() else []):
        if record.get("status") not in ("applied", "undone"):
            continue  # pending (a sweep is writing) or abandoned (a crash before MEMORY.md changed)
        shown = [_item(item, present) for item in record.get("items") or ()]
        shown = [item for item in shown if caller is None or visible_to(item.owner, caller, across=across)]
        if shown:
            runs.append(api.PromotionRun(run_id=record["runId"], at=record.get("at"), status=record["status"],
                                         mode=record.get("mode"), items=shown))
    out: dict[str, Any] = {}
    if caller is None:
        text = dreams_file.read(workspace) if workspace.is_dir() else None
        entries = diary_entries(dreams_file.block(text, "diary"))
        out.update(dreams_file=str(dreams_file.dreams_path(workspace)),
                   blocks={phase: dreams_file.block(text, phase) for phase in PHASES},
                   diary=entries[:limit], omitted_diary=max(0, len(entries) - limit))
    return api.DreamsReview(enabled=settings(rt.config).enabled, runs=runs[:limit],
                            omitted_runs=max(0, len(runs) - limit), **out)


def _item(item: dict[str, Any], present: dict[str, items.Item]) -> api.PromotedItem:
    """A promoted item as recorded, with its owner and whether MEMORY.md still holds it."""
    live = present.get(item["id"])
    owner = item.get("owner", UNKNOWN_OWNER if live is None else live.attrs.get("session"))
    return api.PromotedItem(id=item["id"], text=item["text"], src=item.get("src"),
                            supersedes=item.get("supersedes") or [], owner=owner, undone=bool(item.get("undone")),
                            in_memory=live is not None)


def diary_entries(body: str | None) -> list[api.DiaryEntry]:
    """The diary block as entries, newest first: heading, text, the sweep's run id, backfill or not."""
    if not body:
        return []
    out = []
    for chunk in _ENTRY.split(body)[1:]:
        heading, _, rest = chunk.partition("\n")
        backfill = dreams_file.BACKFILL_END in rest
        lines = [line for line in rest.splitlines()
                 if not line.startswith((dreams_file.BACKFILL_START, dreams_file.BACKFILL_END))]
        run = _RUN_ID.search(heading)
        out.append(api.DiaryEntry(heading=heading.strip(), text="\n".join(lines).strip("\n"),
                                  run_id=run.group(0) if run else None, backfill=backfill))
    return out
