"""Grounded replay of historical daily notes: `memory rem-harness --path DIR --grounded` (a
preview), `memory rem-backfill --path DIR [--stage-short-term]` (reversible diary entries, and
optionally the durable facts staged as grounded candidates), `--rollback`, `--rollback-short-term`.

Each dated note (`YYYY-MM-DD*.md`) is read as its own day: its claim lines go through the same
write filters and expiry reading as every write (a secret, a one-off instruction, venting or a
plan for a given day is set aside, with the reason); REM's clustering groups the rest into
themes. Staged facts are grounded signals in the ordinary short-term store: they still need
real recalls (distinct queries) before Deep promotes them. DREAMS.md stays the review surface;
MEMORY.md is only ever written by Deep.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from .. import api
from ..errors import InputError
from ..memory import items
from ..memory import service as memory
from ..memory.workspace import ensure_workspace
from ..runtime import Runtime
from . import dreams_file, rem
from .claims import claim_hash, concept_tags, redacted
from .deep import sha
from .schedule import settings
from .sources import SourceLine, note_day, note_lines
from .store import DreamsDir, Entry, held_sweep_lock, shared_store
from .working import DAILY_SIGNAL_SCORE, Working

MAX_FILES = 512
MAX_FILE_BYTES = 1_000_000
MAX_VISITED = 20_000
SKIPPED_DIRS = {".git", "node_modules", ".dreams"}
RECORD = "backfill.json"


@dataclass
class GroundedDay:
    day: str
    path: str
    facts: list[SourceLine] = field(default_factory=list)
    set_aside: list[tuple[str, str]] = field(default_factory=list)  # (text, why)
    themes: list[rem.Theme] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"day": self.day, "path": self.path, "facts": [redacted(f.text) for f in self.facts],
                "setAside": [{"text": redacted(t), "reason": why} for t, why in self.set_aside],
                "themes": [t.to_json() for t in self.themes]}


def day_files(root: Path) -> list[Path]:
    """The dated notes of a file or folder (hidden folders, .git and node_modules skipped; links to
    folders not followed; at most MAX_VISITED entries looked at, so `--path /` fails fast)."""
    try:
        root = root.expanduser()
        exists, is_file = root.exists(), root.is_file()
    except (OSError, RuntimeError) as exc:  # a name too long, no home directory for "~"
        why = exc.strerror if isinstance(exc, OSError) else exc
        raise InputError(f"--path {str(root)[:80]!r} cannot be read ({why})") from None
    if not exists:
        raise InputError(f"--path {root} does not exist; give a folder of YYYY-MM-DD.md notes or one such file")
    if is_file:
        found = [root] if note_day(root.name) else []
    else:
        found, visited = [], 0
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
            visited += len(dirs) + len(files)
            if visited > MAX_VISITED:
                raise InputError(f"--path {root} holds more than {MAX_VISITED} files and folders; give the folder of "
                                 "the dated notes itself")
            found += [Path(folder) / name for name in files if note_day(name)]
    if not found:
        raise InputError(f"--path {root} holds no dated note (a file named YYYY-MM-DD.md or YYYY-MM-DD-<slug>.md)")
    found.sort(key=lambda p: (note_day(p.name) or "", str(p)))
    if len(found) > MAX_FILES:
        raise InputError(f"--path {root} holds {len(found)} dated notes; at most {MAX_FILES} per backfill")
    return found


def grounded(rt: Runtime, root: Path) -> list[GroundedDay]:
    ws = memory.workspace(rt).resolve()
    days = []
    for path in day_files(root):
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue  # a broken link, an unreadable or non-UTF-8 note: the other days are still read
        real = path.resolve()
        rel = real.relative_to(ws).as_posix() if ws in real.parents else real.as_posix()
        day = GroundedDay(note_day(path.name) or "", rel)
        for line in note_lines(ws, rel, lines):
            why = _set_aside(rt, line)
            if why:
                day.set_aside.append((line.text, why))
            else:
                day.facts.append(line)
        day.themes = rem.cluster([_entry(f) for f in day.facts])
        for theme in day.themes:
            theme.strength = rem.strength(theme.members)
        days.append(day)
    return days


def _set_aside(rt: Runtime, line: SourceLine) -> str | None:
    if line.origin in ("untrusted", "system"):
        return f"origin {line.origin}"
    reason = items.filter_reason(line.text)
    if reason:
        return reason
    day = _date(line.day)
    if day is not None and items.is_time_bound(line.text, day) is not None:
        return "time-bound (a plan for a given day)"
    return None


def _date(text: str | None):
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _entry(line: SourceLine) -> Entry:
    text = redacted(line.text)
    return Entry(f"{line.owner or ''}|{claim_hash(line.text)}", text, line.path, line.line, line.day, "grounded",
                 line.origin, line.owner, concept_tags=concept_tags(text))


def diary_entry(day: GroundedDay) -> str:
    facts = "\n".join(f"- {dreams_file.safe(redacted(f.text))}" for f in day.facts) or "- (no durable fact)"
    themes = "".join(f"\n\n_{dreams_file.safe(t.reflection)}_" for t in day.themes[:2])
    aside = ""
    if day.set_aside:
        kinds = "; ".join(sorted({why.split(" (")[0] for _, why in day.set_aside}))
        aside = f"\n\nSet aside: {len(day.set_aside)} ({kinds})."
    return (f"{dreams_file.BACKFILL_START} day={day.day} -->\n### {day.day} · grounded backfill of "
            f"`{dreams_file.safe(day.path)}`\n\n{facts}{themes}{aside}\n{dreams_file.BACKFILL_END}")


def backfill(rt: Runtime, root: Path, *, stage_short_term: bool = False) -> api.BackfillReport:
    days = grounded(rt, root)
    ws = ensure_workspace(memory.workspace(rt))
    dreams = DreamsDir(ws)
    with held_sweep_lock(dreams, "rem-backfill", shared_store(rt)):
        record = dreams.read_json(RECORD, {})
        current = dreams_file.read(ws)
        base, _ = dreams_file.without_backfill(current) if current else (current, 0)
        text = base
        for day in days:  # oldest first, each on top: the newest day ends up first, like the live diary
            text = dreams_file.with_diary_entry(text, diary_entry(day))
        dreams_file.write(ws, text)
        before = record.get("before") if record.get("afterSha") else current  # before the first backfill
        staged = _stage(rt, dreams, days) if stage_short_term else (record.get("staged") or [])
        dreams.write_json(RECORD, {"before": before, "afterSha": sha(text), "days": [d.day for d in days],
                                   "staged": staged, "source": str(root)})
    return api.BackfillReport(days=[d.to_json() for d in days], written=len(days), staged=len(staged),
                              dreams_file=str(dreams_file.dreams_path(ws)))


def _stage(rt: Runtime, dreams: DreamsDir, days: list[GroundedDay]) -> list[str]:
    work = Working.load(dreams, settings(rt.config).light.dedupe_similarity)
    _unstage(work)
    now = rt.now()
    staged = []
    for day in days:
        for line in day.facts:
            entry = work.entry_for(line, "grounded")
            if entry.signal_count == 0:
                entry.grounded_only = True
            work.grounded(entry, day=line.day, now=now, score=DAILY_SIGNAL_SCORE)
            staged.append(entry.key)
    work.save(now)
    return sorted(set(staged))


def _unstage(work: Working) -> int:
    """Take every grounded signal out of the store (entries that had nothing else go entirely)."""
    removed = 0
    for key, entry in list(work.entries.items()):
        if entry.grounded_only:
            del work.entries[key]
            work.signals.pop(key, None)
            work.near.remove(key)
            removed += 1
        elif entry.grounded_count:
            entry.total_score = max(0.0, entry.total_score - entry.grounded_count * DAILY_SIGNAL_SCORE)
            entry.grounded_count = 0
    return removed


def rollback(rt: Runtime) -> api.BackfillReport:
    """Remove the backfill's diary entries (DREAMS.md restored byte for byte when it is still
    exactly what the backfill wrote)."""
    dreams = DreamsDir(memory.workspace(rt))
    record = dreams.read_json(RECORD, None)
    current = dreams_file.read(dreams.workspace)
    if current is None:
        return api.BackfillReport(removed_entries=0, restored="nothing to roll back")
    if record and sha(current) == record.get("afterSha"):
        dreams_file.write(dreams.workspace, record.get("before"))
        removed, restored = len(record.get("days") or ()), "byte-identical"
    else:
        text, removed = dreams_file.without_backfill(current)
        dreams_file.write(dreams.workspace, text)
        restored = "backfill entries removed"
    if record:
        dreams.write_json(RECORD, {**record, "before": None, "afterSha": None, "days": []})
    return api.BackfillReport(removed_entries=removed, restored=restored)


def rollback_short_term(rt: Runtime) -> api.BackfillReport:
    dreams = DreamsDir(memory.workspace(rt))
    work = Working.load(dreams, settings(rt.config).light.dedupe_similarity)
    removed = _unstage(work)
    work.save(rt.now())
    record = dreams.read_json(RECORD, None)
    if record:
        dreams.write_json(RECORD, {**record, "staged": []})
    return api.BackfillReport(removed_short_term_entries=removed)
