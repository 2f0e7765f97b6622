"""Where memory files are written: one interface, two implementations (SPEC D4).

Every write of a memory file — remember, edit, delete, sweep, the flush, the session-memory hook,
Dreaming — is `docs.update(rel, change)`: `change` gets the file's current lines and returns the
new ones (or None: nothing to write). Reads stay plain file reads of the workspace.

- `FileDocuments` (embedded SQLite mode): the workspace files are the documents; a write is an
  atomic rename, as always.
- `MirroredDocuments` (PostgreSQL mode): the documents live in the database (path, text,
  version); the workspace directory is this instance's mirror of them, for humans and tools.
  `update` reads the stored version and writes back with a compare-and-set; when another instance
  wrote in between, `change` runs again on the newer text (so two instances' appends both land,
  and an edit of an item someone else changed meanwhile is refused by its `change`). `sync` runs
  before reads: it writes a human's edit of a mirrored file back through the same check, then
  pulls what other instances wrote. When a human's edit and another write collide, both are
  kept: the database's version stays the document, the human's goes to
  `memory/.conflicts/<file>.<time>.<instance>.md`, and the conflict is recorded and reported
  (`memory status`, a warning) — never a silent overwrite.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ConflictError, InputError
from ..storage import DocumentConflict, DocumentStore
from .workspace import MEMORY_FILE, NOTES_DIR, contained_file, is_inside, walk_markdown, walk_markdown_stats

Change = Callable[[list[str]], "list[str] | None"]
CONFLICTS_DIR = f"{NOTES_DIR}/.conflicts"
STATE_FILE = ".clawkeep/mirror.json"
MAX_ATTEMPTS = 8


# --- plain files --------------------------------------------------------------------------
def read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise InputError(f"memory file {path} is not UTF-8 text; fix or remove it") from None
    except OSError as exc:  # unreadable (permissions), a directory, …
        raise InputError(f"memory file {path} cannot be read ({exc.strerror or exc}); fix its permissions"
                         ) from None


def write_text(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # atomic: a crash never leaves half a memory file
    except OSError as exc:  # a read-only workspace: say which file, never a raw PermissionError
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise InputError(f"memory file {path} cannot be written ({exc.strerror or exc}); make the workspace "
                         "writable, or set agents.defaults.workspaceAccess to \"ro\" to stop writes") from None


def write_lines(path: Path, lines: list[str]) -> None:
    write_text(path, "\n".join(lines) + "\n")


def memory_files(workspace: Path) -> list[str]:
    """MEMORY.md and memory/**/*.md (hidden folders such as .dreams and .archive excluded):
    regular files whose real path is inside the workspace (M4: no link leads out, no FIFO).

    Runs before every search (the staleness check), so it walks with scandir and plain strings:
    pathlib's rglob + relative_to cost ~13 µs a file, this ~1 µs."""
    found = [MEMORY_FILE] if contained_file(workspace / MEMORY_FILE, workspace) else []
    notes = [f"{NOTES_DIR}/{rel}" for rel in walk_markdown(workspace / NOTES_DIR, workspace)]
    return found + sorted(notes)


def memory_file_stats(workspace: Path, links: list[str] | None = None
                      ) -> list[tuple[str, os.stat_result | OSError]]:
    """`memory_files` in the same order, each with its stat (or the OSError stat raised), in one
    walk: the staleness check before every search stats every file anyway. The files that are
    symbolic links (their targets change without an event in the notes folder) are added to
    `links` when given."""
    found: list[tuple[str, os.stat_result | OSError]] = []
    if contained_file(workspace / MEMORY_FILE, workspace):
        if links is not None and os.path.islink(workspace / MEMORY_FILE):
            links.append(MEMORY_FILE)
        try:
            found.append((MEMORY_FILE, os.stat(workspace / MEMORY_FILE)))
        except OSError as exc:
            found.append((MEMORY_FILE, exc))
    folder: list[str] | None = [] if links is not None else None
    notes = [(f"{NOTES_DIR}/{rel}", st) for rel, st in walk_markdown_stats(workspace / NOTES_DIR, workspace, folder)]
    if links is not None and folder:
        links.extend(f"{NOTES_DIR}/{rel}" for rel in folder)
    return found + sorted(notes, key=lambda note: note[0])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


WRITE_LOCK = ".clawkeep/write.lock"  # hidden: never indexed or listed
_HELD = threading.local()  # workspaces this thread holds the write lock of (re-entry is free)


@contextmanager
def locked(workspace: Path) -> Iterator[None]:
    """The workspace's write lock: every read-modify-write of a memory file (remember, edit,
    delete, flush, the hook, a Dreaming rewrite and its hash check) runs under it, so two writers
    — threads of a gateway, a CLI beside it — never interleave and lose one's change. An
    exclusive `flock`, released by the kernel however the holder exits; a thread that holds it
    may take it again (whichever spelling of the workspace's path it names it by: a second
    `flock` of its own would wait for itself)."""
    key = os.path.realpath(workspace)
    held = _HELD.__dict__.setdefault("keys", set())
    if key in held:
        yield
        return
    path = workspace / WRITE_LOCK
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a read-only workspace: the write itself will fail and say so
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class FileDocuments:
    """Embedded mode: the files themselves."""

    def __init__(self, workspace: Path):
        self.workspace = workspace

    def sync(self) -> None:
        """Nothing to reconcile: the files are the only copy."""

    def update(self, rel: str, change: Change) -> list[str]:
        path = self.workspace / rel
        with locked(self.workspace):
            lines = read_lines(path)
            new = change(list(lines))
            if new is None:
                return lines
            write_lines(path, new)
            return new

    def create(self, rel: str, text: str) -> bool:
        """Write a new file; False (nothing written) when `rel` exists."""
        path = self.workspace / rel
        with locked(self.workspace):
            if path.exists():
                return False
            write_text(path, text)
            return True

    def version_of(self, rel: str) -> int | None:
        return None

    def keep_conflict(self, rel: str, ours: str, base: int | None) -> str | None:
        """One workspace, one lock: a refused edit is the editor's to retry (nothing kept)."""
        return None

    def conflicts(self) -> list[dict[str, Any]]:
        return []


class MirroredDocuments:
    """PostgreSQL mode: the database's documents mirrored into `workspace` (see the module doc)."""

    def __init__(self, workspace: Path, store: DocumentStore, holder: str | None = None):
        self.workspace = workspace
        self.store = store
        self.holder = holder or f"{socket.gethostname()}:{_digest(str(workspace))[:6]}"
        self._lock = threading.RLock()  # a read-only workspace has no lock file: threads still take turns
        self._state_path = workspace / STATE_FILE
        self._state_text: str | None = None  # the state file as this mirror last read or wrote it
        self._state = self._load_state()
        self.warnings: list[str] = []

    # --- the mirror's memory of what it wrote --------------------------------------------
    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """Everything that reads or changes the mirror runs here. The workspace lock keeps out
        every other writer of this directory — another thread, another mirror object of it, a
        CLI beside the gateway — and what one of them saved meanwhile is read back first: a
        mirror working from an older memory of what was written would take the newer files for
        a human's edits, push them and record a conflict that never happened."""
        with locked(self.workspace), self._lock:
            if self._read_state_text() != self._state_text:
                self._state = self._load_state()
            yield

    def _read_state_text(self) -> str | None:
        try:
            return self._state_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _load_state(self) -> dict[str, Any]:
        self._state_text = self._read_state_text()
        try:
            state = json.loads(self._state_text or "")
            if isinstance(state, dict) and isinstance(state.get("docs"), dict):
                return state
        except ValueError:
            pass
        return {"seq": 0, "docs": {}}

    def _save_state(self) -> None:
        text = json.dumps(self._state, ensure_ascii=False)
        write_text(self._state_path, text)
        self._state_text = text

    def _mirror(self, rel: str, text: str | None, version: int) -> None:
        """Make the local file `text` (None: absent) and remember it as `version`."""
        path = self.workspace / rel
        if path.is_dir() and not path.is_symlink():
            # Someone's directory: never removed, never written into. The copy waits (recorded
            # with an impossible mtime, so every sync looks again) until the directory is gone.
            displaced = self._state.setdefault("displaced", {})
            if text is None:
                self._state["docs"].pop(rel, None)
                displaced.pop(rel, None)
            else:
                self._state["docs"][rel] = [version, _digest(text), -1, -1]
                displaced[rel] = "a directory"
            return
        self._state.get("displaced", {}).pop(rel, None)
        if text is None:
            path.unlink(missing_ok=True)
            self._state["docs"].pop(rel, None)
            return
        write_text(path, text)
        st = path.stat()
        self._state["docs"][rel] = [version, _digest(text), st.st_mtime_ns, st.st_size]

    # --- reconcile -----------------------------------------------------------------------
    def sync(self) -> None:
        """Write local (human) edits back, then pull what other instances wrote."""
        with self._guarded():
            changed = self._push_local_edits()
            changed |= self._pull()
            if changed:
                self._save_state()

    def _not_regular(self, rel: str) -> str | None:
        """Why the entry at `rel` is no regular file inside the workspace (None: it is one, or is
        absent). Such an entry is never read: a link out of the workspace would upload another
        file into the shared database, a FIFO would block the reader for ever (M4)."""
        path = self.workspace / rel
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISREG(st.st_mode):
            return None
        if stat.S_ISDIR(st.st_mode):
            return "a directory"
        if stat.S_ISLNK(st.st_mode):
            if contained_file(path, self.workspace):
                return None
            return "a symbolic link out of the workspace or to no regular file"
        return "a FIFO, socket or device"

    def _read_regular(self, rel: str) -> tuple[str, os.stat_result]:
        """The text of the regular file at `rel`, opened without blocking and checked again once
        open (it may have been swapped for a FIFO or a link since `_not_regular` looked)."""
        real = os.path.realpath(self.workspace / rel)
        if not is_inside(real, os.path.realpath(self.workspace)):
            raise OSError(f"{rel} leads out of the workspace")
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{rel} is not a regular file")
            return handle.read().decode("utf-8"), st

    def _restore(self, rel: str, why: str) -> None:
        """Put the database's version back at `rel` in place of what is there (a link or a FIFO is
        replaced by the atomic rename, never written through; a directory is left where it is)."""
        current = self.store.doc_get(rel)
        if current is not None and not current.deleted:
            self._mirror(rel, current.text, current.version)
        else:
            self._mirror(rel, None, 0)
        if why == "missing":  # the directory that stood there was removed: mirrored again, nothing deleted
            return
        if why == "a directory" and rel in self._state.get("displaced", {}):
            self.warnings.append(f"memory file {rel} is a directory here: it was not read and not mirrored; the "
                                 "database's version is kept and comes back here once the directory is removed")
        else:
            self.warnings.append(f"memory file {rel} had become {why}, not a regular file of the workspace: it was "
                                 "not read or uploaded; the database's version was put back in its place")

    def _local_text(self, rel: str, known: list | None) -> tuple[bool, str | None]:
        """(changed since mirrored, current text or None when the file is gone)."""
        path = self.workspace / rel
        try:
            st = path.stat()
        except FileNotFoundError:
            return known is not None, None
        except OSError:
            return False, None  # a link loop, …: left alone
        if known is not None and [st.st_mtime_ns, st.st_size] == known[2:4]:
            return False, None  # untouched: no need to read it
        try:
            text, st = self._read_regular(rel)
        except (OSError, UnicodeDecodeError):
            return False, None  # unreadable: left alone (the index reports it)
        if known is not None and _digest(text) == known[1]:
            known[2:4] = [st.st_mtime_ns, st.st_size]
            return False, text
        return True, text

    def _push_local_edits(self) -> bool:
        docs = self._state["docs"]
        changed = False
        for rel in sorted(set(memory_files(self.workspace)) | set(docs)):
            if not _safe(rel):
                continue
            known = docs.get(rel)
            why = self._not_regular(rel)
            displaced = self._state.setdefault("displaced", {})
            if why is None and rel in displaced and os.path.lexists(self.workspace / rel):
                displaced.pop(rel)  # the directory gave way to a file: a human's edit like any other
                changed = True
            elif why is not None or rel in displaced:
                if known is None:
                    continue  # never mirrored here: not ours to read or replace
                if why == "a directory" and displaced.get(rel) == "a directory":
                    continue  # still there: reported once, the database's version waits
                # a link out, a FIFO, a new directory, or a directory since removed (never a
                # deletion): put back the database's version; nothing local is read or pushed
                self._restore(rel, why or "missing")
                changed = True
                continue
            edited, text = self._local_text(rel, known)
            if not edited:
                continue
            changed = True
            try:
                if text is None:
                    self.store.doc_delete(rel, known[0], self.holder)
                    docs.pop(rel, None)
                else:
                    doc = self.store.doc_put(rel, text, known[0] if known else None, self.holder)
                    st = (self.workspace / rel).stat()
                    docs[rel] = [doc.version, _digest(text), st.st_mtime_ns, st.st_size]
            except ConflictError:
                self._keep_both(rel, text, known[0] if known else None)
        return changed

    def version_of(self, rel: str) -> int | None:
        """The version of `rel` this mirror holds (None: not mirrored)."""
        with self._guarded():
            known = self._state["docs"].get(rel)
            return known[0] if known else None

    def keep_conflict(self, rel: str, ours: str, base: int | None) -> str:
        """A write that another instance's write beat (an item edit refused by its check): the
        database's version stays the document, `ours` is kept as a conflict copy and the conflict
        recorded for every instance. Returns the copy's path."""
        with self._guarded():
            kept = self._keep_both(rel, ours, base)
            self._save_state()
            return kept

    def _keep_both(self, rel: str, ours: str | None, base: int | None) -> str:
        """A local edit lost the race: the database's version stays; ours is kept beside it."""
        current = self.store.doc_get(rel)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", rel)
        kept = f"{CONFLICTS_DIR}/{name}.{stamp}.{re.sub(r'[^A-Za-z0-9_-]+', '-', self.holder)}.md"
        if ours is not None:
            stem = kept.removesuffix(".md")
            for n in range(1, 100):  # another conflict of this file here within the second: .2, .3, …
                try:
                    copy = self.store.doc_put(kept, ours, None, self.holder)
                    break
                except ConflictError:
                    kept = f"{stem}.{n + 1}.md"
            else:
                raise ConflictError(f"memory file {rel}: no free name for its conflict copy under {CONFLICTS_DIR}")
            self._mirror(kept, ours, copy.version)
        else:
            kept = "(a deletion, not applied)"
        self.store.doc_record_conflict(DocumentConflict(rel, kept, base, current.version if current else None,
                                                        self.holder, int(time.time() * 1000)))
        if current is not None and not current.deleted:
            self._mirror(rel, current.text, current.version)
        else:
            self._mirror(rel, None, 0)
        self.warnings.append(f"memory file {rel} was changed here and by another instance at the same time: the "
                             f"other version stays in {rel}, this one was kept as {kept}")
        return kept

    def _pull(self) -> bool:
        # the changes themselves, not the head first: one read whether or not anything changed
        changes = self.store.doc_changes(int(self._state.get("seq", 0)))
        if not changes:
            return False
        head = max(doc.seq for doc in changes)
        for doc in changes:
            if not _safe(doc.path):
                continue
            known = self._state["docs"].get(doc.path)
            if known is not None and known[0] >= doc.version:
                continue
            self._mirror(doc.path, None if doc.deleted else doc.text, doc.version)
        self._state["seq"] = head
        return True

    # --- writes --------------------------------------------------------------------------
    def update(self, rel: str, change: Change) -> list[str]:
        with self._guarded():
            self.sync()
            for _ in range(MAX_ATTEMPTS):
                doc = self.store.doc_get(rel)
                lines = doc.text.splitlines() if doc is not None and not doc.deleted else []
                new = change(list(lines))
                if new is None:
                    return lines
                text = "\n".join(new) + "\n"
                expected = doc.version if doc is not None and not doc.deleted else None
                try:
                    if expected is None and doc is not None:  # a tombstone: bring it back
                        written = self.store.doc_put(rel, text, None, self.holder)
                    else:
                        written = self.store.doc_put(rel, text, expected, self.holder)
                except ConflictError:
                    continue  # another instance wrote first: apply the change to its version
                self._mirror(rel, text, written.version)
                self._save_state()
                return new
        raise ConflictError(f"memory file {rel} kept changing under other writers ({MAX_ATTEMPTS} tries); "
                            "nothing was written, try again")

    def create(self, rel: str, text: str) -> bool:
        with self._guarded():
            try:
                doc = self.store.doc_put(rel, text, None, self.holder)
            except ConflictError:
                return False
            self._mirror(rel, text, doc.version)
            self._save_state()
            return True

    def replace(self, rel: str, text: str | None) -> None:
        """A whole-document write (None: delete) based on what this mirror last held: ConflictError
        when another instance wrote the document since (nothing is written then)."""
        with self._guarded():
            known = self._state["docs"].get(rel)
            if text is None:
                if known is not None:
                    self.store.doc_delete(rel, known[0], self.holder)
                self._mirror(rel, None, 0)
            else:
                written = self.store.doc_put(rel, text, known[0] if known else None, self.holder)
                self._mirror(rel, text, written.version)
            self._save_state()

    def not_mirrored(self) -> list[dict[str, str]]:
        """The documents whose mirror path holds something that is no regular file (a directory):
        the database's version is kept and this mirror skips them until the path is freed."""
        with self._guarded():
            return [{"path": rel, "reason": why} for rel, why in sorted(self._state.get("displaced", {}).items())]

    def conflicts(self) -> list[dict[str, Any]]:
        return [{"path": c.path, "keptAs": c.kept_as, "baseVersion": c.base_version,
                 "currentVersion": c.current_version, "instance": c.holder, "at": c.at}
                for c in self.store.doc_conflicts()]


def _safe(rel: str) -> bool:
    """A document path that stays inside the workspace."""
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and ".." not in parts and "" not in parts and "\x00" not in rel


_REGISTRY: dict[str, MirroredDocuments] = {}
_REGISTRY_LOCK = threading.Lock()


def attach(workspace: Path, store: Any) -> FileDocuments | MirroredDocuments:
    """The documents of `workspace`: mirrored when `store` keeps documents (PostgreSQL), else the
    files. The mirror is shared by every caller in this process."""
    if not isinstance(store, DocumentStore):
        return FileDocuments(workspace)
    key = str(workspace.resolve())
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(key)
        if found is None or found.store is not store:
            found = _REGISTRY[key] = MirroredDocuments(workspace, store)
    return found


def detach(workspace: Path) -> None:
    with _REGISTRY_LOCK:
        _REGISTRY.pop(str(workspace.resolve()), None)


def write_document(workspace: Path, rel: str, text: str | None,
                   write_file: Callable[[Path, str | None], None]) -> None:
    """A whole-file write of a memory document (Dreaming): `write_file` on the file in embedded
    mode; in PostgreSQL mode a compare-and-set against the version this instance's mirror holds,
    then the mirror. ConflictError when another instance changed the document meanwhile."""
    docs = for_workspace(workspace)
    if isinstance(docs, MirroredDocuments):
        docs.replace(rel, text)
    else:
        with locked(workspace):
            write_file(workspace / rel, text)


def for_workspace(workspace: Path) -> FileDocuments | MirroredDocuments:
    """What `attach` gave this workspace (the files when nothing was attached)."""
    with _REGISTRY_LOCK:
        return _REGISTRY.get(str(workspace.resolve())) or FileDocuments(workspace)
