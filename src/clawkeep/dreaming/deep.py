"""Deep sleep: rank, gate, re-read, filter, and promote into MEMORY.md — the only phase that
writes it.

1. Rank every entry (`rank`) and keep the best `deep.limit` that pass the gates.
2. Re-read each from its live source: the daily note line (same text) or the transcript
   message; a line that changed is stale, one that is gone is deleted — both are skipped.
3. Decide each, oldest first, with the one write decision every fact goes through
   (`memory.service.plan_remember`: write filters, restatement merging, supersession, expiry):
   refused facts (secrets, one-off instructions, venting) and time-bound ones (a plan keeps its
   expiry in its daily note) are not promoted; a candidate a later one of the same sweep
   supersedes is dropped; one already in memory is marked as such.
4. Build MEMORY.md's new text from the bytes read in step 3: supersession markers on the old
   lines, the new items appended (`dream=<run>` and `src=<where>` in their markers). A rewrite
   that would lose more than `deep.maxPriorEntryLossFraction` of the prior entries is refused.
5. Write it only if MEMORY.md still has the bytes read (content hash): a person who edited it
   meanwhile keeps the edit, and the new items are appended to what they wrote instead
   (MEMORY.md's supersession markers are then left to the next sweep, which repairs them; a
   daily note's are written under the same guard, file by file). Each write is one
   atomic rename, so a crash leaves MEMORY.md before or after, never half-written. The bytes
   before are kept in `promotions/<run>.json` for undo.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..config import DeepPhaseConfig
from ..errors import ClawkeepError
from ..memory import documents, items
from ..memory import service as memory
from ..memory.documents import write_document
from ..memory.workspace import MEMORY_FILE
from ..runtime import Runtime
from .claims import claim_hash, similarity, words
from .rank import Ranked, rank
from .sources import LiveSources, SourceLine, note_day
from .store import write_atomic
from .working import Working

GATED_SHOWN = 5  # the Deep block also names the strongest candidates that did not pass, and why


@dataclass
class Decision:
    ranked: Ranked
    status: str  # promoted | refused | time-bound | duplicate | superseded | stale | deleted
    reason: str | None = None
    live: SourceLine | None = None
    item: items.Item | None = None
    supersedes: list[str] = field(default_factory=list)
    replaced: list[items.Item] = field(default_factory=list)  # the old items the new one supersedes

    def to_json(self) -> dict[str, Any]:
        out = {**self.ranked.to_json(), "status": self.status, "reason": self.reason}
        if self.item is not None:
            out["itemId"] = self.item.id
            out["promotedText"] = self.item.text
        if self.supersedes:
            out["supersedes"] = self.supersedes
        return out


@dataclass
class DeepPlan:
    run_id: str
    ranked: list[Ranked]
    decisions: list[Decision]
    before: str | None  # MEMORY.md as read (None: no file)
    after: str | None  # MEMORY.md as it would be written (None: nothing to write)
    other_files: dict[str, tuple[str, str]] = field(default_factory=dict)  # rel -> (before, after)
    new_lines: list[str] = field(default_factory=list)  # the appended item lines
    repaired: list[str] = field(default_factory=list)  # old items whose missing supersededBy was restored
    loss_refused: str | None = None

    @property
    def promoted(self) -> list[Decision]:
        return [d for d in self.decisions if d.status == "promoted"]


def sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_memory(workspace: Path) -> str | None:
    path = workspace / MEMORY_FILE
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClawkeepError(f"{path} cannot be read ({exc}); Deep promotes nothing until it can") from None


def plan(rt: Runtime, work: Working, live: LiveSources, now: int, run_id: str, gates: DeepPhaseConfig,
         limit: int | None = None) -> DeepPlan:
    ranked = rank(work.entries, work.signals, now, gates)
    chosen = [r for r in ranked if r.passed][:limit or gates.limit]
    decisions: list[Decision] = []
    fresh: list[tuple[Decision, SourceLine]] = []
    for candidate in chosen:
        line, why = rehydrate(candidate, live)
        if line is None:
            decisions.append(Decision(candidate, why[0], why[1]))
        else:
            fresh.append((Decision(candidate, "promoted", live=line), line))
    ws = memory.workspace(rt)
    before = read_memory(ws)
    memory_items = items.parse_items(MEMORY_FILE, before or "")
    others = [i for i in items.all_items(ws) if i.path != MEMORY_FILE]
    today = memory.today(rt)
    planned: dict[str, Decision] = {}  # pseudo item id -> decision
    active_now = [i for i in memory_items + others if i.status(today) == "active"]
    writable: dict[str | None, list[items.Item]] = {}  # per owner: the items its facts may touch
    for decision, line in sorted(fresh, key=lambda pair: (pair[1].day or "", pair[1].path, pair[1].line or 0)):
        decisions.append(decision)
        if line.owner not in writable:
            writable[line.owner] = memory.writable_items(rt, line.owner, today, active_now)
        _decide(rt, decision, line, run_id, today, writable[line.owner], planned)
    memory_lines = (before or f"{memory.MEMORY_HEADING}\n").splitlines()
    other_lines: dict[str, list[str]] = {}
    other_before: dict[str, str] = {}  # each daily note as read, for its own content guard
    for decision in planned.values():
        for old in decision.replaced:
            target = memory_lines if old.path == MEMORY_FILE else \
                _note_lines(ws, old.path, other_lines, other_before)
            if 0 < old.line <= len(target):
                assert decision.item is not None
                target[old.line - 1] = items.line_with_attrs(target[old.line - 1], old.id,
                                                             supersededBy=decision.item.id)
    out = DeepPlan(run_id, ranked, decisions, before, None)
    out.repaired = _repair(memory_lines, other_lines, other_before, ws)
    out.new_lines = [items.item_line(d.item.text, d.item.attrs) for d in planned.values()]  # type: ignore[union-attr]
    if out.new_lines or out.repaired:
        if memory_lines and memory_lines[-1].strip() and not items.parse_items(MEMORY_FILE, memory_lines[-1]):
            memory_lines.append("")  # a paragraph of the person's ends before the list starts
        after = "\n".join(memory_lines + out.new_lines) + "\n"
        out.loss_refused = loss_check(before, after, gates.max_prior_entry_loss_fraction)
        out.after = after
    out.other_files = {rel: (other_before[rel], "\n".join(lines) + "\n") for rel, lines in other_lines.items()}
    return out


def _note_lines(ws: Path, rel: str, lines: dict[str, list[str]], before: dict[str, str]) -> list[str]:
    if rel not in lines:
        before[rel] = (ws / rel).read_text(encoding="utf-8")
        lines[rel] = before[rel].splitlines()
    return lines[rel]


def rehydrate(candidate: Ranked, live: LiveSources) -> tuple[SourceLine | None, tuple[str, str]]:
    """The candidate's live line, or (None, (status, reason)) when it is stale or deleted."""
    entry = candidate.entry
    digest = claim_hash(entry.text)
    if entry.path.startswith("sessions/"):
        if not entry.entry_id:
            return None, ("deleted", "no transcript message to re-read")
        found = [s for s in live.message(entry.path.removeprefix("sessions/"), entry.entry_id)
                 if claim_hash(s.text) == digest]
        return (found[0], ("", "")) if found else (None, ("deleted", "the message is gone or changed"))
    lines = live.note(entry.path)
    if lines is None:
        return None, ("deleted", f"{entry.path} no longer exists")
    for line in lines:
        if claim_hash(line.text) == digest:
            return line, ("", "")
    own = words(entry.text)
    if any(similarity(own, words(line.text)) >= 0.5 for line in lines):
        return None, ("stale", f"the line in {entry.path} changed since it was recalled")
    return None, ("deleted", f"the line is no longer in {entry.path}")


def _decide(rt: Runtime, decision: Decision, line: SourceLine, run_id: str, today: Any,
            existing: list[items.Item], planned: dict[str, Decision]) -> None:
    """One candidate through the write decision. `existing`: the active items the candidate's
    owner may touch; `planned`: the items this sweep adds so far."""
    if line.origin in ("untrusted", "system"):
        decision.status, decision.reason = "refused", f"origin {line.origin}: never promoted"
        return
    pseudo = [d.item for d in planned.values() if d.item is not None]
    own = claim_hash(line.text)  # its own note line, and the same words written on other days, are not memory
    active = [i for i in existing if i.path == MEMORY_FILE or claim_hash(i.text) != own] + \
        memory.writable_items(rt, line.owner, today, pseudo)
    day = _day(line.day) or today
    while True:
        try:
            verdict = memory.plan_remember(rt, line.text, owner=line.owner, active=active, day=day)
        except ClawkeepError as exc:
            decision.status, decision.reason = "refused", str(exc)
            return
        same = verdict.same
        if verdict.status != "duplicate" or same is None or same.path == MEMORY_FILE or same.id in planned:
            break
        # the same fact in a daily note (its own line, or said again another day) is short-term
        # memory, what promotion is for: only MEMORY.md (or this sweep) holding it makes a duplicate
        active = [i for i in active if i.id != same.id]
    if verdict.status == "refused":
        decision.status, decision.reason = "refused", verdict.reason
        return
    if verdict.status == "duplicate":
        assert verdict.same is not None
        within = verdict.same.id in planned
        decision.status = "duplicate"
        decision.reason = ("the same fact is promoted by this sweep" if within
                           else f"already in memory as {verdict.same.id} ({verdict.same.path})")
        decision.supersedes = [verdict.same.id]
        return
    if verdict.expires is not None:
        decision.status = "time-bound"
        decision.reason = f"a plan for {verdict.expires.isoformat()}: it stays in its daily note with its expiry"
        return
    assert verdict.attrs is not None and verdict.conflicts is not None
    newer = [old for old in verdict.conflicts if old.id not in planned and line.day
             and (_stated_on(old) or "") > line.day]
    if newer:  # the candidate is an old value: something said later gives the subject another one
        decision.status = "superseded"
        decision.reason = f"a later line ({newer[0].path}, {_stated_on(newer[0])}) says “{newer[0].text[:80]}”"
        return
    for old in verdict.conflicts:
        earlier = planned.pop(old.id, None)
        if earlier is not None:  # an older candidate of this very sweep: the newer value wins
            earlier.status, earlier.reason = "superseded", f"superseded in this sweep by “{line.text[:80]}”"
            earlier.item = None
    real = [old for old in verdict.conflicts if old.id not in {d.id for d in pseudo}]
    attrs = dict(verdict.attrs)
    if real:
        attrs["supersedes"] = ",".join(i.id for i in real)
    else:
        attrs.pop("supersedes", None)
    attrs["dream"] = run_id
    attrs["src"] = f"{line.path}#L{line.line}" if line.line else line.path
    decision.item = items.Item(attrs["id"], MEMORY_FILE, 0, items.neutralise(verdict.fact), attrs)
    decision.supersedes = [i.id for i in real]
    decision.replaced = real
    planned[attrs["id"]] = decision


def _stated_on(item: items.Item) -> str | None:
    """When an item was stated: its `at`, else the day of the note it is in."""
    return item.attrs.get("at") or note_day(item.path)


def _day(text: str | None) -> Any:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _repair(memory_lines: list[str], other_lines: dict[str, list[str]], other_before: dict[str, str],
            ws: Path) -> list[str]:
    """Restore supersededBy markers an append fallback (or a crash) left out: an active item that
    a MEMORY.md item `supersedes` gets marked as replaced."""
    newer: dict[str, str] = {}
    for item in items.parse_items(MEMORY_FILE, "\n".join(memory_lines)):
        for old in filter(None, (item.attrs.get("supersedes") or "").split(",")):
            newer.setdefault(old, item.id)
    if not newer:
        return []
    repaired = []
    for item in items.parse_items(MEMORY_FILE, "\n".join(memory_lines)):
        if item.id in newer and not item.superseded_by:
            memory_lines[item.line - 1] = items.line_with_attrs(memory_lines[item.line - 1], item.id,
                                                                 supersededBy=newer[item.id])
            repaired.append(item.id)
    for item in items.all_items(ws):
        if item.path != MEMORY_FILE and item.id in newer and not item.superseded_by:
            lines = _note_lines(ws, item.path, other_lines, other_before)
            lines[item.line - 1] = items.line_with_attrs(lines[item.line - 1], item.id, supersededBy=newer[item.id])
            repaired.append(item.id)
    return repaired


def loss_check(before: str | None, after: str, max_loss: float) -> str | None:
    """Why a rewrite of MEMORY.md must be refused (None: it may be written): it would drop more
    than `max_loss` of the entries (items) the file had."""
    prior = {i.id for i in items.parse_items(MEMORY_FILE, before or "")}
    if not prior:
        return None
    kept = {i.id for i in items.parse_items(MEMORY_FILE, after)}
    lost = prior - kept
    if len(lost) > max_loss * len(prior):
        return (f"the rewrite would lose {len(lost)} of {len(prior)} prior entries (more than "
                f"{max_loss:.0%}); refused")
    return None


@dataclass
class Applied:
    mode: str  # rewrite | append | nothing
    written: str | None  # MEMORY.md as written
    other_files: dict[str, tuple[str, str]]  # rel -> (before, after) actually written


def apply(workspace: Path, deep: DeepPlan) -> Applied:
    """Write the plan (see the module text for the guard). Returns what was written."""
    if deep.after is None:
        return Applied("nothing", None, {})
    with documents.locked(workspace):  # the hash check and the write with no writer in between
        return _apply_locked(workspace, deep)


def _apply_locked(workspace: Path, deep: DeepPlan) -> Applied:
    current = read_memory(workspace)
    if sha(current) == sha(deep.before) and deep.loss_refused is None:
        mode, text = "rewrite", deep.after
    else:  # edited meanwhile (or a refused rewrite): what is there now stays, byte for byte, before the new items
        if not deep.new_lines:
            return Applied("nothing", None, {})
        base = current if current is not None else f"{memory.MEMORY_HEADING}\n\n"
        text = base + ("" if base.endswith("\n") else "\n") + "\n".join(deep.new_lines) + "\n"
        mode = "append"
    write_document(workspace, MEMORY_FILE, text, write_atomic)  # D4: a compare-and-set in PostgreSQL mode
    written_others: dict[str, tuple[str, str]] = {}
    for rel, (before, after) in deep.other_files.items():
        path = workspace / rel
        try:
            unchanged = path.read_text(encoding="utf-8") == before
        except (OSError, UnicodeDecodeError):
            unchanged = False
        if unchanged:  # the same guard for a daily note whose old item is now superseded
            write_document(workspace, rel, after, write_atomic)
            written_others[rel] = (before, after)
    return Applied(mode, text, written_others)


def block(deep: DeepPlan, applied: Applied | None, when: str, *, preview: bool = False) -> str:
    passed = sum(1 for r in deep.ranked if r.passed)
    mode = "preview, nothing written" if preview else {
        "rewrite": "MEMORY.md updated", "append": "MEMORY.md was edited meanwhile: appended only",
        "nothing": "MEMORY.md unchanged", None: "MEMORY.md unchanged"}[applied.mode if applied else None]
    head = (f"_{when} · run {deep.run_id} · {len(deep.ranked)} candidate(s) ranked, {passed} passed the gates, "
            f"{len(deep.promoted)} promoted · {mode}_")
    rows = []
    for d in deep.decisions:
        score = f"score {d.ranked.score:.2f}"
        if d.status == "promoted" and d.item is not None:
            extra = f", supersedes {', '.join(d.supersedes)}" if d.supersedes else ""
            rows.append(f"- promoted “{d.item.text}” ({score}{extra}) → {d.item.id} · undo: "
                        f"`clawkeep memory promote-undo {d.item.id}`")
        else:
            rows.append(f"- {d.status}: “{d.ranked.entry.text}” ({score}): {d.reason}")
    decided = {d.ranked.entry.key for d in deep.decisions}
    gated = [r for r in deep.ranked if not r.passed and r.entry.key not in decided
             and r.entry.promoted_at is None and r.entry.origin not in ("system", "untrusted")][:GATED_SHOWN]
    rows += [f"- not yet: “{r.entry.text}” (score {r.score:.2f}): {r.rejected}" for r in gated]
    if deep.loss_refused:
        rows.append(f"- rewrite refused: {deep.loss_refused}")
    if deep.repaired:
        rows.append(f"- supersession markers restored on {', '.join(deep.repaired)}")
    return "\n".join([head, "", *rows]) if rows else head
