"""session-memory hook (C3): when an interval closes (/new, /reset, daily or idle reset),
write `memory/YYYY-MM-DD-HHMM.md` with the last N user and assistant messages of it.

An excerpt, not a summary: slash commands, tool messages, inter-session input, reasoning
and tool-call scaffolding are filtered out, credentials redacted; a reply that is empty or only `NO_REPLY` after
sanitising is elided. On by default (`hooks.internal.entries.session-memory.enabled`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ClawkeepError, ConflictError, InputError
from ..events import SessionReset
from ..memory import documents
from ..memory import service as memory_service
from ..memory.workspace import workspace_dir
from ..models.reasoning import strip_reasoning
from ..redact import redact_secrets
from ..routing.keys import SYNTHETIC_KINDS
from ..runtime import Runtime
from ..sessions.history_view import sanitize_text
from ..sessions.transcript import inter_session_source, plain_text
from ..storage import AgentStore, EntryRecord, SessionRecord

NO_REPLY = "NO_REPLY"
ELIDED = "[malformed turn elided]"


def excerpt_lines(entries: list[EntryRecord], limit: int) -> list[str]:
    lines: list[str] = []
    for entry in entries:
        if entry.type != "message" or entry.role not in ("user", "assistant"):
            continue
        if inter_session_source(entry) is not None:
            continue
        text = plain_text(entry.content)
        if not text or text.lstrip().startswith("/"):
            continue
        if entry.role == "assistant":
            # reasoning is not scaffolding: a long <think> before a short answer must not make
            # the answer look malformed (only leaked tool-call XML and the like count)
            text = strip_reasoning(text)
            cleaned = sanitize_text(text)
            if not cleaned.strip() or cleaned.strip() == NO_REPLY:
                continue
            stripped_share = 1 - len(cleaned) / max(1, len(text))
            text = ELIDED if stripped_share > 0.5 and len(cleaned) < 80 else cleaned
        # The excerpt is a memory file (indexed, loaded as context): credentials never reach it
        # in clear (M7); the transcript keeps what was said.
        lines.append(f"{entry.role}: {' '.join(redact_secrets(text)[0].split())}")
    return lines[-limit:] if limit else lines


def model_slug(model: Any, lines: list[str]) -> str | None:
    """llmSlug: a 1–2 word lowercase hyphenated name for the file; None if the model fails."""
    prompt = "Give a 1-2 word lowercase hyphenated slug naming this conversation. Reply with the slug only."
    try:
        answer = model.complete([{"role": "user", "content": "\n".join(lines)[:2000]}], system=prompt,
                                max_tokens=20, timeout_s=15).text
    except ClawkeepError:
        return None
    slug = re.sub(r"[^a-z0-9]+", "-", answer.strip().lower()).strip("-")[:30].strip("-")
    return slug or None


def write_session_memory(workspace: Path, session: SessionRecord, store: AgentStore, *, after_seq: int,
                         before_seq: int, at: int, reason: str, limit: int = 15,
                         slugger: Callable[[list[str]], str | None] | None = None) -> Path | None:
    """Write the excerpt of the interval (after_seq, before_seq); None when there is nothing to keep."""
    if session.meta.get("incognito") or session.kind in SYNTHETIC_KINDS:
        return None
    entries = list(store.iter_entries(session.session_id, after_seq=after_seq, before_seq=before_seq,
                                      types=("message",)))
    lines = excerpt_lines(entries, limit)
    if not lines:
        return None
    slug = slugger(lines) if slugger else None
    moment = datetime.fromtimestamp(at / 1000, tz=UTC)
    stem = f"memory/{moment:%Y-%m-%d}-{slug or moment.strftime('%H%M')}"
    body = [
        f"# Session: {moment:%Y-%m-%d %H:%M:%S} UTC",
        "",
        f"- Session key: {session.key}",
        f"- Session id: {session.session_id}",
        f"- Reason: {reason} reset",
        "",
        "## Conversation",
        "",
        *lines,
        "",
    ]
    docs = documents.for_workspace(workspace)  # the database's documents in PostgreSQL mode (D4)
    rel, counter = f"{stem}.md", 2
    while not docs.create(rel, "\n".join(body)):  # never over an existing excerpt
        rel = f"{stem}-{counter}.md"
        counter += 1
    return workspace / rel


def install(rt: Runtime) -> None:
    """Subscribe the hook to the runtime's resets (on by default: hooks.internal.entries.session-memory)."""
    rt.events.subscribe(SessionReset, lambda event: on_reset(rt, event))


def on_reset(rt: Runtime, event: SessionReset) -> None:
    hook = rt.config.hooks.entry("session-memory")
    if not hook.enabled or rt.config.agents.defaults.workspace_access != "rw":
        return  # a read-only (or no) workspace is never written, as the flush and the tools are not
    store = rt.store_for_key(event.session_key)
    session = store.get_session(event.session_id)
    if session is None:
        return
    slugger = None
    if hook.llm_slug:
        model = rt.models.chat_model()
        slugger = (lambda lines: model_slug(model, lines)) if model is not None else None
    workspace = workspace_dir(rt.home, rt.config, session.agent_id)
    try:
        workspace = memory_service.workspace(rt, session.agent_id)  # attaches the mirror in PostgreSQL mode
        written = write_session_memory(workspace, session, store, after_seq=event.after_seq,
                                       before_seq=event.before_seq, at=event.at, reason=event.reason,
                                       limit=hook.messages, slugger=slugger)
    except (OSError, InputError, ConflictError) as exc:  # a read-only workspace must not break the reset itself
        rt.log_warning(f"session-memory hook could not write to {workspace}: {exc}")
        return
    if written is not None:
        event.outputs["sessionMemoryFile"] = str(written.relative_to(workspace))
