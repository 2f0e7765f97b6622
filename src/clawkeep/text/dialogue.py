"""Dialogue helpers shared by memory_search (transcript lines) and sessions_search (messages):
who said a line (`Name: …` labels, matched against the words of a question) and which calendar
periods a question names (`8 May 2023`, `May 2023`), so a search can prefer what was said by the
person it asks about, and around the day it asks about."""

from __future__ import annotations

import re
from datetime import date, timedelta
from functools import lru_cache

from ..patterns import lazy
from .analyzer import analyze_document

_SPEAKER = lazy(r"^(\w[\w .'\-]{0,38}?):\s")
_MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"])}
_ISO_DAY = lazy(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_CJK_DAY = lazy(r"(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日号일]")


@lru_cache(maxsize=32_768)
def speaker_labels(line: str) -> tuple[str, ...]:
    """The `Name:` labels a line starts with, outermost first (`User: Caroline: …` → User,
    Caroline); at most two. Cached: the same hit lines come back search after search."""
    out: list[str] = []
    rest = line
    for _ in range(2):
        m = _SPEAKER.match(rest)
        if not m:
            break
        out.append(m.group(1))
        rest = rest[m.end():]
    return tuple(out)


@lru_cache(maxsize=4096)
def _label_tokens(label: str) -> frozenset[str]:
    return frozenset(analyze_document(label).split())


def names_speaker(labels: tuple[str, ...] | list[str], query_words: frozenset[str]) -> bool:
    """Whether the question names one of the line's speakers (every word of a label is among
    the question's analysed words: "Caroline" in "What did Caroline's mom say?")."""
    return any((tokens := _label_tokens(label)) and tokens <= query_words for label in labels)


def query_words(text: str) -> frozenset[str]:
    return frozenset(analyze_document(text).split())


_WORD = lazy(r"[A-Za-z][A-Za-z'\u2019-]*")
_SEVERAL = lazy(r"\bhow many\b|\bboth\b|^in what ways\b", re.IGNORECASE)
# words ending in s that are no plurals (a "what … has/does" question holds them too)
_NOT_PLURAL = frozenset("does has was is this his its yes always sometimes various perhaps less unless across "
                        "whereas plus thus".split())


def asks_for_several(text: str) -> bool:
    """Whether an English question asks for several things ("What pets does Nate have?", "How
    many…", "…both…"): a plural noun (a word in -s, not its first word, not a name, not -ss/-us/
    -is/'s), or one of those phrases. Such answers are spread over many turns, one thing each."""
    if _SEVERAL.search(text):
        return True
    for i, word in enumerate(_WORD.findall(text)):
        low = word.lower()
        if i and not word[0].isupper() and len(low) >= 4 and low not in _NOT_PLURAL \
                and low.endswith("s") and not low.endswith(("ss", "us", "is", "'s", "\u2019s")):
            return True
    return False


def day_windows(periods: list[tuple[date, date]], before: int, after: int) -> list[tuple[str, str]]:
    """ISO day ranges around the named periods: what was said up to `after` days later still
    tells about a day ("yesterday I…", "last week…"), up to `before` days earlier plans it."""
    return [((a - timedelta(days=before)).isoformat(), (b + timedelta(days=after)).isoformat()) for a, b in periods]


def _exact(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


_MONTH_NAMES = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
# 8 May 2023, 8th of May, 2023, May 8, 2023, May 8th 2023: a day with its year
# 8 May, 8th of May, May 8th: groups 1-4 (day, month | month, day), read by `_en_day_month`
_EN_DAY_MONTH = (rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_NAMES}|{_MONTH_NAMES}\s+(\d{{1,2}})"
                 r"(?:st|nd|rd|th)?)\b")
_EN_DATED_DAY = lazy(_EN_DAY_MONTH + r",?\s+(\d{4})\b", re.IGNORECASE)
_EN_DATED_MONTH = lazy(rf"\b{_MONTH_NAMES},?\s+(?:of\s+)?(\d{{4}})\b", re.IGNORECASE)
_ISO_MONTH = lazy(r"\b(\d{4})-(\d{2})\b(?!-\d)")
_CJK_YEAR_MONTH = lazy(r"(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월](?!\s*\d)")


def named_periods(text: str) -> list[tuple[date, date]]:
    """The calendar periods a text names with their year: a day (`8 May 2023`, `May 8, 2023`,
    `2023-05-08`, `2023年5月8日`) as (day, day), a month (`May 2023`, `2023-05`, `2023年5月`) as
    (first, last day). Relative words ("last week") name no period here: a question's "last
    week" is the asker's, not the stored conversation's."""
    found: list[tuple[date, date]] = []
    rest = text
    for pattern, parts in ((_EN_DATED_DAY, _en_day_parts), (_ISO_DAY, _iso_day_parts), (_CJK_DAY, _iso_day_parts)):
        for m in pattern.finditer(rest):
            day = _exact(*parts(m))
            if day is not None:
                found.append((day, day))
        rest = pattern.sub(" ", rest)
    for pattern, parts in ((_EN_DATED_MONTH, _en_month_parts), (_ISO_MONTH, _num_month_parts),
                           (_CJK_YEAR_MONTH, _num_month_parts)):
        for m in pattern.finditer(rest):
            year, month = parts(m)
            if 1 <= month <= 12:
                first = date(year, month, 1)
                following = date(year + month // 12, month % 12 + 1, 1)
                found.append((first, following - timedelta(days=1)))
    return found


# 2 March, March 2nd, 3月2日, 3월 2일: a day without its year (a year after it is a dated day)
_EN_YEARLESS_DAY = lazy(_EN_DAY_MONTH + r"(?!,?\s+\d{4})", re.IGNORECASE)
_CJK_YEARLESS_DAY = lazy(r"(?<![\d年년]\s)(?<![\d年년])(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日号일]")


def yearless_days(text: str, today: date) -> list[tuple[date, date]]:
    """The days a text names without a year, each as the latest such day up to `today` (a
    note-taker's "on 2 March" is the last 2 March). Days with a year are `named_periods`'."""
    found = [_en_day_month(m) for m in _EN_YEARLESS_DAY.finditer(text)]
    found += [(int(m.group(1)), int(m.group(2))) for m in _CJK_YEARLESS_DAY.finditer(text)]
    out = []
    for month, day in found:
        for year in range(today.year, today.year - 5, -1):  # 29 February: up to the last leap year
            when = _exact(year, month, day)
            if when is not None and when <= today:
                out.append((when, when))
                break
    return out


def _en_day_month(m: re.Match[str]) -> tuple[int, int]:
    return _MONTHS[(m.group(2) or m.group(3)).lower()[:3]], int(m.group(1) or m.group(4))


def _en_day_parts(m: re.Match[str]) -> tuple[int, int, int]:
    return int(m.group(5)), *_en_day_month(m)


def _iso_day_parts(m: re.Match[str]) -> tuple[int, int, int]:
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _en_month_parts(m: re.Match[str]) -> tuple[int, int]:
    return int(m.group(2)), _MONTHS[m.group(1).lower()[:3]]


def _num_month_parts(m: re.Match[str]) -> tuple[int, int]:
    return int(m.group(1)), int(m.group(2))
