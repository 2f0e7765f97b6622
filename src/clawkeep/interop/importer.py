"""`clawkeep import openclaw PATH`: OpenClaw sessions, transcripts and memory files into a
clawkeep home.

Per OpenClaw session key, one transaction: the key's transcripts (oldest first; a later one
starts after a reset boundary) become one clawkeep session with the same key (mapped to our
key shapes where they differ) and the id of OpenClaw's current transcript. Every entry carries
OpenClaw's event id as its client id, scoped to its transcript (`openclaw:<sessionId>`), so a
second import finds it and writes nothing; an interrupted import resumes where it stopped,
because a key is either wholly written or not at all. Transcripts are read twice, streamed:
once to validate every line and find the active branch (memory grows with the number of
events, never with their size), once to write.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import validation as check
from ..errors import InputError
from ..redact import redact_secrets
from ..routing.keys import foreign_key, is_session_id, new_session_id, parse_key
from ..runtime import Runtime
from ..sessions import transcript
from ..storage import AgentStore, EntryRecord, SessionRecord
from ..text.estimate import estimate_tokens
from . import events as ev
from .report import ImportReport, Tally
from .sources import SourceSession, Transcript

Progress = Callable[[int], None]  # bytes read since the last call
_ID_NAMESPACE = uuid.UUID("5b1c1a4e-6f0e-4c53-9f3a-0c1a2f6e8d11")
MAX_ENTRY_FIELD_CHARS = 2048  # a session-entry field bigger than this (a prompt snapshot) is not kept
MAX_ID_CHARS = 200


def _client_id(event: dict[str, Any], ordinal: int) -> str:
    value = event.get("id")
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_CHARS and "\n" not in value:
        return value
    return f"#{ordinal}"


# --- pass 1: validate and find the active branch ---------------------------------------------
@dataclass
class Scan:
    events: int = 0
    header: dict[str, Any] | None = None
    off_branch: set[str] | None = None  # event ids not on the active branch (None: everything is)
    repeats: dict[str, str] = field(default_factory=dict)  # where → where of the same event (id and content) before


def scan(transcript_src: Transcript, progress: Progress) -> Scan:
    """Read every line (an unreadable one raises InputError naming it) and work out which
    events are off the active branch (a rewind or a branch left them behind)."""
    result = Scan()
    parents: dict[str, str | None] = {}
    seen: dict[str, tuple[str, str]] = {}  # event id → (where, digest of the event)
    last_id = None
    for where, event, size in transcript_src.read():
        progress(size)
        result.events += 1
        if event.get("type") == "session" and result.header is None and not parents:
            result.header = event
            continue
        event_id = event.get("id")
        if isinstance(event_id, str):
            digest = hashlib.sha256(json.dumps(event, sort_keys=True, default=str).encode("utf-8")).hexdigest()
            if event_id in seen:
                first, first_digest = seen[event_id]
                if first_digest != digest:  # which one the branch and a compaction mean is unknowable
                    raise InputError(f"{where}: event id {check.shown(event_id)} is also the id of the event at "
                                     f"{first}, with other content; OpenClaw gives every event its own id")
                result.repeats[where] = first  # written twice (a retried append): imported once
                continue
            seen[event_id] = (where, digest)
            parent = event.get("parentId")
            parents[event_id] = parent if isinstance(parent, str) else None
            last_id = event_id
    leaf = transcript_src.leaf_event_id if transcript_src.leaf_event_id in parents else last_id
    on_branch: set[str] = set()
    while leaf is not None and leaf not in on_branch:
        on_branch.add(leaf)
        leaf = parents.get(leaf)
    if len(on_branch) < len(parents):
        result.off_branch = set(parents) - on_branch
    return result


# --- pass 2: write ---------------------------------------------------------------------------
@dataclass
class SessionImport:
    """The running state of one key's import (inside its transaction)."""

    rt: Runtime
    store: AgentStore
    session: SessionRecord
    report: ImportReport
    dry_run: bool
    new_session: bool
    accept_models: bool = False  # apply OpenClaw's model override of the session (else it is only reported)
    written: int = 0
    stats: dict[str, int] = field(default_factory=lambda: {"messages": 0, "resets": 0, "compactions": 0})
    last_user_at: int | None = None
    last_at: int = 0
    last_boundary_at: int | None = None
    title: str | None = None
    model: str | None = None
    # the active context's size, kept running (never re-read): (seq, tokens, bytes) of the messages
    # since the last boundary, and what came before them in this session
    sizes: list[tuple[int, int, int]] = field(default_factory=list)
    base: tuple[int, int] = (0, 0)
    unresolved: list[str] = field(default_factory=list)  # unmapped event ids waiting for the next entry
    resolved: dict[str, tuple[str, int]] = field(default_factory=dict)  # unmapped event id → next entry

    def append(self, entry: EntryRecord, scope: str, client_id: str) -> bool:
        """Write one entry unless this transcript's event was imported before."""
        entry.session_id, entry.client_scope, entry.client_id = self.session.session_id, scope, client_id
        if self.store.get_entry_by_client_id(scope, client_id) is not None:
            self.report.skipped_entries += 1
            return False
        candidate = client_id if not client_id.startswith("#") else ""
        entry.entry_id = (candidate if candidate and self.store.get_entry(candidate) is None
                          else str(uuid.uuid5(_ID_NAMESPACE, f"{scope}/{client_id}")))
        self.report.count_entry(entry.type)
        self._account(entry)
        if not self.dry_run:
            transcript.append(self.store, entry)
            for event_id in self.unresolved:
                self.resolved[event_id] = (entry.entry_id, entry.seq)
            if entry.type == "message":
                self.sizes.append((entry.seq, *transcript.entry_size(entry)))
        self.unresolved.clear()
        self.written += 1
        return True

    def _account(self, entry: EntryRecord) -> None:
        self.last_at = max(self.last_at, entry.timestamp)
        if entry.type == "message":
            self.stats["messages"] += 1
            if entry.role == "user":
                self.last_user_at = max(self.last_user_at or 0, entry.timestamp)
                text = transcript.plain_text(entry.content)
                if self.title is None and text:
                    self.title = redact_secrets(text.strip().splitlines()[0][:80])[0]
            if entry.role == "assistant" and entry.meta.get("model"):
                self.model = entry.meta["model"]
        elif entry.type == "reset":
            self.stats["resets"] += 1
            self.last_boundary_at = entry.timestamp
            self.sizes.clear()
            self.base = (0, 0)
        elif entry.type == "compaction":
            self.stats["compactions"] += 1
            summary = str(entry.meta.get("summary", ""))
            kept = entry.meta.get("firstKeptSeq", 2**62)
            self.sizes = [s for s in self.sizes if s[0] >= kept]
            self.base = (estimate_tokens(summary), len(summary.encode("utf-8")))

    def active_size(self) -> tuple[int, int]:
        return (self.base[0] + sum(s[1] for s in self.sizes), self.base[1] + sum(s[2] for s in self.sizes))

    def resolve_first_kept(self, entry: EntryRecord, scope: str, event_id: str | None) -> None:
        """A compaction's first kept OpenClaw event → our entry id and seq (an event we did not
        import stands for the next entry we did; none: nothing is kept after the summary)."""
        found = self.store.get_entry_by_client_id(scope, event_id) if event_id else None
        target = (found.entry_id, found.seq) if found else self.resolved.get(event_id or "")
        entry.meta["firstKeptEntryId"] = target[0] if target else None
        entry.meta["firstKeptSeq"] = target[1] if target else 2**62


def import_session(rt: Runtime, store: AgentStore, src: SourceSession, report: ImportReport, *,
                   dry_run: bool, progress: Progress, accept_models: bool = False) -> None:
    """One OpenClaw key, all or nothing."""
    key, why = foreign_key(src.key, store.agent_id)
    if why:
        report.renamed_keys.setdefault(why, Tally()).add(f"{src.key} → {key}", src.transcripts[0].where
                                                             if src.transcripts else None)
    if parse_key(key).incognito:  # never on disk in clawkeep (nor in OpenClaw): not imported
        report.unmapped_item("incognito session (kept in memory only, never imported)", src.key, None)
        report.sessions["unchanged"] += 1
        return
    if not src.transcripts:
        report.unmapped_item("session without a transcript (nothing to import)", src.key, None)
        report.sessions["unchanged"] += 1
        return
    scans = [scan(t, progress) for t in src.transcripts]  # InputError here: nothing was written
    session, new = _target_session(rt, store, src, key, report)
    job = SessionImport(rt, store, session, report, dry_run, new, accept_models)
    job.base = (session.meta.get("activeTokens", 0), session.meta.get("activeBytes", 0))
    with store.transaction():
        if new and not dry_run:
            store.insert_session(session)
        for index, (source, scanned) in enumerate(zip(src.transcripts, scans, strict=True)):
            _write_transcript(job, source, scanned, first=index == 0, progress=progress)
        if job.written and not dry_run:
            _finish_session(job, src)
        elif accept_models and not dry_run:
            _accept_override(job, src)
    override = model_override(src.entry)
    if override:
        report.model_overrides.append({"session": key, "model": override, "applied": accept_models and not dry_run})
    report.sessions["imported" if new and job.written else "updated" if job.written else "unchanged"] += 1


def model_override(entry: dict[str, Any]) -> str | None:
    """OpenClaw's per-session model choice (`providerOverride` / `modelOverride`) as provider/model."""
    model = entry.get("modelOverride")
    if not isinstance(model, str) or not model.strip():
        return None
    provider = entry.get("providerOverride")
    return f"{provider}/{model}" if isinstance(provider, str) and provider.strip() else model


def _accept_override(job: SessionImport, src: SourceSession) -> None:
    """A session imported earlier without --accept-models gets its model override now (unless
    one was chosen here since)."""
    override = model_override(src.entry)
    session = job.store.get_session(job.session.session_id)
    if override and session is not None and not session.meta.get("modelOverride"):
        session.meta["modelOverride"] = override
        job.store.update_session(session)


def _target_session(rt: Runtime, store: AgentStore, src: SourceSession, key: str,
                    report: ImportReport) -> tuple[SessionRecord, bool]:
    """The clawkeep session this key goes to: the one an earlier import made, else a new one
    (archived beside a clawkeep session of the same key that did not come from OpenClaw)."""
    for source in src.transcripts:
        if is_session_id(source.session_id):
            found = store.get_session(source.session_id.lower())
            if found is not None and found.meta.get("importedFrom") == "openclaw":
                return found, False
    current = store.get_session_by_key(key)
    if current is not None and current.meta.get("importedFrom") == "openclaw":
        return current, False
    wanted = str(src.entry.get("sessionId") or src.transcripts[-1].session_id).lower()
    session_id = wanted if is_session_id(wanted) and store.get_session(wanted) is None else new_session_id()
    parsed = parse_key(key)
    first = src.transcripts[0].started_at or 0
    session = SessionRecord(
        session_id=session_id, key=key, agent_id=store.agent_id, kind=parsed.kind, chat_type=parsed.chat_type,
        channel=parsed.channel or _text(src.entry.get("lastChannel") or src.entry.get("channel")),
        label=_text(src.entry.get("label") or src.entry.get("displayName")), session_started_at=first,
        updated_at=first, created_at=first, meta={"importedFrom": "openclaw", "openclaw": _entry_meta(src, report)})
    if current is not None:
        session.archived_at = rt.now()
        report.note(f"{key} already had a clawkeep session; its OpenClaw history was imported as the archived "
                    f"session {session_id} (open it with `clawkeep sessions history {session_id}`)")
    return session, True


def _text(value: Any) -> str | None:
    return value.strip()[:200] or None if isinstance(value, str) else None


def _entry_meta(src: SourceSession, report: ImportReport) -> dict[str, Any]:
    """OpenClaw's session entry, minus bulky runtime snapshots (reported, not kept)."""
    kept: dict[str, Any] = {"key": src.key, "source": src.origin}
    for name, value in src.entry.items():
        if len(json.dumps(value, ensure_ascii=False, default=str)) > MAX_ENTRY_FIELD_CHARS:
            report.unmapped_item(f"session entry field {name} (over {MAX_ENTRY_FIELD_CHARS} characters, not kept)",
                                 f"{src.key}: {name}", src.transcripts[0].where if src.transcripts else None)
        else:
            kept[name] = value
    return kept


def _write_transcript(job: SessionImport, source: Transcript, scanned: Scan, *,
                      first: bool, progress: Progress) -> None:
    scope = f"openclaw:{source.session_id}"
    header = scanned.header or {"id": source.session_id, "timestamp": source.started_at}
    at = ev.parse_time(header.get("timestamp"), source.started_at or 0)
    if first:
        job.append(ev.header_entry(header, job.session.key, at), scope, "session")
    else:
        boundary = EntryRecord("", "", "reset", at, meta={
            "reason": source.starts_with_reset or "openclaw", "droppedNotices": 0,
            "openclaw": {"sessionId": source.session_id, **{k: v for k, v in header.items() if k != "type"}}})
        job.append(boundary, scope, f"boundary:{source.part or source.session_id}")
    last_at = at
    for ordinal, (where, event, size) in enumerate(source.read()):
        progress(size)
        if ordinal == 0 and scanned.header is not None:
            continue
        if where in scanned.repeats:
            job.report.unmapped_item("event repeated with the same id and content (imported once)",
                                     f"{event.get('id')} (first at {scanned.repeats[where]})", where)
            continue
        client_id = _client_id(event, ordinal)
        if scanned.off_branch and client_id in scanned.off_branch:
            job.report.unmapped_item("event off the active branch (left behind by a rewind or branch)",
                                     _brief(event), where)
            continue
        last_at = ev.event_time(event, last_at)
        try:
            mapped = ev.map_event(event, last_at)
        except ev.Unmapped as skip:
            job.report.unmapped_item(skip.kind, _brief(skip.sample), where)
            if isinstance(event.get("id"), str):
                job.unresolved.append(event["id"])
            continue
        for kind, sample in mapped.notes:
            job.report.unmapped_item(kind, _brief(sample), where)
        if mapped.entry.type == "compaction" and not job.dry_run:
            job.resolve_first_kept(mapped.entry, scope, mapped.first_kept_event_id)
        job.append(mapped.entry, scope, client_id)


def _brief(sample: Any) -> str:
    return json.dumps(sample, ensure_ascii=False, default=str) if not isinstance(sample, str) else sample


def _finish_session(job: SessionImport, src: SourceSession) -> None:
    """Counters and times of the session row, from what was written (and what was there)."""
    store, session = job.store, job.store.get_session(job.session.session_id) or job.session
    session.message_count += job.stats["messages"]
    session.meta["resetCount"] = session.meta.get("resetCount", 0) + job.stats["resets"]
    session.meta["compactionCount"] = session.meta.get("compactionCount", 0) + job.stats["compactions"]
    if job.title and "title" not in session.meta:
        session.meta["title"] = job.title
    session.updated_at = max(session.updated_at, job.last_at, _ms(src.entry.get("updatedAt")))
    session.created_at = session.created_at or job.last_at
    if job.last_user_at:
        session.last_interaction_at = max(session.last_interaction_at or 0, job.last_user_at)
    if job.last_boundary_at:
        session.session_started_at = max(session.session_started_at, job.last_boundary_at)
    session.model = job.model or session.model
    override = model_override(src.entry)
    if override and job.accept_models:  # an archive's model choice is live only when the operator says so
        session.meta["modelOverride"] = override
    session.meta["openclaw"] = {**session.meta.get("openclaw", {}),
                                "sessionIds": sorted({*session.meta.get("openclaw", {}).get("sessionIds", []),
                                                      *(t.session_id for t in src.transcripts)})}
    session.meta["activeTokens"], session.meta["activeBytes"] = job.active_size()
    store.update_session(session)


def _ms(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def iter_sizes(sessions: list[SourceSession]) -> Iterator[int]:
    for src in sessions:
        for source in src.transcripts:
            yield source.size


def import_agent_sessions(rt: Runtime, store: AgentStore, sessions: list[SourceSession], report: ImportReport, *,
                          dry_run: bool, progress: Progress, accept_models: bool = False) -> None:
    """Each key in its own transaction; a key that fails is reported and the others go on."""
    for src in sessions:
        try:
            import_session(rt, store, src, report, dry_run=dry_run, progress=progress, accept_models=accept_models)
        except InputError as exc:
            _failed(report, src, str(exc), progress)
        except (ValueError, TypeError, RecursionError) as exc:  # an event our checks missed: still only this key
            _failed(report, src, f"an event could not be imported ({type(exc).__name__}: {str(exc)[:200]})",
                    progress)


def _failed(report: ImportReport, src: SourceSession, why: str, progress: Progress) -> None:
    report.sessions["failed"] += 1
    report.error(src.key, f"{why} — nothing of this session was imported")
    progress(sum(t.size for t in src.transcripts) * 2)


def source_path(path: Path) -> str:
    return str(path.expanduser().resolve())
