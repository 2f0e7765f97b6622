"""Whole Markdown files under memory/store/: the key/value stores adapters keep (the LangGraph
store: one file per namespace). Read and written whole, with optimistic concurrency (the writer
names the sha256 it started from), atomically (fileio.replace_text), and indexed like every other
memory file, so hybrid search finds their lines and people can read them.

Owners (who may read and write a file) come from its path, so a file never needs to be read to be
refused:

- `memory/store/users/<peer>/…`: the peer's (`CHANNEL:SENDER`, percent-encoded; a bare `SENDER` is on
  the default channel `cli`): owned by the session routing gives that peer's direct messages;
- `memory/store/sessions/<session key>/…`: owned by that session;
- `memory/store/agent/…`: the agent's, shared: every calling session reads it, the operator writes;
- anything else: the operator's.

A calling session reads, writes and lists only the files it owns (and reads the agent's); the
operator (caller None, an agent token included) everything. An owned file carries its owner as a
state line (`<!-- ck:session=KEY -->`, written by the engine, never taken from the writer), so
clawkeep's own search, memory_get and recall keep the owner boundary for its lines too."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import unquote

from .. import api
from ..errors import ConflictError, ForbiddenError, InputError
from ..fileio import replace_text
from ..routing.keys import is_session_id, parse_key
from ..routing.router import Inbound, route
from ..runtime import Runtime
from ..visibility import Caller
from .items import STORE_ROOT as ROOT
from .items import parse_marker, render_marker
from .service import workspace

MAX_FILE_BYTES = 4 * 1024 * 1024
_PART = re.compile(r"[A-Za-z0-9._%+=-]+")


def _target(rt: Runtime, path: str) -> Path:
    """`path` (memory/store/<parts>.md) inside the workspace; anything else is refused."""
    if not isinstance(path, str) or not path.startswith(ROOT + "/") or not path.endswith(".md"):
        raise InputError(f"store path {path!r}: must be {ROOT}/<name>.md (folders allowed)")
    parts = path[len(ROOT) + 1:-3].split("/")
    if any(not _PART.fullmatch(part) or part in (".", "..") for part in parts):
        raise InputError(f"store path {path!r}: each part may use letters, digits and . _ % + = - only")
    return workspace(rt) / path


PEERS, SESSIONS, AGENT = "users", "sessions", "agent"
OWN_FORMS = ("('users', '<its peer CHANNEL:SENDER>', …) or ('sessions', '<its session key>', …); "
             "it reads ('agent', …)")


def owner_of(rt: Runtime, path: str) -> str | None:
    """The session key owning store file `path`; AGENT for the agent's shared files; None: the operator's."""
    parts = path[len(ROOT) + 1:-3].split("/")
    if len(parts) >= 2 and parts[0] == PEERS:
        label = unquote(parts[1])
        channel, colon, sender = label.partition(":")
        inbound = Inbound(channel=channel, sender=sender) if colon else Inbound(sender=label)
        return route(inbound, rt.agent_id, rt.config.session).key
    if len(parts) >= 2 and parts[0] == SESSIONS:
        return parse_key(unquote(parts[1])).key
    return AGENT if parts[0] == AGENT else None


def caller_key(rt: Runtime, caller: str | None) -> str | None:
    """The calling session's key (a session id is looked up); None for the operator."""
    if caller is None:
        return None
    return rt.caller_session(Caller(caller)).key if is_session_id(caller) else parse_key(caller).key


def _allowed(owner: str | None, reader: str | None, *, writing: bool) -> bool:
    if reader is None:
        return True
    if owner == AGENT:
        return not writing
    return owner == reader


def _readable_by(rt: Runtime, path: str, reader: str) -> bool:
    try:
        return _allowed(owner_of(rt, path), reader, writing=False)
    except InputError:  # a hand-made folder name that names no peer or session: the operator's
        return False


def _check_access(rt: Runtime, path: str, reader: str | None, *, writing: bool) -> str | None:
    owner = owner_of(rt, path)
    if not _allowed(owner, reader, writing=writing):
        whose = ("the agent's (shared: the operator writes it)" if owner == AGENT
                 else "the operator's" if owner is None else f"session {owner}'s")
        raise ForbiddenError(f"store file {path} is {whose}; calling session {reader} "
                             f"{'writes' if writing else 'reads'} only its own namespaces: {OWN_FORMS}")
    return owner


def _with_owner(path: str, text: str, owner: str | None, from_operator: bool) -> str:
    """The text to store: an owned file gets its owner line (after a title), whatever the writer
    sent; a calling session's text may carry no clawkeep state marker at all (no forged owner)."""
    if not text or owner is None or owner == AGENT:
        return text
    kept = []
    for number, line in enumerate(text.split("\n"), start=1):
        content, attrs = parse_marker(line)
        if attrs and not content.strip() and set(attrs) == {"session"}:
            continue  # an owner line read back: the engine writes it again below
        if attrs and not from_operator:
            raise InputError(f"store text line {number} carries a clawkeep state marker (<!-- ck:…-->); "
                             "a store file's owner comes from its path, its lines cannot name one")
        kept.append(line)
    at = 1 if kept and kept[0].startswith("# ") else 0
    kept.insert(at, render_marker({"session": owner}).strip())
    return "\n".join(kept)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read(rt: Runtime, path: str, caller: str | None = None) -> api.StoreFile:
    target = _target(rt, path)
    _check_access(rt, path, caller_key(rt, caller), writing=False)
    text = target.read_text(encoding="utf-8") if target.is_file() else ""
    return api.StoreFile(path=path, text=text, sha256=_digest(text) if target.is_file() else "",
                         exists=target.is_file())


def write(rt: Runtime, path: str, text: str, base_sha256: str | None,
          caller: str | None = None) -> api.StoreFile:
    """Replace the file (empty text: delete it). `base_sha256`: the version the caller read ("" for
    a file that did not exist); if the file changed since, nothing is written (409)."""
    target = _target(rt, path)
    reader = caller_key(rt, caller)
    text = _with_owner(path, text, _check_access(rt, path, reader, writing=True), reader is None)
    if len(text.encode()) > MAX_FILE_BYTES:
        raise InputError(f"store file text is over {MAX_FILE_BYTES} bytes; split the namespace")
    current = _digest(target.read_text(encoding="utf-8")) if target.is_file() else ""
    if base_sha256 is not None and base_sha256 != current:
        raise ConflictError(f"store file {path} changed since it was read (another writer); read it again and retry")
    if text:
        replace_text(target, text)
    elif target.is_file():
        target.unlink()
    return api.StoreFile(path=path, text=text, sha256=_digest(text) if text else "", exists=bool(text))


def listing(rt: Runtime, prefix: str = ROOT, caller: str | None = None) -> list[api.StoreFile]:
    """Every store file under `prefix` (a folder or a file path without .md) with its text, by path;
    for a calling session, only the files it may read."""
    if not prefix.startswith(ROOT):
        raise InputError(f"store prefix {prefix!r}: must start with {ROOT}")
    reader = caller_key(rt, caller)
    base = workspace(rt, reading=True)
    root = base / ROOT
    if not root.is_dir():
        return []
    found = []
    for file in sorted(root.rglob("*.md")):
        relative = file.relative_to(base).as_posix()
        if relative.startswith(prefix.rstrip("/") + "/") or relative == prefix.rstrip("/") + ".md" \
                or prefix.rstrip("/") == ROOT:
            if reader is not None and not _readable_by(rt, relative, reader):
                continue
            text = file.read_text(encoding="utf-8")
            found.append(api.StoreFile(path=relative, text=text, sha256=_digest(text), exists=True))
    return found
