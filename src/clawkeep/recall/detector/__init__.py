"""Does a message ask about the past? Pattern rules for English, Chinese, Japanese and Korean (A3).

A message "asks about the past" when answering it needs something said, decided, planned or
told in earlier conversation: explicit recall ("do you remember…", "还记得…", "覚えてる？",
"기억나?"), references to earlier talk ("the plan we discussed", "我上次说的那个方案",
"前回話したプラン", "지난번에 얘기한 계획"), recall particles (来着, っけ, 더라, -다고 했지) and
questions about the user's own facts and plans, which only earlier conversation can answer
("what's my passport number?", "我下周有什么安排", "明日の私の予定は？", "내일 내 일정 뭐야?").

Not recall: statements (including statements about the future: "我明天去上海"), commands and
future reminders ("remind me tomorrow to…"), memory writes ("please remember that…"),
hypotheticals, advice and how-to questions, and general knowledge even when it carries a time
word ("who won the World Cup last time?").

Design: each language has a few *guards* (force "no"), a question test, and an ordered list
of rules; the first rule that accepts a match names the reason. Everything is compiled at
import; a classification is a handful of regex scans (tens of microseconds).

Layout: one module per language (`en`, `zh`, `ja`, `ko`, each defining `LANGUAGE`), the rule
machinery in `rules`, normalisation and language detection in `detect`; `classify` is here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...patterns import lazy
from . import en, ja, ko, zh
from .detect import detect_language, normalise
from .rules import Language

__all__ = ["LANGUAGES", "NO_RECALL", "Classification", "classify", "detect_language"]

NO_RECALL = "no-recall-intent"
LANGUAGES = ("en", "zh", "ja", "ko", "other")


@dataclass(frozen=True, slots=True)
class Classification:
    past_question: bool
    language: str  # one of LANGUAGES
    reason: str  # "<lang>:<rule>" of the rule that fired, or NO_RECALL


_BY_CODE = {"en": en.LANGUAGE, "zh": zh.LANGUAGE, "ja": ja.LANGUAGE, "ko": ko.LANGUAGE}
_TWO_LATIN_WORDS = lazy(r"[A-Za-z]+\W+[A-Za-z]+")


# Long pastes (logs, code) are scanned at both ends only: a question about the past sits before
# or after the pasted material, and this keeps the worst case to a few milliseconds.
_SCAN_EDGE = 2000


def classify(text: str) -> Classification:
    """Classify one user message. Empty or whitespace-only text is never a past question."""
    text = text or ""
    if len(text) > 2 * _SCAN_EDGE + 500:
        text = f"{text[:_SCAN_EDGE]}\n{text[-_SCAN_EDGE:]}"
    normalised = normalise(text)
    language = detect_language(normalised)
    if not normalised:
        return Classification(False, language, NO_RECALL)
    order: list[Language] = []
    if language in _BY_CODE:
        order.append(_BY_CODE[language])
    if language != "en" and _TWO_LATIN_WORDS.search(normalised):
        order.append(en.LANGUAGE)  # English phrasing inside CJK text, or Latin text we could not place
    for lang in order:
        reason = lang.match(normalised)
        if reason is not None:
            return Classification(True, language, reason)
    return Classification(False, language, NO_RECALL)
