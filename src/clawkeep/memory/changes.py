"""Has anything of the workspace's memory files changed since the index last looked? Asked of
the kernel (Linux inotify), so the staleness check before a search costs one read of a queue
instead of a stat per file (1,700 notes: ~5 ms a search, and every tool call of a turn asks).

The queue watches the workspace folder (for MEMORY.md and the `memory` folder itself) and every
non-hidden folder under `memory/`. The kernel queues an event inside the write, rename, create
or delete call itself, so an edit that returned before the check is in the queue when the check
reads it: an edited note is searchable on the very next search, without the watcher's debounce.
Nothing is trusted that the kernel may not see: only local file systems (a network or FUSE file
system is changed behind its back), never across a fork (the queue would be shared with the
parent), and after an overflow, a watched folder deleted or moved, a workspace path that now leads
to another folder (a retargeted link), or any error the queue starts over and the index walks
every file once, as it would without the queue. Where there is no
inotify (not Linux, the per-user instance limit reached) `open_queue` returns None and every
check walks the files.

What the queue does not see (the index checks these by stat instead): symbolic links (their
target may live anywhere), files outside the workspace (extraPaths), and writes through a
shared memory mapping (no text editor saves that way).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import threading
import weakref
from pathlib import Path

from .workspace import MEMORY_FILE, NOTES_DIR

# <sys/inotify.h>
_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _UNMOUNT, _OVERFLOW, _IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
_ONLYDIR, _EXCL_UNLINK, _ISDIR = 0x01000000, 0x04000000, 0x40000000
_MASK = (_MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF
         | _MOVE_SELF | _ONLYDIR | _EXCL_UNLINK)
_START_OVER = _DELETE_SELF | _MOVE_SELF | _UNMOUNT | _OVERFLOW | _IGNORED  # the watch set no longer holds
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name (NUL-padded)
# File systems whose every change passes through this kernel. Anything else (nfs, cifs, 9p,
# fuse.*, virtiofs, ceph ...) may change under the workspace without an event.
LOCAL_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs",
                                "f2fs", "jfs", "reiserfs", "bcachefs", "nilfs2"})


class _Inotify:
    """The three libc calls, loaded once."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        self.init1 = libc.inotify_init1
        self.init1.argtypes, self.init1.restype = [ctypes.c_int], ctypes.c_int
        self.add_watch = libc.inotify_add_watch
        self.add_watch.argtypes, self.add_watch.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], \
            ctypes.c_int


_LIBC: list[_Inotify | None] = []
_LIBC_LOCK = threading.Lock()


def _inotify() -> _Inotify | None:
    with _LIBC_LOCK:
        if not _LIBC:
            try:
                _LIBC.append(_Inotify() if sys.platform.startswith("linux") else None)
            except (OSError, AttributeError):  # no libc, or one without inotify
                _LIBC.append(None)
        return _LIBC[0]


def file_system_type(path: Path) -> str | None:
    """The type of the file system `path` lives on (the longest mount point above its real path),
    from /proc/self/mounts; None when it cannot be told."""
    real = os.path.realpath(path)
    best, kind = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        return None
    return kind


class ChangeQueue:
    """The workspace's memory-file events since the last `take()`. Thread-safe."""

    def __init__(self, workspace: Path, calls: _Inotify):
        self.workspace = workspace
        self._paths = (str(workspace), os.path.join(workspace, NOTES_DIR))
        self._calls = calls
        self._lock = threading.Lock()
        self._fd = -1
        self._pid = 0
        self._dirs: dict[int, str] = {}  # watch descriptor -> folder, relative to the workspace ("" = itself)
        self._dirty = True  # nothing is known until the first walk after arming
        self._finalizer: weakref.finalize | None = None
        self._identity: tuple[tuple[int, int] | None, ...] = ()  # the watched folders' inodes when armed

    # --- asked by the index ------------------------------------------------------------------
    def changed(self) -> bool:
        """True when a memory file may have changed since the last `take()` (or nothing is known:
        never armed, started over, forked). Reads what the kernel queued; takes nothing."""
        with self._lock:
            if self._fd < 0 or self._pid != os.getpid():
                return True
            if self._folders() != self._identity:  # a link to the workspace retargeted: other folders now
                self._disarm()
                return True
            self._drain()
            return self._dirty

    def take(self) -> None:
        """The index is about to walk every file: from here on, events count against that walk.
        Arms the queue first when it is not (the walk then sees whatever came before)."""
        with self._lock:
            if self._fd < 0 or self._pid != os.getpid():
                self._arm()
            elif self._drain() is not None:
                self._dirty = False

    def close(self) -> None:
        with self._lock:
            self._disarm()

    # --- the queue ---------------------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        fd = self._calls.init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return  # e.g. the per-user instance limit: stay unarmed, every check walks
        self._fd, self._pid = fd, os.getpid()
        self._finalizer = weakref.finalize(self, _close_fd, fd, self._pid)
        self._dirty = False
        self._identity = self._folders()
        if not self._watch("") or not self._watch_tree(NOTES_DIR):
            self._disarm()

    def _folders(self) -> tuple[tuple[int, int] | None, ...]:
        """(device, inode) of the workspace folder and the notes folder as their paths lead now
        (through any link): a watch follows the folder it was put on, not the path."""
        found: list[tuple[int, int] | None] = []
        for path in self._paths:
            try:
                st = os.stat(path)
                found.append((st.st_dev, st.st_ino))
            except OSError:
                found.append(None)
        return tuple(found)

    def _disarm(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the descriptor (in the process that opened it only)
            self._finalizer = None
        self._fd, self._dirs, self._dirty = -1, {}, True

    def _watch(self, rel: str) -> bool:
        """Watch one folder; False when it cannot be (then nothing about the queue is trusted).
        A folder that does not exist (yet) is fine: its creation is an event in its parent."""
        path = os.path.join(self.workspace, rel) if rel else str(self.workspace)
        wd = self._calls.add_watch(self._fd, os.fsencode(path), _MASK)
        if wd >= 0:
            self._dirs[wd] = rel
            return True
        return ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR) and rel != ""

    def _watch_tree(self, rel: str) -> bool:
        """`rel` and every non-hidden folder below it, as `walk_markdown` descends (no links)."""
        stack = [rel]
        while stack:
            folder = stack.pop()
            if not self._watch(folder):
                return False
            try:
                with os.scandir(os.path.join(self.workspace, folder)) as entries:
                    stack.extend(f"{folder}/{e.name}" for e in entries
                                 if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
            except OSError:
                continue  # gone again, or not a folder: its parent's events say so
        return True

    def _drain(self) -> bool | None:
        """Read every queued event; None when the queue had to start over (then dirty)."""
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                self._disarm()
                return None
            if not data:
                return True
            if not self._absorb(data):
                self._disarm()
                return None

    def _absorb(self, data: bytes) -> bool:
        """Mark the queue dirty for each event about a memory file; watch new folders. False
        when the watch set no longer holds (overflow, a watched folder deleted or moved)."""
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, size = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size: offset + _EVENT.size + size].rstrip(b"\0").decode(
                sys.getfilesystemencoding(), "surrogateescape")
            offset += _EVENT.size + size
            if mask & _START_OVER:
                return False
            folder = self._dirs.get(wd)
            if folder is None or not self._concerns(folder, name, mask):
                continue
            self._dirty = True
            # a new folder (or the notes folder arriving as a link to one) is watched from now
            arrived = mask & (_CREATE | _MOVED_TO) and (mask & _ISDIR or (folder == "" and name == NOTES_DIR))
            if arrived and not self._watch_tree(_join(folder, name)):
                return False
        return True

    @staticmethod
    def _concerns(folder: str, name: str, mask: int) -> bool:
        """Is this event about something the index reads? In the workspace folder only MEMORY.md
        and the notes folder; below it non-hidden Markdown files and folders."""
        if folder == "":
            return name in (MEMORY_FILE, NOTES_DIR)
        return not name.startswith(".") and (bool(mask & _ISDIR) or name.endswith(".md"))


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _close_fd(fd: int, pid: int) -> None:
    if os.getpid() == pid:  # a forked child never closes (or reads) its parent's queue
        try:
            os.close(fd)
        except OSError:
            pass


def open_queue(workspace: Path) -> ChangeQueue | None:
    """A change queue for `workspace`, or None where the kernel cannot be asked (not Linux, no
    inotify) or cannot be trusted (the workspace is not on a local file system)."""
    calls = _inotify()
    if calls is None:
        return None
    probe = workspace
    while not probe.exists() and probe.parent != probe:  # not created yet: where it will be
        probe = probe.parent
    if file_system_type(probe) not in LOCAL_FILE_SYSTEMS:
        return None
    return ChangeQueue(workspace, calls)
