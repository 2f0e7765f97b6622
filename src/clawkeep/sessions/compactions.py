"""The session writes a turn's context step decides (`context/` computes, this module writes):
a compaction's entry with the session's counters, truncateAfterCompaction's successor
transcript, and the system notices a turn delivered. Each is one transaction."""

from __future__ import annotations

from typing import Any

from ..storage import AgentStore, SessionRecord
from . import transcript


def record_compaction(store: AgentStore, session: SessionRecord, result: Any, *, at: int) -> None:
    """Append a compacted `result`'s entry (`context.compaction.compact`) and set the session's
    counters (compactions, active tokens and bytes) in one transaction: a crash leaves the
    transcript as it was. `session` is updated in place."""
    assert result.compacted and result.entry is not None, "only a compacted result has an entry to write"
    with store.transaction():
        transcript.append(store, result.entry)
        fresh = store.get_session(session.session_id) or session
        fresh.meta["compactionCount"] = fresh.meta.get("compactionCount", 0) + 1
        fresh.meta["activeTokens"] = result.tokens_after
        fresh.meta["activeBytes"] = result.active_bytes
        fresh.updated_at = max(fresh.updated_at, at)
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)


def start_successor(store: AgentStore, session: SessionRecord, successor: Any, *, at: int) -> SessionRecord:
    """Write `successor` (`context.compaction.successor`): the old transcript archived, the new
    one inserted with its header, the compaction and copies of the kept messages. Returns the
    successor's row."""
    with store.transaction():
        old = store.get_session(session.session_id) or session
        old.archived_at = at
        store.update_session(old)
        store.insert_session(successor.session)
        for entry in successor.entries:
            transcript.append(store, entry)
        for copy in successor.copies:
            store.append_entry(copy)  # not re-indexed: the original stays searchable
    return successor.session


def clear_notices(store: AgentStore, session: SessionRecord) -> None:
    """Notices are delivered once: cleared when the turn that showed them is recorded."""
    if not session.meta.get("pendingNotices"):
        return
    with store.transaction():
        fresh = store.get_session(session.session_id) or session
        fresh.meta.pop("pendingNotices", None)
        store.update_session(fresh)
    session.__dict__.update(fresh.__dict__)
