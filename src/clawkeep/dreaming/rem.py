"""REM sleep: themes and reflections over the staged candidates; the `## REM Sleep` block.

Without a model, themes are clusters of candidates that share concept tags (two tags, half of
their tags, or one rare tag — carried by at most 2% of the pool, or two candidates; tags carried
by more than half of the pool say nothing and are ignored). With a
model (`dreaming.model`, else the agent's primary), the model groups the numbered candidates
and writes one reflection per theme; an answer that is not the JSON asked for, or a failing
model, falls back to the clusters. Either way a theme's strength is computed here:

    strength = 0.4·min(1, members/3) + 0.3·min(1, distinct queries/5) + 0.3·min(1, distinct days/3)

and the members of themes at or above `rem.minPatternStrength` (0.75) get one REM
reinforcement per day. REM never writes MEMORY.md; its words never become a memory.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..config import Config
from ..errors import ClawkeepError
from .rank import DAY_MS
from .schedule import local_day, settings
from .store import Entry
from .working import Working

MAX_MODEL_CANDIDATES = 40
MAX_POOL = 500  # clustering looks at the strongest candidates only
MAX_REFLECTION_CHARS = 300
MAX_TITLE_CHARS = 80
GENERIC_TAG_SHARE = 0.5
RARE_TAG_SHARE = 0.02  # a tag this few candidates carry is specific enough to link two alone
SYSTEM_PROMPT = (
    "You review short memory fragments a user's assistant collected. Group the fragments that are about the same "
    "topic into themes and write one short reflection per theme (what the user keeps coming back to). Use only "
    "what the fragments say. Answer with JSON only, exactly: "
    '{"themes": [{"title": "...", "members": [fragment numbers], "reflection": "..."}]}')


@dataclass
class Theme:
    title: str
    members: list[Entry]
    reflection: str
    strength: float = 0.0
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "strength": round(self.strength, 3), "reflection": self.reflection,
                "members": [{"key": e.key, "text": e.text, "path": e.path} for e in self.members]}


@dataclass
class RemReport:
    themes: list[Theme]
    candidates: int
    source: str  # model <ref> | deterministic
    note: str | None = None  # why the model was not used
    reinforced: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "source": self.source, "note": self.note,
                "reinforced": self.reinforced, "themes": [t.to_json() for t in self.themes]}


def pool(work: Working, now: int, lookback_days: int) -> list[Entry]:
    cutoff = now - lookback_days * DAY_MS
    found = [e for e in work.entries.values()
             if e.staged_at is not None and e.promoted_at is None and e.undone_at is None
             and e.origin not in ("system", "untrusted") and max(e.last_recalled_at or 0, e.staged_at) >= cutoff]
    found.sort(key=lambda e: (-e.signal_count, e.key))
    return found[:MAX_POOL]


def run(work: Working, config: Config, now: int, model: Any = None, *, reinforce: bool = True) -> RemReport:
    rem = settings(config).rem
    candidates = pool(work, now, rem.lookback_days)
    themes, source, note = None, "deterministic", None
    if model is not None and candidates:
        try:
            themes = model_themes(model, candidates[:MAX_MODEL_CANDIDATES])
            source = f"model {getattr(model, 'ref', 'configured')}"
        except (ClawkeepError, ValueError) as exc:
            note = f"the model's themes could not be used ({exc}); clustered instead"
    if themes is None:
        themes = cluster(candidates)
    for theme in themes:
        theme.strength = strength(theme.members)
    themes.sort(key=lambda t: (-t.strength, t.title))
    report = RemReport(themes, len(candidates), source, note)
    if reinforce:
        today = local_day(config, now)
        strong = {e.key for t in themes if t.strength >= rem.min_pattern_strength for e in t.members}
        for key in sorted(strong):
            signal = work.signal(key)
            if signal.last_rem_at is None or local_day(config, signal.last_rem_at) != today:
                signal.rem_hits += 1
                signal.last_rem_at = now
                report.reinforced += 1
    return report


def strength(members: list[Entry]) -> float:
    queries = {q for e in members for q in e.user_query_hashes}
    days = {d for e in members for d in e.recall_days}
    return (0.4 * min(1.0, len(members) / 3) + 0.3 * min(1.0, len(queries) / 5)
            + 0.3 * min(1.0, len(days) / 3))


def cluster(candidates: list[Entry]) -> list[Theme]:
    """Connected groups of candidates sharing concept tags (deterministic for the same input)."""
    counts = Counter(t for e in candidates for t in set(e.concept_tags))
    generic = {t for t, n in counts.items() if len(candidates) >= 4 and n > GENERIC_TAG_SHARE * len(candidates)}
    tags = [set(e.concept_tags) - generic for e in candidates]
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_tag: dict[str, list[int]] = {}
    for i, own in enumerate(tags):
        for tag in own:
            by_tag.setdefault(tag, []).append(i)
    rare = max(2, int(RARE_TAG_SHARE * len(candidates)))
    for members in by_tag.values():
        for a_pos, a in enumerate(members):
            for b in members[a_pos + 1:]:
                shared = len(tags[a] & tags[b])
                if shared >= 2 or len(members) <= rare or shared * 2 >= min(len(tags[a]), len(tags[b])):
                    parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in range(len(candidates)):
        groups.setdefault(root(i), []).append(i)
    themes = []
    for indices in groups.values():
        if len(indices) < 2:
            continue
        members = [candidates[i] for i in indices]
        common = Counter(t for i in indices for t in tags[i])
        ordered = sorted(common.items(), key=lambda kv: (-kv[1], kv[0]))
        top = [t for t, n in ordered if n >= 2][:3] or [ordered[0][0]]  # what the members share
        themes.append(Theme(", ".join(top), members, _reflection(", ".join(top), members), tags=top))
    return themes


def _reflection(title: str, members: list[Entry]) -> str:
    recalls = sum(e.recall_count for e in members)
    queries = len({q for e in members for q in e.user_query_hashes})
    days = len({d for e in members for d in e.recall_days})
    best = max(members, key=lambda e: (e.signal_count, e.key))
    return (f"{title}: {len(members)} related notes over {days} day(s), recalled {recalls} time(s) by {queries} "
            f"different question(s) — e.g. “{best.text[:160]}”.")


def model_themes(model: Any, candidates: list[Entry]) -> list[Theme]:
    listing = "\n".join(f"{i}. {e.text[:300]}" for i, e in enumerate(candidates, start=1))
    answer = model.complete([{"role": "user", "content": f"Fragments:\n{listing}"}], system=SYSTEM_PROMPT,
                            max_tokens=800, timeout_s=60).text
    match = re.search(r"\{.*\}", answer or "", re.DOTALL)
    if not match:
        raise ValueError("no JSON object in the answer")
    data = json.loads(match.group())
    raw = data.get("themes") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ValueError('the answer has no "themes" list')
    themes = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        numbers = [n for n in item.get("members") or () if isinstance(n, int) and 1 <= n <= len(candidates)]
        members = [candidates[n - 1] for n in dict.fromkeys(numbers)]
        title = " ".join(str(item.get("title") or "").split())[:MAX_TITLE_CHARS]
        reflection = " ".join(str(item.get("reflection") or "").split())[:MAX_REFLECTION_CHARS]
        if members and title:
            themes.append(Theme(title, members, reflection or _reflection(title, members)))
    return themes


def block(report: RemReport, when: str) -> str:
    head = (f"_{when} · {len(report.themes)} theme(s) from {report.candidates} staged candidate(s) · "
            f"{report.source}_")
    if report.note:
        head += f"\n\n_{report.note}_"
    parts = [head]
    for theme in report.themes:
        members = "\n".join(f"  - {e.text}" for e in theme.members[:8])
        more = f"\n  - … and {len(theme.members) - 8} more" if len(theme.members) > 8 else ""
        parts.append(f"### {theme.title} (strength {theme.strength:.2f})\n\n{theme.reflection}\n\n{members}{more}")
    if not report.themes:
        parts.append("No recurring theme yet.")
    return "\n\n".join(parts)
