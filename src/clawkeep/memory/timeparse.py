"""Find the day a time-bound statement is about ("next Tuesday I fly to Shanghai", "下周二去上海").

Used to give remembered facts an expiry (M8) and to tell time-bound notes from durable ones.
Returns None when the text names no day. English, Chinese, Japanese and Korean.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_EN_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_ZH_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_JA_DAYS = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
_KO_DAYS = {"월": 0, "화": 1, "수": 2, "목": 3, "금": 4, "토": 5, "일": 6}
_MONTHS = {
    m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
_ZH_NUM = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_EN_MONTH_DAY = re.compile(
    r"\b(?:on\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b"
)
_EN_IN = re.compile(r"\bin\s+(\d{1,3}|a|an|one|two|three)\s+(day|week)s?\b")
_EN_WEEKDAY = re.compile(r"\b(next|this|on|coming)?\s*(" + "|".join(_EN_DAYS) + r")\b")
_ZH_MONTH_DAY = re.compile(r"(\d{1,2})月(\d{1,2})[日号]")
_ZH_WEEKDAY = re.compile(r"(下下|下个?|这个?|本|上个?)?(?:周|星期|礼拜)([一二三四五六日天])")
_ZH_IN = re.compile(r"([一二两三四五六七八九十\d]{1,3})(天|周|个?星期|个?礼拜)[之以]?后")
_JA_WEEKDAY = re.compile(r"(来週|今週|再来週)の?([月火水木金土日])曜")
_KO_WEEKDAY = re.compile(r"(다음\s?주|이번\s?주|다다음\s?주)\s?([월화수목금토일])요일")

_RELATIVE = [  # (pattern, days from today)
    (re.compile(r"\bday after tomorrow\b|后天|後天|明後日|모레"), 2),
    (re.compile(r"\btomorrow\b|明天|明日|明晚|明早|내일"), 1),
    (re.compile(r"\btoday\b|\btonight\b|今天|今晚|今日|오늘"), 0),
    (re.compile(r"\bnext week\b|下周|下星期|下礼拜|来週|다음\s?주"), 7),
    (re.compile(r"\bnext month\b|下个月|下月|来月|다음\s?달"), 30),
]


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + _ZH_NUM.get(text[1:], 0) if len(text) > 1 else 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_NUM.get(tens, 1) * 10 + _ZH_NUM.get(ones, 0)
    return _ZH_NUM.get(text, 1)


def _weekday(today: date, target: int, weeks_ahead: int | None) -> date:
    """`weeks_ahead` None: the next such day; 0: this week's; 1: next week's (Monday-based)."""
    if weeks_ahead is None:
        delta = (target - today.weekday()) % 7 or 7
        return today + timedelta(days=delta)
    monday = today - timedelta(days=today.weekday())
    return monday + timedelta(weeks=weeks_ahead, days=target)


def _month_day(today: date, month: int, day: int) -> date | None:
    try:
        found = date(today.year, month, day)
    except ValueError:
        return None
    return found if found >= today - timedelta(days=180) else date(today.year + 1, month, day)


def event_day(text: str, today: date) -> date | None:
    lowered = text.lower()
    if m := _ISO.search(lowered):
        try:
            return date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            pass
    if m := _EN_MONTH_DAY.search(lowered):
        day, month = (m[1], m[2]) if m[1] else (m[4], m[3])
        if found := _month_day(today, _MONTHS[month[:3]], int(day)):
            return found
    if m := _ZH_MONTH_DAY.search(text):
        if found := _month_day(today, int(m[1]), int(m[2])):
            return found
    if m := _ZH_WEEKDAY.search(text):
        prefix = m[1] or ""
        weeks = (
            2 if prefix.startswith("下下") else 1 if prefix.startswith("下") else -1 if prefix.startswith("上") else 0
        )
        return _weekday(today, _ZH_DAYS[m[2]], weeks if prefix else None)
    if m := _JA_WEEKDAY.search(text):
        weeks = {"来週": 1, "今週": 0, "再来週": 2}[m[1]]
        return _weekday(today, _JA_DAYS[m[2]], weeks)
    if m := _KO_WEEKDAY.search(text):
        key = m[1].replace(" ", "")
        weeks = {"다음주": 1, "이번주": 0, "다다음주": 2}[key]
        return _weekday(today, _KO_DAYS[m[2]], weeks)
    if m := _EN_WEEKDAY.search(lowered):
        qualifier, name = m[1], m[2]
        weeks = 1 if qualifier == "next" else 0 if qualifier == "this" else None
        return _weekday(today, _EN_DAYS.index(name), weeks)
    if m := _EN_IN.search(lowered):
        count = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(m[1]) or int(m[1])
        return today + timedelta(days=count * (7 if m[2] == "week" else 1))
    if m := _ZH_IN.search(text):
        count = _zh_number(m[1])
        return today + timedelta(days=count * (1 if m[2] == "天" else 7))
    for pattern, days in _RELATIVE:
        if pattern.search(lowered):
            return today + timedelta(days=days)
    return None
