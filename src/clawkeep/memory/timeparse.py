"""Find the day a statement is about ("next Tuesday I fly to Shanghai", "下周二去上海") and
whether it is a future plan.

`event_day` returns the day the text names (None when it names none), past or future.
`plan_day` returns it only for a FUTURE plan — the expiry of a time-bound fact (M8). A dated
past event ("I was born on 1990-03-12", "我今天搬到了杭州", "昨日引っ越しました", "어제 이사했어요")
and a recurring date ("my birthday is on 12 March", "every Friday") are durable facts and get
none. English, Chinese, Japanese and Korean.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from ..patterns import lazy

_EN_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_ZH_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_JA_DAYS = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
_KO_DAYS = {"월": 0, "화": 1, "수": 2, "목": 3, "금": 4, "토": 5, "일": 6}
_MONTHS = {
    m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
_ZH_NUM = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

_ISO = lazy(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_EN_MONTH_DAY = lazy(
    r"\b(?:on\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"(?:,?\s+(\d{4})\b)?"
    r"|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4})\b)?"
)
# 1990年3月12日 (zh, ja), 1990년 3월 12일 (ko): with the year, the day is exact.
_CJK_YEAR_DATE = lazy(r"(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日号일]")
_KO_MONTH_DAY = lazy(r"(\d{1,2})\s*월\s*(\d{1,2})\s*일")
_EN_IN = lazy(r"\bin\s+(\d{1,3}|a|an|one|two|three)\s+(day|week)s?\b")
_EN_WEEKDAY = lazy(r"\b(next|this|on|coming)?\s*(" + "|".join(_EN_DAYS) + r")\b")
_ZH_MONTH_DAY = lazy(r"(\d{1,2})月(\d{1,2})[日号]")
_ZH_WEEKDAY = lazy(r"(下下|下个?|这个?|本|上个?)?(?:周|星期|礼拜)([一二三四五六日天])")
_ZH_IN = lazy(r"([一二两三四五六七八九十\d]{1,3})(天|周|个?星期|个?礼拜)[之以]?后")
_JA_WEEKDAY = lazy(r"(来週|今週|再来週|先週)の?([月火水木金土日])曜")
_KO_WEEKDAY = lazy(r"(다음\s?주|이번\s?주|다다음\s?주|지난\s?주)\s?([월화수목금토일])요일")
# A weekday alone ("金曜日に", "금요일에"): the next such day, like English "on Friday".
_JA_BARE_WEEKDAY = lazy(r"(?<![来今週先])([月火水木金土日])曜日")
_KO_BARE_WEEKDAY = lazy(r"(?<![주])\s?([월화수목금토일])요일")

_RELATIVE = [  # (pattern, days from today)
    (lazy(r"\bday before yesterday\b|前天|一昨日|그저께|그제"), -2),
    (lazy(r"\byesterday\b|昨天|昨日|昨晚|어제"), -1),
    (lazy(r"\blast week\b|上周|上星期|上礼拜|先週|지난\s?주"), -7),
    (lazy(r"\blast month\b|上个月|上月|先月|지난\s?달"), -30),
    (lazy(r"\bday after tomorrow\b|后天|後天|明後日|모레"), 2),
    (lazy(r"\btomorrow\b|明天|明日|明晚|明早|내일"), 1),
    (lazy(r"\btoday\b|\btonight\b|今天|今晚|今日|오늘"), 0),
    (lazy(r"\bnext week\b|下周|下星期|下礼拜|来週|다음\s?주"), 7),
    (lazy(r"\bnext month\b|下个月|下月|来月|다음\s?달"), 30),
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


def _exact(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def event_day(text: str, today: date) -> date | None:
    found = _event(text, today)
    return found[0] if found else None


def _event(text: str, today: date) -> tuple[date, bool] | None:
    """(day, exact): exact when the text pins the day down (a year, "next", "tomorrow"); not
    when a bare weekday or a month and day were read forward from today."""
    lowered = text.lower()
    if m := _ISO.search(lowered):
        if found := _exact(int(m[1]), int(m[2]), int(m[3])):
            return found, True
    if m := _CJK_YEAR_DATE.search(text):
        if found := _exact(int(m[1]), int(m[2]), int(m[3])):
            return found, True
    if m := _EN_MONTH_DAY.search(lowered):
        day, month, year = (m[1], m[2], m[3]) if m[1] else (m[5], m[4], m[6])
        found = _exact(int(year), _MONTHS[month[:3]], int(day)) if year else \
            _month_day(today, _MONTHS[month[:3]], int(day))
        if found:
            return found, bool(year)
    if m := _ZH_MONTH_DAY.search(text):
        if found := _month_day(today, int(m[1]), int(m[2])):
            return found, False
    if m := _KO_MONTH_DAY.search(text):
        if found := _month_day(today, int(m[1]), int(m[2])):
            return found, False
    if m := _ZH_WEEKDAY.search(text):
        prefix = m[1] or ""
        weeks = (
            2 if prefix.startswith("下下") else 1 if prefix.startswith("下") else -1 if prefix.startswith("上") else 0
        )
        return _weekday(today, _ZH_DAYS[m[2]], weeks if prefix else None), bool(prefix)
    if m := _JA_WEEKDAY.search(text):
        weeks = {"来週": 1, "今週": 0, "再来週": 2, "先週": -1}[m[1]]
        return _weekday(today, _JA_DAYS[m[2]], weeks), True
    if m := _KO_WEEKDAY.search(text):
        key = m[1].replace(" ", "")
        weeks = {"다음주": 1, "이번주": 0, "다다음주": 2, "지난주": -1}[key]
        return _weekday(today, _KO_DAYS[m[2]], weeks), True
    if m := _JA_BARE_WEEKDAY.search(text):
        return _weekday(today, _JA_DAYS[m[1]], None), False
    if m := _KO_BARE_WEEKDAY.search(text):
        return _weekday(today, _KO_DAYS[m[1]], None), False
    if m := _EN_WEEKDAY.search(lowered):
        qualifier, name = m[1], m[2]
        weeks = 1 if qualifier == "next" else 0 if qualifier == "this" else -1 if qualifier == "last" else None
        return _weekday(today, _EN_DAYS.index(name), weeks), weeks is not None
    if m := _EN_IN.search(lowered):
        count = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(m[1]) or int(m[1])
        return today + timedelta(days=count * (7 if m[2] == "week" else 1)), True
    if m := _ZH_IN.search(text):
        count = _zh_number(m[1])
        return today + timedelta(days=count * (1 if m[2] == "天" else 7)), True
    for pattern, days in _RELATIVE:
        if pattern.search(lowered):
            return today + timedelta(days=days), True
    return None


# --- plans and past events ------------------------------------------------------------------
# A date that comes round again is no plan: birthdays, anniversaries, "every Friday".
_RECURRING = lazy(
    r"\b(?:birthday|anniversary|every|each|weekly|monthly|yearly|annually|daily)\b|\w+days\b"
    r"|生日|纪念日|紀念日|每|誕生日|記念日|毎|생일|기념일|매주|매년|매일|매달|마다",
    re.IGNORECASE,
)
# Grammar that puts the event ahead: it wins over anything that looks past ("明天我就走了",
# "I booked a table for tomorrow").
_FUTURE = lazy(
    r"\b(?:will|shall|going\s+to|gonna|plan(?:ning)?\s+to|intend\s+to|about\s+to|tomorrow|tonight|next|"
    r"upcoming|coming|remind\s+me|due|until|till)\b|'ll\b"
    r"|\b(?:for|(?:moved|changed|rescheduled|postponed|pushed|delayed|set|scheduled|booked|planned|brought)"
    r"\s+(?:back\s+|forward\s+)?(?:to|for|until|till))\s+(?:next|this|coming|tomorrow|tonight|the\s+\d|\d|mon|tue|wed|"
    r"thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
    r"|(?:改到|改在|推迟到|延期到|提前到|挪到|定在|约在)"
    r"|明天|后天|後天|下周|下星期|下礼拜|下个?月|下次|将要|将会|即将|准备|打算|计划|预计|就要|要去|我要|我会|我们要|我们会|"
    r"提醒我"
    r"|予定|つもり|明日|明後日|来週|来月|再来週|今度|ます[。！!]?$|する[。！!]?$"
    r"|예정|거예요|거야|겠|내일|모레|다음\s?주|다음\s?달",
    re.IGNORECASE,
)
_EN_PAST_VERBS = (
    "was were did had ago yesterday last born moved flew went came got bought left met began started finished "
    "arrived returned visited married graduated joined quit sold became spent took made saw lost won gave ran "
    "wrote drove rode sent paid found broke fell grew heard kept knew led read said sat slept spoke stood told "
    "thought understood woke wore"
)
_EN_ED_NOT_PAST = "need feed speed seed bleed proceed exceed succeed indeed breed embed shred bed red wed shed"
_PAST = lazy(
    r"\b(?:" + "|".join(_EN_PAST_VERBS.split()) + r")\b"
    r"|\b(?:i|we|he|she|they|you)\s+(?:(?!(?:am|are|is|be|feel|get|will)\b)\w+\s+)?"
    r"(?!(?:" + "|".join(_EN_ED_NOT_PAST.split()) + r")\b)\w{2,}ed\b"
    r"|\b(?:i|we|he|she|they)'ve\s+\w+"
    r"|了|过|過|已经|已經|昨天|前天|上周|上个月|上星期|去年|刚才|刚刚|出生|生于"
    r"|ました|でした|(?:かった|った|んだ|いだ|した|いた|きた|えた|れた|けた|めた|ねた|べた|せた|てた|ちた)"
    r"(?=[。、！!？?\s」』）)]|$|よ|ね|の|けど|から|ので|が)"
    r"|生まれ|昨日|一昨日|先週|先月|去年|この前"
    r"|어제|그저께|지난\s?주|지난달|작년|태어났",
    re.IGNORECASE,
)
# Korean past tense: a syllable whose final consonant is ㅆ (했, 갔, 왔, 났, 었…), except 있 (to be,
# to have) and 겠 (future), followed by an ending.
_KO_SSANG = lazy(r"([\uac00-\ud7a3])(?=[어다습지네는고던요음])")


def _korean_past(text: str) -> bool:
    for m in _KO_SSANG.finditer(text):
        syllable = m.group(1)
        if syllable in "있겠":
            continue
        if (ord(syllable) - 0xAC00) % 28 == 20:  # final ㅆ
            return True
    return False


def is_past(text: str) -> bool:
    """Whether the grammar puts the event before now ("moved", "了", "ました", "했어요") and nothing
    puts it ahead ("will", "明天", "予定", "거예요")."""
    if _FUTURE.search(text):
        return False
    return _PAST.search(text) is not None or _korean_past(text)


def plan_day(text: str, today: date) -> date | None:
    """The day a FUTURE plan is about — its expiry — or None: no day named, a dated past event,
    or a recurring date. A day pinned after today is a plan whatever the verbs ("we decided to
    ship on 2026-12-10"); today, or a day only read forward ("on Friday", "12 March"), with past
    grammar is past ("I moved to Hangzhou on <today>", "I flew on Friday")."""
    found = _event(text, today)
    if found is None:
        return None
    day, exact = found
    if day < today or _RECURRING.search(text):
        return None
    if (exact and day > today) or not is_past(text):
        return day
    return None

