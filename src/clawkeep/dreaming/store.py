"""Dreaming's machine state under `memory/.dreams/` (hidden: never indexed, never recalled).

    recall-log.jsonl          traces appended by every memory_search / recall (cheap: one line)
    recall-log.<run>.jsonl    a log taken by a sweep and being folded (crash-safe hand-over)
    short-term-recall.json    the short-term store: one entry per claim, its signals, the Light /
                              REM reinforcement per entry and which claims of which daily note and
                              transcript were ingested (the checkpoint) — one file, so one rename
                              saves them together (before version 2: phase-signals.json and
                              daily-ingestion.json, read once and then removed)
    state.json                the last sweep and each phase's last run
    promotions/<run>.json     what a Deep run wrote to MEMORY.md, with the bytes before (undo)
    session-corpus/<day>.txt  redacted transcript lines Light read
    backfill.json             what `rem-backfill` wrote and staged (its rollback)
    short-term-promotion.lock the sweep lock; recall.lock the recall store's

Every JSON file is replaced atomically (temp file + rename), so a crash leaves the old or the
new version. A trace log is folded exactly once: a sweep renames the live log (under the recall
lock), folds it, saves the store listing the log as folded, then deletes it; a sweep that finds
a renamed log the store already lists deletes it without folding it again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import InputError, StorageError
from ..fileio import replace_text
from ..memory.workspace import NOTES_DIR
from . import lock

DREAMS_DIR = f"{NOTES_DIR}/.dreams"
STORE_VERSION = 2  # 2: phase signals and the ingestion checkpoint live in the store file
STORE_FILE = "short-term-recall.json"
OLD_SIGNALS_FILE, OLD_CHECKPOINT_FILE = "phase-signals.json", "daily-ingestion.json"  # version 1 only
MAX_HASHES = 32  # distinct query hashes kept per entry
MAX_DAYS = 16  # distinct recall days kept per entry
MAX_SESSIONS = 8
MAX_SAMPLE_QUERIES = 5
MAX_FOLDED_NAMES = 50


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass
class Entry:
    """One claim of the short-term store and every signal it collected."""

    key: str  # "<owner>|<claim hash>": claims of different conversations never merge
    text: str  # redacted, one line
    path: str  # where it lives: memory/<day>.md, memory/<day>-<slug>.md or sessions/<sessionId>
    line: int | None = None  # 1-based line in `path` when last seen
    day: str | None = None  # the note's (or message's) date
    source: str = "daily"  # daily | transcript | grounded
    origin: str = "owner"  # owner | agent | untrusted | system
    owner: str | None = None  # the conversation that owns the line (its `session=` marker)
    entry_id: str | None = None  # transcript entry id (source transcript)
    recall_count: int = 0
    daily_count: int = 0
    grounded_count: int = 0
    total_score: float = 0.0
    max_score: float = 0.0
    first_recalled_at: int | None = None
    last_recalled_at: int | None = None
    query_hashes: list[str] = field(default_factory=list)
    user_query_hashes: list[str] = field(default_factory=list)
    recall_days: list[str] = field(default_factory=list)
    concept_tags: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)  # a few redacted queries, for explain
    staged_at: int | None = None
    promoted_at: int | None = None
    promoted_item: str | None = None
    promoted_run: str | None = None
    undone_at: int | None = None  # an operator undid its promotion: never promoted again by itself
    grounded_only: bool = False  # staged by rem-backfill and nothing else (its rollback removes it)

    @property
    def signal_count(self) -> int:
        return self.recall_count + self.daily_count + self.grounded_count

    def to_json(self) -> dict[str, Any]:
        out = {camel: getattr(self, name) for name, camel in _CAMEL.items()}
        for name in _LISTS:
            out[_CAMEL[name]] = list(out[_CAMEL[name]])
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(**{_SNAKE[k]: v for k, v in data.items() if k in _SNAKE})


def add_distinct(values: list[str], value: str | None, limit: int) -> None:
    """Keep the `limit` most recent distinct values (the newest last)."""
    if not value:
        return
    if value in values:
        values.remove(value)
    values.append(value)
    del values[:-limit]


_CAMEL = {f.name: _camel(f.name) for f in fields(Entry)}
_SNAKE = {camel: name for name, camel in _CAMEL.items()}
_LISTS = [f.name for f in fields(Entry) if "list" in str(f.type)]


@dataclass
class PhaseSignal:
    light_hits: int = 0
    rem_hits: int = 0
    last_light_at: int | None = None
    last_rem_at: int | None = None


class DreamsDir:
    """The files of one workspace's Dreaming state (a database backend would keep the same
    records in tables; the sweep only uses these methods)."""

    def __init__(self, workspace: Path):
        self.workspace = workspace
        self.root = workspace / DREAMS_DIR

    # --- paths ---------------------------------------------------------------------------
    def path(self, name: str) -> Path:
        return self.root / name

    @property
    def log_path(self) -> Path:
        return self.root / "recall-log.jsonl"

    def sweep_lock(self, shared_store: Any = None) -> lock.FileSweepLock | lock.SharedSweepLock:
        """This workspace's sweep lock; with `shared_store` (a database several instances use)
        also that database's lease, so sweeps never overlap across hosts either."""
        local = lock.FileSweepLock(self.root / "short-term-promotion.lock")
        return local if shared_store is None else lock.SharedSweepLock(local, shared_store)

    # --- JSON documents ----------------------------------------------------------------------
    def read_json(self, name: str, default: Any) -> Any:
        path = self.root / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return default
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise StorageError(f"Dreaming state file {path} cannot be read ({exc}); move it aside to start "
                               "that part of the state afresh") from None

    def write_json(self, name: str, data: Any, *, compact: bool = False) -> None:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) if compact else json.dumps(
            data, ensure_ascii=False, indent=1)
        write_atomic(self.root / name, text + "\n")

    # --- the short-term store ----------------------------------------------------------------
    def load_store(self) -> tuple[dict[str, Entry], list[str]]:
        """(entries by key, names of trace logs already folded)."""
        data = self.read_json(STORE_FILE, {})
        entries = {k: Entry.from_json(v) for k, v in (data.get("entries") or {}).items()}
        return entries, list(data.get("foldedLogs") or [])

    def load_state(self) -> tuple[dict[str, Entry], list[str], dict[str, PhaseSignal], dict[str, Any]]:
        """(entries, folded logs, phase signals, ingestion checkpoint), read from the one store file.
        A store written before they shared it (version 1) takes the signals and the checkpoint
        from their old files, once: the next save carries them and removes those files."""
        data = self.read_json(STORE_FILE, {})
        entries = {k: Entry.from_json(v) for k, v in (data.get("entries") or {}).items()}
        if "ingestion" in data:
            signals, checkpoint = data.get("phaseSignals") or {}, data["ingestion"] or {}
        else:
            signals = self.read_json(OLD_SIGNALS_FILE, {}).get("entries") or {}
            checkpoint = self.read_json(OLD_CHECKPOINT_FILE, {})
        return entries, list(data.get("foldedLogs") or []), {
            k: PhaseSignal(**{f.name: v.get(_camel(f.name)) or (0 if "hits" in f.name else None)
                              for f in fields(PhaseSignal)}) for k, v in signals.items()}, checkpoint

    def save_state(self, entries: dict[str, Entry], folded: list[str], signals: dict[str, PhaseSignal],
                   checkpoint: dict[str, Any], now: int) -> None:
        """Store, phase signals and checkpoint in one atomic rename: separate files let a crash
        between them keep new daily counts with the old checkpoint, and the next sweep counted
        every note line again."""
        self.write_json(STORE_FILE, {
            "version": STORE_VERSION, "updatedAt": now, "foldedLogs": folded[-MAX_FOLDED_NAMES:],
            "entries": {k: e.to_json() for k, e in sorted(entries.items())},
            "phaseSignals": {k: {_camel(n): v for n, v in asdict(s).items()} for k, s in sorted(signals.items())},
            "ingestion": checkpoint}, compact=True)
        for old in (OLD_SIGNALS_FILE, OLD_CHECKPOINT_FILE):  # superseded by the file just written
            write_atomic(self.root / old, None)

    # --- the trace log -----------------------------------------------------------------------
    def append_trace(self, trace: dict[str, Any]) -> None:
        line = json.dumps(trace, ensure_ascii=False, separators=(",", ":")) + "\n"
        with lock.held(self.root / "recall.lock"):
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(line)

    def take_logs(self, run_id: str) -> list[Path]:
        """Hand the live log over to this sweep (renamed under the recall lock) and return every
        log waiting to be folded, oldest first."""
        if self.log_path.exists():
            with lock.held(self.root / "recall.lock"):
                if self.log_path.exists():
                    os.replace(self.log_path, self.root / f"recall-log.{run_id}.jsonl")
        return self.pending_logs()

    def pending_logs(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob("recall-log.*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.name))

    def all_logs(self) -> list[Path]:
        """Every log not folded yet, the live one last (for a preview that must not take it)."""
        return self.pending_logs() + ([self.log_path] if self.log_path.exists() else [])

    def read_traces(self, paths: list[Path]) -> list[dict[str, Any]]:
        traces = []
        for path in paths:
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise StorageError(f"Dreaming trace log {path} cannot be read ({exc})") from None
            for line in lines:
                try:
                    traces.append(json.loads(line))
                except ValueError:
                    continue  # a line cut by a crash mid-append: the rest of the log is still read
        return traces


def shared_store(rt: Any) -> Any:
    """The database several instances share (PostgreSQL), whose lease serialises sweeps across
    hosts; None for the embedded SQLite home, where the file lock is enough."""
    return rt.store() if rt.config.storage.is_postgres else None


@contextmanager
def held_sweep_lock(dreams: DreamsDir, owner: str, shared_store: Any = None) -> Iterator[None]:
    """The sweep lock for a change outside a sweep (undo, backfill); refused while a sweep runs."""
    sweep_lock = dreams.sweep_lock(shared_store)
    lease = sweep_lock.acquire(owner)
    if lease is None:
        raise InputError(f"a Dreaming sweep is running ({sweep_lock.holder()}); try again when it has finished")
    with lease:
        yield


def write_atomic(path: Path, text: str | None) -> None:
    """Replace `path` with `text` in one rename (None: remove it), fsynced, so a crash leaves
    either the old or the new file, never half of one."""
    try:
        if text is None:
            path.unlink(missing_ok=True)
            return
        replace_text(path, text)
    except OSError as exc:
        raise StorageError(f"{path} cannot be written ({exc.strerror or exc}); nothing of it was changed") from None
