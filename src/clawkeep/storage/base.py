"""The storage interface every backend implements (SQLite now, PostgreSQL per SPEC D1).

One `AgentStore` holds one agent's sessions and transcript entries plus the full-text index
over them. Queries are typed (`SessionFilter`, `TextQuery`): each backend renders them into its
own SQL, and no SQL lives outside `clawkeep.storage.<backend>`; services speak only this
interface. Every backend passes tests/storage/conformance. Times are integer milliseconds
since the epoch (UTC).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from .query import TextQuery

ENTRY_TYPES = ("session", "message", "reset", "compaction", "model_change", "system_event")


@dataclass
class SessionRecord:
    session_id: str
    key: str
    agent_id: str
    kind: str
    chat_type: str | None = None
    channel: str | None = None
    account: str | None = None
    peer: str | None = None
    label: str | None = None
    origin: str = "chat"
    parent_session_id: str | None = None  # fork / spawn parent: the S8 `tree`
    session_started_at: int = 0
    last_interaction_at: int | None = None
    updated_at: int = 0
    created_at: int = 0
    archived_at: int | None = None
    version: int = 0  # bumped by every update; a stale writer gets ConflictError
    message_count: int = 0
    model: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class EntryRecord:
    entry_id: str
    session_id: str
    type: str
    timestamp: int
    role: str | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    parent_entry_id: str | None = None
    seq: int = 0  # assigned by the store; total order of entries within an agent
    # A channel's own message id and the conversation that numbers it (channel/account/chat):
    # idempotent re-delivery is per (client_scope, client_id), never per bare id.
    client_id: str | None = None
    client_scope: str | None = None


class SearchRow:
    """One full-text candidate: its entry, the session's key, the score (lower is better, the
    FTS5 bm25 convention) and the analysed text that was indexed (for re-ranking).

    A backend may hand over `decode` instead of the entry: it runs on first access. A search
    re-ranks up to 100 candidates by score and tokens alone and shows about 10 of them, and
    decoding an entry (two JSON documents) cost more than fetching it.
    """

    __slots__ = ("_entry", "_decode", "session_key", "score", "tokens")

    def __init__(self, entry: EntryRecord | None, session_key: str, score: float, tokens: str = "", *,
                 decode: Callable[[], EntryRecord] | None = None) -> None:
        if entry is None and decode is None:
            raise ValueError("a search row needs its entry or a way to decode it")
        self._entry, self._decode = entry, decode
        self.session_key, self.score, self.tokens = session_key, score, tokens

    @property
    def entry(self) -> EntryRecord:
        if self._entry is None:
            assert self._decode is not None
            self._entry, self._decode = self._decode(), None
        return self._entry

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchRow):
            return NotImplemented
        return (self.entry, self.session_key, self.score, self.tokens) == (
            other.entry, other.session_key, other.score, other.tokens)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaced

    def __repr__(self) -> str:
        return (f"SearchRow(entry={self.entry!r}, session_key={self.session_key!r}, score={self.score!r}, "
                f"tokens={self.tokens!r})")


@dataclass(slots=True)  # slots: a search builds ~100 of them
class TextMatch:
    """One ranked full-text match (`AgentStore.rank_matches`): the entry's seq and score. Its
    indexed tokens and its full row are read only when asked for (`load_tokens`, `load_rows`):
    a search re-ranks the first few of ~100 matches by their tokens and shows about 10."""

    seq: int
    score: float
    tokens: str | None = None
    row: SearchRow | None = None


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions `list_sessions` returns, newest `updated_at` first. Every field narrows.

    `descendants_of`: only sessions below one of these ids (children, their children, ...; the
    ids themselves are not included unless they are below another one). The walk follows only
    sessions the archived rule admits, so an archived session ends its branch.
    """

    kinds: tuple[str, ...] | None = None
    label: str | None = None  # equal ignoring case (Python's str.lower on both sides)
    updated_since: int | None = None  # updated_at >= this
    parent_session_id: str | None = None  # direct children of this session
    descendants_of: tuple[str, ...] | None = None
    include_archived: bool = False
    limit: int | None = None


@dataclass
class CredentialRecord:
    """One caller credential (a token): only the SHA-256 of its secret is ever stored. `scope` is
    `operator`, `agent:ID`, `session:KEY` or `peer:CHANNEL:SENDER`; times are ms since the epoch."""

    name: str
    digest: str  # hex SHA-256 of the secret
    scope: str
    created_at: int
    expires_at: int | None = None
    revoked_at: int | None = None
    last_used_at: int | None = None
    sandboxed: bool = False


@dataclass(frozen=True)
class AppliedMigration:
    version: int
    name: str
    applied_at: int | None  # ms since the epoch; None = applied before the history was recorded


def has_block(content: Any, block_types: Sequence[str]) -> bool:
    """Whether message content has a block of one of `block_types` (see `count_entries`)."""
    if isinstance(content, str):
        return "text" in block_types and bool(content.strip())
    if not isinstance(content, list):
        return False
    for block in content:
        if isinstance(block, dict) and block.get("type") in block_types:
            if block["type"] != "text" or str(block.get("text") or "").strip():
                return True
    return False


def describe_entry(entry: EntryRecord) -> str:
    """An entry as the commit journal names it."""
    if entry.type == "message":
        return f"{entry.role or 'a'} message {entry.entry_id} in session {entry.session_id}"
    if entry.type == "reset":
        return f"reset boundary {entry.entry_id} ({entry.meta.get('reason', 'reset')}) in session {entry.session_id}"
    return f"{entry.type} entry {entry.entry_id} in session {entry.session_id}"


class AgentStore(abc.ABC):
    """One agent's sessions, transcripts and transcript search index."""

    agent_id: str

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction; nested calls join the outer one. Commit = durable."""

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def session_lock(self, key: str) -> AbstractContextManager[None]:
        """Hold while a turn of session `key` runs: turns of one session never interleave, other
        sessions run in parallel. Re-entrant within a thread. (SQLite: in-process; a shared
        database needs a lock all writers see, e.g. a PostgreSQL advisory lock, which may travel
        with the turn's first statement on this store: all the turn reads and writes through the
        store happens while another instance's turn of that session waits.)"""

    @abc.abstractmethod
    def applied_migrations(self) -> list[AppliedMigration]:
        """The schema history of this store, oldest first."""

    @abc.abstractmethod
    def try_lease(self, name: str, holder: str, ttl_ms: int) -> bool:
        """Take or renew the lease `name` for `holder` for `ttl_ms`: True when `holder` now holds it
        (it was free, expired, or already `holder`'s), False while another holder's is current. One
        instance at a time runs what the lease guards (the reset/maintenance clock, SPEC D2)."""

    @abc.abstractmethod
    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease up early (only `holder`'s own)."""

    # --- caller credentials (tokens) -------------------------------------------------
    @abc.abstractmethod
    def insert_credential(self, record: CredentialRecord) -> None:
        """Store a new credential; ConflictError when its name (or digest) is taken."""

    @abc.abstractmethod
    def credential_by_digest(self, digest: str) -> CredentialRecord | None:
        """The credential whose secret hashes to `digest` (revoked and expired ones included)."""

    @abc.abstractmethod
    def list_credentials(self) -> list[CredentialRecord]:
        """Every credential, oldest first."""

    @abc.abstractmethod
    def has_credentials(self) -> bool:
        """Whether any credential was ever created (revoked and expired ones count)."""

    @abc.abstractmethod
    def revoke_credential(self, name: str, at: int) -> CredentialRecord | None:
        """Mark `name` revoked at `at` (an earlier revocation keeps its time); None if no such name."""

    @abc.abstractmethod
    def note_credential_use(self, name: str, at: int) -> None:
        """Record when `name` was last used (callers write it at most about once a minute)."""

    # --- sessions -------------------------------------------------------------------
    @abc.abstractmethod
    def get_session(self, session_id: str) -> SessionRecord | None: ...

    @abc.abstractmethod
    def get_session_by_key(self, key: str) -> SessionRecord | None:
        """The current (non-archived) session behind a key."""

    @abc.abstractmethod
    def insert_session(self, record: SessionRecord) -> None: ...

    @abc.abstractmethod
    def update_session(self, record: SessionRecord) -> None:
        """Write the record if its `version` is still current, then bump it (ConflictError if not)."""

    @abc.abstractmethod
    def list_sessions(self, flt: SessionFilter = SessionFilter()) -> list[SessionRecord]:
        """Sessions matching `flt`, newest `updated_at` first."""

    @abc.abstractmethod
    def count_sessions(self, flt: SessionFilter = SessionFilter()) -> int:
        """How many sessions `list_sessions(flt)` would return."""

    @abc.abstractmethod
    def delete_session(self, session_id: str) -> None:
        """Remove a session row with its entries and index rows (after archiving them)."""

    # --- transcript -----------------------------------------------------------------
    @abc.abstractmethod
    def append_entry(self, entry: EntryRecord, *, index_text: str | None = None,
                     at_commit: bool = False) -> EntryRecord:
        """Append an entry; `index_text` (analysed tokens) goes into the search index in the
        same transaction so search never lags the transcript. `at_commit`: inside a caller's
        transaction, a store may send the write without waiting for it (PostgreSQL: no round
        trip of its own), so `entry.seq` is set and a DuplicateError raised only where that
        transaction ends; the caller reads neither before."""

    @abc.abstractmethod
    def get_entry(self, entry_id: str) -> EntryRecord | None: ...

    @abc.abstractmethod
    def get_entry_by_client_id(self, client_scope: str, client_id: str) -> EntryRecord | None:
        """The entry a conversation's own message id was recorded as (idempotent delivery)."""

    @abc.abstractmethod
    def find_client_entry(self, session_id: str, client_id: str) -> EntryRecord | None:
        """An entry of one session by the channel's message id (for re-opening an interval)."""

    @abc.abstractmethod
    def iter_entries(
        self,
        session_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        types: Sequence[str] | None = None,
        newest_first: bool = False,
        limit: int | None = None,
    ) -> Iterator[EntryRecord]: ...

    def entries_near(self, starts: Sequence[tuple[str, int]], *, types: Sequence[str] | None = None,
                     before: int, after: int, before_of: int | None = None) -> list[list[EntryRecord]]:
        """For each (session id, seq): the last `before` entries of that session before it (only
        for the first `before_of` starts, when given) and the first `after` after it (not the
        entry itself), in `seq` order (`iter_entries` for each; a backend may read them all at once)."""
        wanted = len(starts) if before_of is None else before_of
        return [self._entries_near(sid, seq, types, before if k < wanted else 0, after)
                for k, (sid, seq) in enumerate(starts)]

    def _entries_near(self, session_id: str, seq: int, types: Sequence[str] | None, before: int,
                      after: int) -> list[EntryRecord]:
        earlier = list(self.iter_entries(session_id, before_seq=seq, types=types, newest_first=True,
                                         limit=before)) if before > 0 else []
        later = list(self.iter_entries(session_id, after_seq=seq, types=types, limit=after)) if after > 0 else []
        return [*reversed(earlier), *later]

    @abc.abstractmethod
    def last_entry(self, session_id: str, types: Sequence[str] | None = None) -> EntryRecord | None: ...

    @abc.abstractmethod
    def scan_entries(self, *, after_seq: int = 0, limit: int = 1000, newest_first: bool = False) -> list[EntryRecord]:
        """Entries of every session in `seq` order (copying a whole store: `clawkeep migrate`)."""

    def count_entries(
        self,
        session_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        types: Sequence[str] | None = None,
        exclude_roles: Sequence[str] = (),
        block_types: Sequence[str] | None = None,
    ) -> int:
        """How many entries `iter_entries` would yield, leaving out `exclude_roles` and, with
        `block_types`, entries whose content has no block of those types (a "text" block counts
        only when its text is not blank; plain-string content is one text block). Backends
        answer without reading the entries into Python; this fallback reads them."""
        return sum(1 for e in self.iter_entries(session_id, after_seq=after_seq, before_seq=before_seq, types=types)
                   if e.role not in exclude_roles and (block_types is None or has_block(e.content, block_types)))

    # --- search ---------------------------------------------------------------------
    @abc.abstractmethod
    def search(self, query: TextQuery, *, session_ids: Iterable[str] | None, limit: int) -> list[SearchRow]:
        """Full-text candidates, best (lowest score) first. `session_ids` (None: every session)
        restricts the candidates before the limit, never after: a caller's visibility."""

    def rank_matches(self, query: TextQuery, *, session_ids: Iterable[str] | None, limit: int) -> list[TextMatch]:
        """`search`'s ranking (same rows, same order, same scores), each row's tokens and entry left
        for `load_tokens` and `load_rows` when a backend can read the index alone. This default
        reads everything at once."""
        return [TextMatch(row.entry.seq, row.score, row.tokens, row)
                for row in self.search(query, session_ids=session_ids, limit=limit)]

    def load_tokens(self, matches: Sequence[TextMatch]) -> None:
        """Fill `tokens` of these matches (from `rank_matches`) where it is missing."""
        if any(m.tokens is None for m in matches):
            raise NotImplementedError(f"{type(self).__name__} ranks without tokens but cannot load them")

    def load_rows(self, matches: Sequence[TextMatch]) -> None:
        """Fill `row` of these matches (from `rank_matches`) where it is missing; a match whose
        session was deleted since it was ranked keeps None (and no tokens)."""
        if any(m.row is None for m in matches):
            raise NotImplementedError(f"{type(self).__name__} ranks without rows but cannot load them")

    @abc.abstractmethod
    def document_frequency(self, tokens: Sequence[str]) -> dict[str, int]:
        """How many indexed messages contain each token (for query pruning)."""

    @abc.abstractmethod
    def indexed_documents(self) -> int:
        """About how many messages are indexed (an upper bound is fine: it scales idf)."""

    @abc.abstractmethod
    def indexed_messages(self) -> int:
        """Exactly how many messages the search index holds (status' `indexedMessages`)."""

    @abc.abstractmethod
    def server_info(self) -> dict[str, Any]:
        """What `status` names: `storage` (the backend), `storageVersion` (e.g. "PostgreSQL 16.2",
        "SQLite 3.45.1") and `pgvector` (its version on the server, or None)."""

    # --- counters -------------------------------------------------------------------
    @abc.abstractmethod
    def add_counters(self, deltas: dict[str, int]) -> None:
        """Add to named running totals (metrics: turns, compactions, recall hits, …), atomically;
        several processes on one database add up."""

    @abc.abstractmethod
    def counters(self) -> dict[str, int]:
        """Every running total by name (missing names are 0)."""
