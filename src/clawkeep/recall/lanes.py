"""Active Memory lanes (A2, A3).

Lane 1 (no model): promoted trusted entries only — the active bullet items of MEMORY.md.
Each entry's trigger phrases (a `trigger=a|b` attribute or `<!-- trigger: a; b -->`, else
the entry's own words) are scored against the message: a one-word trigger scores 0.85 when
present; a longer one 0.8·coverage + 0.2·min(1, overlap/2). entryScore = 0.8·best phrase +
0.2·word overlap. Strong when ≥ 0.65; at most 3 entries and 1800 characters are injected, whole
entries only.

Lane 2: evidence from the allowed memory tools (memory_search over the memory index and,
with rememberAcrossConversations, the other direct-message transcripts of the agent), settled
(`evidence.settle`: earlier questions out, superseded items out, past plans marked stale with
their day or out when a later fact exists), then either a model condenses it to NONE or one
line, or — without a model — the best evidence sentence is condensed deterministically. A
question is never an answer: neither summary may be one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..memory import items
from ..memory.text_repair import clean_text
from ..memory.workspace import MEMORY_FILE, contained_file
from ..models.reasoning import strip_reasoning
from ..text import stopwords
from ..text.analyzer import analyze_document
from ..text.query import parse_query
from .evidence import STALE, Evidence, sentences, stale_marker

NONE_ANSWERS = {"", "none", "no_reply", "nothing useful", "no relevant memory", "no relevant memories",
                "n/a", "null", "[]", "{}", "timeout"}
_TRIGGER_COMMENT = re.compile(r"<!--\s*trigger:\s*(.*?)\s*-->", re.IGNORECASE)
_COMMENT = re.compile(r"\s*<!--.*?-->")


_STOP = stopwords.ENGLISH | stopwords.CJK


def _words(text: str) -> set[str]:
    return {t for t in analyze_document(text).split() if len(t) > 1 and t not in _STOP}


@dataclass
class LaneOneHit:
    item_id: str
    text: str
    score: float
    citation: str


def _triggers(raw_line: str, item: items.Item) -> list[str]:
    explicit = item.attrs.get("trigger")
    found = [t for t in re.split(r"[|;\n,]", explicit) if t.strip()] if explicit else []
    comment = _TRIGGER_COMMENT.search(raw_line)
    if comment:
        found += [t for t in re.split(r"[|;\n,]", comment[1]) if t.strip()]
    return found or [item.text]


def phrase_score(trigger: str, message_words: set[str]) -> float:
    return _phrase_score(_words(trigger), message_words)


def _phrase_score(words: frozenset[str] | set[str], message_words: set[str]) -> float:
    if not words:
        return 0.0
    overlap = len(words & message_words)
    if len(words) == 1:
        return 0.85 if overlap else 0.0
    if not overlap:
        return 0.0
    return 0.8 * overlap / len(words) + 0.2 * min(1.0, overlap / 2)


@dataclass(frozen=True)
class _Entry:
    """A MEMORY.md item with its analysed trigger phrases and text (what scoring needs)."""

    item: items.Item
    triggers: tuple[frozenset[str], ...]
    words: frozenset[str]


@dataclass(frozen=True)
class _Parsed:
    entries: tuple[_Entry, ...]
    by_word: dict[str, tuple[int, ...]]  # word → entries whose triggers or text contain it


# Parsed MEMORY.md per path, reused while the file's (inode, size, mtime) are unchanged.
# Analysing every entry on every turn costs ~30 µs per entry (30 ms for 1,000 items); a stat
# costs microseconds whatever the file's size. A file above MAX_LANE_ONE_BYTES is not parsed
# per turn at all (parsing costs ~2 s per MB in a fresh process); lane 2's index search still
# covers it, and the bootstrap budget (20,000 chars) shows only its head anyway.
_PARSED: dict[str, tuple[tuple[int, ...], _Parsed]] = {}
_PARSED_MAX = 16
MAX_LANE_ONE_BYTES = 256 * 1024


def _parse_memory(path: Path, workspace: Path) -> _Parsed | None:
    if not contained_file(path, workspace):  # missing, a link out of the workspace, a FIFO
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    signature = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    cached = _PARSED.get(str(path))
    if cached is not None and cached[0] == signature:
        return cached[1]
    if info.st_size > MAX_LANE_ONE_BYTES:
        return None
    try:
        text, _repairs = clean_text(path.read_bytes())  # one bad line never hides the file (the index names it)
    except OSError as exc:
        raise InputError(f"memory file {path} cannot be read ({exc.strerror or exc})") from None
    if text is None:
        raise InputError(f"memory file {path} is not UTF-8 text; fix or remove it")
    lines = text.splitlines()
    entries = []
    by_word: dict[str, list[int]] = {}
    for item in items.parse_items(MEMORY_FILE, "\n".join(lines)):
        triggers = tuple(frozenset(_words(t)) for t in _triggers(lines[item.line - 1], item))
        entry = _Entry(item, triggers, frozenset(_words(item.text)))
        for word in entry.words.union(*entry.triggers):
            by_word.setdefault(word, []).append(len(entries))
        entries.append(entry)
    parsed = _Parsed(tuple(entries), {w: tuple(ids) for w, ids in by_word.items()})
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[str(path)] = (signature, parsed)
    return parsed


def lane_one(workspace: Path, message: str, *, min_score: float, max_entries: int, max_chars: int,
             today: Any, visible: Callable[[str | None], bool] = lambda owner: True,
             ) -> tuple[list[LaneOneHit], str | None]:
    """(strong hits, rendered block or None)."""
    parsed = _parse_memory(workspace / MEMORY_FILE, workspace)
    message_words = _words(message)
    if not message_words or parsed is None or not parsed.entries:
        return [], None
    if min_score > 0:  # an entry sharing no word with the message scores 0: look only at the others
        candidates = sorted({i for w in message_words for i in parsed.by_word.get(w, ())})
    else:
        candidates = range(len(parsed.entries))
    hits = []
    for index in candidates:
        entry = parsed.entries[index]
        item = entry.item
        if item.status(today) != "active" or item.attrs.get("trust") == "untrusted":
            continue
        if not visible(item.attrs.get("session")):  # the owner boundary, as everywhere (memory.owners)
            continue
        best = max(_phrase_score(t, message_words) for t in entry.triggers)
        retrieval = len(entry.words & message_words) / max(1, len(message_words))
        score = 0.8 * best + 0.2 * min(1.0, retrieval)
        if score >= min_score:
            fact = _COMMENT.sub("", item.text).strip()  # trigger comments are not part of the fact
            hits.append(LaneOneHit(item.id, fact, score, f"{MEMORY_FILE}#L{item.line}"))
    hits.sort(key=lambda h: (-h.score, h.item_id))
    hits = hits[:max_entries]
    if not hits:
        return [], None
    return _fit_entries(hits, max_chars)


def _fit_entries(hits: list[LaneOneHit], max_chars: int) -> tuple[list[LaneOneHit], str]:
    """The best entries that fit `max_chars` whole: a cut mid-entry would hand the model a
    dangling fragment. Only the best entry, when it alone is too long, is shortened — its text,
    never its source — so a strong hit is never lost to its length."""
    kept: list[LaneOneHit] = []
    lines: list[str] = []
    size = -1  # no newline before the first line
    for hit in hits:
        source = f" (Source: {hit.citation})"
        line = f"- {hit.text}{source}"
        if size + 1 + len(line) > max_chars:
            if kept:
                break
            room = max(1, max_chars - len(source) - 3)  # "- " and "…"
            text = " ".join(hit.text.split())[:room]
            if " " in text[room // 2:]:
                text = text[: text.rfind(" ")]  # end on a whole word
            line = f"- {text.rstrip(' ,;:')}…{source}"[:max_chars]
        kept.append(hit)
        lines.append(line)
        size += 1 + len(line)
    return kept, "\n".join(lines)


def normalise_summary(text: str, max_chars: int) -> str | None:
    """One line, cut at a word boundary with "…"; None for the NONE family of answers. The
    model's reasoning is dropped first: it is neither shown nor injected."""
    line = " ".join(strip_reasoning(text or "").split())
    if line.strip(" .").lower() in NONE_ANSWERS or line.upper().startswith("NONE"):
        return None
    if len(line) <= max_chars:
        return line
    cut = line[: max_chars - 1]
    if " " in cut[max_chars // 2:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


def best_sentence(evidence: Evidence, query: str) -> str:
    """The statement of the evidence that shares the most query words (questions are skipped)."""
    best = _best_sentence(evidence, query)
    return best[0] if best else evidence.text


def _best_sentence(evidence: Evidence, query: str) -> tuple[str, str | None] | None:
    """(sentence, its stale day or None), or None when the evidence holds no statement."""
    query_words = _words(query)
    found = list(sentences(evidence.text))
    if not found:
        return None
    return max(found, key=lambda s: (len(_words(s[0]) & query_words), -len(s[0])))


def deterministic_summary(evidence: list[Evidence], query: str, max_chars: int) -> str | None:
    """Lane 2 without a model: condense the best hit to one line, or NONE. Only statements count
    (an earlier question shares every word with the new one, and is no answer); a past plan keeps
    its stale marker and day whatever the cut."""
    parsed = parse_query(query)
    if not evidence or parsed is None:
        return None
    query_words = _words(query)
    scored = []  # (query words its statements share, score, evidence, its statements)
    for e in evidence:
        found = [(s, stale, _words(s) & query_words) for s, stale in sentences(e.text)]
        scored.append((len(set().union(*(shared for _, _, shared in found))), e.score, e, found))
    # on equal overlap the user's own words beat the assistant's echo of them ("我上次说的…")
    overlap, _, top, found = max(scored, key=lambda row: (row[0], row[2].speaker != "assistant", row[1]))
    if not overlap:
        return None
    sentence, stale, _ = max(found, key=lambda f: (len(f[2]), -len(f[0])))
    sentence = re.sub(r"^(User|Assistant):\s*", "", sentence)
    sentence = re.sub(r"^[-*]\s+", "", sentence)
    if top.origin == "transcript":
        who = "The assistant" if top.speaker == "assistant" else "The user"
        prefix = f"{who} said{' on ' + top.when if top.when else ''}: "
    else:
        prefix = f"Memory ({top.citation}): " if top.citation else "Memory: "
    if not stale:
        return normalise_summary(prefix + sentence, max_chars)
    marker = stale_marker(stale)
    line = normalise_summary(prefix + sentence, max_chars - len(marker) - 1)
    return f"{line} {marker}" if line else None


def _is_question_only(summary: str) -> bool:
    """A summary that only restates a question ("The user said: 我下周有什么安排")."""
    head, sep, body = summary.partition(": ")
    candidates = [summary] + ([body] if sep and len(head) <= 80 else [])
    return any(not list(sentences(STALE.sub("", text))) for text in candidates)


STYLE_RULES = {
    "balanced": "Return the single most relevant remembered fact for the latest message.",
    "strict": "Only return a fact that directly answers the latest message; otherwise NONE.",
    "contextual": "Use the whole conversation to pick the remembered fact that helps most.",
    "recall-heavy": "Prefer returning a relevant fact over NONE when anything plausibly helps.",
    "precision-heavy": "Return NONE unless the evidence is clearly about what is asked.",
    "preference-only": "Only return the user's stated preferences; otherwise NONE.",
}


def conversation_context(turns: list[tuple[str, str]], message: str, *, mode: str, user_turns: int,
                         assistant_turns: int) -> str:
    """queryMode: `message` = the latest message only; `recent` = the last few user/assistant
    turns (220/180 chars each) + the message; `full` = every turn + the message."""
    if mode == "message" or not turns:
        return f"Latest user message:\n{message}"
    if mode == "full":
        lines = [f"{role}: {' '.join(text.split())}" for role, text in turns]
        return "Full conversation context:\n" + "\n".join(lines) + f"\n\nLatest user message:\n{message}"
    picked, quota = [], {"user": user_turns, "assistant": assistant_turns}
    for role, text in reversed(turns):
        if quota.get(role, 0) > 0:
            quota[role] -= 1
            limit = 220 if role == "user" else 180
            picked.append(f"{role}: {' '.join(text.split())[:limit]}")
    return "Recent conversation tail:\n" + "\n".join(reversed(picked)) + f"\n\nLatest user message:\n{message}"


def model_summary(model: Any, evidence: list[Evidence], query: str, *, style: str, max_chars: int,
                  timeout_s: float, context: str | None = None) -> str | None:
    """Lane 2 with a model: it sees only what the allowed memory tools returned."""
    lines = [f"[{e.origin}{' ' + e.when if e.when else ''}{_said_by(e)}] {e.text}" for e in evidence[:8]]
    system = (
        "You are a memory recall helper. Using ONLY the memory search results below, write NONE or one "
        f"plain-text line under {max_chars} characters about the user (not addressed to the user), with no "
        "bullets, labels, XML, JSON or markdown. Flag mutable operational facts as possibly stale. A result "
        "marked \"(stale: planned for DATE, now past)\" is a plan whose day has passed: keep that marker and "
        "date if you use it. Never answer with a question the user asked before. "
        + STYLE_RULES[style]
    )
    prompt = "Bounded memory search query:\n" + query[:480] + "\n\nMemory search results:\n" + (
        "\n".join(lines) or "(none)")
    if context:
        prompt += "\n\nConversation context:\n" + context[:25_000]
    result = model.complete([{"role": "user", "content": prompt}], system=system, max_tokens=200,
                            timeout_s=timeout_s)
    summary = normalise_summary(result.text, max_chars)
    return None if summary is None or _is_question_only(summary) else summary


def _said_by(evidence: Evidence) -> str:
    """The speaker of a transcript message, so the model never credits the user with a reply."""
    return f", said by the {evidence.speaker}" if evidence.origin == "transcript" else ""


def gather(search_memory: Callable[[str], list[Evidence]], search_transcripts: Callable[[str], list[Evidence]] | None,
           query: str) -> list[Evidence]:
    found = search_memory(query)
    if search_transcripts is not None:
        found += search_transcripts(query)
    return sorted(found, key=lambda e: e.score, reverse=True)
