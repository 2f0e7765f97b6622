"""Deep ranking: six weighted signals plus Light/REM reinforcement, and the promotion gates.

For an entry with n = recalls + daily + grounded signals (OpenClaw's formulas, ours in code):

    relevance     = total score / n                           weight 0.30   (keyword-only: `lexical_relevance`)
    frequency     = ln(1 + n) / ln(11)                        weight 0.24
    diversity     = distinct user queries / 5                 weight 0.15
    recency       = exp(−ln 2 · age / half-life)              weight 0.15   (age: days since last recall)
    consolidation = max(spacing, grounded / 3)                weight 0.10
                    spacing: 0 days → 0, 1 day → 0.2, else 0.55·ln(d)/ln(5) + 0.45·span/7
    conceptual    = concept tags / 6                          weight 0.06
    phase boost   = 0.06·light·fresh(light) + 0.09·rem·fresh(rem), strength = ln(1 + hits)/ln(7)

every term clamped to [0, 1]. Gates, in order: origin (untrusted / system never), already
promoted or undone, n ≥ minRecallCount, distinct queries ≥ minUniqueQueries, age ≤ maxAgeDays,
score ≥ minScore. Ties: score, then recalls, then path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..config import DeepPhaseConfig
from ..text.analyzer import analyze_document
from .store import Entry, PhaseSignal

DAY_MS = 86_400_000
WEIGHTS = {"relevance": 0.30, "frequency": 0.24, "diversity": 0.15, "recency": 0.15, "consolidation": 0.10,
           "conceptual": 0.06}
LIGHT_BOOST_MAX = 0.06
REM_BOOST_MAX = 0.09
PHASE_HALF_LIFE_DAYS = 14
BLOCKED_ORIGINS = ("untrusted", "system")


def clamp(value: float) -> float:
    return 0.0 if not math.isfinite(value) else max(0.0, min(1.0, value))


def decay(age_days: float, half_life_days: float) -> float:
    if age_days < 0 or half_life_days <= 0:
        return 1.0
    return math.exp(-math.log(2) / half_life_days * age_days)


def spacing(recall_days: list[str]) -> float:
    days = sorted({day for d in recall_days if (day := _day(d)) is not None})
    if not days:
        return 0.0
    if len(days) == 1:
        return 0.2
    span = (days[-1] - days[0]).days
    return clamp(0.55 * clamp(math.log1p(len(days) - 1) / math.log1p(4)) + 0.45 * clamp(span / 7))


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        return None


def lexical_relevance(query: str, line: str, keyword_score: float) -> float:
    """The relevance of one keyword-only recall on the scale Deep's gates assume.

    OpenClaw scores a search without an embedding provider as min(1, fts + 0.45·overlap +
    0.2·density): overlap = the share of the query's distinct words found in the text, density =
    the words found / the text's distinct words. Its gates (Deep minScore 0.8) were set on that
    scale. clawkeep's keyword score alone is a BM25 saturation that, on a small index, stays below
    0.5 even for the line's exact words; the same two terms bring it to OpenClaw's scale (the
    exact words score 1). Words: the index's analyzer (stems, CJK bigrams)."""
    asked, said = set(analyze_document(query).split()), set(analyze_document(line).split())
    if not asked or not said:
        return clamp(keyword_score)
    found = len(asked & said)
    return clamp(keyword_score + 0.45 * found / len(asked) + 0.2 * found / len(said))


def phase_boost(signal: PhaseSignal | None, now: int) -> float:
    if signal is None:
        return 0.0

    def part(hits: int, last: int | None, most: float) -> float:
        if not hits or last is None:
            return 0.0
        strength = clamp(math.log1p(hits) / math.log1p(6))
        return most * strength * clamp(decay(max(0.0, (now - last) / DAY_MS), PHASE_HALF_LIFE_DAYS))

    return clamp(part(signal.light_hits, signal.last_light_at, LIGHT_BOOST_MAX)
                 + part(signal.rem_hits, signal.last_rem_at, REM_BOOST_MAX))


@dataclass
class Ranked:
    entry: Entry
    components: dict[str, float]
    boost: float
    score: float
    age_days: float
    rejected: str | None = None  # the first gate it failed
    checks: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.rejected is None

    def to_json(self) -> dict[str, Any]:
        e = self.entry
        return {"key": e.key, "text": e.text, "path": e.path, "line": e.line, "day": e.day, "origin": e.origin,
                "score": round(self.score, 4), "components": {k: round(v, 4) for k, v in self.components.items()},
                "phaseBoost": round(self.boost, 4), "recallCount": e.recall_count, "dailyCount": e.daily_count,
                "groundedCount": e.grounded_count, "uniqueQueries": len(e.user_query_hashes),
                "ageDays": round(self.age_days, 2), "recallDays": e.recall_days, "conceptTags": e.concept_tags,
                "passed": self.passed, "rejected": self.rejected, "checks": self.checks,
                "promotedItem": e.promoted_item}


def score_entry(entry: Entry, signal: PhaseSignal | None, now: int, gates: DeepPhaseConfig) -> Ranked:
    n = entry.signal_count
    last = entry.last_recalled_at if entry.last_recalled_at is not None else entry.staged_at
    age = max(0.0, (now - last) / DAY_MS) if last is not None else 0.0
    components = {
        "relevance": clamp(entry.total_score / max(1, n)),
        "frequency": clamp(math.log1p(n) / math.log1p(10)),
        "diversity": clamp(len(entry.user_query_hashes) / 5),
        "recency": clamp(decay(age, gates.recency_half_life_days)),
        "consolidation": max(spacing(entry.recall_days), clamp(entry.grounded_count / 3)),
        "conceptual": clamp(len(entry.concept_tags) / 6),
    }
    boost = phase_boost(signal, now)
    score = clamp(sum(WEIGHTS[k] * v for k, v in components.items()) + boost)
    checks = {"signals": n, "minRecallCount": gates.min_recall_count,
              "uniqueQueries": len(entry.user_query_hashes), "minUniqueQueries": gates.min_unique_queries,
              "maxAgeDays": gates.max_age_days, "minScore": gates.min_score}
    return Ranked(entry, components, boost, score, age, _gate(entry, n, age, score, gates), checks)


def _gate(entry: Entry, n: int, age: float, score: float, gates: DeepPhaseConfig) -> str | None:
    if entry.origin in BLOCKED_ORIGINS:
        return f"origin {entry.origin}: never promoted"
    if entry.promoted_at is not None:
        return f"already promoted ({entry.promoted_item})"
    if entry.undone_at is not None:
        return "its promotion was undone by the operator"
    if n < gates.min_recall_count:
        return f"{n} signal(s) < minRecallCount {gates.min_recall_count}"
    if len(entry.user_query_hashes) < gates.min_unique_queries:
        return f"{len(entry.user_query_hashes)} distinct queries < minUniqueQueries {gates.min_unique_queries}"
    if age > gates.max_age_days:
        return f"last recalled {age:.1f} days ago > maxAgeDays {gates.max_age_days}"
    if score < gates.min_score:
        return f"score {score:.3f} < minScore {gates.min_score}"
    return None


def rank(entries: dict[str, Entry], signals: dict[str, PhaseSignal], now: int, gates: DeepPhaseConfig) -> list[Ranked]:
    """Every entry scored, the best first (those passing the gates before the others)."""
    ranked = [score_entry(e, signals.get(k), now, gates) for k, e in entries.items()]
    ranked.sort(key=lambda r: (not r.passed, -r.score, -r.entry.recall_count, r.entry.path, r.entry.key))
    return ranked
