"""Normalisation and language detection for the past-question detector."""

from __future__ import annotations

import unicodedata

from ...patterns import lazy

_WS = lazy(r"\s+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


def normalise(text: str) -> str:
    """NFKC (full-width ？ → ?, half-width kana → full-width), one space for any whitespace run."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().translate(_APOSTROPHES)


_HANGUL = lazy(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]")
_KANA = lazy(r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff]")
_HAN = lazy(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_LATIN_WORD = lazy(r"[A-Za-z\u00c0-\u024f]+(?:'[A-Za-z]+)?")
_NON_ASCII_LATIN = lazy(r"[\u00c0-\u024f]")
_OTHER_LETTER = lazy(r"[\u0370-\u03ff\u0400-\u052f\u0590-\u06ff\u0900-\u0dff\u0e00-\u0eff]")
_EN_FUNCTION_WORDS = frozenset(
    "a an the i me my we our us you your he she it they is are was were am be been do does did "
    "have has had what when where which who whom whose why how can could would will should to "
    "of in on at for with about from that this and or not please tell remind remember recall "
    "again last next yesterday tomorrow don't didn't what's i'm".split()
)


def detect_language(text: str) -> str:
    """ "en", "zh", "ja", "ko" or "other", by script counts (a CJK character weighs one Latin word)."""
    t = normalise(text or "")
    if not t:
        return "other"
    hangul = len(_HANGUL.findall(t))
    kana = len(_KANA.findall(t))
    han = len(_HAN.findall(t))
    cjk = hangul + kana + han
    words = _LATIN_WORD.findall(t)
    if cjk and cjk >= len(words):
        if hangul and hangul >= kana:
            return "ko"
        if kana:
            return "ja"
        return "zh"
    if not words:
        return "other"
    if len(_OTHER_LETTER.findall(t)) > sum(map(len, words)):
        return "other"
    lowered = [w.lower() for w in words]
    if any(w in _EN_FUNCTION_WORDS for w in lowered):
        return "en"
    # No English function word: plain ASCII (names, "ok", "thanks") passes as English,
    # accented Latin text without any English word is some other language.
    if _NON_ASCII_LATIN.search(t):
        return "other"
    return "en"
