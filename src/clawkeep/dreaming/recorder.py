"""The recall store's input: every memory_search and every Active Memory recall, from the event
bus, appended as one trace line while Dreaming is enabled (nothing is recorded while it is off,
and a search of an agent with no workspace, index or database creates nothing).

A trace keeps the query (redacted), who asked (the calling session, None for the operator),
when, and the hits Dreaming can use: lines of dated notes (`memory/YYYY-MM-DD*.md`) and of
indexed transcripts (`sessions/<id>`) — MEMORY.md is long-term already, other files are not
short-term memory.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..events import MemorySearched, RecallTraced
from ..redact import redact_secrets
from ..routing.keys import parse_key
from ..runtime import Runtime

if TYPE_CHECKING:
    from .store import DreamsDir

# Every engine installs the recorder, most never record (Dreaming is off by default): the
# memory service, the claim reader and the store load with the first trace, not at open.

SHORT_TERM_PATH = re.compile(r"^memory/(?:[^/]+/)*\d{4}-\d{2}-\d{2}(?:-[^/]+)?\.md$|^sessions/[^/]+$")
MAX_TRACE_HITS = 20
MAX_SNIPPET_CHARS = 1200


def enabled(rt: Runtime) -> bool:
    return rt.config.plugins.entries.memory_core.config.dreaming.enabled


def install(rt: Runtime) -> None:
    """Subscribe the recorder to the runtime's bus (the engine does this once when it opens)."""
    rt.events.subscribe(MemorySearched, lambda event: _record(rt, "search", event.query, event.hits,
                                                              event.session_key, event.at,
                                                              **({"lexical": True} if event.lexical else {})))
    rt.events.subscribe(RecallTraced, lambda event: _record(rt, "recall", event.query, event.hits,
                                                            event.session_key, event.at, status=event.status))


def _record(rt: Runtime, kind: str, query: str, hits: tuple[dict[str, Any], ...], session: str | None, at: int,
            **extra: Any) -> None:
    if not enabled(rt):
        return
    if session is not None and parse_key(session).incognito:  # an incognito thread is never stored
        return
    from ..memory import service as memory  # deferred: see the note on imports above
    from .store import DreamsDir  # deferred: as the memory service

    if not memory.has_memory(rt):  # a search of an agent that has nothing creates nothing
        return
    # memory_search's snippets are redacted already (every snippet shown is): only the query is
    record(DreamsDir(memory.workspace(rt)), kind, query, hits, session, at, snippets_redacted=True, **extra)


def record(dreams: DreamsDir, kind: str, query: str, hits: Any, session: str | None, at: int, *,
           snippets_redacted: bool = False, **extra: Any) -> None:
    """Append one trace (also the way tests and imports write past traces with their own times)."""
    from .claims import redacted  # deferred: see the note on imports above

    def shown(snippet: Any) -> str:
        text = str(snippet or "")[:MAX_SNIPPET_CHARS]
        return text if snippets_redacted else redact_secrets(text)[0]

    kept = [{"path": h.get("path"), "startLine": h.get("startLine"), "endLine": h.get("endLine"),
             "score": h.get("score"), "snippet": shown(h.get("snippet"))}
            for h in hits or () if SHORT_TERM_PATH.match(str(h.get("path") or ""))][:MAX_TRACE_HITS]
    dreams.append_trace({"at": at, "kind": kind, "query": redacted(query)[:500], "session": session,
                         "hits": kept, **extra})
