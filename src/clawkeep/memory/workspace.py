"""The agent workspace (M1): MEMORY.md, memory/YYYY-MM-DD.md daily notes, DREAMS.md.

Plain Markdown is the source of truth. The main agent's workspace is `<home>/workspace`,
another agent's `<home>/workspace-<agentId>`; `agents.defaults.workspace` (main) or an
`agents.list[].workspace` entry overrides it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from .. import api
from ..config import Config
from ..errors import InputError
from ..text.estimate import estimate_tokens, weighted_length

MEMORY_FILE = "MEMORY.md"
DREAMS_FILE = "DREAMS.md"
NOTES_DIR = "memory"
# Bootstrap files are read-only in a memory-flush turn; only today's note may be appended.
READ_ONLY_FILES = ("MEMORY.md", "DREAMS.md", "SOUL.md", "TOOLS.md", "AGENTS.md")
# A bootstrap file larger than this is not read at all (its injected copy is budgeted by
# bootstrapMaxChars anyway); keeps a runaway file from costing every turn.
MAX_BOOTSTRAP_FILE_BYTES = 4 * 1024 * 1024
# What the prompt says where a file was cut; the rest is on disk, for memory_get.
TRUNCATION_NOTE = ("\n\n[… {name} truncated for this prompt: {omitted} more characters on disk — read them with "
                   "memory_get (path {name}) …]")
NOTE_CUT_NOTE = ("[… {name} is cut for this prompt: only its newest lines are shown below; {omitted} characters "
                 "of older lines are left out — read them with memory_get (path {name}, from line 1) …]\n\n")


def workspace_dir(home: Path, config: Config, agent_id: str) -> Path:
    for entry in config.agents.agents_list:
        if entry.id == agent_id and entry.workspace:
            return Path(entry.workspace).expanduser()
    if agent_id == "main" and config.agents.defaults.workspace:
        return Path(config.agents.defaults.workspace).expanduser()
    return home / ("workspace" if agent_id == "main" else f"workspace-{agent_id}")


def is_inside(path: str, root: str) -> bool:
    """`path` and `root` are real (resolved) paths."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def contained_file(path: Path | str, root: Path | str) -> bool:
    """A regular file whose real path lies under `root`'s real path (M4): a symlink out of the
    workspace, a FIFO, a socket or a device is never read — reading a FIFO would block for ever."""
    real = os.path.realpath(path)
    if not is_inside(real, os.path.realpath(root)):
        return False
    try:
        return stat.S_ISREG(os.stat(real).st_mode)
    except OSError:
        return False


def walk_markdown(root: Path | str, boundary: Path | str) -> Iterator[str]:
    """Relative posix paths of the *.md files under `root` (hidden names skipped), with the
    containment of `contained_file` against `boundary`. Plain entries cost no extra syscall:
    only symlinks are resolved (scandir knows the type of the others)."""
    return (rel for rel, _ in _walk(root, boundary, stats=False))


def walk_markdown_stats(root: Path | str, boundary: Path | str, links: list[str] | None = None
                        ) -> Iterator[tuple[str, os.stat_result | OSError]]:
    """`walk_markdown` with each file's stat (of the file a link points to), or the OSError that
    stat raised: the staleness check's one pass, without building a path per file twice. The
    files that are symbolic links are also added to `links` (when given)."""
    return _walk(root, boundary, stats=True, links=links)


def _walk(root: Path | str, boundary: Path | str, *, stats: bool, links: list[str] | None = None
          ) -> Iterator[tuple[str, Any]]:
    boundary_real = os.path.realpath(boundary)
    top = os.path.realpath(root)
    if not is_inside(top, boundary_real) or not os.path.isdir(top):
        return
    stack = [("", str(root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = prefix + entry.name
            if entry.is_symlink():
                if entry.name.endswith(".md") and contained_file(entry.path, boundary_real):
                    # a link inside the workspace is fine; directories behind links are not walked
                    if links is not None:
                        links.append(rel)
                    yield rel, (_stat(entry.path, True) if stats else None)
            elif entry.is_dir(follow_symlinks=False):
                stack.append((rel + "/", entry.path))
            elif entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
                # not a link: lstat is the file's own stat
                yield rel, (_stat(entry, False) if stats else None)


def _stat(target: os.DirEntry | str, follow: bool) -> os.stat_result | OSError:
    try:
        return os.stat(target) if isinstance(target, str) else target.stat(follow_symlinks=follow)
    except OSError as exc:
        return exc


def read_contained(path: Path, root: Path, max_bytes: int | None = None) -> str | None:
    """The text of a contained regular file, or None when it is missing, unreadable, not
    UTF-8, outside `root` or larger than `max_bytes`."""
    if not contained_file(path, root):
        return None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1 if max_bytes is not None else -1)
    except OSError:
        return None
    if max_bytes is not None and len(raw) > max_bytes:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def daily_note(workspace: Path, day: str) -> Path:
    return workspace / NOTES_DIR / f"{day}.md"


def ensure_workspace(workspace: Path) -> Path:
    try:
        (workspace / NOTES_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"workspace {workspace} cannot be created: {exc}") from None
    return workspace


def _read(workspace: Path, name: str) -> str | None:
    # unreadable, linked-out or oversized files are reported by `memory status`, never crash a turn
    return read_contained(workspace / name, workspace, MAX_BOOTSTRAP_FILE_BYTES)


def bootstrap_files(workspace: Path, now: datetime, *, chat_type: str | None, new_session: bool,
                    max_chars: int, max_tokens: int | None = None,
                    visible: Callable[[str], str] | None = None) -> list[api.BootstrapFile]:
    """What a turn injects: MEMORY.md at the start of a DM session and today's and yesterday's
    daily notes, each within `max_chars` and all together within `max_tokens` (the share of the
    model's window, context/budget.py); the files on disk are never cut. MEMORY.md keeps its
    head, a daily note its newest lines (notes are appended at the end). `visible` reduces a
    file's text to what the reading conversation may see (other owners' notes, hidden state,
    stale items)."""
    names = [MEMORY_FILE] if chat_type == "direct" and new_session else []
    names += [f"{NOTES_DIR}/{day:%Y-%m-%d}.md" for day in (now - timedelta(days=1), now)]
    texts: list[tuple[str, str]] = []
    for name in names:
        text = _read(workspace, name)
        if text and visible is not None:
            text = visible(text)
        if text and text.strip():
            texts.append((name, text))
    shares = _shares([_capped_tokens(name, text, max_chars) for name, text in texts], max_tokens)
    return [_budgeted(name, text, max_chars, share) for (name, text), share in zip(texts, shares, strict=True)]


def _keeps_tail(name: str) -> bool:
    return name != MEMORY_FILE


def _capped_tokens(name: str, text: str, max_chars: int) -> int:
    """Tokens the file would take under the per-file cap alone."""
    return estimate_tokens(text[-max_chars:] if _keeps_tail(name) else text[:max_chars])


def _shares(wants: list[int], total: int | None) -> list[int | None]:
    """Split `total` tokens among the files: a file that needs less than an even share keeps
    all it needs and leaves the rest to the larger ones, so one big note never crowds out a
    small one and no budget is left unused while a file is cut."""
    if total is None:
        return [None] * len(wants)
    shares: list[int | None] = [0] * len(wants)
    left = max(0, total)
    order = sorted(range(len(wants)), key=lambda i: wants[i])
    for done, index in enumerate(order):
        shares[index] = min(wants[index], left // (len(order) - done))
        left -= shares[index]
    return shares


def _budgeted(name: str, text: str, max_chars: int, max_tokens: int | None) -> api.BootstrapFile:
    """`name` as a bootstrap file (path workspace-relative, text what is injected)."""
    # the length first: a runaway file is never scanned whole on every model call
    if len(text) <= max_chars and (max_tokens is None or estimate_tokens(text) <= max_tokens):
        return api.BootstrapFile(path=name, text=text, truncated=False, original_chars=len(text))
    tail = _keeps_tail(name)
    note = NOTE_CUT_NOTE if tail else TRUNCATION_NOTE
    # the note itself is inside the budget (its number has at most as many digits as the text's length)
    reserve = note.format(name=name, omitted=len(text))
    chars = max(0, max_chars - len(reserve))
    quarters = None if max_tokens is None else max(0, max_tokens - estimate_tokens(reserve)) * 4
    kept = _whole_lines(text, chars, quarters, from_end=tail)
    omitted = len(text) - len(kept)
    shown = note.format(name=name, omitted=omitted) + kept if tail else kept + note.format(name=name, omitted=omitted)
    return api.BootstrapFile(path=name, text=shown, truncated=True, original_chars=len(text))


def _whole_lines(text: str, max_chars: int, max_quarters: int | None, *, from_end: bool) -> str:
    """The longest run of whole lines from the start (or the end) of `text` within both limits
    (quarter-tokens, text/estimate.py). The first line that does not fit is cut inside only when
    whole lines would fill less than half the room (a single huge line is not a reason to show
    nothing)."""
    quarter_cap = max_quarters if max_quarters is not None else 4 * max_chars
    lines = text.split("\n")
    if from_end:
        lines.reverse()
    kept: list[str] = []
    chars = quarters = 0
    for line in lines:
        size, weight = len(line) + 1, weighted_length(line) + 1
        if chars + size > max_chars or quarters + weight > quarter_cap:
            if 2 * chars < max_chars and 2 * quarters < quarter_cap:
                kept.append(_part(line, max_chars - chars - 1, quarter_cap - quarters - 1, from_end=from_end))
            break
        kept.append(line)
        chars, quarters = chars + size, quarters + weight
    if from_end:
        kept.reverse()
    return "\n".join(kept)


def _part(line: str, max_chars: int, max_quarters: int, *, from_end: bool) -> str:
    """The longest end (or start) of `line` within both limits."""
    def piece(n: int) -> str:
        return (line[len(line) - n:] if n else "") if from_end else line[:n]
    lo, hi = 0, max(0, min(len(line), max_chars))
    while lo < hi:  # weighted length grows with the piece: search the longest that fits
        mid = (lo + hi + 1) // 2
        if weighted_length(piece(mid)) <= max_quarters:
            lo = mid
        else:
            hi = mid - 1
    return piece(lo)


def local_now(ms: int, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=tz)
