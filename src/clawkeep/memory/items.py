"""Remembered items in the Markdown files (M1, M7, M8, M9).

An item is one bullet line. Items written by clawkeep carry their state in an HTML comment
that Markdown viewers hide:

    - I prefer TypeScript <!-- ck:id=m-7f3a2c1b; at=2026-11-30; supersedes=m-1b2c3d4e -->
    - I prefer JavaScript <!-- ck:id=m-1b2c3d4e; at=2026-10-02; supersededBy=m-7f3a2c1b -->
    - Next Tuesday I fly to Shanghai <!-- ck:id=m-0a1b2c3d; at=2026-11-30; expires=2026-12-08 -->

Hand-written bullets are items too; their id is a hash of path and text (`h-…`). Nothing is
deleted silently: a contradicted fact is kept and linked (superseded), an expired one is
down-weighted and only removed by the sweep after a grace period, into
`memory/.archive/expired.md`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import quote, unquote

from .. import api
from ..errors import ConflictError, InputError, NotFoundError
from ..patterns import lazy
from .documents import for_workspace, memory_files, read_lines, write_lines  # noqa: F401 - re-exported
from .owners import UNKNOWN_OWNER, visible_to
from .workspace import NOTES_DIR

# The write filters (filters.py) and the plan reader (timeparse.py) compile a few hundred
# patterns: they load with the first write, not with every search that reads item states.

_MARKER = lazy(r"\s*<!--\s*ck:(?P<body>[^>]*?)\s*-->\s*$")
_MARKER_START = lazy(r"\s*<!--\s*ck:")
# Values are percent-encoded where they could end or split the comment or the list, so a
# sender id such as `x-->` or `a; session=b` can never rewrite a note's attributes.
_MARKER_UNSAFE = set("%;=<>") | {"\n", "\r", "\t"}
_BULLET = lazy(r"^(?P<indent>\s*)[-*+]\s+(?:\[[ xX]\]\s+)?(?P<text>.+?)\s*$")
EXPIRY_GRACE_DAYS = 30
SUPERSEDED_WEIGHT = 0.3
EXPIRED_WEIGHT = 0.5
ARCHIVE = f"{NOTES_DIR}/.archive/expired.md"


@dataclass
class Item:
    id: str
    path: str  # workspace-relative
    line: int  # 1-based
    text: str
    attrs: dict[str, str] = field(default_factory=dict)

    @property
    def superseded_by(self) -> str | None:
        return self.attrs.get("supersededBy")

    @property
    def expires(self) -> str | None:
        return self.attrs.get("expires")

    def status(self, today: date) -> str:
        if self.attrs.get("forgotten"):  # forgotten by a correction (memory_forget): retired, kept as a trail
            return "forgotten"
        if self.superseded_by:
            return "superseded"
        if self.expires and self.expires < today.isoformat():
            return "expired"
        return "active"

    def shape(self, today: date) -> api.MemoryItem:
        """The item as the memory tools return it: its state attributes ride along."""
        return api.MemoryItem(id=self.id, path=self.path, line=self.line, text=self.text, status=self.status(today),
                              **{k: v for k, v in self.attrs.items() if k != "id"})


def parse_marker(line: str) -> tuple[str, dict[str, str]]:
    """(line without marker, attributes). A marker that is present but cannot be read (cut,
    injected, hand-damaged) gives an unknown owner: such a note is private to nobody."""
    if "<!--" not in line:  # most lines carry no marker; both patterns need this
        return line, {}
    match = _MARKER.search(line)
    if not match:
        broken = _MARKER_START.search(line)
        if broken:
            return line[: broken.start()], {"session": UNKNOWN_OWNER}
        return line, {}
    attrs = {}
    for part in match["body"].split(";"):
        key, _, value = part.strip().partition("=")
        if key:
            attrs[unquote(key.strip())] = unquote(value.strip())
    return line[: match.start()], attrs


def _encode(value: str) -> str:
    return "".join(quote(ch, safe="") if ch in _MARKER_UNSAFE or ord(ch) < 32 else ch for ch in str(value))


def render_marker(attrs: dict[str, str]) -> str:
    return " <!-- ck:" + "; ".join(f"{_encode(k)}={_encode(v)}" for k, v in attrs.items()) + " -->"


def neutralise(text: str) -> str:
    """Item text as one line that cannot open or close an HTML comment (no forged marker)."""
    flat = " ".join(text.split())
    return flat.replace("<!--", "<!- -").replace("-->", "- ->")


def parse_items(path: str, text: str) -> list[Item]:
    items = []
    for number, raw in enumerate(text.splitlines(), start=1):
        content, attrs = parse_marker(raw)
        bullet = _BULLET.match(content)
        if not bullet:
            continue
        body = bullet["text"]
        item_id = attrs.get("id") or "h-" + hashlib.sha1(f"{path}\n{body}".encode()).hexdigest()[:8]
        items.append(Item(item_id, path, number, body, attrs))
    return items


@dataclass(frozen=True)
class LineState:
    weight: float
    expires: str | None
    session: str | None  # the conversation a note came from (flush notes, session excerpts)


_SESSION_HEADER = lazy(r"^- Session key: (\S+)\s*$")
_EXCERPT_TITLE = lazy(r"^# Session: \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})? UTC\s*$")


def is_session_excerpt(lines: list[str]) -> bool:
    """A reset excerpt written by the session-memory hook (C3): "# Session: … UTC", then
    "- Session key: …", "- Session id: …", "- Reason: …". It is searchable memory, but an
    excerpt of a conversation, not remembered items: its header bullets are not facts."""
    return bool(lines) and _EXCERPT_TITLE.match(lines[0]) is not None and any(
        _SESSION_HEADER.match(line) for line in lines[1:12])


def _file_owner(line: str) -> str | None:
    """The session a whole file belongs to, from one of its first lines: a session excerpt's
    "- Session key: KEY", or an owner line `<!-- ck:session=KEY -->` (a store file's, written by
    the engine: memory/store_files.py)."""
    if (m := _SESSION_HEADER.match(line)) is not None:
        return m[1]
    if line.startswith("<!--"):
        content, attrs = parse_marker(line)
        if not content.strip() and set(attrs) == {"session"}:
            return attrs["session"]
    return None


def line_states(lines: list[str]) -> list[LineState]:
    """Index-time state of every line: weight, expiry and originating session."""
    header = next((owner for line in lines[:12] if (owner := _file_owner(line))), None)
    states = []
    for line in lines:
        _, attrs = parse_marker(line)
        weight = SUPERSEDED_WEIGHT if attrs.get("supersededBy") else 1.0
        expires = None if attrs.get("supersededBy") else attrs.get("expires")
        states.append(LineState(weight, expires, attrs.get("session") or header))
    return states


def visible_text(text: str, reader_key: str | None, *, across: bool, today: date) -> str:
    """What a conversation may be shown of a memory file: lines owned by conversations it may
    not see are dropped (`owners.visible_to`), as are superseded and expired items, and the
    hidden state comments are removed."""
    return _visible_text(text, reader_key, across, today)


@functools.lru_cache(maxsize=64)
def _visible_text(text: str, reader_key: str | None, across: bool, today: date) -> str:
    # Every model call of every turn injects MEMORY.md and two daily notes; they rarely change
    # between turns, so the same (file text, reader, day) is reduced once, not per call.
    lines = text.splitlines()
    kept = []
    for line, state in zip(lines, line_states(lines), strict=True):
        if not visible_to(state.session, reader_key, across=across):
            continue
        content, attrs = parse_marker(line)
        if attrs.get("supersededBy") or (attrs.get("expires") and attrs["expires"] < today.isoformat()):
            continue
        kept.append(content.rstrip() if attrs else line)
    return "\n".join(kept)


def lines_for_reader(lines: list[str], reader_key: str, *, across: bool, today: date) -> list[str]:
    """A memory file's lines as a conversation's tools may read them, numbered as on disk (so a
    search hit's startLine/endLine still point at the right lines): a line it may not see is
    blank, state comments are removed, and a replaced or past item says so."""
    shown = []
    for line, state in zip(lines, line_states(lines), strict=True):
        if not visible_to(state.session, reader_key, across=across):
            shown.append("")
            continue
        content, attrs = parse_marker(line)
        content = content.rstrip() if attrs else line
        if attrs.get("supersededBy"):
            content += " (superseded by a newer item)"
        elif attrs.get("expires") and attrs["expires"] < today.isoformat():
            content += f" (stale: its date {attrs['expires']} has passed)"
        shown.append(content)
    return shown


# --- write filters (M7) ---------------------------------------------------------------
def filter_reason(text: str, *, allow_secrets: bool = False) -> str | None:
    """Why `text` must not become long-term memory (None = it may): a secret, a one-off
    operational instruction or venting without a durable fact (`filters.classify`)."""
    from . import filters  # deferred: many patterns, for writes only (see the note on imports above)

    return filters.classify(text, allow_secrets=allow_secrets).reason


# --- supersession (M8): see facts.py ----------------------------------------------------------
_REMEMBER_PREFIX = lazy(
    r"^\s*(please\s+)?(remember|note|don't forget|keep in mind)"
    r"(\s+that|\s+(?:this|these|the\s+following)\s*(?=[:：]))?[:：,]?\s+"
    r"|^\s*(?:请|麻烦)?(?:你)?(?:帮我)?(?:记住|记得|记一下|记下|别忘了)[:：，,\s]*(?:(?:这个|这些|以下|下面的?)[:：]\s*)?"
    r"|^\s*(?:覚えておいて|覚えといて|覚えて|忘れないで)(?:ください|下さい|ね|ほしい)?[、，,:：\s]+"
    r"|^\s*(?:기억해\s?(?:줘|주세요|둬|두세요)?|잊지\s?마(?:세요)?)[,，:\s]+",
    re.IGNORECASE,
)


def strip_request(text: str) -> str:
    """"Remember that I prefer TypeScript" → "I prefer TypeScript"."""
    stripped = _REMEMBER_PREFIX.sub("", text.strip(), count=1).strip()
    return (stripped[:1].upper() + stripped[1:]) if stripped and stripped[0].isascii() else stripped


# A chat message that asks to be remembered starts with one of these (no bare "note": "note that
# the build is red" is an observation, not a request) and is not itself a question.
_CHAT_REQUEST = lazy(
    r"^\s*(please\s+)?(remember|don't forget|do not forget|keep in mind)(\s+that)?\b"
    r"|^\s*(?:请|麻烦)?(?:你)?(?:帮我)?(?:记住|记一下|记下|别忘了)"
    r"|^\s*(?:覚えておいて|覚えといて|覚えて|忘れないで)"
    r"|^\s*(?:기억해\s?(?:줘|주세요|둬|두세요)|잊지\s?마)",
    re.IGNORECASE,
)
_QUESTION_END = lazy(r"(?:[?？]|吗|嗎|か|까|니)\s*[.。!！]?\s*$")
_REMINISCING = lazy(r"^\s*(please\s+)?remember\s+(when|how|what|who|where|why|if|whether|the time)\b",
                          re.IGNORECASE)


def chat_memory_request(text: str) -> str | None:
    """The fact a chat message asks to keep ("Remember that I prefer TypeScript" → "I prefer
    TypeScript"), or None when the message is not such a request (or is a question:
    "do you remember …?")."""
    if not _CHAT_REQUEST.match(text or "") or _QUESTION_END.search(text) or _REMINISCING.match(text) \
            or "\n" in text.strip():
        return None
    fact = strip_request(text)
    return fact if fact and fact != text.strip() else None


def new_item_id() -> str:
    return "m-" + uuid.uuid4().hex[:8]


def is_time_bound(text: str, today: date) -> date | None:
    """The expiry of a time-bound fact: the day of a future plan. Dated past events ("I was born
    on 1990-03-12") and recurring dates are durable: None (`timeparse.plan_day`)."""
    from .timeparse import plan_day  # deferred: the plan reader, for writes only (see the note above)

    return plan_day(text, today)


# --- file edits (every write goes through the workspace's documents: memory/documents.py) ----
def item_line(text: str, attrs: dict[str, str]) -> str:
    """The bullet line of a new item: its text (one line, no forged comment) and its state marker."""
    return f"- {neutralise(text)}{render_marker(attrs)}"


def append_item(workspace: Path, relpath: str, text: str, attrs: dict[str, str], heading: str | None) -> Item:
    def change(lines: list[str]) -> list[str]:
        if not lines and heading:
            lines = [heading, ""]
        return [*lines, item_line(text, attrs)]

    lines = for_workspace(workspace).update(relpath, change)
    return Item(attrs["id"], relpath, len(lines), neutralise(text), attrs)


def line_with_attrs(line: str, item_id: str, **updates: str) -> str:
    """`line` (an item's bullet) with its marker's attributes updated (the id kept first)."""
    content, attrs = parse_marker(line)
    return content.rstrip() + render_marker({"id": item_id, **attrs, **updates})


def _locate(lines: list[str], item: Item) -> int:
    """The index of `item`'s line now, found by its id (other writers may have moved it; an id
    without a marker is the hash of its text, so an edited one is gone); -1 when it is gone."""
    for found in parse_items(item.path, "\n".join(lines)):
        if found.id == item.id:
            return found.line - 1
    return -1


def _changed_meanwhile(item: Item) -> ConflictError:
    return ConflictError(f"memory item {item.id} was changed or removed by another writer meanwhile; nothing was "
                         "written. List the items again and retry")


class _Superseded(Exception):
    """Inside an edit's `change`: the item is not the text the editor started from."""


def set_attr(workspace: Path, item: Item, **updates: str) -> None:
    def change(lines: list[str]) -> list[str] | None:
        n = _locate(lines, item)
        if n < 0:
            return None  # gone meanwhile: nothing to mark
        lines[n] = line_with_attrs(lines[n], item.id, **updates)
        return lines

    for_workspace(workspace).update(item.path, change)


def clear_attrs(workspace: Path, item: Item, *names: str) -> None:
    """Remove the marker attributes `names` from `item`'s line (an undone correction)."""
    def change(lines: list[str]) -> list[str] | None:
        n = _locate(lines, item)
        if n < 0:
            return None
        content, attrs = parse_marker(lines[n])
        kept = {k: v for k, v in attrs.items() if k not in names}
        lines[n] = content.rstrip() + render_marker({"id": item.id, **kept})
        return lines

    for_workspace(workspace).update(item.path, change)


STORE_ROOT = "memory/store"  # adapters' key/value files (memory/store_files.py): searched, but not remembered items


def all_items(workspace: Path, skipped: dict[str, str] | None = None) -> list[Item]:
    """Every item of every memory file. A file that cannot be read as UTF-8 text is skipped (and
    named in `skipped` with the reason): one bad note never blocks listing, editing or remembering.
    Session-memory excerpts hold no items (`is_session_excerpt`)."""
    items: list[Item] = []
    for rel in memory_files(workspace):
        try:
            lines = read_lines(workspace / rel)
        except InputError as exc:
            if skipped is not None:
                skipped[rel] = str(exc)
            continue
        if is_session_excerpt(lines) or rel.startswith(STORE_ROOT + "/"):
            continue
        items += parse_items(rel, "\n".join(lines))
    return items


def find_item(workspace: Path, item_id: str) -> Item:
    for item in all_items(workspace):
        if item.id == item_id:
            return item
    raise NotFoundError(f"memory item {item_id!r} not found; `clawkeep memory items` lists the ids")


def edit_item(workspace: Path, item_id: str, text: str, base_text: str | None = None) -> Item:
    """Replace an item's text. `base_text` is the text the editor started from (None: the text
    found now). When another writer changed the item first — before this call, or between reading
    and the compare-and-set — nothing is overwritten: the edit is refused (ConflictError) and, in
    PostgreSQL mode, this version of the file is kept as a conflict copy and the conflict reported
    on every instance (SPEC D4)."""
    if not text.strip() or "\n" in text or "\r" in text:
        what = "is empty" if not text.strip() else "has a line break"
        raise InputError(f"text {what}: a memory item's new text must be one non-empty line "
                         "(several facts: edit one item each, or `memory remember` the others)")
    item = find_item(workspace, item_id)
    text = neutralise(text)
    docs = for_workspace(workspace)
    base_lines, base_version = read_lines(workspace / item.path), docs.version_of(item.path)
    expected = {item.text} if base_text is None else {base_text.strip(), neutralise(base_text).strip()}
    done: dict[str, dict[str, str]] = {}

    def edited(lines: list[str], n: int) -> list[str]:
        content, attrs = parse_marker(lines[n])
        bullet = _BULLET.match(content)
        indent = bullet["indent"] if bullet else ""
        attrs = {**attrs, "edited": date.today().isoformat()} if attrs else {}
        done["attrs"] = attrs
        return [*lines[:n], f"{indent}- {text}" + (render_marker(attrs) if attrs else ""), *lines[n + 1:]]

    def change(lines: list[str]) -> list[str] | None:
        n = _locate(lines, item)
        now = _BULLET.match(parse_marker(lines[n])[0])["text"] if n >= 0 else None
        if now == text:  # the other writer made the same edit: nothing to write, nothing lost
            done["attrs"] = parse_marker(lines[n])[1]
            return None
        if now not in expected:
            raise _Superseded  # someone else edited this very item: never overwrite it
        return edited(lines, n)

    try:
        docs.update(item.path, change)
    except _Superseded:
        n = _locate(base_lines, item)  # this instance's version of the file, with the edit
        ours = "\n".join(edited(base_lines, n)) + "\n" if n >= 0 else None
        kept = docs.keep_conflict(item.path, ours, base_version) if ours is not None else None
        if kept is None:
            raise _changed_meanwhile(item) from None
        raise ConflictError(f"memory item {item.id} was changed by another writer meanwhile; your edit was not "
                            f"applied to {item.path} but kept as {kept}, and the conflict is listed in memory "
                            "status") from None
    attrs = done["attrs"]
    return Item(attrs.get("id", item.id), item.path, item.line, text, attrs)


def delete_item(workspace: Path, item_id: str) -> Item:
    item = find_item(workspace, item_id)

    def change(lines: list[str]) -> list[str]:
        n = _locate(lines, item)
        if n < 0:
            raise _changed_meanwhile(item)
        del lines[n]
        return lines

    for_workspace(workspace).update(item.path, change)
    return item


def sweep_expired(workspace: Path, today: date, grace_days: int = EXPIRY_GRACE_DAYS) -> list[Item]:
    """Move items expired more than `grace_days` ago into the archive file (archive first: a
    crash in between leaves an item in both places, never in none)."""
    cutoff = (today - timedelta(days=grace_days)).isoformat()
    removed = [i for i in all_items(workspace) if i.expires and i.expires < cutoff]
    if not removed:
        return removed
    by_file: dict[str, list[Item]] = {}
    for item in removed:
        by_file.setdefault(item.path, []).append(item)
    docs = for_workspace(workspace)
    for rel, items in by_file.items():
        moved: list[str] = []

        def take(lines: list[str], items: list[Item] = items, moved: list[str] = moved) -> list[str]:
            moved.clear()
            for n in sorted((k for k in (_locate(lines, i) for i in items) if k >= 0), reverse=True):
                moved.insert(0, lines[n])
                del lines[n]
            return lines

        current = read_lines(workspace / rel)
        take(list(current))
        lines_to_archive = [f"{line} <!-- from {rel} on {today.isoformat()} -->" for line in moved]
        docs.update(ARCHIVE, lambda lines, add=lines_to_archive: [
            *(lines or ["# Expired memory items (moved here by the sweep)", ""]), *add])
        docs.update(rel, take)
    return removed
