"""Lane-2 evidence (A3): what memory_search found, made fit to answer a question with.

`settle()` runs between gathering and summarising, with or without a model:

- Questions are not answers. A sentence that is a question or a recall request
  (`detector.questions.is_question`: the user's earlier "我下周有什么安排", "what are my plans?")
  is removed; evidence left with nothing else is dropped. Otherwise the same question asked in
  another thread shares every word with the new one and is "recalled" instead of the fact.
- Superseded items (a `supersededBy` marker) are removed: a newer fact replaced them.
- Past plans are dated. A remembered item whose `expires` day has passed, or a plan said in a
  transcript (or a dated note) whose day (`timeparse.plan_day`, counted from the day it was
  said) has passed, is marked `(stale: planned for 2026-11-20, now past)` — the absolute day,
  since "next Wednesday" means nothing a month later. When the evidence also holds a fact said
  later on the same subject (`facts.conflicts`, or it holds every word the stale line shares
  with the question), the stale line is removed instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path

from ..memory import facts, items
from ..memory.timeparse import plan_day
from ..memory.workspace import contained_file
from ..patterns import lazy
from ..text import stopwords
from ..text.analyzer import analyze_document
from .detector.questions import is_question


@dataclass(frozen=True)
class ItemState:
    """The dates of a remembered item, from its hidden `ck:` marker."""

    at: str | None
    expires: str | None
    superseded: bool


@dataclass
class Evidence:
    text: str
    score: float
    origin: str  # "memory" | "transcript"
    when: str | None = None  # the day a transcript message was said (shown)
    citation: str | None = None
    items: dict[str, ItemState] | None = None  # memory windows: line key → the state of that line's item
    said: str | None = None  # when its lines were said: ISO day or time (a message, a dated note)
    said_before: bool = False  # ... strictly before `said` (a session excerpt: its reset time)
    speaker: str = "user"  # a transcript message's role: who said it, as the summary tells it


STALE = lazy(r"\s*\(stale: planned for (\d{4}-\d{2}-\d{2}), now past\)$")
# ASCII punctuation ends a sentence only before whitespace ("Python 3.12", "example.com" stay whole); CJK needs none
_SENTENCE_END = lazy(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
# A transcript window's date line (`sessions_source.DATE_LINE`, "[2026-11-10 09:00 UTC]") or its chunk day.
_LABEL = lazy(r"^\[(\d{4}-\d{2}-\d{2})(?: (\d{2}:\d{2}))?(?: UTC)?\]$")
_FILE_DAY = lazy(r"(?:^|/)(\d{4}-\d{2}-\d{2})[^/]*\.md$")
_EXCERPT_TITLE = lazy(r"^# Session: (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})(?::\d{2})? UTC\s*$")
_BULLET = lazy(r"^[\s>*+-]+")
_ELLIPSIS = "\u2026"
_STOP = stopwords.ENGLISH | stopwords.CJK


def stale_marker(day: str) -> str:
    return f"(stale: planned for {day}, now past)"


def line_key(line: str) -> str:
    """A line's identity between a file and a search window: case, spacing and list markers ignored."""
    return _BULLET.sub("", " ".join(line.split()).casefold())


def _words(text: str) -> set[str]:
    return {t for t in analyze_document(text).split() if len(t) > 1 and t not in _STOP}


# --- what a memory file says about when its lines were written ------------------------------------
@dataclass(frozen=True)
class _FileDates:
    marked: dict[int, tuple[str, ItemState]]  # line number → (line key, item state) of marked items
    said: str | None  # a session excerpt's reset time, or the day in a dated note's name
    before: bool  # a session excerpt: every line was said before `said`


_FILES: dict[str, tuple[tuple[int, ...], _FileDates]] = {}
_FILES_MAX = 64


def memory_evidence(workspace: Path, path: str, start: int, end: int, text: str, score: float,
                    citation: str | None) -> Evidence:
    """Evidence for a memory_search window of a workspace file, with the states of the items on
    its lines (from their markers) and when its lines were written. The file's reading is cached
    while its (inode, size, mtime) are unchanged."""
    dates = _file_dates(workspace, path)
    if dates is None:
        day = _FILE_DAY.search(path or "")
        return Evidence(text, score, "memory", None, citation, None, day[1] if day else None)
    states = {key: state for number, (key, state) in dates.marked.items() if start <= number <= end}
    return Evidence(text, score, "memory", None, citation, states, dates.said, dates.before)


def _file_dates(workspace: Path, path: str) -> _FileDates | None:
    full = workspace / path
    if not path or path.startswith(("extra:", "sessions/")) or not contained_file(full, workspace):
        return None
    try:
        info = full.stat()
    except OSError:
        return None
    signature = (info.st_ino, info.st_size, info.st_mtime_ns)
    cached = _FILES.get(str(full))
    if cached is not None and cached[0] == signature:
        return cached[1]
    try:
        lines = full.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    marked: dict[int, tuple[str, ItemState]] = {}
    for number, line in enumerate(lines, start=1):
        if "ck:" not in line:
            continue
        content, attrs = items.parse_marker(line)
        if attrs.get("expires") or attrs.get("supersededBy") or attrs.get("at"):
            marked[number] = (line_key(content), ItemState(attrs.get("at"), attrs.get("expires"),
                                                           bool(attrs.get("supersededBy"))))
    title = _EXCERPT_TITLE.match(lines[0]) if lines and items.is_session_excerpt(lines) else None
    day = _FILE_DAY.search(path)
    if title:
        dates = _FileDates(marked, f"{title[1]}T{title[2]}", True)
    else:
        dates = _FileDates(marked, day[1] if day else None, False)
    if len(_FILES) >= _FILES_MAX:
        _FILES.clear()
    _FILES[str(full)] = (signature, dates)
    return dates


# --- questions --------------------------------------------------------------------------------
_LEADING = lazy(r"^(\s*(?:[-*+>]\s+)?(?:[^\s:：]{1,24}[:：]\s*)?)")


def without_questions(line: str) -> str:
    """The line minus its question sentences ("" when nothing else is left); a leading list
    marker or speaker label ("User: ") stays with what is kept."""
    lead = _LEADING.match(line)[1]
    body = line[len(lead):]
    sentences = [s for s in _SENTENCE_END.split(body) if s.strip()]
    kept = [s for s in sentences if not is_question(s)]
    if len(kept) == len(sentences):
        return line
    if not kept:
        return ""
    joiner = " " if all(s.isascii() for s in kept) else ""
    return lead + joiner.join(s.strip() for s in kept)


def sentences(text: str) -> Iterator[tuple[str, str | None]]:
    """(sentence, stale day or None) of every statement in an evidence text: questions are skipped,
    and every sentence of a line marked stale carries that line's day."""
    for line in text.split("\n"):
        marker = STALE.search(line)
        body = line[: marker.start()] if marker else line
        for sentence in _SENTENCE_END.split(body):
            sentence = sentence.strip()
            if sentence and sentence != _ELLIPSIS and not _LABEL.match(sentence) and not is_question(sentence):
                yield sentence, marker[1] if marker else None


# --- settling ---------------------------------------------------------------------------------
@dataclass
class _Line:
    text: str
    said: str | None  # ISO day or time it was said or written
    before: bool = False  # said strictly before `said`
    planned: str | None = None  # a past plan's day: the line is stale
    dropped: bool = False


def settle(evidence: list[Evidence], query: str, today: date) -> list[Evidence]:
    """Questions out, superseded items out, past plans marked stale or, when a later fact on the
    same subject is in the evidence, out (see the module doc)."""
    lines_of: list[list[str | _Line]] = []
    found: list[_Line] = []
    for ev in evidence:
        said, before = ev.said or ev.when, ev.said_before
        out: list[str | _Line] = []
        for raw in ev.text.split("\n"):
            label = _LABEL.match(raw.strip())
            if label:  # a transcript window's date line: the lines under it were said then
                said, before = label[1] + (f"T{label[2]}" if label[2] else ""), False
                out.append(raw)
                continue
            if not raw.strip() or raw.strip() == _ELLIPSIS:
                out.append(raw)
                continue
            text = without_questions(raw)
            if not text:
                continue
            state = (ev.items or {}).get(line_key(raw)) or (ev.items or {}).get(line_key(text))
            if state is not None and state.superseded:
                continue
            line = _Line(text, said, before)
            if state is not None and state.at:
                line.said, line.before = state.at, False
            if state is not None:
                if state.expires and state.expires < today.isoformat():
                    line.planned = state.expires
            elif line.said:
                line.planned = _past_plan(text, line.said[:10], today)
            out.append(line)
            found.append(line)
        lines_of.append(out)
    for stale in (f for f in found if f.planned):
        stale.dropped = any(_newer_on_same_subject(other, stale, query) for other in found if other is not stale)
    settled = []
    for ev, out in zip(evidence, lines_of, strict=True):
        kept = [x for x in out if not (isinstance(x, _Line) and x.dropped)]
        if not any(isinstance(x, _Line) for x in kept):
            continue
        settled.append(replace(ev, text="\n".join(_render(x) for x in _trim(kept))))
    return settled


def _past_plan(text: str, said: str, today: date) -> str | None:
    """The day of a plan said on `said`, when that day has passed."""
    day = _plan_day(text, said)
    return day if day is not None and day < today.isoformat() else None


@lru_cache(maxsize=8192)  # the same transcript lines come back turn after turn
def _plan_day(text: str, said: str) -> str | None:
    try:
        day = plan_day(text, date.fromisoformat(said))
    except ValueError:
        return None
    return day.isoformat() if day is not None else None


def _render(line: str | _Line) -> str:
    if isinstance(line, str):
        return line
    return f"{line.text} {stale_marker(line.planned)}" if line.planned else line.text


def _trim(lines: list[str | _Line]) -> list[str | _Line]:
    """No date line without a line under it, no gap at either end or twice in a row."""
    out: list[str | _Line] = []
    for i, x in enumerate(lines):
        if isinstance(x, str) and _LABEL.match(x.strip()):
            following = next((y for y in lines[i + 1:] if not (isinstance(y, str) and y.strip() == _ELLIPSIS)), None)
            if not isinstance(following, _Line):
                continue
        if isinstance(x, str) and x.strip() == _ELLIPSIS and (not out or (isinstance(out[-1], str)
                                                                            and out[-1].strip() == _ELLIPSIS)):
            continue
        out.append(x)
    while out and isinstance(out[-1], str) and out[-1].strip() == _ELLIPSIS:
        out.pop()
    return out


def _later(a: _Line, b: _Line) -> bool:
    """Whether `a` was said after `b`. Days compare first; on the same day only times do (a line
    of a session excerpt was said before the excerpt's reset time, so a message at that time is
    later); a bare day on the day of a time tells nothing."""
    if not a.said or not b.said:
        return False
    if a.said[:10] != b.said[:10]:
        return a.said[:10] > b.said[:10]
    a_time, b_time = a.said[11:16], b.said[11:16]
    if not a_time or not b_time:
        return False
    return a_time > b_time or (a_time == b_time and b.before and not a.before)


def _newer_on_same_subject(other: _Line, stale: _Line, query: str) -> bool:
    """`other` was said after `stale` and is about the same thing: it gives the same subject
    another value, or it holds every word the stale line shares with the question."""
    if not _later(other, stale):
        return False
    if facts.conflicts(other.text, stale.text):
        return True
    shared = _words(stale.text) & _words(query)
    return bool(shared) and shared <= _words(other.text)
