"""The working set of a sweep: the short-term store, phase signals and ingestion checkpoint
loaded once, changed in memory by the phases, saved once (a harness run never saves).

Claims are keyed by owner and text hash; a claim within the similarity threshold of a known one
(same owner) joins that entry instead of starting a new one (Light's de-duplication).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from .claims import MAX_CLAIM_CHARS, claim_hash, concept_tags, redacted, words
from .dedupe import NearDuplicates
from .sources import SourceLine
from .store import (
    MAX_DAYS,
    MAX_HASHES,
    MAX_SAMPLE_QUERIES,
    MAX_SESSIONS,
    DreamsDir,
    Entry,
    PhaseSignal,
    add_distinct,
)

DAILY_SIGNAL_SCORE = 0.62  # a claim read from a daily note or transcript counts as one signal of this relevance
TRUST_ORDER = ("owner", "agent", "system", "untrusted")  # when sources disagree, the most trusted wins


def query_hash(query: str) -> str:
    return hashlib.sha1(" ".join(query.casefold().split()).encode("utf-8")).hexdigest()[:12]


@dataclass
class Working:
    dreams: DreamsDir
    threshold: float
    entries: dict[str, Entry] = field(default_factory=dict)
    folded: list[str] = field(default_factory=list)
    signals: dict[str, PhaseSignal] = field(default_factory=dict)
    ingested: dict[str, list[str]] = field(default_factory=dict)  # daily note -> claim hashes read
    transcripts: dict[str, dict] = field(default_factory=dict)  # session id -> {"through": ms, "ids": [...]}
    touched: set[str] = field(default_factory=set)  # entries that got a signal in this run
    merged: set[str] = field(default_factory=set)  # wordings that joined a near-duplicate entry in this run
    _near: NearDuplicates | None = None

    @classmethod
    def load(cls, dreams: DreamsDir, threshold: float) -> Working:
        entries, folded, signals, checkpoint = dreams.load_state()
        return cls(dreams, threshold, entries, folded, signals, checkpoint.get("files") or {},
                   checkpoint.get("sessions") or {})

    def save(self, now: int) -> None:
        # one write: the daily counts and the checkpoint that says they were counted never part
        self.dreams.save_state(self.entries, self.folded, {k: v for k, v in self.signals.items() if k in self.entries},
                               {"updatedAt": now, "files": self.ingested, "sessions": self.transcripts}, now)

    @property
    def near(self) -> NearDuplicates:
        if self._near is None:
            self._near = NearDuplicates(self.threshold)
            for key, entry in self.entries.items():
                self._near.add(key, words(entry.text), entry.owner)
        return self._near

    def entry_for(self, line: SourceLine, source: str) -> Entry:
        """The entry of a claim: known by its hash, else a near-duplicate, else a new one.
        The entry moves to where the claim was last seen (path, line, day)."""
        text = redacted(line.text)
        key = f"{line.owner or ''}|{claim_hash(line.text)}"
        entry = self.entries.get(key)
        if entry is None:
            near = self.near.find(words(text), line.owner)
            if near is not None:
                entry = self.entries[near]
                self.merged.add(key)
        if entry is None:
            entry = Entry(key, text[:MAX_CLAIM_CHARS], line.path, line.line, line.day, source, line.origin,
                          line.owner, line.entry_id, concept_tags=concept_tags(text))
            self.entries[key] = entry
            self.near.add(key, words(text), line.owner)
            return entry
        if line.day is not None and (entry.day is None or line.day >= entry.day):
            # the entry follows its newest wording: that is the line Deep re-reads and promotes
            entry.path, entry.line, entry.day, entry.entry_id = line.path, line.line, line.day, line.entry_id
            if entry.text != text[:MAX_CLAIM_CHARS]:
                entry.text, entry.concept_tags = text[:MAX_CLAIM_CHARS], concept_tags(text)
                self.near.add(entry.key, words(text), entry.owner)
        if TRUST_ORDER.index(line.origin) < TRUST_ORDER.index(entry.origin):
            entry.origin = line.origin
        if source != "grounded":
            entry.grounded_only = False
        return entry

    def recall(self, entry: Entry, *, score: float, query: str, day: str, at: int, session: str | None,
               user_query: bool) -> None:
        entry.recall_count += 1
        entry.total_score += max(0.0, min(1.0, score))
        entry.max_score = max(entry.max_score, score)
        qhash = query_hash(query)
        add_distinct(entry.query_hashes, qhash, MAX_HASHES)
        if user_query:
            add_distinct(entry.user_query_hashes, qhash, MAX_HASHES)
        add_distinct(entry.recall_days, day, MAX_DAYS)
        add_distinct(entry.sessions, session, MAX_SESSIONS)
        if query not in entry.queries:
            add_distinct(entry.queries, query, MAX_SAMPLE_QUERIES)
        entry.first_recalled_at = min(at, entry.first_recalled_at or at)
        entry.last_recalled_at = max(at, entry.last_recalled_at or at)
        self.touched.add(entry.key)

    def daily(self, entry: Entry, *, day: str | None, now: int) -> None:
        """A claim read from a daily note or a transcript (once per claim and source)."""
        entry.daily_count += 1
        self._staged_signal(entry, DAILY_SIGNAL_SCORE, day, now)

    def grounded(self, entry: Entry, *, day: str | None, now: int, score: float) -> None:
        """A claim staged by `rem-backfill --stage-short-term` from a historical note."""
        entry.grounded_count += 1
        self._staged_signal(entry, score, day, now)

    def _staged_signal(self, entry: Entry, score: float, day: str | None, now: int) -> None:
        entry.total_score += score
        entry.max_score = max(entry.max_score, score)
        add_distinct(entry.recall_days, day, MAX_DAYS)
        entry.staged_at = entry.staged_at or now
        self.touched.add(entry.key)

    def signal(self, key: str) -> PhaseSignal:
        return self.signals.setdefault(key, PhaseSignal())
