"""What Light reads: the lines of dated daily notes and the user's statements in transcripts,
each with where it lives, its day and its origin.

Origins (who the words come from) decide what may ever be promoted:
- `owner`: the user — a hand-written note line, a fact remembered from a conversation, a user
  turn of a direct conversation or of a session excerpt;
- `system`: a line written from a cron, hook, heartbeat or sub-agent session;
- `untrusted`: a line marked `trust=untrusted`, one whose owner marker is damaged, or a message
  another session sent (inter-session provenance).
Assistant turns are never read: what the agent said is not a fact the user stated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import ClawkeepError, InputError
from ..memory import items
from ..memory.owners import DM_KINDS, UNKNOWN_OWNER
from ..memory.sessions_source import SessionDoc, eligible
from ..routing.keys import SYNTHETIC_KINDS, parse_key
from ..sessions.transcript import plain_text
from ..storage import AgentStore
from ..timeutil import to_iso
from .claims import claim_hash, clean_line, speaker, statements

DAILY_NOTE = re.compile(r"^memory/(?:[^/]+/)*(\d{4}-\d{2}-\d{2})(?:-[^/]+)?\.md$")
DAY_FILE = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})(?:-[^/]+)?\.md$")  # any dated note, inside or outside


@dataclass(frozen=True)
class SourceLine:
    text: str  # as written (not redacted): the live text a promotion is checked against
    path: str
    line: int | None
    day: str | None
    origin: str
    owner: str | None = None
    entry_id: str | None = None
    at: int | None = None  # ms (transcript messages)


def note_day(rel: str) -> str | None:
    match = DAY_FILE.search(rel)
    return match[1] if match else None


def daily_notes(workspace: Path, since_day: str | None = None) -> list[str]:
    """Dated notes (memory/YYYY-MM-DD*.md, oldest first), from `since_day` on."""
    found = [(day, rel) for rel in items.memory_files(workspace) if DAILY_NOTE.match(rel) and (day := note_day(rel))]
    return [rel for day, rel in sorted(found) if since_day is None or day >= since_day]


def owner_origin(owner: str | None) -> str:
    if owner is None:
        return "owner"
    if owner == UNKNOWN_OWNER:
        return "untrusted"
    try:
        return "system" if parse_key(owner).kind in SYNTHETIC_KINDS else "owner"
    except InputError:
        return "untrusted"


def note_lines(workspace: Path, rel: str, lines: list[str] | None = None) -> list[SourceLine]:
    """The claim lines of one note: active items and plain lines; superseded or expired items,
    headings, questions and session-excerpt headers are not claims."""
    if lines is None:
        try:
            lines = items.read_lines(workspace / rel)
        except InputError:
            return []
    day = note_day(rel)
    excerpt = items.is_session_excerpt(lines)
    found = []
    for number, (raw, state) in enumerate(zip(lines, items.line_states(lines), strict=True), start=1):
        content, attrs = items.parse_marker(raw)
        if attrs.get("supersededBy") or (attrs.get("expires") and day and attrs["expires"] < day):
            continue
        text = clean_line(raw)
        if text is None:
            continue
        who, rest = speaker(text)
        if excerpt and who is None:
            continue  # the excerpt's header bullets (session key, id, reason)
        if who is not None:
            if who != "user":
                continue
            text = rest.strip()
            if len(text) < 8:
                continue
        origin = "untrusted" if attrs.get("trust") == "untrusted" else owner_origin(state.session)
        found.append(SourceLine(text, rel, number, day, origin, state.session))
    return found


def transcript_lines(store: AgentStore, since_ms: int) -> Iterator[SourceLine]:
    """The user's statements in direct conversations since `since_ms` (newest sessions first)."""
    for session in store.list_sessions():
        if not eligible(session) or session.updated_at < since_ms or session.kind not in DM_KINDS:
            continue
        try:
            entries = store.iter_entries(session.session_id, types=("message",), newest_first=True)
            for entry in entries:
                if entry.timestamp < since_ms:
                    break
                if entry.role != "user":
                    continue
                origin = "untrusted" if entry.meta.get("provenance") == "inter-session" else "owner"
                day = (to_iso(entry.timestamp) or "")[:10] or None
                for sentence in statements(plain_text(entry.content)):
                    yield SourceLine(sentence, f"sessions/{session.session_id}", None, day, origin, session.key,
                                     entry.entry_id, entry.timestamp)
        except ClawkeepError:
            continue  # a transcript that cannot be read is skipped, not the sweep


class LiveSources:
    """The live text of notes and transcripts, read once per sweep: what a recall hit pointed
    at, and whether a candidate is still there when Deep is about to promote it."""

    def __init__(self, workspace: Path, store: AgentStore | None):
        self.workspace = workspace
        self.store = store
        self._notes: dict[str, list[SourceLine] | None] = {}
        self._docs: dict[str, SessionDoc] = {}
        self._by_hash: dict[str, dict[str, SourceLine]] = {}

    def note(self, rel: str) -> list[SourceLine] | None:
        """The claim lines of a note; None when the file is gone or unreadable."""
        if rel not in self._notes:
            path = self.workspace / rel
            try:
                lines = items.read_lines(path) if path.is_file() else None
            except InputError:
                lines = None
            self._notes[rel] = None if lines is None else note_lines(self.workspace, rel, lines)
        return self._notes[rel]

    def note_by_hash(self, rel: str) -> dict[str, SourceLine]:
        if rel not in self._by_hash:
            self._by_hash[rel] = {claim_hash(line.text): line for line in self.note(rel) or ()}
        return self._by_hash[rel]

    def session(self, session_id: str):
        if self.store is None:
            return None
        try:
            session = self.store.get_session(session_id)
        except ClawkeepError:
            return None
        if session is None or not eligible(session) or session.kind not in DM_KINDS:
            return None
        return session

    def message(self, session_id: str, entry_id: str) -> list[SourceLine]:
        """The user's statements in one transcript message (nothing if it or its session is gone)."""
        session = self.session(session_id)
        if session is None or self.store is None:
            return []
        try:
            entry = self.store.get_entry(entry_id)
        except ClawkeepError:
            return []
        if entry is None or entry.session_id != session_id or entry.role != "user":
            return []
        origin = "untrusted" if entry.meta.get("provenance") == "inter-session" else "owner"
        day = (to_iso(entry.timestamp) or "")[:10] or None
        return [SourceLine(s, f"sessions/{session_id}", None, day, origin, session.key, entry_id, entry.timestamp)
                for s in statements(plain_text(entry.content))]

    def hit_messages(self, session_id: str, start: int, end: int) -> list[str]:
        """The transcript message ids a `sessions/<id>` hit's line range covers."""
        session = self.session(session_id)
        if session is None or self.store is None:
            return []
        doc = self._docs.get(session_id)
        if doc is None:
            doc = self._docs[session_id] = SessionDoc(session, self.store)
        return [mid for mid in doc.message_ids(start, end) if mid]
