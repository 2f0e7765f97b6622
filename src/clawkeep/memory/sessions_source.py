"""Transcripts as a memory source (M6): `User: …` / `Assistant: …` lines per session.

Eligible: interactive conversations only. Cron, hook, heartbeat and sub-agent sessions,
dreaming runs, sessions marked forgotten (`meta.forgotten`), and incognito threads (never on
disk) are excluded. Each session is one virtual file `sessions/<sessionId>`; its version is
its message count plus last entry, so an unchanged transcript costs nothing to check.
`memory get sessions/<sessionId>` renders the same lines (`indexed_lines`), so a hit's line
range opens where it points.

A date line `[YYYY-MM-DD HH:MM UTC]` precedes the first message after every reset boundary
and the first message of every new day, so a chunk says when its turns were said (memory_search
prefixes a transcript snippet with the latest date line before it). Date lines carry no
message id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..redact import redact_secrets
from ..routing.keys import SYNTHETIC_KINDS
from ..sessions.transcript import SEARCHABLE_ROLES, inter_session_source, searchable_text
from ..storage import AgentStore, SessionRecord
from ..timeutil import to_iso

_SPACES = re.compile(r"\s+")
RENDER_VERSION = "3"  # bump when the rendering changes: every transcript is re-indexed
DATE_LINE = re.compile(r"^\[(\d{4}-\d{2}-\d{2})(?: (\d{2}:\d{2}))? UTC\]$")


def date_line(timestamp: int) -> str:
    stamp = to_iso(timestamp) or ""
    return f"[{stamp[:10]} {stamp[11:16]} UTC]"


@dataclass
class SessionDoc:
    session: SessionRecord
    store: AgentStore
    _lines: list[tuple[str, str, int]] | None = field(default=None, repr=False)  # (line, message id, ts)

    @property
    def path(self) -> str:
        return f"sessions/{self.session.session_id}"

    @property
    def session_key(self) -> str:
        return self.session.key

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def version(self) -> str:
        return f"r{RENDER_VERSION}:{self.session.message_count}:{self.session.updated_at}"

    def _load(self) -> list[tuple[str, str, int]]:
        if self._lines is None:
            self._lines = []
            boundary, day = True, None
            for entry in self.store.iter_entries(self.session.session_id, types=("message", "reset")):
                if entry.type == "reset":
                    boundary = True
                    continue
                if entry.role not in SEARCHABLE_ROLES or inter_session_source(entry) is not None:
                    continue
                text = _SPACES.sub(" ", searchable_text(entry.content)).strip()  # no inline reasoning
                if text and not text.startswith("/"):
                    stamp = date_line(entry.timestamp)
                    if boundary or stamp[1:11] != day:
                        self._lines.append((stamp, "", entry.timestamp))
                        boundary, day = False, stamp[1:11]
                    self._lines.append((f"{entry.role.capitalize()}: {text}", entry.entry_id, entry.timestamp))
        return self._lines

    def render(self) -> list[str]:
        return [line for line, _, _ in self._load()]

    def indexed_lines(self) -> list[str]:
        """The lines exactly as the index chunks them (credentials redacted): a hit's
        startLine/endLine count these, and `memory get sessions/<id>` shows them."""
        return [redact_secrets(line)[0] for line in self.render()]

    def message_ids(self, start_line: int, end_line: int) -> list[str]:
        """One id per line of the range (aligned with the lines); date lines have ""."""
        return [mid for _, mid, _ in self._load()[start_line - 1:end_line]]

    def day_of_line(self, line: int) -> str | None:
        lines = self._load()
        if not lines:
            return None
        stamp = to_iso(lines[min(line, len(lines)) - 1][2])
        return stamp[:10] if stamp else None


def eligible(session: SessionRecord) -> bool:
    return not (
        session.kind in SYNTHETIC_KINDS
        or session.meta.get("incognito")
        or session.meta.get("forgotten")
        or session.meta.get("dreaming")
    )


def transcript_docs(store: AgentStore) -> list[SessionDoc]:
    return [SessionDoc(s, store) for s in store.list_sessions() if eligible(s) and s.message_count]
