"""Normalisation and tokenisation shared by documents, queries and snippets.

Everything here produces lowercase tokens made only of letters and digits, so a plain
`unicode61` (SQLite) or `simple` (PostgreSQL) tokenizer keeps each one as a single token.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ..patterns import lazy

# Han (with 々〆〇 and compatibility ideographs), kana, Hangul syllables and jamo.
CJK_CHARS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
# Compiled on first use: a character class this size takes milliseconds to compile, and ASCII
# text (most queries) never needs it (has_cjk answers without it).
CJK_RUN = lazy(f"[{CJK_CHARS}]+")
_HAS_CJK = lazy(f"[{CJK_CHARS}]")

# A chunk: alphanumeric runs glued by single connector characters (INV-2024-0042,
# v2.3.1, user_id, don't, a@b.com). Underscore counts as a connector, not a letter.
CONNECTORS = "-_./:@'\u2019"
CHUNK = re.compile(r"[^\W_]+(?:[" + re.escape(CONNECTORS) + r"][^\W_]+)*")
_PART_SPLIT = re.compile(r"([" + re.escape(CONNECTORS) + r"])")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")

MAX_TOKEN = 64  # longer runs (hashes, base64) are truncated, identically on both sides
MAX_JOINED = 40  # identifiers longer than this are only findable by their parts

_STEMMER: Any = None


def _english_stemmer() -> Any:
    """PyStemmer (Snowball in C) when installed, else snowballstemmer (the same algorithm in
    pure Python: identical stems, a test compares them); loaded when English is first stemmed."""
    try:
        import Stemmer  # deferred: loaded when English is first stemmed

        return Stemmer.Stemmer("english")
    except ImportError:
        import snowballstemmer  # deferred: the fallback when PyStemmer is missing

        return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball English stem of an ASCII word; other tokens pass through (cached: 30 us/call)."""
    if word.isascii() and word.isalpha() and len(word) > 2:
        global _STEMMER
        if _STEMMER is None:
            _STEMMER = _english_stemmer()
        return _STEMMER.stemWord(word)
    return word


def fold(text: str) -> str:
    """Lowercase and strip Latin/Greek/Cyrillic diacritics (café -> cafe), like remove_diacritics 2.

    Only applied to non-CJK text: decomposing kana would drop the voicing marks (が -> か).
    """
    text = text.casefold()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def _script(ch: str) -> str | None:
    code = ord(ch)
    if code < 0x250:
        return "latin" if ch.isalpha() else None
    if 0x3040 <= code <= 0x30FF:
        return "kana"
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF:
        return "hangul"
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF:
        return "han"
    return None


def scripts(text: str) -> frozenset[str]:
    """The writing systems a text uses, of those a full-text index tells apart: "latin"
    (letters below U+0250), "han", "kana", "hangul". Digits and punctuation belong to none."""
    return frozenset(found for ch in text if (found := _script(ch)) is not None)


def main_script(text: str) -> str | None:
    """The script most of a text is written in, a CJK character weighing as much as four Latin
    letters (about a word each): 网关运行在那台叫 atlas 的 Mac mini 上 is "han"."""
    weights: dict[str, float] = {}
    for ch in text:
        found = _script(ch)
        if found is not None:
            weights[found] = weights.get(found, 0.0) + (0.25 if found == "latin" else 1.0)
    return max(weights, key=weights.__getitem__) if weights else None


def normalise(text: str) -> str:
    """NFKC first: full-width Latin and half-width kana become their ordinary forms."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def has_cjk(text: str) -> bool:
    return not text.isascii() and _HAS_CJK.search(text) is not None


def cjk_bigrams(run: str, tail: bool = True) -> list[str]:
    """Overlapping bigrams of a CJK run; `tail` adds the last character as a unigram.

    The tail unigram makes every character the first character of exactly one token, so a
    single-character query is a prefix query, and it keeps phrases from bridging two runs.
    """
    grams = [run[i : i + 2] for i in range(len(run) - 1)]
    if tail or len(run) == 1:
        grams.append(run[-1])
    return grams


def split_parts(chunk: str) -> list[str]:
    """Split a chunk into word parts: connectors, camelCase; apostrophes merge (don't -> dont)."""
    pieces = _PART_SPLIT.split(chunk)
    parts: list[str] = [pieces[0]]
    for sep, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        if sep in "'\u2019":
            if piece.lower() != "s":  # possessive 's is dropped, other contractions glue
                parts[-1] += piece
        else:
            parts.append(piece)
    return [p for part in parts for p in _CAMEL.split(part) if p]


def word_tokens(chunk: str) -> tuple[list[str], str | None]:
    """Stemmed part tokens of a non-CJK chunk and its joined form (or None).

    `INV-2024-0042` -> ['inv', '2024', '0042'], 'inv20240042'. Pure numbers such as 3.5 or
    10:30 get no joined form (it would collide with 35 / 1030).
    """
    parts = [fold(p)[:MAX_TOKEN] for p in split_parts(chunk)]
    parts = [p for p in parts if p]
    joined = None
    if len(parts) > 1 and not all(p.isdigit() for p in parts):
        candidate = "".join(parts)
        if len(candidate) <= MAX_JOINED:
            joined = candidate
    return [stem(p) for p in parts], joined


def chunk_segments(chunk: str) -> Iterator[tuple[bool, str]]:
    """(is_cjk, text) pieces of a chunk, in order; CJK runs are separated from the rest."""
    pos = 0
    for m in CJK_RUN.finditer(chunk):
        if m.start() > pos:
            yield False, chunk[pos : m.start()]
        yield True, m.group()
        pos = m.end()
    if pos < len(chunk):
        yield False, chunk[pos:]


@lru_cache(maxsize=32768)
def chunk_tokens(chunk: str) -> tuple[str, ...]:
    """Index tokens of one chunk (document side). Cached: chat words repeat a lot."""
    if not has_cjk(chunk):
        parts, joined = word_tokens(chunk)
        return (*parts, joined) if joined else tuple(parts)
    out: list[str] = []
    for is_cjk, seg in chunk_segments(chunk):
        if is_cjk:
            out.extend(cjk_bigrams(seg))
        else:
            for m in CHUNK.finditer(seg):
                out.extend(chunk_tokens(m.group()))
    return tuple(out)


def iter_chunks(text: str) -> Iterator[str]:
    for m in CHUNK.finditer(normalise(text)):
        yield m.group()
