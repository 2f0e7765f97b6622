"""The memory index (M2, M6): Markdown files and (opt-in) transcripts → chunks → FTS + vectors.

`sync()` is incremental and cheap when nothing changed (a stat per file, a counter per
session), so every search runs it first (`refresh`) and results are never stale after an edit;
where the kernel reports file changes (`changes.py`) the check skips the walk while nothing
changed. The
whole index is rebuilt when the embedding provider, model or chunking changes (its
fingerprint is kept in the index's meta table). An embedding failure never corrupts the
index: the file is indexed for keywords only and retried on the next sync.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import api
from ..config import MemorySearchConfig
from ..deferred import deferred_import
from ..errors import ClawkeepError, ConflictError
from ..redact import redact_secrets
from ..storage.memory_base import ChunkRecord, FileRecord, MemoryStore
from ..text.analyzer import analyze_lines
from . import documents, items
from .changes import ChangeQueue, open_queue
from .chunking import chunk_lines, text_hash
from .sessions_source import DATE_LINE, SessionDoc
from .text_repair import clean_text
from .workspace import contained_file, walk_markdown

if TYPE_CHECKING:
    import numpy as np  # loaded with the first embedding: a keyword search never needs it
else:
    np = deferred_import("numpy")  # deferred: a keyword search never needs it

# bump when chunk rendering or token analysis changes (5: line vectors, chunk = their mean; 6: the
# stored tokens keep the chunk's line breaks, so a search never analyses a hit's lines again; 7: the secret
# filter learned new kinds (lines are indexed redacted, so chunks indexed before would still hold them in clear)
# and bad lines are cleaned instead of dropping the file; unchanged texts keep their cached embeddings)
INDEX_FORMAT = "7"
# Above this many lines a file gets chunk vectors only: embedding short lines one by one costs
# ~1.3-1.6x embedding the same text as chunks, so a 20,000-line file would take minutes.
MAX_LINE_VECTORS = 5000
Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class SyncReport:
    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path → why
    repaired: dict[str, str] = field(default_factory=dict)  # path → the bad parts indexed without (`clean_text`)
    rebuilt: bool = False
    embedding_error: str | None = None
    chunks: int = 0
    superseded: str | None = None
    corrupt: dict[str, Any] | None = None  # the index file was corrupt: moved aside, rebuilt (rebuild.py)

    def shape(self) -> api.IndexReport:
        """The report as `memory index` returns it."""
        return api.IndexReport(indexed=self.indexed, removed=self.removed, skipped=self.skipped, rebuilt=self.rebuilt,
                               embedding_error=self.embedding_error, chunks=self.chunks,
                               **({"repaired": self.repaired} if self.repaired else {}),
                               **({"superseded": self.superseded} if self.superseded else {}),
                               **({"corrupt": self.corrupt} if self.corrupt else {}))


class MemoryIndex:
    recovered: dict[str, Any] | None = None  # set when the store replaced a corrupt file; the next sync reports it
    watched = False  # a watcher re-indexes the workspace after edits (memory.service.watch)

    def __init__(self, workspace: Path, store: MemoryStore, settings: MemorySearchConfig,
                 provider_factory: Callable[[], Any | None],
                 sessions: Callable[[], list[SessionDoc]] | None = None):
        self.workspace = workspace
        self.store = store
        self.settings = settings
        self._provider_factory = provider_factory
        self._provider: Any | None = None
        self._provider_loaded = False
        self._sessions = sessions
        self._sync_lock = threading.RLock()
        self._embedding = True  # False while a keyword search syncs: no embedding model is loaded
        self._queue: ChangeQueue | None = None
        self._queue_opened = False
        # what the last walk of the memory files left: the index's state then, and whether the
        # next check must walk anyway (links, unreadable files, vectors still to embed)
        self._walked: tuple[int, str | None] | None = None
        self._walk_again = True
        self._vectors_waiting = False
        self._checked = threading.local()  # .generation: as this thread's last staleness check read it

    # --- provider -------------------------------------------------------------------
    @property
    def provider(self) -> Any | None:
        if not self._provider_loaded:
            self._provider = self._provider_factory()
            self._provider_loaded = True
        return self._provider

    def vector_key(self) -> str | None:
        provider = self.provider
        return provider.fingerprint() if provider is not None else None

    def fingerprint(self, vector_key: str | None = None, *, probe: bool = True) -> str:
        chunking = self.settings.chunking
        key = self.vector_key() if probe else vector_key
        return json.dumps({"format": INDEX_FORMAT, "vectors": key, "tokens": chunking.tokens,
                           "overlap": chunking.overlap, "sources": sorted(self.settings.sources)}, sort_keys=True)

    def _current_fingerprint(self, report: SyncReport) -> str:
        """The index's fingerprint; when the provider cannot even say what it is (down, bad
        answer), keep the stored one — a broken provider must not trigger a rebuild. A keyword
        sync keeps the stored one when only its vectors part could differ: the keyword index
        does not depend on it, and building the provider to ask would cost a cold keyword search
        ~3% (its module, the settings' serializer, a package-version scan). The next sync that
        may embed compares the vectors part and rebuilds if the provider changed."""
        self._vectors_ok = True
        if not self._embedding and (stored := self._stored_if_keywords_match()) is not None:
            return stored
        try:
            return self.fingerprint()
        except ClawkeepError as exc:
            self._vectors_ok = False
            report.embedding_error = str(exc)
            return self.store.get_meta("fingerprint") or self.fingerprint(None, probe=False)

    def _stored_if_keywords_match(self) -> str | None:
        stored = self.store.get_meta("fingerprint")
        try:
            vectors = json.loads(stored)["vectors"] if stored else None
        except (ValueError, TypeError, KeyError):
            return None
        return stored if stored == self.fingerprint(vectors, probe=False) else None

    # --- sync -------------------------------------------------------------------------
    def refresh(self, *, vectors: bool = True) -> SyncReport | None:
        """The staleness check before a search. The memory files are walked (a stat each) unless
        the kernel's change queue says none changed since the last walk; without a queue a
        watcher, when one runs, stands in for the check (it re-indexes ~1.5 s after an edit).
        Transcripts are checked here unless watched (their poller re-indexes ~5 s after a change).
        A keyword search passes `vectors=False`: changed files are indexed for keywords now and
        embedded by the next sync that may load the embedding model."""
        self._checked.generation = None
        if self.recovered is not None:
            return self._checked_sync(vectors=vectors)
        queue = self.change_queue()
        if queue is None:
            return None if self.watched else self._checked_sync(vectors=vectors)
        with self._sync_lock:  # a sync under way has taken the queue's events: wait for its walk
            files = not self._unchanged(queue)
            sessions = not self.watched and "sessions" in self.settings.sources and self._sessions is not None
            if not files and not sessions:
                return None
            return self._checked_sync(vectors=vectors, files=files)

    def _checked_sync(self, **how: Any) -> SyncReport:
        """A refresh's sync; the generation it left is the one the search that follows reads."""
        self._checked.generation = None
        with self._sync_lock:
            report = self.sync(**how)
            if report.superseded is None and self._walked is not None:
                self._checked.generation = self._walked[0]
        return report

    def change_queue(self) -> ChangeQueue | None:
        """The kernel's change queue for the workspace (opened on first use), or None: none here,
        turned off (memorySearch.sync.kernelEvents), or extra roots outside the workspace."""
        with self._sync_lock:
            if not self._queue_opened:
                self._queue_opened = True
                if self.settings.sync.kernel_events and not self.settings.extra_paths:
                    self._queue = open_queue(self.workspace)
            return self._queue

    def _unchanged(self, queue: ChangeQueue) -> bool:
        """Nothing to walk for: the last walk left nothing to redo, no other writer touched the
        index since (its generation and configuration are as that walk left them), and the
        kernel queued no event about a memory file."""
        state = self.store.generation_and_fingerprint()
        self._checked.generation = state[0]
        if self._walk_again or self._walked != state:
            return False
        return not queue.changed()

    def checked_generation(self) -> int | None:
        """The index generation as this thread's last staleness check (`refresh`) read it (a sync
        since then read it again), once: the search that follows takes it, so it need not read
        the generation itself (it keys what a search keeps per generation: chunk and vector
        counts). None: no check since the last search; read it."""
        generation, self._checked.generation = getattr(self._checked, "generation", None), None
        return generation

    def close(self) -> None:
        """Let go of the change queue (the store is closed by its owner)."""
        with self._sync_lock:
            if self._queue is not None:
                self._queue.close()

    def sync(self, *, force: bool = False, progress: Progress | None = None, vectors: bool = True,
             files: bool = True) -> SyncReport:
        """Bring the index up to date; `files=False` (the change queue saw no edit) skips the
        walk of the memory files."""
        with self._sync_lock:  # the watcher, a write and a search may all ask at once
            self._embedding = vectors
            try:
                return self._sync(force=force, progress=progress, files=files)
            finally:
                self._embedding = True

    def _sync(self, *, force: bool, progress: Progress | None, files: bool = True) -> SyncReport:
        report = SyncReport()
        report.corrupt, self.recovered = self.recovered, None
        fingerprint = self._current_fingerprint(report)
        if force or self.store.get_meta("fingerprint") != fingerprint:
            self.store.clear()
            self.store.set_meta("fingerprint", fingerprint)
            report.rebuilt = True
            files = True
        self.store.fingerprint_guard = fingerprint
        try:
            if files:
                self._sync_memory_files(report, progress)
            if "sessions" in self.settings.sources and self._sessions is not None:
                self._sync_sessions(report, progress)
            # this process's own writes are accounted for; a change of either is another writer's
            self._walked = self.store.generation_and_fingerprint()
        except ConflictError as exc:
            report.superseded = str(exc)  # another configuration owns the index now; stop writing
            self._walk_again = True
        finally:
            self.store.fingerprint_guard = None
        report.chunks = self.store.chunk_count()
        if report.embedding_error:
            self.store.set_meta("lastEmbeddingError", report.embedding_error)
        elif report.indexed:
            self.store.set_meta("lastEmbeddingError", "")
        return report

    def _memory_stats(self, links: list[str] | None = None) -> dict[str, tuple[str, os.stat_result | OSError]]:
        """{name: (path, stat or the OSError it raised)} of the workspace's memory files and the
        configured extra roots (M4): only regular files whose real path stays inside the workspace
        or inside the extra root they were found in. One walk that stats as it goes, plain strings:
        this runs before every search (1,700 files: a Path per file cost more than its stat).
        The workspace's files that are symbolic links are added to `links` (when given)."""
        base = str(self.workspace)
        paths = {rel: (os.path.join(base, rel), st)
                 for rel, st in documents.memory_file_stats(self.workspace, links)}
        for extra in self.settings.extra_paths:
            root = Path(extra).expanduser()
            root = root if root.is_absolute() else self.workspace / root
            if root.is_file():  # a file the operator named: its link (if any) is theirs to follow
                found = [root] if contained_file(root, Path(os.path.realpath(root)).parent) else []
            else:
                found = [root / rel for rel in sorted(walk_markdown(root, root))]
            for path in found:
                try:
                    st: os.stat_result | OSError = os.stat(path)
                except OSError as exc:
                    st = exc
                paths[f"extra:{Path(os.path.realpath(path)).as_posix()}"] = (str(path), st)
        return paths

    def _sync_memory_files(self, report: SyncReport, progress: Progress | None) -> None:
        queue = self.change_queue()
        if queue is not None:
            queue.take()  # before the walk: an edit from here on is an event for the next check
        self._walk_again = True  # until this walk is done
        links: list[str] = []
        known = self.store.files("memory")
        paths = self._memory_stats(links)
        # a link's target, or a file stat could not reach, changes without an event in the notes
        # folder: while there is one, every check walks (so do vectors still to embed)
        again = bool(links)
        self._vectors_waiting = False
        for gone in sorted(set(known) - set(paths)):
            self.store.remove_file(gone)
            self._note_repairs(gone, None)
            report.removed.append(gone)
        todo = []
        for rel, (path, stat) in paths.items():
            if isinstance(stat, OSError):
                report.skipped[rel] = f"unreadable: {stat}"
                again = True
                continue
            record = known.get(rel)
            if record and record.mtime == stat.st_mtime and record.size == stat.st_size:
                continue
            todo.append((rel, path, stat))
        for done, (rel, path, stat) in enumerate(todo, start=1):
            self._index_file(rel, path, stat, known.get(rel), report)
            if progress:
                progress("memory", done, len(todo))
        self._walk_again = again or self._vectors_waiting

    def _index_file(self, rel: str, path: str, stat: Any, previous: FileRecord | None, report: SyncReport) -> None:
        if stat.st_size > self.settings.max_file_bytes:
            report.skipped[rel] = f"too large ({stat.st_size} bytes > maxFileBytes {self.settings.max_file_bytes})"
            return self._forget(rel, previous)
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            report.skipped[rel] = f"unreadable: {exc}"
            return self._forget(rel, previous)
        # A bad line (a NUL, a stray control character, bytes that are not UTF-8) never drops the
        # file: the rest is indexed and the bad parts are named (sync report, memory status).
        text, repairs = clean_text(raw)
        if text is None:
            report.skipped[rel] = f"not text: {repairs}"
            return self._forget(rel, previous)
        self._note_repairs(rel, repairs)
        if repairs:
            report.repaired[rel] = repairs
        digest = text_hash(text)
        record = FileRecord(rel, "memory", digest, stat.st_mtime, stat.st_size)
        if previous and previous.hash == digest:
            self.store.touch_file(record)  # same content, new mtime: chunks stay as they are
            return
        self._write_chunks(record, self._file_chunks(rel, text), report)

    def _forget(self, rel: str, previous: FileRecord | None) -> None:
        self._note_repairs(rel, None)
        if previous:
            self.store.remove_file(rel)

    def _note_repairs(self, rel: str, repairs: str | None) -> None:
        """Keep what was cleaned out of each file (meta `repairedFiles`) for `memory status`."""
        known = self.repaired_files()
        if known.get(rel) == repairs or (repairs is None and rel not in known):
            return
        if repairs is None:
            known.pop(rel)
        else:
            known[rel] = repairs
        self.store.set_meta(REPAIRED_META, json.dumps(known, ensure_ascii=False, sort_keys=True))

    def repaired_files(self) -> dict[str, str]:
        """Memory files indexed without some bad part → what was left out (see `clean_text`)."""
        try:
            known = json.loads(self.store.get_meta(REPAIRED_META) or "{}")
        except ValueError:
            return {}
        return known if isinstance(known, dict) else {}

    def _file_chunks(self, rel: str, text: str) -> list[ChunkRecord]:
        lines = text.splitlines()
        states = items.line_states(lines)
        classes = [(st.weight, st.expires is not None, st.session) for st in states]
        chunks = chunk_lines([_redacted_line(items.parse_marker(line)[0]) for line in lines],
                             chunk_tokens=self.settings.chunking.tokens,
                             overlap_tokens=self.settings.chunking.overlap, classes=classes)
        day = _day_of(rel)
        out = []
        for chunk in chunks:
            span = states[chunk.start_line - 1:chunk.end_line]
            meta: dict[str, Any] = {}
            if expiry := max((st.expires for st in span if st.expires), default=None):
                meta["expires"] = expiry
            if span[0].session:
                meta["sessionKey"] = span[0].session
            out.append(ChunkRecord(rel, "memory", chunk.start_line, chunk.end_line, chunk.text, chunk.hash,
                                   tokens=analyze_lines(chunk.text), weight=min(st.weight for st in span),
                                   day=day, meta=meta))
        return out

    def _write_chunks(self, record: FileRecord, chunks: list[ChunkRecord], report: SyncReport) -> None:
        vectors, key = None, None
        if chunks and not self._embedding and self.provider is not None:
            record = FileRecord(record.path, record.source, "novec:" + record.hash, 0.0, -1)  # embedded later
        elif chunks and self.provider is not None and not getattr(self, "_vectors_ok", True):
            record = FileRecord(record.path, record.source, "novec:" + record.hash, 0.0, -1)  # retry next sync
        elif chunks and self.provider is not None:
            try:
                vectors = self._embed_chunks(chunks)
                key = self.vector_key()
            except ClawkeepError as exc:
                report.embedding_error = str(exc)
                record = FileRecord(record.path, record.source, "novec:" + record.hash, 0.0, -1)  # retry next sync
        if record.size == -1 and record.source == "memory":
            self._vectors_waiting = True  # no file event will ask for these vectors: the next check walks
        self.store.replace_file(record, chunks, vectors, key)
        report.indexed.append(record.path)

    def _embed_chunks(self, chunks: list[ChunkRecord]) -> np.ndarray:
        """Fact-level vectors: every line that says something gets its own vector (a fact in
        MEMORY.md is one line, a chat turn is one line), so search can pick the line inside a
        chunk whose own vector is a blur of a dozen facts; a chunk's vector is the normalised mean
        of its lines' (one embedding pass over the text, not two). A line shared by overlapping
        chunks is embedded once (the cache is keyed by text); a chunk without such lines is
        embedded whole."""
        wanted = [(chunk, i, text) for chunk in chunks for i, line in enumerate(chunk.text.split("\n"))
                  if (text := line_for_vector(line, chunk.source))]
        if len(wanted) > MAX_LINE_VECTORS:
            wanted = []  # a huge file: chunk vectors only (one embedding per chunk is cheaper)
        matrix = self.embed_documents([text for _, _, text in wanted]) if wanted else None
        grouped: dict[int, list[tuple[int, np.ndarray]]] = {}
        for row, (chunk, i, _) in enumerate(wanted):
            grouped.setdefault(id(chunk), []).append((i, matrix[row]))
        vectors = []
        bare = [c for c in chunks if id(c) not in grouped]
        whole = dict(zip(map(id, bare), self.embed_documents([c.text for c in bare]), strict=True)) if bare else {}
        for chunk in chunks:
            chunk.line_vectors = tuple(grouped.get(id(chunk), ()))
            if chunk.line_vectors:
                mean = np.mean([vec for _, vec in chunk.line_vectors], axis=0)
                vectors.append(mean / (np.linalg.norm(mean) or 1.0))
            else:
                vectors.append(whole[id(chunk)])
        return np.vstack(vectors).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embeddings through the cache keyed by provider+model (fingerprint) and text hash."""
        key = self.vector_key()
        assert key is not None and self.provider is not None
        hashes = [text_hash(t) for t in texts]
        cached = self.store.cached_embeddings(key, hashes)
        missing = [i for i, h in enumerate(hashes) if h not in cached]
        if missing:
            fresh = self.provider.embed_documents([texts[i] for i in missing])
            new = {hashes[i]: fresh[j] for j, i in enumerate(missing)}
            self.store.cache_embeddings(key, new)
            cached.update(new)
        return np.vstack([cached[h] for h in hashes]).astype(np.float32)

    # --- transcripts (M6) -------------------------------------------------------------
    def _sync_sessions(self, report: SyncReport, progress: Progress | None) -> None:
        assert self._sessions is not None
        docs = {doc.path: doc for doc in self._sessions()}
        known = self.store.files("sessions")
        for gone in sorted(set(known) - set(docs)):
            self.store.remove_file(gone)
            report.removed.append(gone)
        todo = [doc for path, doc in docs.items() if not known.get(path) or known[path].hash != doc.version]
        for done, doc in enumerate(todo, start=1):
            lines = doc.indexed_lines()
            chunks = chunk_lines(lines, chunk_tokens=self.settings.chunking.tokens,
                                 overlap_tokens=self.settings.chunking.overlap)
            records = [ChunkRecord(doc.path, "sessions", c.start_line, c.end_line, c.text, c.hash,
                                   tokens=analyze_lines(c.text), day=doc.day_of_line(c.start_line),
                                   meta={"sessionKey": doc.session_key, "sessionId": doc.session_id,
                                         "messageIds": doc.message_ids(c.start_line, c.end_line)})
                       for c in chunks]
            self._write_chunks(FileRecord(doc.path, "sessions", doc.version, 0.0, len(lines)), records, report)
            if progress:
                progress("sessions", done, len(todo))


_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+|^#+\s*")
MIN_VECTOR_CHARS = 4  # shorter lines ("-", "ok") say nothing a vector could find


def line_for_vector(line: str, source: str) -> str:
    """The text of a chunk line as its line vector sees it ("" for none): list markers and
    heading marks dropped; transcript date lines and blank lines get no vector."""
    text = line.strip()
    if source == "sessions" and DATE_LINE.match(text):
        return ""
    text = _MARKER.sub("", text).strip()
    return text if len(text) >= MIN_VECTOR_CHARS else ""


REPAIRED_META = "repairedFiles"


def _redacted_line(line: str) -> str:
    """A memory-file line as indexed: credentials redacted (M7: a hand-written password is never
    searchable or shown in clear), still one line so line numbers keep matching the file."""
    redacted, changed = redact_secrets(line)
    return " ".join(redacted.splitlines()) if changed else line


def _day_of(rel: str) -> str | None:
    """Dated daily notes decay; MEMORY.md and undated notes are evergreen."""
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith(f"{items.NOTES_DIR}/") and len(name) >= 13 and name[:10].count("-") == 2:
        try:
            return date.fromisoformat(name[:10]).isoformat()
        except ValueError:
            return None
    return None
