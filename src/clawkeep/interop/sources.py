"""Reading an OpenClaw state directory, streamed: its per-agent SQLite database and legacy
`sessions.json` + JSONL transcripts (reset rotations, topic files, zstd archives).

Nothing here writes anything. Every event comes with `where` (file and line, or database,
session and seq), so an error names what it found wrong and where.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import json5

from ..deferred import deferred_import
from ..errors import InputError
from ..storage.sqlite.openclaw import DatabaseError, OpenClawDatabase
from ..validation import SURROGATE_ESCAPE, has_lone_surrogate
from .events import parse_time

if TYPE_CHECKING:
    import zstandard
else:
    zstandard = deferred_import("zstandard")  # deferred: only zstd archives and events need it

AGENT_DB = Path("agent") / "openclaw-agent.sqlite"
SESSIONS_DIR = "sessions"
STORE_FILE = "sessions.json"
CONFIG_FILE = "openclaw.json"
MAX_LINE_BYTES = 64 * 1024 * 1024  # one event (a JSONL line or a decompressed one); OpenClaw keeps one under 4 MiB
MAX_CONFIG_DEPTH = 64  # nesting of openclaw.json / sessions.json; OpenClaw's own files stay under 10
_UNPACK_CHUNK = 1024 * 1024  # a compressed event is decompressed this much at a time, up to MAX_LINE_BYTES
# The per-agent schema versions this reader was checked against (OpenClaw 2026.9.x writes 23).
SUPPORTED_AGENT_SCHEMAS = (23,)
_REQUIRED_COLUMNS = {
    "session_nodes": {"session_key", "current_session_id", "entry_json"},
    "session_windows": {"session_id", "session_key", "previous_session_id", "reason", "created_at"},
    "transcript_events": {"session_id", "seq", "event_json", "event_zstd", "event_utf8_bytes", "created_at"},
}
# `<file>.reset.<2026-01-02T03-04-05.678Z>[.<32 hex>][.zst]` (and `.deleted.` / `.bak.`)
_ARCHIVE = re.compile(r"^(?P<base>.+?\.jsonl)\.(?P<reason>reset|deleted|bak)\."
                      r"(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{3})?Z)(?:\.[0-9a-f]{32})?(?:\.zst)?$")


_CHECKPOINT = re.compile(r"^.+\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$", re.I)


def archive_time(stamp: str) -> int:
    """`2026-01-02T03-04-05.678Z` (a file-name-safe ISO time) → ms."""
    date, _, clock = stamp.partition("T")
    return parse_time(f"{date}T{clock[:8].replace('-', ':')}{clock[8:]}", 0)


@dataclass
class Transcript:
    """One OpenClaw transcript (one sessionId, or one reset rotation of a file)."""

    session_id: str
    where: str  # the file, or "<db> session <id>"
    size: int  # bytes (progress)
    read: Callable[[], Iterator[tuple[str, dict[str, Any], int]]]  # (where, event, bytes), streamed
    starts_with_reset: str | None = None  # reason when an earlier transcript of the key precedes it
    started_at: int | None = None
    leaf_event_id: str | None = None
    part: str = ""  # names this transcript among the key's (file name, or session id)


@dataclass
class SourceSession:
    """One OpenClaw session key with its transcripts, oldest first."""

    key: str
    entry: dict[str, Any]
    transcripts: list[Transcript]
    origin: str  # "sqlite" or "legacy"


@dataclass
class SourceAgent:
    agent_id: str
    directory: Path
    home: Path  # the import directory: nothing leading out of it is read
    sessions: list[SourceSession] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # (kind, path)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, why): reported as errors


# --- the home ------------------------------------------------------------------------------
def check_home(path: Path) -> None:
    """Refuse a path that is not an OpenClaw state directory, saying what one looks like."""
    if not path.exists():
        raise InputError(f"{path} does not exist; give an OpenClaw state directory (default ~/.openclaw)")
    if not path.is_dir():
        raise InputError(f"{path} is not a directory; give an OpenClaw state directory (default ~/.openclaw)")
    if (path / CONFIG_FILE).is_file() or agent_dirs(path) or linked_agent_dirs(path):
        return
    if (path / "agents").is_symlink() and leads_out(path / "agents", path):
        raise InputError(f"{path / 'agents'} is a symbolic link to {os.path.realpath(path / 'agents')}, outside the "
                         "import directory: not followed; import the directory it points to, or copy it in")
    raise InputError(
        f"{path} is not an OpenClaw home: it has none of {CONFIG_FILE}, agents/<id>/{AGENT_DB.as_posix()} or "
        f"agents/<id>/{SESSIONS_DIR}/{STORE_FILE}; give the directory OpenClaw keeps its state in "
        "(default ~/.openclaw, or $OPENCLAW_STATE_DIR)")


def leads_out(path: Path, home: Path) -> bool:
    """True when `path` is (or passes through) a symbolic link leading out of the import
    directory `home`: such a path is refused by name, never read."""
    try:
        return not path.resolve().is_relative_to(home.resolve())
    except (OSError, RuntimeError):  # a link loop
        return True


def _agents_root(home: Path) -> Path | None:
    root = home / "agents"
    return root if root.is_dir() and not leads_out(root, home) else None


def agent_dirs(home: Path) -> list[Path]:
    """The agent directories to import: real directories only (a linked one is refused, see
    `linked_agent_dirs`)."""
    root = _agents_root(home)
    if root is None:
        return []
    found = []
    for child in sorted(root.iterdir()):
        if child.is_symlink() or not child.is_dir():
            continue
        if ((child / AGENT_DB).is_file() or (child / SESSIONS_DIR / STORE_FILE).is_file()
                or any((child / SESSIONS_DIR).glob("*.jsonl*"))):
            found.append(child)
    return found


def linked_agent_dirs(home: Path) -> list[Path]:
    """Entries of `agents/` that are symbolic links: never followed (an archive could point one
    anywhere on this machine)."""
    root = _agents_root(home)
    return sorted(child for child in root.iterdir() if child.is_symlink()) if root is not None else []


def refused_links(home: Path) -> list[tuple[str, str]]:
    """(path, why) for the top-level entries of the import directory that lead out of it."""
    refused = [(str(home / name), f"a symbolic link to {os.path.realpath(home / name)}, outside the import "
                                  "directory: not followed")
               for name in ("agents", CONFIG_FILE) if (home / name).is_symlink() and leads_out(home / name, home)]
    refused += [(str(link), f"agent directory is a symbolic link (to {os.path.realpath(link)}): agent directories "
                            "are never followed; copy the directory into the import directory to import it")
                for link in linked_agent_dirs(home)]
    return refused


def load_openclaw_config(home: Path) -> dict[str, Any] | None:
    path = home / CONFIG_FILE
    if not path.is_file() or leads_out(path, home):
        return None
    return load_object(path, json5.loads, "JSON5 object")


def load_object(path: Path, parse: Callable[[str], Any], what: str) -> dict[str, Any]:
    """A whole small file holding one JSON(5) object, nested at most MAX_CONFIG_DEPTH levels."""
    try:
        data = parse(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a valid {what}: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a {what} of OpenClaw's (allowed: at most "
                         f"{MAX_CONFIG_DEPTH} levels)") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: must hold a {what}, not {type(data).__name__}")
    if nesting(data) > MAX_CONFIG_DEPTH:
        raise InputError(f"{path}: nested more than {MAX_CONFIG_DEPTH} levels deep; allowed: at most "
                         f"{MAX_CONFIG_DEPTH} (OpenClaw's own files stay under 10)")
    if has_lone_surrogate(data):
        raise InputError(f"{path}: holds a lone surrogate escape (such as \\ud800), which is not Unicode text")
    return data


def nesting(value: Any) -> int:
    """How deep objects and arrays nest (counted without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


# --- JSONL, streamed -----------------------------------------------------------------------
def _open_binary(path: Path) -> io.BufferedIOBase:
    handle = open(path, "rb")  # noqa: SIM115 - closed by the caller's with-block
    if path.name.endswith(".zst"):
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(handle, closefd=True))
    return handle


def raw_lines(path: Path) -> Iterator[tuple[str, bytes]]:
    """(file:line, bytes) for each line, streamed; a line over MAX_LINE_BYTES is an InputError."""
    with _open_binary(path) as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            where = f"{path}:{number}"
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise InputError(f"{where}: line is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB; "
                                 "an OpenClaw event is at most 4 MiB")
            yield where, raw


def read_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(file:line, object, bytes) for each non-blank line; a line that is not a JSON object — a
    truncated write, a binary blob — is an InputError naming the line."""
    for where, raw in raw_lines(path):
        if raw.strip():
            yield where, parse_line(raw, where, last=not raw.endswith(b"\n")), len(raw)


def parse_line(raw: bytes, where: str, *, last: bool = False) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text") from None
    except ValueError as exc:
        hint = " (the file ends in the middle of this line: a truncated write?)" if last else ""
        raise InputError(f"{where}: not a JSON line{hint}: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply to be an OpenClaw event") from None
    if not isinstance(value, dict):
        raise InputError(f"{where}: a transcript line must be a JSON object, found {type(value).__name__}")
    if SURROGATE_ESCAPE.search(raw) and has_lone_surrogate(value):
        raise InputError(f"{where}: holds a lone surrogate escape (such as \\ud800), which is not Unicode text "
                         "and cannot be stored; OpenClaw writes valid UTF-8")
    return value


def _header_of(path: Path) -> dict[str, Any] | None:
    try:
        for _, event, _ in read_jsonl(path):
            return event if event.get("type") == "session" else None
    except (InputError, OSError):
        return None
    return None


def legacy_sessions(agent: SourceAgent, known_keys: set[str]) -> None:
    """`sessions/sessions.json` + its transcripts: each key's file (`sessionFile`, else
    `<sessionId>.jsonl`, topic files included), its `.reset.<time>` rotations (earlier
    intervals, oldest first), and transcripts no key names (imported under their own key)."""
    directory = agent.directory / SESSIONS_DIR
    if not directory.is_dir():
        return
    if leads_out(directory, agent.home):
        agent.refused.append((str(directory), f"a symbolic link to {os.path.realpath(directory)}, outside the "
                                              "import directory: not followed"))
        return
    files = []
    for path in sorted(directory.iterdir()):
        if path.is_symlink() and leads_out(path, agent.home):
            agent.refused.append((str(path), f"a symbolic link to {os.path.realpath(path)}, outside the import "
                                             "directory: not followed"))
        elif path.is_file():
            files.append(path.name)
    store_path = directory / STORE_FILE
    store = (load_object(store_path, json.loads, "JSON object of session key → entry") if STORE_FILE in files
             else {})
    rotations: dict[str, list[tuple[int, str]]] = {}
    plain: list[str] = []
    for name in files:
        match = _ARCHIVE.match(name)
        if match and match["reason"] == "reset":
            rotations.setdefault(match["base"], []).append((archive_time(match["stamp"]), name))
        elif match:
            agent.skipped_files.append((f"{match['reason']} archive (a transcript OpenClaw deleted or backed up; "
                                        "not imported)", str(directory / name)))
        elif name.endswith(".trajectory.jsonl"):
            agent.skipped_files.append(("trajectory file (OpenClaw's trace of its runs, not a transcript; not "
                                        "imported)", str(directory / name)))
        elif _CHECKPOINT.match(name):
            agent.skipped_files.append(("compaction checkpoint (a copy of a transcript before a compaction; not "
                                        "imported)", str(directory / name)))
        elif name.endswith(".jsonl"):
            plain.append(name)
        elif name != STORE_FILE:
            agent.skipped_files.append(("file that is not a transcript", str(directory / name)))
    claimed: set[str] = set()
    for key, entry in store.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str):
            agent.skipped_files.append((f"sessions.json entry without a sessionId (key {key!r})", str(store_path)))
            continue
        if key in known_keys:  # the SQLite database already holds it (OpenClaw migrated it)
            continue
        base = os.path.basename(str(entry.get("sessionFile") or "")) or f"{entry['sessionId']}.jsonl"
        if not base.endswith(".jsonl"):
            base = f"{entry['sessionId']}.jsonl"
        claimed.add(base)
        transcripts = _file_chain(directory, base, entry["sessionId"], rotations.get(base, []), base in plain)
        agent.sessions.append(SourceSession(key, entry, transcripts, "legacy"))
    for base in sorted({*plain, *rotations} - claimed):
        header = _header_of(directory / (base if base in plain else rotations[base][0][1])) or {}
        session_id = str(header.get("id") or base.removesuffix(".jsonl"))
        transcripts = _file_chain(directory, base, session_id, rotations.get(base, []), base in plain)
        key = f"agent:{agent.agent_id}:openclaw-orphan:{base.removesuffix('.jsonl').lower()}"
        agent.sessions.append(SourceSession(key, {"sessionId": session_id, "orphan": True}, transcripts, "legacy"))


def _file_chain(directory: Path, base: str, session_id: str, rotations: list[tuple[int, str]],
                current: bool) -> list[Transcript]:
    """The rotations of `base`, oldest first, then `base` itself when `current` (listed as a
    regular file of the directory: never a link out of the import directory)."""
    chain = []
    for index, (stamp, name) in enumerate(sorted(rotations)):
        chain.append(_file_transcript(directory / name, session_id, "reset" if index else None, stamp))
    if current:
        chain.append(_file_transcript(directory / base, session_id, "reset" if chain else None, None))
    return chain


def _file_transcript(path: Path, session_id: str, reset: str | None, rotated_at: int | None) -> Transcript:
    header = _header_of(path) or {}
    sid = str(header.get("id") or session_id)
    return Transcript(sid, str(path), path.stat().st_size, lambda: read_jsonl(path), reset,
                      parse_time(header.get("timestamp"), rotated_at or 0) or None, part=path.name)


# --- the SQLite database -------------------------------------------------------------------
def open_database(path: Path) -> OpenClawDatabase:
    """Read-only, after checking it is an OpenClaw agent database of a version we read."""
    try:
        db = OpenClawDatabase(path)
        version, tables = db.user_version(), db.tables()
        meta = db.schema_meta() if "schema_meta" in tables else None
    except DatabaseError as exc:
        raise InputError(f"{path}: not a readable SQLite database ({exc})") from None
    try:
        if meta is None or meta[0] != "agent":
            raise InputError(f"{path}: not an OpenClaw agent database (no schema_meta row with role 'agent')")
        if version not in SUPPORTED_AGENT_SCHEMAS or meta[1] not in SUPPORTED_AGENT_SCHEMAS:
            supported = ", ".join(map(str, SUPPORTED_AGENT_SCHEMAS))
            raise InputError(
                f"{path}: OpenClaw agent schema version {version} (written by OpenClaw {meta[2] or 'unknown'}); "
                f"this importer reads version {supported} (OpenClaw 2026.9.x). Open the state directory once with "
                "OpenClaw 2026.9.x (`openclaw doctor --fix` migrates it) and import again")
        for table, columns in _REQUIRED_COLUMNS.items():
            missing = columns - tables.get(table, set())
            if missing:
                raise InputError(f"{path}: table {table} lacks column(s) {', '.join(sorted(missing))} although the "
                                 f"database says schema {version}; it is damaged or not OpenClaw's")
    except InputError:
        db.close()
        raise
    return db


def sqlite_sessions(agent: SourceAgent, path: Path) -> None:
    with open_database(path) as db:
        try:
            nodes, leaves, sizes = db.nodes(), db.leaves(), db.sizes()
            for table, sid, name in db.archived_transcripts():
                agent.skipped_files.append((f"transcript archived inside the database ({table}; not imported: "
                                            "restore it in OpenClaw first)", f"{path} session {sid} ({name})"))
            windows: dict[str, list[tuple[str, str | None, int]]] = {}
            for sid, key, reason, created in db.windows():
                windows.setdefault(key, []).append((sid, reason, created))
        except DatabaseError as exc:
            raise InputError(f"{path}: cannot be read ({exc})") from None
    for key, current, entry_json in nodes:
        try:
            entry = json.loads(entry_json)
        except (TypeError, ValueError):
            entry = None
        if not isinstance(entry, dict):
            # the session's label and fields are lost with it: say so, and keep the raw text
            agent.skipped_files.append(("session entry (entry_json) that is not a JSON object: its label and "
                                        "fields were not read; the raw text is kept in meta.openclaw.entryJson",
                                        f"{path} session_nodes key {key}"))
            entry = {"sessionId": current, "entryJson": entry_json}
        chain = windows.get(key) or [(current, None, 0)]
        transcripts = []
        for index, (sid, reason, created) in enumerate(chain):
            reset = None if index == 0 or reason == "compaction" else (reason or "rollover")
            transcripts.append(Transcript(sid, f"{path} session {sid}", int(sizes.get(sid) or 0),
                                          _db_reader(path, sid), reset, created or None, leaves.get(sid), sid))
        agent.sessions.append(SourceSession(key, entry, transcripts, "sqlite"))


def _db_reader(path: Path, session_id: str) -> Callable[[], Iterator[tuple[str, dict[str, Any], int]]]:
    def read() -> Iterator[tuple[str, dict[str, Any], int]]:
        with open_database(path) as db:
            try:
                for seq, text, packed, size, created in db.events(session_id):
                    where = f"{path} session {session_id} seq {seq}"
                    raw = text.encode("utf-8") if text is not None else _unpack(packed, size, where)
                    event = parse_line(raw, where)
                    event.setdefault("timestamp", created)
                    yield where, event, len(raw)
            except DatabaseError as exc:
                raise InputError(f"{path}: cannot be read ({exc})") from None

    return read


def _unpack(packed: bytes | None, size: int | None, where: str) -> bytes:
    """A zstd-compressed event, decompressed a chunk at a time and refused as soon as it passes
    MAX_LINE_BYTES (the JSONL path's cap): what a frame or the row declares is never allocated."""
    if packed is None:
        raise InputError(f"{where}: event has neither JSON nor a compressed body")
    cap = MAX_LINE_BYTES // (1024 * 1024)
    declared = max(int(size or 0), _frame_size(packed))
    if declared > MAX_LINE_BYTES:
        raise InputError(f"{where}: compressed event declares {declared} bytes; an event may be at most {cap} MiB "
                         "(OpenClaw keeps one under 4 MiB): not decompressed")
    chunks, total = [], 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(packed) as reader:
            while chunk := reader.read(_UNPACK_CHUNK):
                total += len(chunk)
                if total > MAX_LINE_BYTES:
                    raise InputError(f"{where}: compressed event decompresses to more than {cap} MiB; an event may "
                                     f"be at most {cap} MiB (OpenClaw keeps one under 4 MiB)")
                chunks.append(chunk)
    except zstandard.ZstdError as exc:
        raise InputError(f"{where}: compressed event cannot be decoded ({exc})") from None
    return b"".join(chunks)


def _frame_size(packed: bytes) -> int:
    """The content size a zstd frame header declares (0 when it declares none or is unreadable)."""
    try:
        return max(zstandard.frame_content_size(packed), 0)
    except zstandard.ZstdError:
        return 0


def read_agent(directory: Path, home: Path) -> SourceAgent:
    agent = SourceAgent(directory.name.lower(), directory, home)
    database = directory / AGENT_DB
    if database.is_file() and leads_out(database, home):
        agent.refused.append((str(database), f"a symbolic link to {os.path.realpath(database)}, outside the import "
                                             "directory: not followed"))
    elif database.is_file():
        sqlite_sessions(agent, database)
    legacy_sessions(agent, {s.key for s in agent.sessions})
    return agent
