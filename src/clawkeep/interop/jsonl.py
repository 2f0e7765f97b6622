"""clawkeep's transcript export format, and importing it back losslessly.

One file per session, UTF-8, one JSON object a line (keys sorted, no spaces, so the same
session always exports to the same bytes):

    {"format":"clawkeep-transcript","session":{…the session row…},"version":1}
    {"entry":{"clientId":…,"clientScope":…,"content":[…],"id":…,"meta":{…},"parentId":…,"role":…,"timestamp":…,"type":…}}
    … one line per entry, oldest first …
    {"end":{"entries":N,"sha256":"<hex of the entry lines, newlines included>"}}

The session row is every column but the row version; entries are every column but `seq`,
which each database numbers itself: a `seq` kept in meta (a compaction's `firstKeptSeq`, a
fork's `forkedFromSeq`) is written as `{"$entry": "<entry id>"}` and turned back into the
importing database's seq. The end line makes a truncated or edited file an error, never a
partial import. Import is one transaction per file; entries already present (same id) are
skipped, so importing twice changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

from .. import validation as check
from ..config import AGENT_ID
from ..errors import DuplicateError, InputError
from ..routing.keys import is_session_id, parse_key
from ..runtime import Runtime
from ..sessions import transcript
from ..storage import AgentStore, EntryRecord, SessionFilter, SessionRecord
from ..storage.base import ENTRY_TYPES
from .report import ImportReport
from .sources import parse_line, raw_lines

FORMAT = "clawkeep-transcript"
VERSION = 1
PAGE = 64  # entries read at a time when exporting
SEQ_KEYS = ("firstKeptSeq", "forkedFromSeq")  # meta values that are seqs of this (or the parent) session
_SESSION_FIELDS = [f.name for f in fields(SessionRecord) if f.name != "version"]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# --- export ----------------------------------------------------------------------------------
def _seq_index(store: AgentStore, session_id: str, seq: Any) -> Any:
    """A seq as a reference to the entry holding it (or the number itself if none does)."""
    if not isinstance(seq, int) or isinstance(seq, bool):
        return seq
    hit = next(store.iter_entries(session_id, after_seq=seq - 1, before_seq=seq + 1, limit=1), None)
    return {"$entry": hit.entry_id} if hit is not None else seq


def _export_meta(store: AgentStore, meta: dict[str, Any], session_id: str) -> dict[str, Any]:
    out = dict(meta)
    if "firstKeptSeq" in out:
        out["firstKeptSeq"] = _seq_index(store, session_id, out["firstKeptSeq"])
    if "forkedFromSeq" in out and isinstance(out.get("forkedFromSessionId"), str):
        out["forkedFromSeq"] = _seq_index(store, out["forkedFromSessionId"], out["forkedFromSeq"])
    return out


def entry_line(store: AgentStore, entry: EntryRecord) -> str:
    return dumps({"entry": {"id": entry.entry_id, "type": entry.type, "timestamp": entry.timestamp,
                            "role": entry.role, "content": entry.content,
                            "meta": _export_meta(store, entry.meta, entry.session_id),
                            "parentId": entry.parent_entry_id, "clientId": entry.client_id,
                            "clientScope": entry.client_scope}}) + "\n"


def iter_all_entries(store: AgentStore, session_id: str) -> Iterator[EntryRecord]:
    """Every entry, oldest first, a page at a time (a long transcript is never held whole)."""
    after = 0
    while True:
        page = list(store.iter_entries(session_id, after_seq=after, limit=PAGE))
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].seq


def export_session(store: AgentStore, session: SessionRecord, out: IO[str]) -> dict[str, Any]:
    row = {name: getattr(session, name) for name in _SESSION_FIELDS}
    row["meta"] = _export_meta(store, session.meta, session.session_id)
    out.write(dumps({"format": FORMAT, "version": VERSION, "session": row}) + "\n")
    digest, count = hashlib.sha256(), 0
    for entry in iter_all_entries(store, session.session_id):
        line = entry_line(store, entry)
        digest.update(line.encode("utf-8"))
        count += 1
        out.write(line)
    out.write(dumps({"end": {"entries": count, "sha256": digest.hexdigest()}}) + "\n")
    return {"sessionKey": session.key, "sessionId": session.session_id, "entries": count,
            "sha256": digest.hexdigest()}


def all_sessions(rt: Runtime) -> Iterator[tuple[AgentStore, SessionRecord]]:
    """Every session of every agent in the home, archived ones too, oldest first."""
    for agent_id in rt.agent_ids():
        if not rt.has_database(agent_id):
            continue
        store = rt.store(agent_id)
        for session in sorted(store.list_sessions(SessionFilter(include_archived=True)),
                              key=lambda s: (s.created_at, s.session_id)):
            yield store, session


def export_file_name(session: SessionRecord) -> str:
    """`<agent>/<sessionId>.jsonl`, from checked ids only: a row stored before import checked
    them (`../x` as its id) is refused here instead of naming a file outside the folder."""
    if not isinstance(session.agent_id, str) or not AGENT_ID.fullmatch(session.agent_id):
        raise InputError(f"session {shown_id(session)} has agent id {check.shown(session.agent_id)}, which cannot "
                         "name a folder (agent ids are 1-64 characters a-z, 0-9, '_' or '-')")
    check.file_name_part(session.session_id, f"session id of {session.key!r}")
    return f"{session.agent_id}/{session.session_id}.jsonl"


def shown_id(session: SessionRecord) -> str:
    return f"{check.shown(session.key)} ({check.shown(session.session_id)})"


# --- import ----------------------------------------------------------------------------------
def _lines(path: Path) -> Iterator[tuple[str, dict[str, Any], bytes]]:
    for where, raw in raw_lines(path):
        if not raw.endswith(b"\n"):
            raise InputError(f"{where}: the file ends in the middle of a line (truncated?); a clawkeep export "
                             "ends with its end line")
        yield where, parse_line(raw, where), raw


def read_header(path: Path) -> dict[str, Any]:
    for where, first, _ in _lines(path):
        if first.get("format") != FORMAT or not isinstance(first.get("session"), dict):
            raise InputError(f"{where}: not a clawkeep transcript export (the first line must carry "
                             f'"format": "{FORMAT}" and the session)')
        if first.get("version") != VERSION:
            raise InputError(f"{where}: export format version {first.get('version')!r}; this clawkeep reads "
                             f"version {VERSION}")
        return first["session"]
    raise InputError(f"{path}: empty file; a clawkeep export has a header line, entry lines and an end line")


def _line_number(where: str) -> str:
    return where.rpartition(":")[2]


def _check_entry(where: str, entry: dict[str, Any]) -> None:
    """The fields an entry is stored with, by type (a wrong one failed later as a TypeError)."""
    if isinstance(entry["timestamp"], bool):
        raise InputError(f"{where}: entry.timestamp {check.shown(entry['timestamp'])} is not a time; "
                         "allowed: milliseconds since 1970 (an integer)")
    check.choice(entry["type"], f"{where}: entry.type", ENTRY_TYPES)
    if entry.get("role") is not None:
        check.choice(entry["role"], f"{where}: entry.role", transcript.ROLES)
    content = entry.get("content")
    if content is not None and not (isinstance(content, list) and all(isinstance(b, dict) for b in content)):
        raise InputError(f"{where}: entry.content {check.shown(content)} is not allowed; allowed: a list of "
                         "content blocks (JSON objects) or null")
    if entry.get("meta") is not None and not isinstance(entry["meta"], dict):
        raise InputError(f"{where}: entry.meta {check.shown(entry['meta'])} is not allowed; allowed: a JSON "
                         "object or null")
    for name in ("clientId", "clientScope"):
        check.ident(entry.get(name), f"{where}: entry.{name}", optional=True)


def verify(path: Path) -> int:
    """Pass 1: every line parses, entries have the fields we need, the end line matches."""
    digest, count, ended = hashlib.sha256(), 0, None
    ids: dict[str, str] = {}
    clients: dict[tuple[Any, str], str] = {}
    for index, (where, line, raw) in enumerate(_lines(path)):
        if index == 0:
            continue
        if ended is not None:
            raise InputError(f"{where}: a line after the end line")
        if "end" in line:
            ended = (where, line["end"])
            continue
        entry = line.get("entry")
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not isinstance(
                entry.get("type"), str) or not isinstance(entry.get("timestamp"), int):
            raise InputError(f"{where}: an entry line needs entry.id, entry.type and entry.timestamp")
        # the same bounds as ids given to the API (one line, no control characters, not too long)
        check.ident(entry["id"], f"{where}: entry.id")
        check.ident(entry.get("parentId"), f"{where}: entry.parentId", optional=True)
        _check_entry(where, entry)
        # one id, one entry: a second line with it would be skipped as "already imported"
        if entry["id"] in ids:
            raise InputError(f"{where}: entry.id {check.shown(entry['id'])} is also the id of the entry on line "
                             f"{ids[entry['id']]}; every entry of an export has its own id")
        ids[entry["id"]] = _line_number(where)
        if entry.get("clientId") is not None:
            client = (entry.get("clientScope"), entry["clientId"])
            if client in clients:
                raise InputError(f"{where}: entry.clientId {check.shown(client[1])} is also the clientId of the entry "
                                 f"on line {clients[client]} (clientScope {check.shown(client[0])}); a message id "
                                 "is recorded once per conversation")
            clients[client] = _line_number(where)
        digest.update(raw)
        count += 1
    if ended is None:
        raise InputError(f"{path}: no end line: the file is truncated (a clawkeep export ends with "
                         '{"end": {"entries": N, "sha256": …}})')
    where, end = ended
    if end.get("entries") != count or end.get("sha256") != digest.hexdigest():
        raise InputError(f"{where}: the end line says {end.get('entries')} entries with sha256 {end.get('sha256')}, "
                         f"the file has {count} with {digest.hexdigest()}: it was changed or cut")
    return count


def _resolve(store: AgentStore, meta: dict[str, Any]) -> dict[str, Any]:
    out = dict(meta)
    for key in SEQ_KEYS:
        ref = out.get(key)
        if isinstance(ref, dict) and isinstance(ref.get("$entry"), str):
            hit = store.get_entry(ref["$entry"])
            out[key] = hit.seq if hit is not None else 0
    return out


def _check_header(path: Path, values: dict[str, Any]) -> Any:
    """The header's ids, checked like the API's: they pick the database and later name export
    and archive files, so a forged `../x` or a key of another agent must never get in."""
    where = f"{path}:1"
    key = check.ident(values["key"], f"{where}: session.key")
    try:
        parsed = parse_key(key)
    except InputError as exc:
        raise InputError(f"{where}: session.key: {exc}") from None
    if parsed.key != key:
        raise InputError(f"{where}: session.key {check.shown(key)} has spaces around it; give the key exactly")
    if values["agent_id"] != parsed.agent_id:
        raise InputError(f"{where}: session.agent_id {check.shown(values['agent_id'])} is not the agent of "
                         f"session.key {key!r} ({parsed.agent_id!r}); a session belongs to the agent its key names")
    sid = check.ident(values["session_id"], f"{where}: session.session_id")
    if not (is_session_id(sid) and sid == sid.lower()):
        raise InputError(f"{where}: session.session_id {check.shown(sid)} is not a session id; clawkeep session "
                         "ids are lowercase UUIDs (e.g. 0f8c2d4e-1b6a-4c3e-9d7f-2a5b8c1e4f60)")
    parent = check.ident(values["parent_session_id"], f"{where}: session.parent_session_id", optional=True)
    if parent is not None and not (is_session_id(parent) and parent == parent.lower()):
        raise InputError(f"{where}: session.parent_session_id {check.shown(parent)} is not a session id; "
                         "clawkeep session ids are lowercase UUIDs")
    return parsed


def import_file(rt: Runtime, path: Path, report: ImportReport, *, dry_run: bool) -> None:
    """One exported session, all or nothing."""
    row = read_header(path)
    verify(path)
    try:
        values = {name: row[name] for name in _SESSION_FIELDS}
    except (KeyError, TypeError):
        raise InputError(f"{path}:1: the session line lacks some of {', '.join(_SESSION_FIELDS)}") from None
    parsed = _check_header(path, values)
    store = rt.read_store(parsed.agent_id) if dry_run else rt.store(parsed.agent_id)
    existing = store.get_session(values["session_id"])
    if existing is not None and existing.key != values["key"]:
        raise InputError(f"{path}:1: session {values['session_id']} exists here with another key ({existing.key})")
    written = 0
    with store.transaction():
        if existing is None and not dry_run:
            current = store.get_session_by_key(values["key"]) if values["archived_at"] is None else None
            if current is not None:
                values["archived_at"] = rt.now()
                report.note(f"{values['key']} already had session {current.session_id} here; "
                            f"{values['session_id']} was imported archived")
            store.insert_session(SessionRecord(**{**values, "meta": {}}))
        for index, (where, line, _) in enumerate(_lines(path)):
            entry = line.get("entry") if index else None
            if entry is None:
                continue
            if store.get_entry(entry["id"]) is not None:
                report.skipped_entries += 1
                continue
            record = EntryRecord(entry["id"], values["session_id"], entry["type"], entry["timestamp"],
                                 role=entry.get("role"), content=entry.get("content") or [],
                                 meta=_resolve(store, entry.get("meta") or {}), parent_entry_id=entry.get("parentId"),
                                 client_id=entry.get("clientId"), client_scope=entry.get("clientScope"))
            report.count_entry(record.type)
            written += 1
            if not dry_run:
                try:
                    transcript.append(store, record)
                except DuplicateError as exc:
                    raise InputError(f"{where}: {exc} {_holder(store, record, values)}") from None
        if written and not dry_run:
            fresh = store.get_session(values["session_id"])
            assert fresh is not None
            keep_archived = fresh.archived_at
            for name in _SESSION_FIELDS:
                setattr(fresh, name, values[name])
            fresh.meta = _resolve(store, values["meta"])
            if existing is not None:
                fresh.archived_at = keep_archived
            store.update_session(fresh)
    report.sessions["imported" if existing is None and written else "updated" if written else "unchanged"] += 1


def _holder(store: AgentStore, record: EntryRecord, values: dict[str, Any]) -> str:
    """Where the entry that a refused one collides with lives (it need not be another session)."""
    held = (store.get_entry_by_client_id(record.client_scope, record.client_id)
            if record.client_id and record.client_scope else None)
    if held is None:
        return "in this home"
    if held.session_id == values["session_id"]:
        return f"in this session (entry {held.entry_id}); a message id is recorded once per conversation"
    return f"in another session of this home ({held.session_id})"


def import_paths(rt: Runtime, paths: list[Path], report: ImportReport, *, dry_run: bool) -> None:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path} does not exist; give clawkeep export files or a directory of them")
    if not files:
        raise InputError(f"no .jsonl files in {', '.join(map(str, paths))}")
    headers = []
    for file in files:
        try:
            headers.append((read_header(file), file))
        except InputError as exc:
            report.sessions["failed"] += 1
            report.error(str(file), str(exc))
    # parents (forks) before children: by creation time
    for _, file in sorted(headers, key=lambda h: (h[0].get("created_at") or 0, str(h[1]))):
        try:
            import_file(rt, file, report, dry_run=dry_run)
        except InputError as exc:
            report.sessions["failed"] += 1
            report.error(str(file), f"{exc} — nothing of this file was imported")
