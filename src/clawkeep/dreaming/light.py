"""Light sleep: fold the recall traces into the short-term store, ingest recent daily notes
and transcripts, de-duplicate, stage candidates, and write the `## Light Sleep` block.

A recall hit is a window of lines; it counts for the lines in it that share a content word
with the query (all of them when none does: the vector path found the window by meaning).
Each daily-note line and each statement the user made in a direct conversation is read once
(the ingestion checkpoint) and counts as one daily signal. Light never writes MEMORY.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import InputError
from ..routing.keys import SYNTHETIC_KINDS, parse_key
from .claims import claim_hash, clean_line, concept_tags, redacted, speaker
from .rank import DAY_MS, lexical_relevance
from .schedule import local_day, settings, zone_for
from .sources import LiveSources, SourceLine, daily_notes, transcript_lines
from .store import Entry, write_atomic
from .working import Working

MAX_WINDOW_LINES = 4  # a hit sharing no word with its query counts for at most this many lines
PRUNE_AFTER_MAX_AGE = 2  # entries idle for this many × deep.maxAgeDays are dropped (never promoted ones)


@dataclass
class LightReport:
    traces: int = 0
    hits: int = 0
    notes: int = 0
    transcripts: int = 0
    new_claims: int = 0
    merged: int = 0
    pruned: int = 0
    staged: list[Entry] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"traces": self.traces, "hits": self.hits, "notes": self.notes, "transcripts": self.transcripts,
                "newClaims": self.new_claims, "merged": self.merged, "pruned": self.pruned,
                "staged": [{"key": e.key, "text": e.text, "path": e.path, "line": e.line} for e in self.staged]}


def run(work: Working, live: LiveSources, config: Config, traces: list[dict[str, Any]], now: int,
        corpus_dir: Path | None) -> LightReport:
    report = LightReport(traces=len(traces))
    before = len(work.entries)
    merged_before = len(work.merged)
    report.hits = fold(work, live, config, traces)
    light = settings(config).light
    today = datetime.fromtimestamp(now / 1000, tz=zone_for(config)).date()
    since = (today - timedelta(days=light.ingest_lookback_days - 1)).isoformat()
    report.notes = ingest_notes(work, live, since, now)
    if live.store is not None:
        report.transcripts = ingest_transcripts(work, live, now - light.ingest_lookback_days * DAY_MS, now,
                                                corpus_dir, config)
    report.pruned = prune(work, now, settings(config).deep.max_age_days * PRUNE_AFTER_MAX_AGE)
    report.new_claims = max(0, len(work.entries) - before + report.pruned)
    report.merged = len(work.merged) - merged_before
    report.staged = stage(work, now, light.lookback_days, light.limit, config)
    return report


# --- recall traces -------------------------------------------------------------------------------
def fold(work: Working, live: LiveSources, config: Config, traces: list[dict[str, Any]]) -> int:
    """Count every usable hit of every trace for the claims it covers; returns the hits used."""
    used = 0
    for trace in sorted(traces, key=lambda t: t.get("at") or 0):
        query = str(trace.get("query") or "")
        at = int(trace.get("at") or 0)
        if not query.strip() or at <= 0:
            continue
        caller = trace.get("session")
        user_query = not _system_caller(caller)
        day = local_day(config, at)
        wanted = set(concept_tags(query, limit=32))
        counted: set[str] = set()
        for hit in trace.get("hits") or ():
            shown, lines = _hit_lines(live, hit)
            if not lines:
                continue
            about = {claim_hash(text) for text in shown if wanted & set(concept_tags(text, limit=32))}
            # the lines the query is about; a window sharing no word with it counts for all its
            # lines — but never for the neighbours of a line that is gone
            chosen = [line for line in lines if claim_hash(line.text) in about] if about else lines[:MAX_WINDOW_LINES]
            used += 1
            for line in chosen:
                entry = work.entry_for(line, "transcript" if line.path.startswith("sessions/") else "daily")
                if entry.key in counted:
                    continue  # one search counts once for a claim, however many windows show it
                counted.add(entry.key)
                score = _score(hit.get("score"))
                if trace.get("lexical"):  # keyword scores only: read on OpenClaw's lexical-only scale
                    score = lexical_relevance(query, line.text, score)
                work.recall(entry, score=score, query=query, day=day, at=at, session=caller,
                            user_query=user_query)
    return used


def _score(value: Any) -> float:
    try:
        return max(0.0, min(1.0, float(value)))
    except (TypeError, ValueError):
        return 0.0


def _system_caller(caller: Any) -> bool:
    """A search made by a cron, hook, heartbeat or sub-agent session is not a user's question."""
    if not caller:
        return False
    try:
        return parse_key(str(caller)).kind in SYNTHETIC_KINDS
    except InputError:
        return True


def _hit_lines(live: LiveSources, hit: dict[str, Any]) -> tuple[list[str], list[SourceLine]]:
    """(the claim texts the hit's window showed, those of them still live). A line deleted or
    changed since the search counts for nothing."""
    path = str(hit.get("path") or "")
    if path.startswith("sessions/"):
        session_id = path.removeprefix("sessions/")
        try:
            start, end = int(hit["startLine"]), int(hit["endLine"])
        except (KeyError, TypeError, ValueError):
            return [], []
        found: list[SourceLine] = []
        for message_id in dict.fromkeys(live.hit_messages(session_id, start, end)):
            found += live.message(session_id, message_id)
        return [line.text for line in found], found
    by_hash = live.note_by_hash(path)
    shown, found = [], []
    for raw in str(hit.get("snippet") or "").splitlines():
        text = clean_line(raw)
        if text is None:
            continue
        who, rest = speaker(text)
        if who is not None and who != "user":
            continue
        text = rest.strip() if who else text
        shown.append(text)
        line = by_hash.get(claim_hash(text))
        if line is not None and line not in found:
            found.append(line)
    return shown, found


# --- daily notes and transcripts -----------------------------------------------------------------
def ingest_notes(work: Working, live: LiveSources, since_day: str, now: int) -> int:
    """Read the dated notes from `since_day` on; each claim counts once (a daily signal). The
    checkpoint keeps only the notes of the window (older ones are never read again)."""
    files = daily_notes(live.workspace, since_day)
    checkpoint: dict[str, list[str]] = {}
    for rel in files:
        seen = set(work.ingested.get(rel, ()))
        for line in live.note(rel) or ():
            entry = work.entry_for(line, "daily")
            digest = claim_hash(line.text)
            if digest not in seen:
                work.daily(entry, day=line.day, now=now)
                seen.add(digest)
        checkpoint[rel] = sorted(seen)
    work.ingested = checkpoint
    return len(files)


def ingest_transcripts(work: Working, live: LiveSources, since_ms: int, now: int, corpus_dir: Path | None,
                       config: Config) -> int:
    """The user's statements in direct conversations since `since_ms`, each message once (a
    high-water mark per session); redacted copies go to `session-corpus/<day>.txt` (what Light
    read, for review; kept for `deep.maxAgeDays`)."""
    assert live.store is not None
    corpus: dict[str, list[str]] = {}
    marks: dict[str, dict] = {}
    for line in transcript_lines(live.store, since_ms):
        session_id = line.path.removeprefix("sessions/")
        old = work.transcripts.get(session_id) or {"through": 0, "ids": []}
        at = line.at or 0
        mark = marks.setdefault(session_id, dict(old, ids=list(old["ids"])))
        if at > mark["through"]:
            mark["through"], mark["ids"] = at, []
        if at == mark["through"] and line.entry_id not in mark["ids"]:
            mark["ids"].append(line.entry_id)
        if at > old["through"] or (at == old["through"] and line.entry_id not in old["ids"]):
            work.daily(work.entry_for(line, "transcript"), day=line.day, now=now)
        stamp = datetime.fromtimestamp(at / 1000, tz=zone_for(config))
        corpus.setdefault(stamp.date().isoformat(), []).append(
            f"{stamp:%H:%M} {line.owner} user: {redacted(line.text)}")
    work.transcripts = {sid: m for sid, m in {**work.transcripts, **marks}.items() if m["through"] >= since_ms}
    if corpus_dir is not None:
        for day, lines in corpus.items():
            write_atomic(corpus_dir / f"{day}.txt", "\n".join(sorted(lines)) + "\n")
        keep = (datetime.fromtimestamp(now / 1000, tz=zone_for(config)).date()
                - timedelta(days=settings(config).deep.max_age_days)).isoformat()
        for old_file in corpus_dir.glob("*.txt") if corpus_dir.is_dir() else ():
            if old_file.stem < keep:
                old_file.unlink(missing_ok=True)
    return len(marks)


def prune(work: Working, now: int, idle_days: int) -> int:
    """Drop entries idle for `idle_days` that were never promoted (their checkpoint stays)."""
    cutoff = now - idle_days * DAY_MS
    stale = [k for k, e in work.entries.items()
             if e.promoted_at is None and max(e.last_recalled_at or 0, e.staged_at or 0) < cutoff]
    for key in stale:
        del work.entries[key]
        work.signals.pop(key, None)
        work.near.remove(key)
    return len(stale)


# --- staging -------------------------------------------------------------------------------------
def stage(work: Working, now: int, lookback_days: int, limit: int, config: Config) -> list[Entry]:
    """The candidates of this Light run: entries active in the lookback window and not promoted,
    strongest first; each gets one Light reinforcement per day."""
    cutoff = now - lookback_days * DAY_MS
    today = local_day(config, now)
    active = [e for e in work.entries.values()
              if e.promoted_at is None and e.undone_at is None and e.origin not in ("system", "untrusted")
              and (e.key in work.touched or max(e.last_recalled_at or 0, e.staged_at or 0) >= cutoff)]
    active.sort(key=lambda e: (-e.signal_count, -len(e.user_query_hashes), -(e.last_recalled_at or 0), e.key))
    staged = active[:limit]
    for entry in staged:
        entry.staged_at = entry.staged_at or now
        signal = work.signal(entry.key)
        if signal.last_light_at is None or local_day(config, signal.last_light_at) != today:
            signal.light_hits += 1
            signal.last_light_at = now
    return staged


def block(report: LightReport, when: str) -> str:
    head = (f"_{when} · {report.traces} recall trace(s), {report.notes} daily note(s), "
            f"{report.transcripts} conversation(s) read · {report.new_claims} new claim(s), "
            f"{report.merged} merged as near-duplicates · {len(report.staged)} staged_")
    rows = [f"- {e.text} — `{_where(e)}` · {e.recall_count} recall(s), {len(e.user_query_hashes)} "
            f"distinct quer{'y' if len(e.user_query_hashes) == 1 else 'ies'}, {e.daily_count} daily"
            for e in report.staged]
    return "\n".join([head, "", *rows]) if rows else head + "\n\nNothing to stage."


def _where(entry: Entry) -> str:
    return f"{entry.path}#L{entry.line}" if entry.line else entry.path
