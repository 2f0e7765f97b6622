"""Claims: the unit Dreaming stages, ranks and promotes — one line of a note or one statement of
a conversation, as redacted one-line text with a hash, its words and its concept tags.

The hash identifies a claim across sweeps (line numbers move when a note is edited); the word
set decides near-duplicates (Jaccard, `dedupe`); concept tags feed the conceptual signal and
REM's themes.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

from ..memory import items
from ..redact import redact_secrets
from ..text.analyzer import analyze_document
from ..text.query import han_words
from ..text.stopwords import CJK, ENGLISH
from ..text.tokens import CJK_RUN, stem

MIN_CLAIM_CHARS = 8  # shorter lines ("- ok", "todo") are not claims
MAX_CLAIM_CHARS = 500  # longer lines are paragraphs, not facts; they are cut for display only
MAX_LINE_CHARS = 2000  # a longer note line (a pasted blob) is not a claim at all: no item is that long
MAX_CONCEPT_TAGS = 8
CACHE_SIZE = 65_536  # a sweep reads the same lines many times (every hit on a note); redaction costs ~0.4 ms

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_SPEAKER = re.compile(r"^(user|assistant|system|tool)\s*:\s*", re.IGNORECASE)
_QUESTION = re.compile(r"(?:[?？]|(?:吗|嗎|呢|么|か|까|니|나요)\s*[。.!！]?)\s*$")
# A full stop after a title or an initial ("Dr. Hargreaves", "J. Smith") ends no sentence: a claim
# cut there was promoted as two fragments.
_NOT_AN_END = "".join(rf"(?<!\b{abbr}\.)" for abbr in ("Dr", "Mr", "Ms", "Mrs", "Prof", "St", "Mt", "vs", "No", "Jr",
                                                           "Sr", "etc")) + r"(?<!\b[A-Z]\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
_SENTENCE_END = re.compile(rf"(?<=[!?。！？])\s+|{_NOT_AN_END}(?<=\.)\s+|(?<=[。！？])|\n+")
_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9'’-]*[a-z0-9]|[a-z0-9]")
_EXTRA_STOP = frozenset("""also really still just maybe today yesterday tomorrow week month year thing things stuff
    something anything lot lots always never every said says want wants need needs make makes made good great
    new old use used using like likes liked""".split())
_DREAM_ARTIFACT = re.compile(r"<!--\s*clawkeep:dreaming|^\s*(?:Source:|\[score=)", re.IGNORECASE)


def speaker(line: str) -> tuple[str | None, str]:
    """("user" | "assistant" | …, the rest) for a transcript-style line "user: …"; (None, line) otherwise."""
    match = _SPEAKER.match(line)
    if not match:
        return None, line
    return match[1].lower(), line[match.end():]


@lru_cache(maxsize=CACHE_SIZE)
def clean_line(raw: str) -> str | None:
    """A note line as claim text: markers, list bullets and extra spaces removed; None for a
    heading, a blank, too short or too long a line, a Dreaming artifact, or a question."""
    content, _ = items.parse_marker(raw)
    if _HEADING.match(content) or _DREAM_ARTIFACT.search(content):
        return None
    text = " ".join(_LIST_MARK.sub("", content).split())
    if not MIN_CLAIM_CHARS <= len(text) <= MAX_LINE_CHARS or is_question(text):
        return None
    return text


def is_question(text: str) -> bool:
    return _QUESTION.search(text.strip()) is not None


def statements(message: str) -> list[str]:
    """The sentences of a message that could be facts: not questions, not too short."""
    found = []
    for piece in _SENTENCE_END.split(message or ""):
        text = " ".join(piece.split())
        if len(text) >= MIN_CLAIM_CHARS and not is_question(text) and not text.startswith("/"):
            found.append(text[:MAX_CLAIM_CHARS])
    return found


@lru_cache(maxsize=CACHE_SIZE)
def redacted(text: str) -> str:
    """What Dreaming's machine state and DREAMS.md may hold of a line: credentials never in clear."""
    return " ".join(redact_secrets(text)[0].split())


@lru_cache(maxsize=CACHE_SIZE)
def claim_hash(text: str) -> str:
    """Identity of a claim's text: case, punctuation and spacing ignored (computed on redacted text)."""
    folded = unicodedata.normalize("NFKC", redacted(text)).casefold()
    return hashlib.sha1(" ".join(_PUNCT.sub(" ", folded).split()).encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=CACHE_SIZE)
def words(text: str) -> frozenset[str]:
    """The index tokens of a claim (stems, CJK bigrams): what near-duplicates share."""
    return frozenset(analyze_document(text).split())


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def concept_tags(text: str, limit: int = MAX_CONCEPT_TAGS) -> list[str]:
    """Up to `limit` content words of a claim, in order: Latin words of 3+ letters (stemmed,
    stop words and numbers dropped), Chinese words (jieba) and kana/Hangul words of 2+ characters."""
    return list(_concept_tags(text, limit))


@lru_cache(maxsize=CACHE_SIZE)
def _concept_tags(text: str, limit: int) -> tuple[str, ...]:
    source = unicodedata.normalize("NFKC", text).casefold()
    tags: list[str] = []

    def add(tag: str) -> None:
        if tag and tag not in tags and len(tags) < limit:
            tags.append(tag)

    position = 0
    for run in CJK_RUN.finditer(source):
        _latin(source[position:run.start()], add)
        for word in _cjk_words(run.group()):
            if len(word) >= 2 and word not in CJK:
                add(word)
        position = run.end()
    _latin(source[position:], add)
    return tuple(tags)


def _latin(text: str, add) -> None:
    for word in _LATIN_WORD.findall(text):
        word = word.strip("'’-")
        if len(word) < 3 or word.isdigit() or word in ENGLISH or word in _EXTRA_STOP:
            continue
        add(stem(word.replace("’", "'").replace("'", "")))


def _cjk_words(run: str) -> list[str]:
    if any("\u4e00" <= ch <= "\u9fff" for ch in run):
        return han_words(run)
    return [run]
