"""sessions_search's ranking: full-text candidates re-ranked as a dialogue.

Only for a question (it ends with a question mark, or has four terms or more): a keyword lookup
("kayak lake", an identifier) asks where its words were said, and keeps the plain re-rank by
bm25 share, coverage and exact phrases (`text.query.rerank`), at the same cost as before.

A message's own evidence is its bm25 share and its idf-weighted coverage of the question (plus
quoted phrases and identifiers it holds). Then, as memory_search does for transcript lines
(memory/search/windows.py), five things a conversation tells that single messages do not:

- *Replies.* The answer to a question usually follows it: a message gains CONTEXT_BEFORE × the
  best of the two messages before it and CONTEXT_AFTER × the one after (never across a reset).
  The two messages after each of the NEIGHBOURS best candidates, and the two before each of the
  BEFORE_OF best, join the candidates, so a reply that shares no word with the question can still
  be found, and so can what a matching reply answers ("I got you this puppy" before "it brings me
  so much joy").
- *The speaker the question names.* A message whose speaker label (`Caroline: …`, or its role:
  "what did the assistant suggest") the question names keeps its score; the others keep
  1 − SPEAKER_SHARE of it — only when the candidates hold both kinds.
- *Days.* Matches cluster on the day a topic was discussed: each message gains DAY_SHARE × its
  day's evidence (the mean of that day's best three, relative to the best day).
- *Topics.* What the question asks about is often told over several messages of one day, each
  holding a part of it: each message gains TOPIC_SHARE × the idf-weighted share of the
  question's terms that its day's candidates hold together.
- *Dates the question names* ("on 8 May 2023", "in May 2023"): messages from DATE_BEFORE days
  before to DATE_AFTER days after gain DATE_SHARE × the best score.

Measured on LoCoMo (bench/locomo_sessions.py, 1,033 questions), r@10 0.609 → 0.743; the messages
before and the topics 0.743 → 0.757 (docs/rerank.md, "sessions_search"; docs/benchmarks-history.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..storage import AgentStore, EntryRecord, SearchRow
from ..text.dialogue import day_windows, named_periods, names_speaker, query_words, speaker_labels
from ..text.query import SearchQuery, rerank, score_boost
from ..timeutil import to_iso
from .transcript import index_text_for, inter_session_source, plain_text

SHARE_WEIGHT = 0.5  # own evidence = this × bm25 share + the rest × coverage (+ 1 per phrase or identifier)
CONTEXT_BEFORE = 0.4
CONTEXT_AFTER = 0.2
SPEAKER_SHARE = 0.5
DAY_SHARE = 0.2
DAY_TOP = 3
DATE_SHARE = 0.3
DATE_BEFORE = 7
DATE_AFTER = 14
TOPIC_SHARE = 0.1
NEIGHBOURS = 10  # the best candidates whose neighbours join (one read each)
BEFORE_OF = 3  # the best candidates whose previous messages join too
NEAR = 2  # messages before and after each of them
NEAR_READ = 4  # entries read each way to find them (a slash command or a relayed message is skipped)
_CONTEXT_TYPES = ("message", "reset")


@dataclass
class _Node:
    row: SearchRow
    own: float = 0.0
    before: list[str] = field(default_factory=list)  # the (up to two) messages before, nearest first
    after: str | None = None  # the message after
    score: float = 0.0
    day: str | None = None


def dialogue_rank(found: Sequence[tuple[AgentStore, SearchRow]], query: SearchQuery, text: str) -> list[SearchRow]:
    """The candidates (and the neighbours of the best of them), best first."""
    if not found:
        return []
    if not is_question(text, query):  # a keyword lookup: where were these words said — they alone rank it
        return rerank([row for _, row in found], query, tokens=lambda r: r.tokens, rank=lambda r: r.score)
    nodes = _own_scores(found, query)
    _add_neighbours(nodes, found, query)
    _context(nodes)
    _speaker(nodes, query_words(text))
    _days(nodes)
    _topics(nodes, query)
    _dates(nodes, text)
    return [n.row for n in sorted(nodes.values(), key=lambda n: (-n.score, -n.row.entry.seq))]


def _own_scores(found: Sequence[tuple[AgentStore, SearchRow]], query: SearchQuery) -> dict[str, _Node]:
    best = min(row.score for _, row in found) or -1.0
    nodes: dict[str, _Node] = {}
    for _, row in found:
        coverage, exact = score_boost(row.tokens, query)
        share = max(0.0, row.score / best)
        nodes[row.entry.entry_id] = _Node(row, SHARE_WEIGHT * share + (1 - SHARE_WEIGHT) * coverage + exact)
    return nodes


def is_question(text: str, query: SearchQuery) -> bool:
    """A question (or a sentence of four terms or more) is ranked as dialogue; a keyword lookup
    asks where its words were said, and is ranked by them alone (and stays as fast as before)."""
    return text.rstrip().endswith(("?", "\uff1f")) or len(query.terms) >= 4


def _searchable(entry: EntryRecord) -> str | None:
    """The indexed tokens of a message that search can return (None for anything else)."""
    if entry.type != "message" or inter_session_source(entry) is not None:
        return None
    if plain_text(entry.content).startswith("/"):
        return None
    return index_text_for(entry)


def _add_neighbours(nodes: dict[str, _Node], found: Sequence[tuple[AgentStore, SearchRow]],
                    query: SearchQuery) -> None:
    """The NEAR messages after each of the best candidates and before each of the BEFORE_OF best
    (one read per store), linked to it as context: a message before a candidate may be what a
    matching reply answers. Fewer before: more of them would add as many readings of messages
    (most of a question's cost) for no gain measured."""
    stores = {row.entry.entry_id: store for store, row in found}
    best = sorted(nodes.values(), key=lambda n: -n.own)[:NEIGHBOURS]
    near: dict[str, list[EntryRecord]] = {}
    first = {id(n) for n in best[:BEFORE_OF]}
    for store in {id(s): s for s in (stores[n.row.entry.entry_id] for n in best)}.values():  # one read per store
        mine = [n for n in best if stores[n.row.entry.entry_id] is store]  # the BEFORE_OF best first
        read = store.entries_near([(n.row.entry.session_id, n.row.entry.seq) for n in mine], types=_CONTEXT_TYPES,
                                  before=NEAR_READ, after=NEAR_READ, before_of=sum(id(n) in first for n in mine))
        near.update({n.row.entry.entry_id: entries for n, entries in zip(mine, read, strict=True)})
    for rank, node in enumerate(best):
        entries, seq = near[node.row.entry.entry_id], node.row.entry.seq
        following = _messages([e for e in entries if e.seq > seq], NEAR, node, nodes, query)
        preceding = _messages([e for e in reversed(entries) if e.seq < seq], NEAR, node, nodes, query) \
            if rank < BEFORE_OF else []
        _link([*reversed(preceding), node, *following])


def _link(chain: list[_Node]) -> None:
    """Consecutive messages as context: each one's next message, and its (up to two) previous."""
    for k in range(1, len(chain)):
        nxt = chain[k]
        chain[k - 1].after = chain[k - 1].after or nxt.row.entry.entry_id
        for prev in (chain[k - 1], chain[k - 2] if k >= 2 else None):
            if prev is not None and prev.row.entry.entry_id not in nxt.before and len(nxt.before) < 2:
                nxt.before.append(prev.row.entry.entry_id)


def _messages(entries: object, count: int, origin: _Node, nodes: dict[str, _Node], query: SearchQuery) -> list[_Node]:
    """Up to `count` searchable messages from `entries` (nearest first, either way), stopping at a
    reset; each one becomes a node (with its own coverage) if it is not a candidate already."""
    out: list[_Node] = []
    for entry in entries:  # type: ignore[attr-defined]
        if entry.type == "reset" or len(out) >= count:
            break
        node = nodes.get(entry.entry_id)  # a candidate, or met before: searchable, its tokens known
        if node is None:
            tokens = _searchable(entry)
            if tokens is None:
                continue
            coverage, exact = score_boost(tokens, query)
            node = nodes[entry.entry_id] = _Node(SearchRow(entry, origin.row.session_key, 0.0, tokens),
                                                 (1 - SHARE_WEIGHT) * coverage + exact)
        out.append(node)
    return out


def _context(nodes: dict[str, _Node]) -> None:
    for node in nodes.values():
        back = max((nodes[i].own for i in node.before), default=0.0)
        forward = nodes[node.after].own if node.after else 0.0
        node.score = node.own + CONTEXT_BEFORE * back + CONTEXT_AFTER * forward


def _speaker(nodes: dict[str, _Node], words: frozenset[str]) -> None:
    named = {key: names_speaker((*speaker_labels(plain_text(n.row.entry.content)), n.row.entry.role or ""), words)
             for key, n in nodes.items()}
    if SPEAKER_SHARE and any(named.values()) and not all(named.values()):
        for key, node in nodes.items():
            if not named[key]:
                node.score *= 1 - SPEAKER_SHARE


def _day(node: _Node) -> str:
    if node.day is None:
        node.day = (to_iso(node.row.entry.timestamp) or "")[:10]
    return node.day


def _days(nodes: dict[str, _Node]) -> None:
    if not DAY_SHARE:
        return
    groups: dict[tuple[str, str], list[float]] = {}
    for node in nodes.values():
        groups.setdefault((node.row.entry.session_id, _day(node)), []).append(node.score)
    evidence = {key: sum(sorted(v, reverse=True)[:DAY_TOP]) / min(DAY_TOP, len(v)) for key, v in groups.items()}
    best = max(evidence.values(), default=0.0) or 1.0
    for node in nodes.values():
        node.score += DAY_SHARE * evidence[(node.row.entry.session_id, _day(node))] / best


def _topics(nodes: dict[str, _Node], query: SearchQuery) -> None:
    """Each message gains TOPIC_SHARE × the idf-weighted coverage of the question by all the
    candidates of its (session, day) together."""
    if not TOPIC_SHARE:
        return
    held: dict[tuple[str, str], str] = {}
    for node in nodes.values():
        key = (node.row.entry.session_id, _day(node))
        held[key] = held.get(key, "") + " " + node.row.tokens
    cover = {key: score_boost(tokens, query)[0] for key, tokens in held.items()}
    for node in nodes.values():
        node.score += TOPIC_SHARE * cover[(node.row.entry.session_id, _day(node))]


def _dates(nodes: dict[str, _Node], text: str) -> None:
    periods = named_periods(text)
    if not periods or not DATE_SHARE:
        return
    windows = day_windows(periods, DATE_BEFORE, DATE_AFTER)
    best = max((n.score for n in nodes.values()), default=0.0)
    for node in nodes.values():
        day = _day(node)
        if day and any(lo <= day <= hi for lo, hi in windows):
            node.score += DATE_SHARE * best
