"""Memory service functions (M1–M9): the CLI, HTTP API and MCP tools call these."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import api
from ..config.active_memory import remember_across_conversations
from ..config.memory_compat import openclaw_memory_keys
from ..errors import ClawkeepError, InputError, NotFoundError
from ..events import MemoryRefused, MemorySearched, MemoryWritten
from ..models.rerank_stage import status as rerank_status
from ..models.rerank_stage import warm as warm_reranker
from ..redact import redact_secrets
from ..routing.keys import is_session_id, parse_key
from ..runtime import Runtime
from ..timeutil import zone
from ..validation import MAX_GET_LINES, plain_text  # MAX_GET_LINES re-exported for the tool schema
from ..visibility import Caller
from . import documents, items
from .index import MemoryIndex, Progress, SyncReport
from .owners import visible_to
from .rebuild import guarded, last_rebuild, open_store
from .search import memory_search, vector_filter
from .search import validate as validate_query
from .sessions_source import SessionDoc, eligible, transcript_docs
from .workspace import (
    DREAMS_FILE,
    MEMORY_FILE,
    bootstrap_files,
    daily_note,
    ensure_workspace,
    workspace_dir,
)

# memory get answers at most this many characters (the rest is reported, not printed: a 50 MB
# single line must not reach the caller whole); page on with --from.
MAX_GET_CHARS = 100_000
MAX_GET_FILE_BYTES = 64 * 1024 * 1024  # a larger "memory file" is refused, not read into memory
MAX_PATH_CHARS = 1024  # memory paths: longer ones are refused before any file-system work
MAX_CALLER_FETCH = 50  # a session's search sizes its candidate pool for up to this many results
MAX_PATH_PARTS = 64  # ... and so are deeper ones ("a/" * 5000 took superlinear time)
T = TypeVar("T")

if TYPE_CHECKING:
    from ..turns.turn import Turn
    from . import facts  # supersession (many patterns): imported by the writes that need it
MEMORY_HEADING = "# Memory"  # the first line of a MEMORY.md the engine creates


def memory_database_path(rt: Runtime) -> Path:
    return rt.home / "agents" / rt.agent_id / "memory.sqlite"


def sessions_enabled(rt: Runtime) -> bool:
    """Transcript indexing (M6) is opt-in: experimental.sessionMemory plus `sessions` in sources."""
    settings = rt.config.agents.defaults.memory_search
    return settings.experimental.session_memory and "sessions" in settings.sources


def _provider_factory(rt: Runtime):
    settings = rt.config.agents.defaults.memory_search

    def make():
        if settings.provider == "none" or not settings.enabled:
            return None
        from ..models.embeddings import create_embedding_provider  # deferred: numpy and the models, on demand

        wanted = settings.model_dump(by_alias=True, exclude_none=True)
        try:
            return create_embedding_provider(wanted)
        except ClawkeepError as exc:  # OpenClaw's memorySearch.fallback: a second provider, else keyword only
            if settings.fallback in ("none", settings.provider):
                raise
            provider = create_embedding_provider(_fallback_settings(wanted, settings.fallback))
            provider.selected_by = f"fallback {settings.fallback}: provider {settings.provider!r} failed: {exc}"
            return provider

    return make


def _fallback_settings(wanted: dict[str, Any], fallback: str) -> dict[str, Any]:
    """The primary's settings for the fallback provider, minus what only the primary understands."""
    dropped = {"model", "remote"} | ({"queryInputType", "documentInputType"} if fallback != "openai" else set())
    return {**{k: v for k, v in wanted.items() if k not in dropped}, "provider": fallback}


# First callers at once (a gateway's warm-up and its first search) would each build an index:
# two stores, two watchers, one of them never closed.
_OPENING = threading.RLock()


def open_index(rt: Runtime) -> MemoryIndex:
    """The agent's memory index (cached on the runtime: one per process)."""
    cached = rt.memory_index
    if cached is not None:
        return cached
    with _OPENING:
        return rt.memory_index if rt.memory_index is not None else _new_index(rt)


def _new_index(rt: Runtime) -> MemoryIndex:
    settings = rt.config.agents.defaults.memory_search
    # A copy with an update, not an assignment: that would build the section's validator.
    sources = (settings.sources if sessions_enabled(rt)
               else [s for s in settings.sources if s != "sessions"] or ["memory"])
    settings = settings.model_copy(update={"sources": list(sources)})
    store, recovered = open_store(rt, memory_database_path(rt))  # a corrupt file is moved aside, recreated
    index = MemoryIndex(workspace(rt), store, settings, _provider_factory(rt),
                        sessions=lambda: transcript_docs(rt.store()))
    index.recovered = recovered
    rt.memory_index = index
    rt.on_close(index.close)
    if recovered is None:
        rt.on_close(store.close)
    return index


def with_index(rt: Runtime, op: Callable[[MemoryIndex], T]) -> T:
    """`op(index)`; an index file found corrupt on the way is rebuilt from the Markdown and `op` retried."""
    return guarded(rt, open_index(rt), op)


def sync_index(rt: Runtime) -> SyncReport:
    return with_index(rt, lambda idx: idx.sync())


def workspace(rt: Runtime, agent_id: str | None = None, *, reading: bool = False) -> Path:
    """The agent's workspace. In PostgreSQL mode it is this instance's mirror of the database's
    memory documents (D4): attached on first use, and synced (local edits written back, other
    instances' writes pulled) every time it is asked for. `reading`: an agent the database does
    not hold yet is not attached (a read creates no schema, no mirror, no lock file)."""
    agent = agent_id or rt.agent_id
    ws = workspace_dir(rt.home, rt.config, agent)
    if rt.config.storage.is_postgres and (not reading or rt.has_database(agent)):
        docs = documents.attach(ws, rt.store(agent))
        docs.sync()
        while docs.warnings:
            rt.log_warning(docs.warnings.pop(0))
    return ws


def has_memory(rt: Runtime) -> bool:
    """Whether the agent has anything to search: a workspace, a memory index or a database."""
    return workspace(rt, reading=True).is_dir() or memory_database_path(rt).exists() or rt.has_database()


def today(rt: Runtime) -> date:
    return datetime.fromtimestamp(rt.now() / 1000, tz=zone(rt.config.session.reset.timezone)).date()


# --- search and read ------------------------------------------------------------------------
# Within one turn the workspace is checked for edits once (`Turn.index_checked`): recall and
# each of the model's memory_search calls come within the same second, and the check stats every
# memory file (≈90 ms for 3,700 files). Writes of the turn itself re-index what they wrote.


def search(rt: Runtime, query: str, *, limit: int | None = None, mode: str = "hybrid",
           sync: bool = True, caller: str | None = None, without_session: str | None = None,
           corpus: str = "all", turn: Turn | None = None) -> api.MemorySearchResult:
    """Hybrid memory search; every search is published (`MemorySearched`) for Dreaming's recall store.
    `corpus` ("memory", "sessions" or "all") picks the sources before the limit is applied: a limit
    of 1 over memory files is the best memory-file hit, whatever the transcripts hold.
    `turn`: the turn this search runs for (None: no turn, e.g. the CLI): the index is checked for
    edits once per turn, and transcript lines of the messages it answers are never offered.
    `without_session`: a session id whose indexed transcript is left out entirely (recall never
    covers the current session, A5), dropped before windows so it takes no result's place."""
    if not has_memory(rt):  # nothing to find; opening the index would create a database for a ghost agent
        if mode not in ("hybrid", "keyword", "vector"):
            raise InputError(f"search mode {mode!r} is not allowed; allowed values: hybrid, keyword, vector")
        validate_query(query)
        return api.MemorySearchResult(results=[])

    wanted = limit or rt.config.agents.defaults.memory_search.query.max_results
    # a session sees only its own notes and the ones shared with it (owners.visible_to): the
    # chunks it may not see are dropped before any window is built (another conversation's line
    # never claims, outranks or crowds out one the caller may see), and the candidate pool is
    # sized for more results, since some of the best matches may be others'
    visible = None if caller is None else _visible_chunks(rt, caller)
    if without_session is not None:
        skipped, seen = f"{TRANSCRIPT_PREFIX}{without_session}", visible
        visible = lambda chunk: chunk.path != skipped and (seen is None or seen(chunk))  # noqa: E731
    pool_for = wanted if caller is None else min(MAX_CALLER_FETCH, wanted * 4)
    lexical = [mode == "keyword"]  # or no embedding provider: Dreaming reads such scores on another scale

    def run(index: MemoryIndex) -> list[Any]:
        sources = list(index.settings.sources) if corpus == "all" else [s for s in index.settings.sources
                                                                         if s == corpus]
        if not sources:  # e.g. "sessions" where transcripts are not indexed: nothing to find
            return []
        lexical[0] = lexical[0] or index.provider is None
        if index.recovered:
            index.sync()
        elif sync and not (turn is not None and turn.index_checked):
            index.refresh(vectors=mode != "keyword")  # cheap staleness check (one queue read while nothing changed)
            if turn is not None:
                turn.index_checked = True
        return memory_search(index, query, limit=wanted, mode=mode, sources=sources, today=today(rt),
                             citations=rt.config.memory.citations, visible=visible, pool_for=pool_for,
                             hidden_messages=turn.answering if turn is not None else frozenset())

    results = [hit.shape() for hit in with_index(rt, run)]
    rt.events.publish(MemorySearched(rt.now(), rt.agent_id, query, tuple(
        {"path": r.path, "startLine": r.start_line, "endLine": r.end_line, "score": r.score, "snippet": r.snippet}
        for r in results), caller, lexical=lexical[0]))
    return api.MemorySearchResult(results=results)


def _visible_chunks(rt: Runtime, caller: str) -> Callable[[Any], bool]:
    """Which indexed chunks the session `caller` may see: a note by its owner
    (`owners.visible_to`), a transcript excerpt by the session tools' visibility (S8), the same
    rule `sessions_search` applies. Each owner is decided once per search."""
    across = remember_across_conversations(rt.config)
    decided: dict[tuple[str, str | None], bool] = {}
    scope: list[Any] = []  # the caller's session scope, looked up once if a transcript needs it

    def sees(source: str, key: str | None) -> bool:
        if source != "sessions":
            return visible_to(key, caller, across=across)
        if not key:
            return False
        try:
            session = rt.read_store_for_key(key).get_session_by_key(key)
            if session is not None and not scope:
                scope.append(rt.scope(Caller(caller)))
            return session is not None and scope[0].allows(session)
        except ClawkeepError:  # a key that no longer parses or a caller that is gone: not visible
            return False

    def visible(chunk: Any) -> bool:
        if chunk.weight < 1.0:  # superseded items never reach the model (an expired plan does, marked `expired`)
            return False
        owner = (chunk.source, chunk.meta.get("sessionKey"))
        if owner not in decided:
            decided[owner] = sees(*owner)
        return decided[owner]

    return visible


EXTRA_PREFIX = "extra:"  # memory search names a file of an extra root `extra:<its real path>`
TRANSCRIPT_PREFIX = "sessions/"  # ... and an indexed transcript `sessions/<sessionId>`


def _check_path(path: str) -> None:
    if not path or "\x00" in path:
        raise InputError("memory path is empty or invalid")
    if len(path) > MAX_PATH_CHARS:
        raise InputError(f"memory path is {len(path)} characters long; at most {MAX_PATH_CHARS} are allowed")
    if len(re.findall(r"[/\\]+", path)) >= MAX_PATH_PARTS:
        raise InputError(f"memory path {path[:60]!r}… is more than {MAX_PATH_PARTS} folders deep; at most "
                         f"{MAX_PATH_PARTS} path components are allowed")


def _extra_roots(rt: Runtime, base: Path) -> tuple[list[Path], list[Path]]:
    """(folders, files) of agents.defaults.memorySearch.extraPaths, as real paths, read the way
    the index reads them: a named file is that one file, a folder everything inside it."""
    folders, files = [], []
    for configured in rt.config.agents.defaults.memory_search.extra_paths:
        root = Path(configured).expanduser()
        root = root if root.is_absolute() else base / root
        (files if root.is_file() else folders).append(root.resolve())
    return folders, files


def resolve_memory_path(rt: Runtime, path: str) -> Path:
    """A path inside the workspace or a configured extra root; anything else is refused (M4).
    `extra:<path>` (what memory search returns for an extra root's file) is read from the extra
    roots only; real paths are compared, so a link out of a root is refused."""
    _check_path(path)
    base = workspace(rt, reading=True).resolve()
    folders, files = _extra_roots(rt, base)
    extra = path.startswith(EXTRA_PREFIX)
    candidate = Path(path[len(EXTRA_PREFIX):] if extra else path).expanduser()
    target = (candidate if candidate.is_absolute() else base / candidate).resolve()
    named = target in files  # a file the operator named in extraPaths: read whatever its suffix
    roots = folders if extra else [base, *folders]
    if not named and not any(target == root or root in target.parents for root in roots):
        where = "is not inside a configured extra root (agents.defaults.memorySearch.extraPaths)" if extra \
            else "is outside the workspace and its configured roots"
        raise InputError(f"memory path {path!r} {where}; refused")
    if not named and target.suffix.lower() not in (".md", ".markdown", ".txt"):
        raise InputError(f"memory path {path!r} is not a Markdown file; allowed: .md, .markdown, .txt")
    if target.exists() and not target.is_file():  # a FIFO would block the read for ever
        raise InputError(f"memory path {path!r} is not a regular file; only regular Markdown files are read")
    return target


def get(rt: Runtime, path: str, *, from_line: int | None = None, lines: int | None = None,
        caller: str | None = None) -> api.MemoryFile:
    """A memory file or a line range of it, by the path memory search returned: a workspace
    file, `extra:<path>` of an extra root, or `sessions/<sessionId>` — an indexed transcript,
    rendered line for line as the index saw it, and only when the calling session may see it
    (`caller` None: the operator, who sees every session)."""
    _check_path(path)
    session_id = _transcript_id(path)
    target = None if session_id else resolve_memory_path(rt, path)
    if from_line is not None and from_line < 1:
        raise InputError(f"from_line {from_line} is invalid; lines are numbered from 1")
    if lines is not None and not 1 <= lines <= MAX_GET_LINES:
        raise InputError(f"lines {lines} is out of range; allowed 1-{MAX_GET_LINES}")
    extra: dict[str, Any] = {}
    if target is None:
        assert session_id is not None
        session, content = _transcript_lines(rt, path, session_id, caller)
        shown, extra = f"{TRANSCRIPT_PREFIX}{session.session_id}", {"sessionKey": session.key}
    else:
        if caller is not None:
            _readable_by_a_session(rt, path, target)
        content = _read_lines(path, target)
        if caller is not None:  # another conversation's lines are blank to this one (owner boundary)
            shown = items.lines_for_reader(content, caller, across=remember_across_conversations(rt.config),
                                           today=today(rt))
            if any(line.strip() for line in content) and not any(line.strip() for line in shown):
                # wholly another conversation's (a reset excerpt): missing, as a hidden session is,
                # so not even its length tells that it exists
                raise NotFoundError(f"memory file {path!r} not found")
            content = shown
        shown = f"{EXTRA_PREFIX}{target.as_posix()}" if path.startswith(EXTRA_PREFIX) else _relative(rt, target)
    start = from_line or 1
    end = min(len(content), start - 1 + (lines or MAX_GET_LINES))
    text, end, omitted = _capped(content[start - 1:end], start, end)
    if omitted:
        extra.update({"omittedChars": omitted, "maxChars": MAX_GET_CHARS})
    return api.MemoryFile(path=shown, from_line=start, to_line=end, total_lines=len(content), text=text,
                          truncated=omitted > 0, **extra)


def _readable_by_a_session(rt: Runtime, path: str, target: Path) -> None:
    """A calling session (the model, MCP or HTTP as a session) reads memory, never the machine
    state beside it: hidden folders (.dreams holds every conversation's text for Dreaming,
    .archive, .conflicts) and DREAMS.md, which summarises every conversation's claims."""
    base = workspace(rt, reading=True).resolve()
    if base not in target.parents:
        return  # an extra root: the operator chose it as memory
    parts = target.relative_to(base).parts
    hidden = next((part for part in parts if part.startswith(".")), None)
    if hidden is not None:
        raise InputError(f"memory path {path!r} is hidden ({hidden!r}: machine state, never memory); a session "
                         "reads MEMORY.md, memory/*.md notes and transcripts it may see")
    if parts == (DREAMS_FILE,):
        raise InputError(f"memory path {path!r} is Dreaming's review, which summarises every conversation: it is "
                         "for the operator; a session reads MEMORY.md, memory/*.md notes and transcripts it may see")


def _read_lines(path: str, target: Path) -> list[str]:
    try:
        if target.stat().st_size > MAX_GET_FILE_BYTES:
            raise InputError(f"memory file {path!r} is larger than {MAX_GET_FILE_BYTES // 2**20} MiB; memory get "
                             f"reads files of at most {MAX_GET_FILE_BYTES // 2**20} MiB")
        return target.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise NotFoundError(f"memory file {path!r} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"memory file {path!r} cannot be read as UTF-8 text: {exc}") from None


def _transcript_id(path: str) -> str | None:
    """The session id of a `sessions/<sessionId>` path (a workspace file under sessions/ is not one)."""
    rest = path[len(TRANSCRIPT_PREFIX):] if path.startswith(TRANSCRIPT_PREFIX) else ""
    return rest.lower() if is_session_id(rest) else None


def _transcript_lines(rt: Runtime, path: str, session_id: str, caller: str | None) -> tuple[Any, list[str]]:
    """(session, its lines as indexed) for `memory get sessions/<id>`. A transcript that is not
    indexed (cron, heartbeat, forgotten, incognito …) or that the caller may not see is "not
    found", exactly like a missing one (S8)."""
    if not sessions_enabled(rt):
        raise InputError(f"memory path {path!r} names a session transcript, and transcripts are not a memory "
                         "source here (agents.defaults.memorySearch.experimental.sessionMemory with \"sessions\" "
                         "in sources); read it with `sessions history` instead")
    store = rt.read_store()
    session = store.get_session(session_id)
    missing = NotFoundError(f"memory file {path!r} not found")
    if session is None or not eligible(session):
        raise missing
    if caller is not None:
        # the session service (lifecycle, maintenance) only for a session reading a transcript
        from ..sessions.service import transcript_visible  # deferred: lifecycle and maintenance modules

        try:
            visible = transcript_visible(store, session, rt.scope(Caller(caller)))
        except NotFoundError:  # a calling session that is gone sees nothing
            visible = False
        if not visible:
            raise missing
    return session, SessionDoc(session, store).indexed_lines()


def _capped(selected: list[str], start: int, end: int) -> tuple[str, int, int]:
    """(text, last line shown, characters left out): whole lines up to MAX_GET_CHARS; a first line
    longer than that is cut."""
    text = "\n".join(selected)
    if len(text) <= MAX_GET_CHARS:
        return text, end, 0
    kept, size = 0, -1
    while kept < len(selected) and size + 1 + len(selected[kept]) <= MAX_GET_CHARS:
        size += 1 + len(selected[kept])
        kept += 1
    shown = "\n".join(selected[:kept]) if kept else selected[0][:MAX_GET_CHARS]
    return shown, start - 1 + max(kept, 1), len(text) - len(shown)


def _relative(rt: Runtime, target: Path) -> str:
    base = workspace(rt, reading=True).resolve()
    return target.relative_to(base).as_posix() if base in target.parents else target.as_posix()


# --- write ----------------------------------------------------------------------------------
@dataclass
class WritePlan:
    """What writing one fact would do (M7, M8): refused with a reason, a duplicate of an active
    item, or a new item — its attributes, the items it supersedes, its expiry when time-bound."""

    fact: str
    status: str  # store | duplicate | refused
    reason: str | None = None
    same: items.Item | None = None
    attrs: dict[str, str] | None = None
    conflicts: list[items.Item] | None = None
    expires: date | None = None


def writable_items(rt: Runtime, owner: str | None, day: date, found: list[items.Item] | None = None
                   ) -> list[items.Item]:
    """The active items a fact stated in `owner`'s conversation may merge with or supersede."""
    found = items.all_items(workspace(rt)) if found is None else found
    return [i for i in found if i.status(day) == "active" and _writable_by(i, owner, rt)]


def plan_remember(rt: Runtime, text: str, *, force: bool = False, owner: str | None = None,
                  active: list[items.Item] | None = None, day: date | None = None) -> WritePlan:
    """Decide, without writing, what remembering `text` does: every write of a fact — `remember`,
    the memory tools, Dreaming's Deep phase — goes through this one decision. `active`: the items
    to compare with (default: the workspace's, as `owner` may touch them); `day`: the day the
    fact was stated (its expiry is read relative to it)."""
    plain_text(text or "", "memory text")
    fact = items.strip_request(text or "")
    if not fact:
        raise InputError("nothing to remember: the text is empty")
    if "\n" in fact or "\r" in fact or len(fact) > 2000:
        raise InputError("a memory item is one line of at most 2000 characters")
    settings = rt.config.agents.defaults.memory_search.write_filters
    reason = items.filter_reason(fact, allow_secrets=settings.allow_secrets)
    if reason and (force is False or "secret" in reason):
        return WritePlan(fact, "refused", reason=reason)
    if settings.allow_secrets:
        fact = redact_secrets(fact)[0]
    day = day or today(rt)
    active = writable_items(rt, owner, day) if active is None else active
    from . import facts  # deferred: supersession patterns, writes only

    same = next((i for i in active if i.text.strip().lower() == fact.lower()), None) or next(
        (i for i in active if facts.same_fact(fact, i.text)), None) or next(
        (i for i in active if facts.refines(i.text, fact)), None)  # a line already saying more
    if same is not None:  # a restatement merges into the line already there (seed 001 §3.3)
        return WritePlan(fact, "duplicate", same=same)
    attrs = {"id": items.new_item_id(), "at": day.isoformat()}
    if owner is not None:
        attrs["session"] = owner
    conflicts = _conflicts(fact, active, _similarity(rt))
    # a near-duplicate the new line adds a detail to is superseded by it (kept, linked), not kept twice
    conflicts += [i for i in active if i not in conflicts and facts.refines(fact, i.text)]
    if conflicts:
        attrs["supersedes"] = ",".join(i.id for i in conflicts)
    event = items.is_time_bound(fact, day)
    if event is not None:
        attrs["expires"] = event.isoformat()
    return WritePlan(fact, "store", attrs=attrs, conflicts=conflicts, expires=event)


def remember(rt: Runtime, text: str, *, force: bool = False, owner: str | None = None,
             source: str = "remember") -> api.RememberResult:
    """Write one fact to the right file: durable facts to MEMORY.md, time-bound ones to
    today's note with an expiry. Write filters (M7) and supersession (M8) apply; a refusal is
    published (`MemoryRefused`, with `source`) for the refusal log.

    `owner` is the conversation the fact was stated in (a chat's "remember …", the model's
    memory_remember): the line carries it, and it merges with or supersedes only lines that
    conversation owns — one peer's new value never replaces another peer's fact."""
    if rt.config.agents.defaults.workspace_access != "rw":
        raise InputError("the workspace is read-only (agents.defaults.workspaceAccess); nothing was written")
    if owner is not None and parse_key(owner).incognito:
        raise InputError("an incognito thread writes nothing to memory: it is never stored; nothing was written")
    plan = plan_remember(rt, text, force=force, owner=owner)
    if plan.status == "refused":
        rt.events.publish(MemoryRefused(rt.now(), rt.agent_id, source, plan.reason or "", plan.fact, owner))
        return api.RememberResult(status="refused", reason=plan.reason)
    ws = ensure_workspace(workspace(rt))
    day = today(rt)
    item = None
    if plan.status == "store":
        plan, item = _store(rt, ws, text, plan, force=force, owner=owner, day=day)
    same = plan.same
    if same is not None:
        seen = day.isoformat()
        if same.attrs.get("id") and seen not in (same.attrs.get("at"), same.attrs.get("seen")):
            try:
                items.set_attr(ws, same, seen=seen)  # when it was last said: the timestamp is refreshed
            except InputError as exc:  # the fact is there already: an unwritable file loses nothing
                rt.log_warning(f"memory remember: could not refresh {same.id}: {exc}")
        return api.RememberResult(status="duplicate", item=same.shape(day))
    assert item is not None and plan.conflicts is not None
    rt.events.publish(MemoryWritten(rt.now(), rt.agent_id, "remember", item.path, item.id,
                                    superseded=tuple(i.id for i in plan.conflicts)))
    superseded = [i.id for i in plan.conflicts]
    return api.RememberResult(status="stored", item=item.shape(day),
                              **({"superseded": superseded} if superseded else {}))


def _store(rt: Runtime, ws: Path, text: str, plan: WritePlan, *, force: bool, owner: str | None, day: date,
           extra: dict[str, str] | None = None, leave_out: str | None = None) -> tuple[WritePlan, items.Item | None]:
    """Append `plan`'s fact to its file, deciding again — duplicate, merge, which items it
    supersedes — against that file's text as it is written: another writer (a thread, another
    instance) may have added a contradicting fact since `plan` was made, and the write's retry on
    the newer text must see it, or both facts stay active. Items of the target file are marked
    superseded in the same write; items of other files afterwards. Returns the plan that was
    applied (a duplicate when the fact arrived meanwhile: then nothing is written) and the item."""
    if plan.expires is not None:
        rel, heading = daily_note(ws, day.isoformat()).relative_to(ws).as_posix(), f"# {day.isoformat()}"
    else:
        rel, heading = MEMORY_FILE, MEMORY_HEADING
    elsewhere = [i for i in writable_items(rt, owner, day) if i.path != rel and i.id != leave_out]
    applied = {"plan": plan}

    def change(lines: list[str]) -> list[str] | None:
        here = [] if items.is_session_excerpt(lines) else items.parse_items(rel, "\n".join(lines))
        here = [i for i in here if i.id != leave_out]  # an edited line is retired by its editor, not merged into
        now = plan_remember(rt, text, force=force, owner=owner, day=day,
                            active=writable_items(rt, owner, day, found=elsewhere + here))
        applied["plan"] = now
        if now.status != "store":
            return None
        assert now.attrs is not None and now.conflicts is not None
        now.attrs.update(extra or {})
        for old in now.conflicts:
            if old.path == rel:  # parsed from these very lines: its line number is current
                lines[old.line - 1] = items.line_with_attrs(lines[old.line - 1], old.id, supersededBy=now.attrs["id"])
        if not lines and heading:
            lines = [heading, ""]
        return [*lines, items.item_line(now.fact, now.attrs)]

    lines = documents.for_workspace(ws).update(rel, change)
    now = applied["plan"]
    if now.status != "store":
        return now, None
    assert now.attrs is not None and now.conflicts is not None
    item = items.Item(now.attrs["id"], rel, len(lines), items.neutralise(now.fact), now.attrs)
    for old in now.conflicts:
        if old.path != rel:
            items.set_attr(ws, old, supersededBy=item.id)
    return now, item


def _writable_by(item: items.Item, owner: str | None, rt: Runtime) -> bool:
    """May a fact stated in `owner`'s conversation merge with or supersede `item`? The operator
    (None) may touch any line; a conversation its own lines, and shared lines only where memory
    is shared across conversations anyway."""
    held_by = item.attrs.get("session")
    if owner is None or held_by == owner:
        return True
    return held_by is None and remember_across_conversations(rt.config)


def _conflicts(fact: str, active: list[items.Item], similar: facts.Similar | None) -> list[items.Item]:
    """The active items `fact` gives a new value (M8): same subject, another value (`facts.conflicts`)."""
    from . import facts  # deferred: supersession patterns, writes only

    return [i for i in active if facts.conflicts(fact, i.text, similar=similar)]


def _similarity(rt: Runtime) -> facts.Similar | None:
    """Cosine similarity of two short phrases with the configured embedding model, loaded only
    when supersession needs it (two differently worded subjects); None with provider "none".
    A failing model never blocks a write: the structural reading decides alone."""
    settings = rt.config.agents.defaults.memory_search
    if settings.provider == "none" or not settings.enabled:
        return None
    state: dict[str, Any] = {}

    def similar(a: str, b: str) -> float | None:
        if "provider" not in state:
            try:
                index = rt.memory_index
                state["provider"] = index.provider if index is not None else _provider_factory(rt)()
            except ClawkeepError as exc:
                rt.log_warning(f"memory remember: embedding model unavailable for supersession ({exc})")
                state["provider"] = None
        provider = state["provider"]
        if provider is None:
            return None
        cache: dict[str, Any] = state.setdefault("vectors", {})
        try:
            missing = [t for t in (a, b) if t not in cache]
            if missing:
                cache.update(zip(missing, provider.embed_documents(missing), strict=True))
        except ClawkeepError as exc:
            rt.log_warning(f"memory remember: embedding failed, supersession by sentence structure only ({exc})")
            state["provider"] = None
            return None
        return float(cache[a] @ cache[b])

    return similar


def list_items(rt: Runtime, *, status: str | None = None) -> list[api.MemoryItem]:
    if status not in (None, "active", "superseded", "expired", "forgotten"):
        raise InputError(f"status {status!r} is not allowed; allowed values: active, superseded, expired, forgotten")
    day = today(rt)
    skipped: dict[str, str] = {}
    found = items.all_items(workspace(rt, reading=True), skipped)
    for rel, why in skipped.items():  # one bad note never blocks the listing; it is named instead
        rt.log_warning(f"memory items: skipped {rel}: {why}")
    return [i.shape(day) for i in found if status is None or i.status(day) == status]


def edit_item(rt: Runtime, item_id: str, text: str, base_text: str | None = None) -> api.MemoryItem:
    """A human correction (M9): operational or venting wording is the editor's call, but a secret
    never reaches a memory file in clear (M7): refused, or stored redacted when allowed."""
    plain_text(text, "memory text")
    if rt.config.agents.defaults.memory_search.write_filters.allow_secrets:
        text = redact_secrets(text)[0]
    elif reason := items.filter_reason(text, allow_secrets=False):
        if "secret" in reason:
            raise InputError(f"memory edit refused: {reason}")
    item = items.edit_item(workspace(rt), item_id, text, base_text)
    rt.events.publish(MemoryWritten(rt.now(), rt.agent_id, "edit", item.path, item.id))
    sync_index(rt)
    return item.shape(today(rt))


def delete_item(rt: Runtime, item_id: str) -> api.DeleteResult:
    item = items.delete_item(workspace(rt), item_id)
    rt.events.publish(MemoryWritten(rt.now(), rt.agent_id, "delete", item.path, item.id))
    sync_index(rt)
    return api.DeleteResult(deleted=item.id, path=item.path, text=item.text)


def sweep(rt: Runtime) -> api.SweepResult:
    removed = items.sweep_expired(workspace(rt), today(rt))
    for item in removed:
        rt.events.publish(MemoryWritten(rt.now(), rt.agent_id, "sweep", item.path, item.id))
    if removed:
        sync_index(rt)
    return api.SweepResult(removed=[{"id": i.id, "path": i.path, "text": i.text, "expires": i.expires}
                                    for i in removed])


# --- index and status -----------------------------------------------------------------------
def warm(rt: Runtime) -> None:
    """Load the embedding provider and the rerank models now (a long-running process pays this
    once, at start): memory_search's and sessions_search's."""
    provider = open_index(rt).provider
    if provider is not None and hasattr(provider, "warm"):
        provider.warm()
    warm_reranker(rt.config.agents.defaults.memory_search.rerank)
    warm_reranker(rt.config.tools.sessions.search.rerank)


def index(rt: Runtime, *, force: bool = False, progress: Progress | None = None) -> api.IndexReport:
    ensure_workspace(workspace(rt))
    return with_index(rt, lambda idx: idx.sync(force=force, progress=progress)).shape()


def status(rt: Runtime, *, deep: bool = False) -> api.MemoryStatus:
    ws = workspace(rt, reading=True)
    if not has_memory(rt):  # an agent with no workspace, index or database: report it, create nothing
        settings = rt.config.agents.defaults.memory_search
        return api.MemoryStatus(
            workspace=str(ws), workspace_exists=False, files=0,
            sources=[s for s in settings.sources if s != "sessions" or sessions_enabled(rt)] or ["memory"],
            index={"path": str(memory_database_path(rt)), "exists": False, "chunks": 0, "indexedFiles": 0,
                   "lastEmbeddingError": None},
            provider={"configured": settings.provider, "model": settings.model},
            rerank=rerank_status(settings.rerank),
            vector_store={"backend": settings.vector_store}, **_openclaw_keys(rt))

    def index_state(idx: MemoryIndex) -> dict[str, Any]:
        if idx.recovered:
            idx.sync()  # a corrupt index was just replaced: re-index before reporting on it
        return {"path": str(memory_database_path(rt)), "chunks": idx.store.chunk_count(),
                "indexedFiles": len(idx.store.files()),
                "lastEmbeddingError": idx.store.get_meta("lastEmbeddingError") or None,
                "lastCorruptRebuild": last_rebuild(idx.store),
                # files indexed without a bad part (a NUL, a control character, bytes that are not UTF-8)
                **({"repairedFiles": repaired} if (repaired := idx.repaired_files()) else {})}

    index_info = with_index(rt, index_state)
    idx = open_index(rt)
    settings = idx.settings
    out: dict[str, Any] = {
        "workspace": str(ws),
        "workspaceExists": ws.is_dir(),
        "files": len(items.memory_files(ws)) if ws.is_dir() else 0,
        "sources": settings.sources,
        "index": index_info,
        "provider": {"configured": settings.provider, "model": settings.model},
        "rerank": rerank_status(settings.rerank),
        "vectorStore": {"backend": settings.vector_store, "vectorIndex": "exact"},
        **_openclaw_keys(rt),
    }
    server = rt.read_store().server_info()  # which backend, which server version
    out["storage"], out["storageVersion"] = server["storage"], server["storageVersion"]
    if rt.config.storage.is_postgres:  # D4: the documents live in the database, mirrored here
        out["index"]["path"] = idx.store.path
        # "pgvector-hnsw", or "exact (no pgvector)" on a server without the extension
        out["vectorStore"] = {"backend": idx.store.vector_store, "vectorIndex": idx.store.vector_index}
        out["documents"] = {"backend": "postgresql", "mirror": str(ws),
                            "conflicts": documents.for_workspace(ws).conflicts(),
                            "notMirrored": documents.for_workspace(ws).not_mirrored()}
    if deep:
        out["provider"] = _provider_health(idx)
        try:
            out["index"]["stale"] = idx.store.get_meta("fingerprint") != idx.fingerprint()
            out["vectorStore"].update({"ok": True, **idx.store.describe_vectors(vector_filter(idx, settings.sources))})
        except ClawkeepError as exc:
            out["vectorStore"].update({"ok": False, "error": str(exc)})
    return api.MemoryStatus.model_validate(out)


def _openclaw_keys(rt: Runtime) -> dict[str, Any]:
    """OpenClaw memory-search keys the config sets, each implemented, mapped or ignored with a reason."""
    rows = openclaw_memory_keys(rt.config)
    return {"openclawKeys": rows} if rows else {}


def _provider_health(idx: MemoryIndex) -> dict[str, Any]:
    try:
        provider = idx.provider
        if provider is None:
            return {"ok": True, "provider": "none", "mode": "keyword only"}
        provider.embed_query("health check")
        return {"ok": True, **provider.describe()}
    except ClawkeepError as exc:
        return {"ok": False, "error": str(exc)}


def bootstrap(rt: Runtime, *, chat_type: str | None = "direct", new_session: bool = True,
              session_key: str | None = None, max_tokens: int | None = None) -> list[api.BootstrapFile]:
    """The bootstrap files as the conversation `session_key` may see them (None: the operator,
    who sees every line but never the hidden state comments or stale items), each within
    bootstrapMaxChars and together within `max_tokens` (the window's share, `Budget.bootstrap`)."""
    now = datetime.fromtimestamp(rt.now() / 1000, tz=zone(rt.config.session.reset.timezone))
    across = remember_across_conversations(rt.config)
    day = now.date()
    return bootstrap_files(workspace(rt), now, chat_type=chat_type, new_session=new_session,
                           max_chars=rt.config.agents.defaults.bootstrap_max_chars, max_tokens=max_tokens,
                           visible=lambda text: items.visible_text(text, session_key, across=across, today=day))



def watch(rt: Runtime):
    """Start a file watcher that re-indexes after edits (for long-running processes)."""
    from .watcher import MemoryWatcher, TranscriptPoller  # deferred: watchdog, long-running processes only

    idx = open_index(rt)
    sync_settings = rt.config.agents.defaults.memory_search.sync
    watcher = MemoryWatcher(ensure_workspace(workspace(rt)), lambda: sync_index(rt),
                            sync_settings.watch_debounce_ms).start()
    rt.on_close(watcher.stop)
    # extra roots are outside the watched workspace: searches keep checking them
    idx.watched = not idx.settings.extra_paths
    # the engine's own writes are searchable at once (read-your-writes), not a debounce later
    rt.on_close(rt.events.subscribe(MemoryWritten, lambda event: sync_index(rt)))
    if "sessions" in idx.settings.sources:
        store = rt.store()

        def signature() -> object:
            return tuple((s.session_id, s.message_count, s.updated_at) for s in store.list_sessions())

        poller = TranscriptPoller(signature, lambda: sync_index(rt), sync_settings.sessions_debounce_ms).start()
        rt.on_close(poller.stop)
    return watcher
