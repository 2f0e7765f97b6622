"""`clawkeep migrate --from A --to B` (SPEC D3): copy an embedded home into PostgreSQL, or back.

Each end is a home directory (its SQLite databases and workspace files) or a `postgresql://` URL
(with `--schema`, the prefix of clawkeep's schemas). Per agent, in order: the session rows, the
transcript entries in their original order (indexed with the same analysis as new messages, in
batches of one transaction each), the memory documents (workspace files <-> database documents).
The memory index is derived and rebuilds itself on first use at the target.

Resumable: a copy interrupted at any point is continued by running the same command again: the
entries continue after the last one the target holds (which must be the source's). A run after the
source moved on catches up: new entries appended in order, session rows brought to the source's,
documents made equal to the source's (one deleted at the source is deleted at the target). Only
what this migration wrote is changed: a target session or document it did not write (PostgreSQL:
`updated_by`; a home: the list `agents/<id>/migrated-documents.json`) is refused, left untouched.
A document with a NUL byte is refused for PostgreSQL, whose text cannot hold it. Verified at the
end by counts and SHA-256 checksums of both sides (entry ids, content, metadata; sequence numbers
compared by what they point at, since the target numbers entries anew: compaction `firstKeptSeq`
and fork `forkedFromSeq` are rewritten to the target's numbers). A mismatch gets one more catch-up
pass (the source may be in use); then it is an error naming the agent and what differs, advising a
re-run only if the source kept changing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import validation
from .config import Config, StorageConfig, load_config
from .config.base import _describe_error
from .errors import InputError, StorageError
from .memory.documents import memory_files, read_lines, write_text
from .memory.workspace import NOTES_DIR, workspace_dir
from .sessions.transcript import index_text_for
from .storage import (
    AgentStore,
    DocumentStore,
    EntryRecord,
    SessionFilter,
    agent_database_path,
    known_agent_ids,
    open_agent_store,
)
from .storage.postgres import redact  # free: a migration always has a PostgreSQL end

BATCH = 500
NO_SEQ = 2**62  # "nothing kept" in a compaction's firstKeptSeq
Progress = Callable[[str, str, int, int], None]  # (agent, phase, done, total)


@dataclass
class Endpoint:
    label: str
    home: Path
    config: Config

    @property
    def storage(self) -> StorageConfig:
        return self.config.storage

    @property
    def is_postgres(self) -> bool:
        return self.storage.is_postgres

    def agents(self) -> set[str]:
        return known_agent_ids(self.home, self.storage)

    def open(self, agent: str) -> AgentStore:
        return open_agent_store(self.home, agent, self.storage)

    def workspace(self, agent: str) -> Path:
        return workspace_dir(self.home, self.config, agent)


def endpoint(value: str, schema: str, name: str) -> Endpoint:
    if value.startswith(("postgresql://", "postgres://")):
        shown = validation.redact_url(value)  # messages name the server, never the password
        try:
            config = Config.model_validate({"storage": {"url": value, "schema": schema}})
        except ValidationError as exc:
            problems = "; ".join(_describe_error(err) for err in exc.errors())
            raise InputError(f"{name}: {problems}") from None
        return Endpoint(shown, Path("/nonexistent-home"), config)
    validation.path(value, name)
    home = Path(value).expanduser()
    try:
        is_file = home.exists() and not home.is_dir()
    except OSError as exc:  # a name component longer than the file system allows, a loop of links, ...
        raise InputError(f"{name} {validation.shown(value)} cannot be used as a directory ({exc.strerror}); "
                         "give a clawkeep home directory or a postgresql:// URL") from None
    if is_file:
        raise InputError(f"{name} {value!r} is not a directory; give a clawkeep home or a postgresql:// URL")
    config = load_config(home / "clawkeep.json5", missing_ok=True)
    # the home's own SQLite files, whatever its config says about storage.url
    config = config.model_copy(update={"storage": config.storage.model_copy(update={"url": None})})
    return Endpoint(str(home), home, config)


# --- what both sides are compared by ---------------------------------------------------------
def _first_at_or_after(store: AgentStore, session_id: str, seq: int) -> EntryRecord | None:
    return next(store.iter_entries(session_id, after_seq=seq - 1, limit=1), None)


def _last_at_or_before(store: AgentStore, session_id: str, seq: int) -> EntryRecord | None:
    return next(store.iter_entries(session_id, before_seq=seq + 1, newest_first=True, limit=1), None)


def _entry_view(store: AgentStore, e: EntryRecord) -> dict[str, Any]:
    meta = dict(e.meta)
    kept = meta.get("firstKeptSeq")
    if isinstance(kept, int) and 0 < kept < NO_SEQ:
        found = _first_at_or_after(store, e.session_id, kept)
        meta["firstKeptSeq"] = f"entry:{found.entry_id}" if found else "none"
    return {"id": e.entry_id, "session": e.session_id, "type": e.type, "role": e.role, "ts": e.timestamp,
            "content": e.content, "meta": meta, "parent": e.parent_entry_id, "client": [e.client_scope, e.client_id]}


def _session_view(store: AgentStore, s: Any) -> dict[str, Any]:
    values = {k: v for k, v in s.__dict__.items() if k != "version"}
    meta = dict(s.meta)
    fork = meta.get("forkedFromSeq")
    if isinstance(fork, int) and fork > 0 and s.parent_session_id:
        found = _last_at_or_before(store, s.parent_session_id, fork)
        meta["forkedFromSeq"] = f"entry:{found.entry_id}" if found else "none"
    values["meta"] = meta
    return values


def _all_entries(store: AgentStore) -> Iterator[EntryRecord]:
    after = 0
    while batch := store.scan_entries(after_seq=after, limit=BATCH):
        yield from batch
        after = batch[-1].seq


def _digest(items: Iterator[dict[str, Any]]) -> tuple[int, str]:
    h, n = hashlib.sha256(), 0
    for item in items:
        h.update(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        h.update(b"\n")
        n += 1
    return n, h.hexdigest()


def _documents(end: Endpoint, store: AgentStore, agent: str) -> dict[str, str]:
    if end.is_postgres:
        assert isinstance(store, DocumentStore)
        return {d.path: d.text for d in store.doc_changes(0) if not d.deleted}
    ws = end.workspace(agent)
    if not ws.is_dir():
        return {}
    paths = set(memory_files(ws))
    for hidden in (ws / NOTES_DIR).glob(".*/**/*.md"):  # the sweep's archive, kept conflicts
        if hidden.is_file() and not hidden.is_symlink():
            paths.add(hidden.relative_to(ws).as_posix())
    docs = {}
    for rel in sorted(paths):
        read_lines(ws / rel)  # an unreadable or non-UTF-8 file is refused, naming it
        docs[rel] = (ws / rel).read_text(encoding="utf-8")
    return docs


def summary(end: Endpoint, store: AgentStore, agent: str) -> dict[str, Any]:
    sessions = sorted(store.list_sessions(SessionFilter(include_archived=True)), key=lambda s: s.session_id)
    n_sessions, session_sum = _digest(_session_view(store, s) for s in sessions)
    n_entries, entry_sum = _digest(_entry_view(store, e) for e in _all_entries(store))
    docs = _documents(end, store, agent)
    n_docs, doc_sum = _digest({"path": p, "text": t} for p, t in sorted(docs.items()))
    return {"sessions": n_sessions, "entries": n_entries, "documents": n_docs,
            "checksums": {"sessions": session_sum, "entries": entry_sum, "documents": doc_sum}}


# --- the copy -------------------------------------------------------------------------------
def _resume_point(src: AgentStore, dst: AgentStore, agent: str, target: str) -> int:
    last = dst.scan_entries(newest_first=True, limit=1)
    if not last:
        return 0
    mine = src.get_entry(last[0].entry_id)
    if mine is None:
        raise InputError(f"target {target} already holds entries of agent {agent!r} that the source does not have "
                         f"(e.g. {last[0].entry_id}); migrate into an empty target, or continue a copy of this source")
    return mine.seq


def _copy_entry(src: AgentStore, dst: AgentStore, e: EntryRecord) -> EntryRecord:
    meta = dict(e.meta)
    kept = meta.get("firstKeptSeq")
    if isinstance(kept, int) and 0 < kept < NO_SEQ:
        found = _first_at_or_after(src, e.session_id, kept)
        there = dst.get_entry(found.entry_id) if found else None
        meta["firstKeptSeq"] = there.seq if there else NO_SEQ
    return replace(e, seq=0, meta=meta)


def _fix_forks(src: AgentStore, dst: AgentStore) -> None:
    for s in src.list_sessions(SessionFilter(include_archived=True)):
        fork = s.meta.get("forkedFromSeq")
        if not (isinstance(fork, int) and fork > 0 and s.parent_session_id):
            continue
        found = _last_at_or_before(src, s.parent_session_id, fork)
        there = dst.get_entry(found.entry_id) if found else None
        mine = dst.get_session(s.session_id)
        want = there.seq if there else 0
        if mine is not None and mine.meta.get("forkedFromSeq") != want:
            mine.meta = {**mine.meta, "forkedFromSeq": want}
            dst.update_session(mine)


HOLDER = "clawkeep migrate"  # who wrote a PostgreSQL document: tells the migration's copies from other data


def _manifest_path(target: Endpoint, agent: str) -> Path:
    # a home has no per-file writer, so the files this migration wrote are listed beside the agent's database
    return agent_database_path(target.home, agent).parent / "migrated-documents.json"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read_manifest(target: Endpoint, agent: str) -> dict[str, str]:
    path = _manifest_path(target, agent)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} (what an earlier migrate wrote) cannot be read ({exc}); move it aside and "
                         "migrate into an empty target") from None
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)}


def _write_manifest(target: Endpoint, agent: str, manifest: dict[str, str]) -> None:
    path = _manifest_path(target, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, sort_keys=True, indent=1), encoding="utf-8")
    tmp.replace(path)  # atomic: a crash leaves the old list or the new one


def _target_documents(target: Endpoint, dst: AgentStore, agent: str) -> dict[str, tuple[str, bool]]:
    """path -> (text, written by this migration and unchanged since)."""
    if target.is_postgres:
        assert isinstance(dst, DocumentStore)
        return {d.path: (d.text, d.updated_by == HOLDER) for d in dst.doc_changes(0) if not d.deleted}
    manifest = _read_manifest(target, agent)
    return {rel: (text, manifest.get(rel) == _sha(text)) for rel, text in _documents(target, dst, agent).items()}


def _document_plan(source: Endpoint, target: Endpoint, src: AgentStore, dst: AgentStore,
                   agent: str) -> tuple[dict[str, str], dict[str, tuple[str, bool]]]:
    """The source's documents and the target's, refused (before any write) when the copy could not
    end equal: a NUL byte PostgreSQL cannot store, or a target document someone else wrote."""
    wanted = _documents(source, src, agent)
    if target.is_postgres:
        nul = sorted(rel for rel, text in wanted.items() if "\x00" in text)
        if nul:
            raise InputError(f"memory document {nul[0]} of agent {agent!r} in {source.label} contains a NUL byte, "
                             "which PostgreSQL text cannot store (it would arrive changed); remove the NUL byte "
                             "from that file, then run the command again")
    held = _target_documents(target, dst, agent)
    foreign = sorted(rel for rel, (text, ours) in held.items() if not ours and wanted.get(rel) != text)
    if foreign:
        raise InputError(f"target {target.label} already holds memory documents of agent {agent!r} that this "
                         f"migration did not write and the source does not have as they are ({', '.join(foreign[:5])}"
                         f"{', …' if len(foreign) > 5 else ''}); they are left untouched: migrate into an empty "
                         "target, or move them aside at the target")
    return wanted, held


def _copy_documents(source: Endpoint, target: Endpoint, src: AgentStore, dst: AgentStore, agent: str) -> None:
    # the target ends equal to the source: a note deleted at the source is deleted at the target
    # too, but only one this migration wrote (the plan refuses any other)
    wanted, held = _document_plan(source, target, src, dst, agent)
    gone = sorted(set(held) - set(wanted))
    if target.is_postgres:
        assert isinstance(dst, DocumentStore)
        for rel, text in wanted.items():
            current = dst.doc_get(rel)
            if current is None or current.deleted:
                dst.doc_put(rel, text, None, HOLDER)
            elif current.text != text or current.updated_by != HOLDER:
                dst.doc_put(rel, text, current.version, HOLDER)  # an equal one adopted: ours to follow from now
        for rel in gone:
            current = dst.doc_get(rel)
            if current is not None and not current.deleted:
                dst.doc_delete(rel, current.version, HOLDER)  # a tombstone: mirrors learn of the deletion
        return
    ws = target.workspace(agent)
    manifest = _read_manifest(target, agent)
    for rel, text in wanted.items():
        path = ws / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text(path, text)
        manifest[rel] = _sha(text)
        _write_manifest(target, agent, manifest)  # after each file: an interruption forgets nothing written
    for rel in gone:
        (ws / rel).unlink(missing_ok=True)
        manifest.pop(rel, None)
        _write_manifest(target, agent, manifest)


def _copy_sessions(src: AgentStore, dst: AgentStore, sessions: list[Any], agent: str,
                   progress: Progress | None) -> None:
    """Insert the sessions the target lacks and bring the ones it has to the source's row (counters,
    times, archiving): the source may have moved on since an earlier, complete copy."""
    held = {s.session_id: s for s in dst.list_sessions(SessionFilter(include_archived=True))}
    # archived first: a key's new current session can only go in once the old one is archived
    ordered = sorted(sessions, key=lambda s: s.archived_at is None)
    for n, s in enumerate(ordered, start=1):
        mine = held.get(s.session_id)
        if mine is None:
            dst.insert_session(s)
        else:
            # the target's own version counter; its fork point is in its own numbers (_fix_forks)
            meta = dict(s.meta)
            if "forkedFromSeq" in mine.meta:
                meta["forkedFromSeq"] = mine.meta["forkedFromSeq"]
            want = replace(s, version=mine.version, meta=meta)
            if want != mine:
                dst.update_session(want)
        if progress and (n % 100 == 0 or n == len(ordered)):
            progress(agent, "sessions", n, len(ordered))


def _copy(source: Endpoint, target: Endpoint, src: AgentStore, dst: AgentStore, agent: str,
          progress: Progress | None, batch_size: int) -> None:
    """One pass: bring the target up to the source as it is now (a first copy, a resumed one, or a
    catch-up after the source moved on)."""
    after = _resume_point(src, dst, agent, target.label)  # before anything is written
    sessions = src.list_sessions(SessionFilter(include_archived=True))
    _refuse_other_sessions(sessions, dst, agent, target.label)  # likewise
    _document_plan(source, target, src, dst, agent)  # likewise: refused documents stop it here
    _copy_sessions(src, dst, sessions, agent, progress)
    _copy_credentials(src, dst)
    total = sum(src.count_entries(s.session_id) for s in sessions)
    done = sum(src.count_entries(s.session_id, before_seq=after + 1) for s in sessions) if after else 0
    if progress:
        progress(agent, "entries", done, total)
    while batch := src.scan_entries(after_seq=after, limit=batch_size):
        with dst.transaction():  # one batch = one transaction: an interruption loses at most the batch
            for e in batch:
                dst.append_entry(_copy_entry(src, dst, e), index_text=index_text_for(e))
        after = batch[-1].seq
        done += len(batch)
        if progress:
            progress(agent, "entries", done, total)
    _fix_forks(src, dst)
    _copy_documents(source, target, src, dst, agent)


def _copy_credentials(src: AgentStore, dst: AgentStore) -> None:
    """The caller tokens (their digests) travel with the store: a migrated gateway must neither come
    up open (a loopback gateway with no token admits anyone) nor accept a token revoked at the source."""
    copied = {c.name: c for c in dst.list_credentials()}
    for credential in src.list_credentials():
        there = copied.get(credential.name)
        if there is None:
            dst.insert_credential(credential)
        elif credential.revoked_at is not None and there.revoked_at is None:
            dst.revoke_credential(credential.name, credential.revoked_at)


def _refuse_other_sessions(sessions: list[Any], dst: AgentStore, agent: str, target: str) -> None:
    # a session the source lacks is other data, or one the source's maintenance pruned: the target
    # cannot tell which, so it is kept and the copy refused rather than ending in a failed verify
    ids = {s.session_id for s in sessions}
    extra = sorted(s.session_id for s in dst.list_sessions(SessionFilter(include_archived=True))
                   if s.session_id not in ids)
    if extra:
        raise InputError(f"target {target} already holds sessions of agent {agent!r} that the source does not "
                         f"have (e.g. {extra[0]}; other data, or pruned at the source since an earlier copy); they "
                         "are left untouched: migrate into an empty target")


def migrate_agent(source: Endpoint, target: Endpoint, agent: str, progress: Progress | None = None, *,
                  batch_size: int = BATCH) -> dict[str, Any]:
    src = source.open(agent)
    try:
        dst = target.open(agent)
    except BaseException:
        src.close()
        raise
    try:
        first: dict[str, Any] | None = None
        while True:
            _copy(source, target, src, dst, agent, progress, batch_size)
            if progress:
                progress(agent, "verify", 0, 1)
            before, after_copy = summary(source, src, agent), summary(target, dst, agent)
            if progress:
                progress(agent, "verify", 1, 1)
            if before == after_copy:
                return {"agent": agent, **before, "verified": True}
            if first is None:  # written at the source during the copy: one more catch-up pass
                first = before
                continue
            wrong = [k for k in ("sessions", "entries", "documents")
                     if before[k] != after_copy[k] or before["checksums"][k] != after_copy["checksums"][k]]
            shown = f"{', '.join(wrong)}: source {[before[k] for k in wrong]}, target {[after_copy[k] for k in wrong]}"
            if before != first:  # only then can another run end equal; never advise it otherwise
                raise StorageError(f"migrate: agent {agent!r} differs after the copy ({shown}) because the source "
                                   "kept changing while it was copied; nothing at the source was changed: run the "
                                   "command again when the source is not in use")
            raise StorageError(f"migrate: agent {agent!r} differs after the copy ({shown}) although the source did "
                               "not change, so running it again would not help; nothing at the source was changed. "
                               "This is a fault in clawkeep migrate: please report it with this message")
    finally:
        dst.close()
        src.close()


def migrate(source_text: str, target_text: str, *, schema: str = "clawkeep", agents: list[str] | None = None,
            progress: Progress | None = None, batch_size: int = BATCH) -> dict[str, Any]:
    source = endpoint(source_text, schema, "--from")
    target = endpoint(target_text, schema, "--to")
    if source.is_postgres == target.is_postgres:
        raise InputError("migrate copies between an embedded home and PostgreSQL: give one home directory and one "
                         "postgresql:// URL (--from HOME --to postgresql://… or the reverse)")
    if not source.is_postgres and not source.home.is_dir():
        raise InputError(f"--from {source_text!r}: no such home directory")
    found = sorted(source.agents())
    chosen = agents or found
    missing = [a for a in chosen if a not in found]
    if missing:
        raise InputError(f"agent(s) {', '.join(missing)} not found in {source.label}; it holds: "
                         f"{', '.join(found) or 'no agent'}")
    results = [migrate_agent(source, target, agent, progress, batch_size=batch_size) for agent in chosen]
    return {"from": _shown(source), "to": _shown(target), "agents": results}


def _shown(end: Endpoint) -> str:
    if end.is_postgres:
        return f"{redact(end.storage.url)} (schema {end.storage.schema_prefix})"
    return end.label
