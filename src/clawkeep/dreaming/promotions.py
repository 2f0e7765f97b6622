"""What each Deep run wrote, and its undo.

`promotions/<run>.json` is written before MEMORY.md is touched (status `pending`, the bytes
before) and completed after (`applied`, the hash of what was written). Undo of a whole run
restores the bytes before exactly when the file is still what the run wrote; otherwise (a
person or a later write changed it since) it removes just the run's lines and the
`supersededBy` markers it set, and leaves everything else as it is. An undone claim is never
promoted again by a sweep (`memory promote --apply` can still promote it explicitly).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError, NotFoundError
from ..memory import items
from ..memory.documents import write_document
from ..memory.workspace import MEMORY_FILE
from .deep import Applied, DeepPlan, read_memory, sha
from .store import DreamsDir, write_atomic

FOLDER = "promotions"
KEEP_BYTES = 30  # records that keep the bytes of MEMORY.md before their run


def record_path(dreams: DreamsDir, run_id: str) -> str:
    return f"{FOLDER}/{run_id}.json"


def begin(dreams: DreamsDir, deep: DeepPlan, now: int) -> None:
    _forget_old_bytes(dreams)
    dreams.write_json(record_path(dreams, deep.run_id), {
        "runId": deep.run_id, "at": now, "status": "pending", "mode": None, "before": deep.before,
        "plannedSha": sha(deep.after), "afterSha": None, "files": {},
        "items": [{"id": d.item.id, "key": d.ranked.entry.key, "text": d.item.text, "supersedes": d.supersedes,
                   "src": d.item.attrs.get("src"), "owner": d.item.attrs.get("session"), "undone": False}
                  for d in deep.promoted if d.item is not None],
        "repaired": deep.repaired})


def _forget_old_bytes(dreams: DreamsDir) -> None:
    """Only the newest KEEP_BYTES records keep a copy of MEMORY.md (an older run's undo removes
    its lines instead: the file has changed since anyway)."""
    for record in records(dreams)[:-(KEEP_BYTES - 1)]:  # with the record about to be written: KEEP_BYTES
        if record.get("before") is not None:
            record.update({"before": None, "afterSha": None, "files": {}})
            dreams.write_json(record_path(dreams, record["runId"]), record)


def finish(dreams: DreamsDir, run_id: str, applied: Applied) -> None:
    record = dreams.read_json(record_path(dreams, run_id), None)
    if record is None:
        return
    record.update({"status": "applied", "mode": applied.mode, "afterSha": sha(applied.written),
                   "files": {rel: {"before": before, "afterSha": sha(after)}
                             for rel, (before, after) in applied.other_files.items()}})
    dreams.write_json(record_path(dreams, run_id), record)


def records(dreams: DreamsDir) -> list[dict[str, Any]]:
    folder = dreams.path(FOLDER)
    if not folder.is_dir():
        return []
    found = [dreams.read_json(f"{FOLDER}/{p.name}", None) for p in folder.glob("*.json")]
    return sorted((r for r in found if r), key=lambda r: (r.get("at") or 0, r.get("runId") or ""))


def recover(dreams: DreamsDir, workspace: Path) -> list[str]:
    """Settle records a crash left `pending`: applied if MEMORY.md holds their items, else abandoned."""
    settled = []
    for record in records(dreams):
        if record.get("status") != "pending":
            continue
        current = read_memory(workspace)
        present = {i.id for i in items.parse_items(MEMORY_FILE, current or "")}
        ids = {i["id"] for i in record.get("items") or ()}
        if ids & present:
            record.update({"status": "applied", "mode": "recovered",
                           "afterSha": sha(current) if sha(current) == record.get("plannedSha") else None})
        else:
            record["status"] = "abandoned"
        dreams.write_json(record_path(dreams, record["runId"]), record)
        settled.append(record["runId"])
    return settled


def select(dreams: DreamsDir, target: str | None) -> tuple[dict[str, Any], set[str]]:
    """(the run's record, the item ids to undo) for a run id, an item id, or None (the last run)."""
    applied = [r for r in records(dreams) if r.get("status") == "applied"]
    if target is None:
        for record in reversed(applied):
            ids = {i["id"] for i in record["items"] if not i.get("undone")}
            if ids:
                return record, ids
        raise NotFoundError("no Dreaming promotion to undo (`clawkeep memory promote --apply` or a sweep makes some)")
    for record in applied:
        if record["runId"] == target:
            ids = {i["id"] for i in record["items"] if not i.get("undone")}
            if not ids:
                raise InputError(f"run {target!r} has nothing left to undo")
            return record, ids
        for item in record["items"]:
            if item["id"] == target:
                if item.get("undone"):
                    raise InputError(f"promotion {target!r} was already undone")
                return record, {target}
    raise NotFoundError(f"no promotion run or promoted item {target!r}; the Deep Sleep block of DREAMS.md and "
                        "`clawkeep memory promote --json` list them")


def undo(dreams: DreamsDir, workspace: Path, target: str | None) -> dict[str, Any]:
    record, ids = select(dreams, target)
    whole = ids == {i["id"] for i in record["items"] if not i.get("undone")} and not any(
        i.get("undone") for i in record["items"])
    current = read_memory(workspace)
    if whole and record.get("afterSha") and sha(current) == record["afterSha"]:  # (a trimmed record has none)
        write_document(workspace, MEMORY_FILE, record.get("before"), write_atomic)
        restored = "byte-identical"
    else:
        if current is not None:
            write_document(workspace, MEMORY_FILE, strip(current, ids), write_atomic)
        restored = "lines removed"
    for rel, info in (record.get("files") or {}).items():
        other = workspace / rel
        try:
            text = other.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        restore = whole and sha(text) == info.get("afterSha")
        write_document(workspace, rel, info["before"] if restore else strip(text, ids), write_atomic)
    for item in record["items"]:
        if item["id"] in ids:
            item["undone"] = True
    if all(i.get("undone") for i in record["items"]):
        record["status"] = "undone"
    dreams.write_json(record_path(dreams, record["runId"]), record)
    return {"runId": record["runId"], "restored": restored,
            "items": [i for i in record["items"] if i["id"] in ids]}


def strip(text: str, ids: set[str]) -> str:
    """`text` without the promoted lines `ids` and without the supersededBy markers pointing at them
    (a hand-written line whose only marker was that one gets its plain form back)."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        content, attrs = items.parse_marker(body)
        if attrs.get("id") in ids and attrs.get("dream"):
            continue
        if attrs.get("supersededBy") in ids:
            rest = {k: v for k, v in attrs.items() if k != "supersededBy"}
            if set(rest) <= {"id"} and str(rest.get("id", "h-")).startswith("h-"):
                body = content.rstrip()
            else:
                body = content.rstrip() + items.render_marker(rest)
        out.append(body + ending)
    return "".join(out)
