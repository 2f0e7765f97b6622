"""Windows: memory_search returns the lines that answer, not the whole chunk.

A chunk holds ~400 tokens (a dozen chat turns) while an agent injecting memory has a character
budget (Active Memory: 1,800), so results are windows of lines, not whole chunks. Every line of
the best chunks gets a score: its chunk's score, plus LINE_COVERAGE × the share of the query's
terms the line holds (idf-weighted), plus LINE_CONTEXT × the coverage of one of the two lines
before it (in a chat the answer follows the question; never across a transcript date line, which
starts another conversation). The best lines, in score order, either extend an earlier window of
the same chunk they touch (while it fits in snippetMaxChars) or open a new window; windows come
out in the order they were opened. A line is returned once: lines of overlapping chunks, and
lines another file repeats verbatim (a session excerpt note copying a transcript), go to the
better-ranked chunk. Transcript windows start with their date line (`[2023-05-08 13:56 UTC]`, or
the chunk's day), so an agent can tell when something was said. Vector mode, temporal decay and
MMR keep their chunk order; words then only pick the lines.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ... import api
from ...text.analyzer import analyze_document
from ...text.dialogue import day_windows, names_speaker, speaker_labels
from ...text.query import SearchQuery
from ...text.snippet import snippet
from ...text.tokens import fold, main_script, normalise, scripts
from ..sessions_source import DATE_LINE
from .rank import Candidate


@dataclass
class MemoryHit:
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str  # "memory" | "sessions"
    citation: str | None = None
    vector_score: float | None = None
    text_score: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def shape(self) -> api.MemoryHit:
        """The hit as memory_search returns it (its scoring internals stay here)."""
        out: dict[str, Any] = {}
        if self.meta.get("sessionKey"):
            out["session_key"] = self.meta["sessionKey"]
            out["message_ids"] = self.meta.get("messageIds", [])
        if self.meta.get("expired"):
            out["expired"] = self.meta["expired"]
        if "rerankScore" in self.meta:  # the cross-encoder's score (models/rerank_stage.py)
            out["rerankScore"] = round(self.meta["rerankScore"], 4)
        return api.MemoryHit(path=self.path, start_line=self.start_line, end_line=self.end_line,
                             score=round(self.score, 4), snippet=self.snippet, source=self.citation,
                             origin=self.source, **out)


LINE_COVERAGE = 0.75
LINE_CONTEXT = 0.3
# Line vectors (fact-level): each line's similarity to the query, relative to this query's
# background (0 at the median line, 1 at the best), adds LINE_VECTOR to its score. Measured on
# the LoCoMo dev conversations: 0.15 → r@4000c 0.813 → 0.823 (0.3: 0.809, 1.0: 0.735; a cut-off
# that ignores weak similarities lost too).
LINE_VECTOR = 0.15
# List items and headings are independent facts: they give and take no context, and one with
# less than this share of the best line's evidence is no match (a one-chunk MEMORY.md would
# otherwise return its neighbours as a window). Transcript lines keep every matching line.
FACT_MIN_SHARE = 0.3
# A fact line with its own vector is scored as a document of its own: the search's vector and
# keyword weights applied to its own cosine similarity and its own share of the query's words,
# not its chunk's score (a MEMORY.md chunk holds ~20 facts, so the chunk's score says little
# about one of them; across languages a fact's chunk ranks by its other facts). On the
# bilingual fact set (bench/bilingual.py, top-3 line, dev / held-out): 0.69 / 0.74 with the
# chunk's score → 0.88 / 0.82; the line's similarity alone (no keyword share) 0.90 / 0.84 but
# blind to names and numbers; chunk score + fused line 0.83 / 0.77. Such a line is a result of
# its own: it never grows a window with a neighbouring fact (the line, not the file, answers).
# A fact written in none of the query's scripts (an English fact, a Chinese question) has no
# keyword share to give, while a same-language fact sharing one word with the question has:
# such a line's keyword share is taken as its cosine squared (a translation shares the meaning,
# so about as much of the words as the similarity says, discounted). Fact set top-3 0.85 →
# 0.88 (dev 0.88 → 0.91, held-out 0.82 → 0.83; the 90 notes r@1 0.90 → 0.93); the cosine
# itself (no discount) 0.87 but same-language paraphrases fell (ko 0.86 → 0.57, en 0.80 → 0.70).
# Best lines placed into windows (at least `limit`). 20, not 30: fewer weak lines grow the first
# windows, so more answers fit a small budget. Leave one LoCoMo conversation out (bench/memory_loo.py):
# every fold picked 20; r@1800c +0.006 on the left-out conversation (better on 5 of 7, worse on 1),
# r@4000c -0.001 (1 better, 1 worse); at limit 6 / 12: r@1800c +0.009 / +0.010, r@4000c -0.002 / -0.004.
LINE_POOL = 20
CHUNK_POOL = 2  # lines come from the best max(limit × this, limit + 10) chunks
GAP = ELLIPSIS = "\u2026"
_BULLET = re.compile(r"^[\s>*+-]+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s")  # list items and headings
_LATIN = frozenset({"latin"})
# A heading ("# 2026-03-22", "# Memory") is no result of its own beside a line of its chunk that
# is one: it names what the lines under it hold and answers nothing (on the bilingual fact set a
# date heading took a top-3 place from its note's answer). A heading that alone matches still
# points at its section.
_HEADING = re.compile(r"^\s*#+\s")


@dataclass
class _Lines:
    """A chunk's text lines, their line numbers (None when a long line was sliced), which
    query terms each holds, their coverage, and for transcripts the date label that applies
    to each line."""

    text: list[str]
    numbers: list[int] | None
    terms: list[frozenset[int]]
    labels: list[str | None]
    breaks: frozenset[int]  # date lines: never returned as content, never crossed by context
    covs: list[float] = field(default_factory=list)
    vecs: list[float] = field(default_factory=list)  # line-vector evidence (0 without line vectors)
    cosines: dict[int, float] = field(default_factory=dict)  # line vectors' own cosine similarity
    facts: frozenset[int] = frozenset()  # list items: independent facts, no context given or taken
    speakers: list[tuple[str, ...]] = field(default_factory=list)  # each line's `Name:` labels


@lru_cache(maxsize=32_768)
def _line_key(line: str) -> str:
    """Identity of a line's text across files: case, spacing and list markers ignored."""
    return _BULLET.sub("", " ".join(line.split()).casefold())


class _Shown:
    """Lines already claimed: by position within a file (overlapping chunks), and by text
    across files (a session excerpt note repeating a transcript line)."""

    def __init__(self) -> None:
        self.positions: set[tuple[str, int]] = set()
        self.texts: dict[str, set[str]] = {}  # line text -> paths it was claimed from

    def claim(self, path: str, number: int | None, line: str) -> bool:
        """True if the line is new (and now claimed), False if it was returned already."""
        key = _line_key(line)
        paths = self.texts.get(key)
        if (number is not None and (path, number) in self.positions) or (
                paths and (number is None or any(p != path for p in paths))):
            return False
        if number is not None:
            self.positions.add((path, number))
        self.texts.setdefault(key, set()).add(path)
        return True


_CONNECTORS = re.compile(r"[-_./:@'\u2019]")


def _needles(query: SearchQuery) -> tuple[str, ...]:
    """Substrings a line must contain to hold any query term (a cheap test before analysis).

    A stem's letters may differ from the word's near its end (happi/happy, die/dying), so a
    word stem gives its first min(4, len - 1) letters, or its first letter when it has three
    or fewer; numbers and CJK fragments give themselves.
    """
    out: set[str] = set()
    for term in query.terms:
        for form in term.forms:
            for token in form:
                if token.isascii() and token.isalpha():
                    keep = 1 if len(token) <= 3 else min(4, len(token) - 1)
                else:
                    keep = len(token)
                out.add(token[:keep])
    return tuple(out)


def _may_hold(line: str, needles: tuple[str, ...]) -> bool:
    plain, squeezed = _plain_forms(line)
    return any(n in plain or n in squeezed for n in needles)


@lru_cache(maxsize=32_768)
def _plain_forms(line: str) -> tuple[str, str]:
    """The line normalised, lowercased (with its folded form for non-ASCII text), and the same
    without connectors (Wi-Fi is also indexed as wifi); cached like `_analysed_line`: the same
    hit lines come back search after search."""
    plain = normalise(line).casefold()
    if not plain.isascii():
        plain = f"{plain} {fold(plain)}"
    return plain, _CONNECTORS.sub("", plain)


@lru_cache(maxsize=32_768)
def _analysed_line(line: str) -> str:
    """A line's analysed tokens, space-padded; cached because the same hit lines come back
    search after search (a tool loop asks several times in one turn) and analysis is the cost."""
    return f" {analyze_document(line)} "


@dataclass(frozen=True)
class _Layout:
    """What of a chunk's lines does not depend on the query: the lines, their numbers, date
    labels and breaks, which are list items, each line's speaker labels, and its stored tokens
    space-padded. Cached per chunk (`_layout`): the same hit chunks come back search after search."""

    text: list[str]
    numbers: list[int] | None
    labels: list[str | None]
    breaks: frozenset[int]
    facts: frozenset[int]
    speakers: list[tuple[str, ...]]
    padded: list[str] | None  # " tokens " per line, when the stored tokens fit the lines
    all_tokens: str | None  # the padded lines joined by a space: a needle found here lies inside one line
    starts: list[int] | None  # where each padded line starts in all_tokens


@lru_cache(maxsize=2048)
def _layout(text: str, start_line: int, end_line: int, source: str, day: str | None,
            tokens: str | None) -> _Layout:
    lines = text.split("\n")
    stored = tokens.split("\n") if tokens is not None else None
    if stored is not None and len(stored) != len(lines):
        stored = None  # not this chunk's lines (an index of an older format): analyse
    numbers = list(range(start_line, end_line + 1)) if len(lines) == end_line - start_line + 1 else None
    labels: list[str | None] = [None] * len(lines)
    breaks: set[int] = set()
    if source == "sessions":
        label = f"[{day}]" if day else None
        for i, line in enumerate(lines):
            if DATE_LINE.match(line):
                breaks.add(i)
                label = line
            labels[i] = label
    speakers = [speaker_labels(line) if i not in breaks and line.strip() else () for i, line in enumerate(lines)]
    facts = frozenset(i for i, line in enumerate(lines) if _LIST_ITEM.match(line))
    padded = [f" {t} " for t in stored] if stored is not None else None
    starts = None
    if padded is not None:
        starts, at = [], 0
        for line in padded:
            starts.append(at)
            at += len(line) + 1
    return _Layout(lines, numbers, labels, frozenset(breaks), facts, speakers, padded,
                   " ".join(padded) if padded is not None else None, starts)


def _held_terms(layout: _Layout, needles: tuple[tuple[str, ...], ...]) -> list[frozenset[int]]:
    """Which query terms each line's stored tokens hold: each needle is looked for in the joined
    lines and every occurrence assigned to its line, instead of testing every line for every
    term (date lines hold none)."""
    assert layout.all_tokens is not None and layout.starts is not None
    joined, starts = layout.all_tokens, layout.starts
    held: dict[int, set[int]] = {}
    for t, forms in enumerate(needles):
        for needle in forms:
            at = joined.find(needle)
            while at >= 0:
                line = bisect_right(starts, at) - 1
                if line not in layout.breaks:
                    held.setdefault(line, set()).add(t)
                at = joined.find(needle, at + 1)
    out: list[frozenset[int]] = [frozenset()] * len(starts)
    for line, found in held.items():
        out[line] = frozenset(found)
    return out


def _chunk_lines(chunk: Any, query: SearchQuery | None, sims: dict[int, float] | None = None,
                 needles: tuple[str, ...] = (), cosines: dict[int, float] | None = None,
                 tokens: str | None = None) -> _Lines:
    """`tokens`: the chunk's stored tokens, line by line (`analyze_lines`); without them (a
    vector-only match) each line that may hold a query term is analysed here."""
    layout = _layout(chunk.text, chunk.start_line, chunk.end_line, chunk.source, chunk.day, tokens)
    lines, padded = layout.text, layout.padded
    terms: list[frozenset[int]] = [frozenset()] * len(lines)
    if query is not None and padded is not None:
        terms = _held_terms(layout, query.needles)
    elif query is not None:
        for i, line in enumerate(lines):
            if i in layout.breaks or not line.strip() or not _may_hold(line, needles):
                continue
            held = _analysed_line(line)
            terms[i] = frozenset(t for t, forms in enumerate(query.needles) if any(n in held for n in forms))
    sims = sims or {}
    vecs = [sims.get(i, 0.0) for i in range(len(lines))]
    return _Lines(lines, layout.numbers, terms, layout.labels, layout.breaks, vecs=vecs, facts=layout.facts,
                  cosines=dict(cosines or {}), speakers=layout.speakers)


def _set_coverage(chunk_lines: list[_Lines], query: SearchQuery | None, by_lines: bool) -> None:
    """Each line's idf-weighted share of the query's terms. `by_lines`: weigh the terms by how
    many of these lines hold them instead of by the index's chunk counts (in a small index every
    chunk holds every word, and a word on every line of a one-chunk MEMORY.md tells nothing)."""
    weights = list(query.weights or (1.0,) * len(query.terms)) if query is not None else []
    if by_lines and weights:
        counted = [lines for lines in chunk_lines]
        n = sum(1 for lines in counted for i, t in enumerate(lines.text) if t.strip() and i not in lines.breaks)
        df = [0] * len(weights)
        for lines in counted:
            for held in lines.terms:
                for t in held:
                    df[t] += 1
        weights = [math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for d in df]
    total = sum(weights) or 1.0
    for lines in chunk_lines:
        lines.covs = [sum(weights[t] for t in held) / total for held in lines.terms]


def _fact_scores(lines: _Lines, fusion: tuple[float, float], query_scripts: frozenset[str]) -> dict[int, float]:
    """{line: score} of the fact lines that have a vector: fused like a chunk of one line. A line
    written in none of the query's scripts cannot hold its words, so its keyword share is
    estimated from its similarity instead (the note above LINE_POOL)."""
    wv, wt = fusion
    out = {}
    for i in lines.facts:
        if i not in lines.cosines:
            continue
        cosine, coverage = lines.cosines[i], lines.covs[i]
        if query_scripts and (written := _word_scripts(lines.text[i])) and not written & query_scripts:
            coverage = max(coverage, cosine * cosine)
        out[i] = wv * cosine + wt * coverage
    return out


@lru_cache(maxsize=32_768)
def _word_scripts(line: str) -> frozenset[str]:
    """The scripts a line's words are written in: Latin names inside a CJK sentence (网关运行在
    那台叫 atlas 的 Mac mini 上) do not make it an English line. Cached: every search asks it of
    every fact line of its ~50 chunks, a character at a time."""
    if line.isascii():
        return _LATIN if any(ch.isalpha() for ch in line) else frozenset()
    found = scripts(line)
    return found - {"latin"} if len(found) > 1 and main_script(line) != "latin" else found


def _named_day_boost(rows: list, facts: list[dict[int, float]], periods: list) -> None:
    """Fact lines of a dated note (memory/YYYY-MM-DD.md) on a day the query names gain
    DATE_SHARE of the best fact score: "what did I buy on 2 March?" asks that day's note."""
    spans = [(lo.isoformat(), hi.isoformat()) for lo, hi in periods]
    best = max((v for fact in facts for v in fact.values()), default=0.0)
    for (_, _, chunk), fact in zip(rows, facts, strict=True):
        if chunk.day and any(lo <= chunk.day <= hi for lo, hi in spans):
            for i in fact:
                fact[i] += DATE_SHARE * best


def _line_scores(lines: _Lines) -> list[float]:
    """Own coverage plus context from one of the two lines before (not across a date line)."""
    own = [LINE_COVERAGE * cov + LINE_VECTOR * vec for cov, vec in zip(lines.covs, lines.vecs, strict=True)]
    out = []
    for i, mine in enumerate(own):
        context = 0.0
        for back in () if i in lines.facts else (1, 2):
            j = i - back
            if j < 0 or j in lines.breaks or j in lines.facts:
                break
            context = max(context, own[j])
        out.append(mine + LINE_CONTEXT / LINE_COVERAGE * context)
    return out


# Turn-level ranking (a transcript line scored by itself; see _turn_scores): the chunk's score
# counts for CHUNK_SHARE, the line's own vector, the turns around it, the speaker the question
# names, the question's days and dates for the rest. Measured on LoCoMo dev (docs/benchmarks-history.md).
CHUNK_SHARE = 0.6
TURN_VECTOR = 0.5
TURN_BACK = 0.4
# A question asking for several things (text.dialogue.asks_for_several: "What pets does Nate
# have?") is answered by one turn in each of many conversations; the turns after a matching one
# then fill the budget with replies about the same thing, so they take this much of it instead.
# LoCoMo dev / held-out r@1800c / r@4000c 0.768 / 0.854, 0.771 / 0.850 → 0.771 / 0.856,
# 0.774 / 0.856; multi-hop dev 0.446 / 0.628 → 0.454 / 0.644, held-out 0.568 at 4,000 either
# way (0.1: dev multi-hop 0.643, 0.0: 0.655 but single-hop 0.929 → 0.920 and held-out
# open-domain 0.583 → 0.556).
LIST_TURN_BACK = 0.2
TURN_FORWARD = 0.2
SPEAKER_SHARE = 0.5
SESSION_SHARE = 0.2
SESSION_TOP = 3
TURN_MIN_SHARE = 0.3
DATE_SHARE = 0.3
DATE_BEFORE = 7
DATE_AFTER = 14
# A turn that asks resembles the question (its words, its vector) but tells little: a line with
# at least QUESTION_FROM of its characters in sentences ending with ?/？ loses QUESTION_SHARE ×
# that share of its score (its own evidence still gives context to the reply after it). On LoCoMo
# returned lines ended with "?" 35% of the time, evidence turns 13%, all turns 25%. Dev / held-out
# r@1800c / r@4000c 0.755 / 0.848, 0.747 / 0.839 → 0.768 / 0.854, 0.771 / 0.850 (docs/benchmarks-history.md).
QUESTION_SHARE = 0.5
QUESTION_FROM = 0.3
_SENTENCE = re.compile(r"[^.!?。！？]*(?:[.!?。！？]+|$)")
_ANNOTATION = re.compile(r"\s*\[[^\]]*\]\s*$")


@lru_cache(maxsize=32_768)
def _asking_share(line: str) -> float:
    """The share of a line's characters in sentences that ask (end with ? or ？)."""
    text = _ANNOTATION.sub("", line).strip()
    total = asked = 0
    for m in _SENTENCE.finditer(text):
        part = m.group(0).strip()
        if not part:
            continue
        total += len(part)
        if part.endswith(("?", "？")):
            asked += len(part)
    return asked / total if total else 0.0


def _day(label: str | None) -> str | None:
    return label[1:11] if label else None


def _turn_scores(rows: list, chunk_lines: list[_Lines], query_words: frozenset[str],
                 raw_sims: dict[int, dict[int, float]], periods: list, several: bool = False) -> list[list[float]]:
    back_share = LIST_TURN_BACK if several else TURN_BACK
    sims = [raw_sims.get(chunk.id, {}) for _, _, chunk in rows]
    top = max((v for s in sims for v in s.values()), default=0.0) or 1.0
    own_all = []
    for lines, sim in zip(chunk_lines, sims, strict=True):
        own_all.append([(0.0 if i in lines.breaks else TURN_VECTOR * sim.get(i, 0.0) / top + (1 - TURN_VECTOR) * cov)
                        for i, cov in enumerate(lines.covs)])
    out = []
    named_any, unnamed_any = False, False
    named_rows = []
    for lines, own in zip(chunk_lines, own_all, strict=True):
        n = len(own)
        ctx = []
        for i in range(n):
            back = 0.0
            if i not in lines.facts:
                for j in (i - 1, i - 2):
                    if j < 0 or j in lines.breaks or j in lines.facts:
                        break
                    back = max(back, own[j])
            fwd = own[i + 1] if i + 1 < n and i + 1 not in lines.breaks and i + 1 not in lines.facts \
                and i not in lines.facts else 0.0
            ctx.append(own[i] + back_share * back + TURN_FORWARD * fwd)
        named = []
        for labels in lines.speakers:
            hit = bool(labels) and names_speaker(labels, query_words)
            named.append(hit)
            if labels:
                named_any |= hit
                unnamed_any |= not hit
        named_rows.append(named)
        out.append(ctx)
    if QUESTION_SHARE:
        for lines, ctx in zip(chunk_lines, out, strict=True):
            for i in range(len(ctx)):
                if i not in lines.breaks and i not in lines.facts and ctx[i]:
                    asked = _asking_share(lines.text[i])
                    if asked >= QUESTION_FROM:
                        ctx[i] *= 1 - QUESTION_SHARE * asked
    if named_any and unnamed_any and SPEAKER_SHARE:
        for ctx, named in zip(out, named_rows, strict=True):
            for i in range(len(ctx)):
                ctx[i] *= 1.0 if named[i] else 1 - SPEAKER_SHARE
    strongest = max((v for ctx in out for v in ctx), default=0.0)
    weak = [[v < TURN_MIN_SHARE * strongest for v in ctx] for ctx in out]
    if SESSION_SHARE:
        groups: dict[tuple, dict] = {}
        for (_, _, chunk), lines, ctx in zip(rows, chunk_lines, out, strict=True):
            numbers = lines.numbers or list(range(len(ctx)))
            for i, v in enumerate(ctx):
                if i in lines.breaks or i in lines.facts:
                    continue
                groups.setdefault((chunk.path, _day(lines.labels[i])), {})[numbers[i]] = v
        agg = {k: sum(sorted(g.values(), reverse=True)[:SESSION_TOP]) / min(SESSION_TOP, len(g))
               for k, g in groups.items()}
        best = max(agg.values(), default=0.0) or 1.0
        for (_, _, chunk), lines, ctx in zip(rows, chunk_lines, out, strict=True):
            for i in range(len(ctx)):
                if i in lines.breaks or i in lines.facts:
                    continue
                ctx[i] += SESSION_SHARE * agg[(chunk.path, _day(lines.labels[i]))] / best
    if periods and DATE_SHARE:
        windows = day_windows(periods, DATE_BEFORE, DATE_AFTER)
        best = max((v for ctx in out for v in ctx), default=0.0)
        for (_, _, chunk), lines, ctx in zip(rows, chunk_lines, out, strict=True):
            for i in range(len(ctx)):
                day = _day(lines.labels[i]) or chunk.day
                if day and i not in lines.breaks and any(lo <= day <= hi for lo, hi in windows):
                    ctx[i] += DATE_SHARE * best
    return [[0.0 if w else v for v, w in zip(ctx, wk, strict=True)] for ctx, wk in zip(out, weak, strict=True)]


@dataclass
class _Window:
    score: float
    row: int  # index into the chunk rows
    lines: list[int]


def _render(lines: _Lines, picked: list[int], query: SearchQuery | None, max_chars: int) -> str:
    parts: list[str] = []
    label = None
    for n, i in enumerate(picked):
        if n and any(j not in lines.breaks for j in range(picked[n - 1] + 1, i)):
            parts.append(GAP)
        if lines.labels[i] and lines.labels[i] != label:
            label = lines.labels[i]
            parts.append(label)
        parts.append(lines.text[i])
    text = "\n".join(parts)
    if len(text) > max_chars:  # one line longer than the window: cut around the query's words
        text = snippet(text, query, max_chars) if query is not None else text[:max_chars - 1] + ELLIPSIS
    return text


def _rendered_size(lines: _Lines, picked: list[int]) -> int:
    labels = {lines.labels[i] for i in picked if lines.labels[i]}
    gaps = sum(1 for n in range(1, len(picked)) if picked[n] != picked[n - 1] + 1)
    return sum(len(lines.text[i]) + 1 for i in picked) + sum(len(x) + 1 for x in labels) + 2 * gaps - 1


def window_rows(limit: int) -> int:
    """How many of the best chunks the lines of `limit` results come from."""
    return max(limit * CHUNK_POOL, limit + 10)


def hits(scored: list, query: SearchQuery | None, limit: int, max_chars: int, citations: str,
          reorder: bool, line_sims: dict[int, dict[int, float]] | None = None,
          small_index: bool = False, fact_sims: dict[int, dict[int, float]] | None = None,
          fusion: tuple[float, float] = (1.0, 0.0), query_words: frozenset[str] | None = None,
          raw_sims: dict[int, dict[int, float]] | None = None, periods: list | None = None,
          query_scripts: frozenset[str] = frozenset(), several: bool = False,
          status: Callable[[Any], float] = lambda chunk: 1.0,
          hidden_messages: frozenset[str] = frozenset()) -> list[MemoryHit]:
    """`fact_sims`: {chunk id: {line: cosine}} of the line vectors; `fusion`: the search's
    (vector, keyword) weights, which score a fact line of its own (see FACT_MIN_SHARE);
    `query_scripts`: the scripts the query is written in (`text.tokens.scripts`); `several`: the
    question asks for several things (see LIST_TURN_BACK); `status(chunk)`: its items' weight
    (superseded, expired), which a fact line scored on its own carries too; `hidden_messages`:
    transcript message ids whose lines are never offered (they still count as matching, so a
    chunk whose only match is hidden offers nothing rather than its unmatched lines)."""
    rows = scored[:window_rows(limit)]
    line_sims, fact_sims = line_sims or {}, fact_sims or {}
    needles = _needles(query) if query is not None else ()
    chunk_lines = [_chunk_lines(chunk, query, line_sims.get(chunk.id), needles, fact_sims.get(chunk.id),
                                getattr(cand, "tokens", None)) for _, cand, chunk in rows]
    _set_coverage(chunk_lines, query, small_index)
    if reorder:
        scores = _turn_scores(rows, chunk_lines, query_words or frozenset(), raw_sims or {}, periods or [], several)
    else:
        scores = [_line_scores(lines) for lines in chunk_lines]
    facts = [_fact_scores(lines, fusion, query_scripts) if reorder else {} for lines in chunk_lines]
    if periods and reorder:
        _named_day_boost(rows, facts, periods)
    norm = 1.0 + LINE_COVERAGE + LINE_CONTEXT + LINE_VECTOR * (1 + LINE_CONTEXT / LINE_COVERAGE)
    for own, fact, (_, _, chunk) in zip(scores, facts, rows, strict=True):
        weight = status(chunk) if fact else 1.0
        for i, value in fact.items():
            own[i] = value * norm * weight  # on the scale of chunk score + line evidence (both ≤ norm)
    best = max((x for own in scores for x in own), default=0.0)
    floor = FACT_MIN_SHARE * best
    shown = _Shown()
    candidates: list[tuple[float, int, int]] = []  # (score, row, line)
    for r, ((score, _, chunk), lines, own) in enumerate(zip(rows, chunk_lines, scores, strict=True)):
        # without reordering, the chunk order stands and words only rank lines within a chunk
        base = CHUNK_SHARE * score if reorder else float(len(rows) - r)
        numbers = lines.numbers or [None] * len(lines.text)
        least = [floor if i in lines.facts else 0.0 for i in range(len(own))]
        matched = any(x > least[i] for i, x in enumerate(own) if i not in lines.breaks and lines.text[i].strip())
        # a chunk with matching lines offers those (and their answers) only; a scored fact line
        # under the floor that holds none of the question's words is never offered (only its
        # vector kept it, and a better fact elsewhere answers)
        offered = [i for i, line in enumerate(lines.text)
                   if i not in lines.breaks and line.strip() and not (matched and own[i] <= least[i])
                   and not (i in facts[r] and own[i] <= floor and not lines.covs[i])]
        if hidden_messages:
            offered = _unhidden(chunk, lines, offered, hidden_messages)
        if any(not _HEADING.match(lines.text[i]) for i in offered):
            offered = [i for i in offered if not _HEADING.match(lines.text[i])]
        elif not matched:
            offered = []  # a lone heading ("# Memory") that holds none of the question answers nothing
        for i in offered:
            line = lines.text[i]
            if not shown.claim(chunk.path, numbers[i], line):
                continue
            if i in facts[r]:  # a fact line with its own vector: its own score, not its chunk's
                candidates.append((own[i], r, i))
                continue
            candidates.append((base + (own[i] if reorder else 1e-3 * own[i]), r, i))
    candidates.sort(key=lambda c: -c[0])
    windows: list[_Window] = []
    for score, r, i in candidates[: max(LINE_POOL, limit)]:
        lines = chunk_lines[r]
        touching = next((w for w in windows if w.row == r and w.lines[0] - 1 <= i <= w.lines[-1] + 1), None)
        if touching is not None and i in facts[r] and any(j in facts[r] for j in touching.lines):
            touching = None  # scored facts are results of their own: the line, not its neighbours
        if touching is not None:
            grown = sorted([*touching.lines, i])
            if _rendered_size(lines, grown) <= max_chars:
                touching.lines = grown
                continue
        windows.append(_Window(score, r, [i]))
    out = []
    for w in windows[:limit]:
        score, cand, chunk = rows[w.row]
        shown_score = w.score / norm if reorder else score
        out.append(_hit(shown_score, cand, chunk, chunk_lines[w.row], w.lines, query, max_chars, citations))
    return out


def _unhidden(chunk: Any, lines: _Lines, offered: list[int], hidden: frozenset[str]) -> list[int]:
    """`offered` without the lines of hidden messages. A transcript chunk's messageIds run one
    per line; when its lines were sliced (one very long message) they no longer line up, and the
    chunk is dropped whole if every message in it is hidden, kept whole otherwise."""
    ids = chunk.meta.get("messageIds") if chunk.source == "sessions" else None
    if not isinstance(ids, list):
        return offered
    if len(ids) == len(lines.text):
        return [i for i in offered if ids[i] not in hidden]
    return [] if {i for i in ids if i} <= hidden else offered


def _hit(score: float, cand: Candidate, chunk: Any, lines: _Lines, picked: list[int], query: SearchQuery | None,
         max_chars: int, citations: str) -> MemoryHit:
    start, end = chunk.start_line, chunk.end_line
    meta = dict(chunk.meta)
    ids = meta.get("messageIds")
    if lines.numbers is not None:
        start, end = lines.numbers[picked[0]], lines.numbers[picked[-1]]
        if isinstance(ids, list) and len(ids) == len(lines.text):
            ids = [ids[i] for i in picked]
    if isinstance(ids, list):
        meta["messageIds"] = [i for i in ids if i]  # date lines have no message
    excerpt = _render(lines, picked, query, max_chars)
    citation = None if citations == "off" else f"Source: {chunk.path}#L{start}-L{end}"
    return MemoryHit(chunk.id, chunk.path, start, end, score, excerpt, chunk.source,
                     citation, cand.vector, cand.text, meta)
