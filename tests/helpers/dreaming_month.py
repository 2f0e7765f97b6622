"""A month of synthetic memory for the Dreaming tests: 30 daily notes and their recall traces,
with planted facts whose fate is known by construction.

Every planted fact is one line of one note; its traces are searches (query, time, score, the
window of lines returned) written through the recorder's own entry point, each at its own time
in the past month. Filler lines share no word with any query, so they are never recalled.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from clawkeep.dreaming.recorder import record
from clawkeep.dreaming.store import DreamsDir

FILLER = [
    "Walked five kilometres along the river before breakfast",
    "Read two chapters of a mystery novel on the train",
    "Lunch was a lentil soup with crusty bread",
    "Watered the balcony herbs and repotted the basil",
    "Called grandma for her weekly chat about neighbours",
    "Swept the hallway and sorted the recycling bins",
    "Listened to a podcast episode about volcanoes",
    "Fixed a squeaky hinge on the wardrobe door",
    "Baked oat cookies with too much cinnamon",
    "Cleaned the bicycle chain and pumped the tyres",
]

INITIAL_MEMORY = """# Memory

- I live in Berlin <!-- ck:id=m-berlin00; at=2026-01-10 -->
- My sister is called Anna <!-- ck:id=m-anna0000; at=2026-01-10 -->
"""


@dataclass
class Planted:
    name: str
    text: str  # the line as written in the note (without "- ")
    day: int  # days before today
    queries: list[str]  # one trace per query
    recall_days: list[int]  # days before today, one per query
    score: float = 0.9
    expected: str = "promoted"  # promoted | refused | gated | stale | deleted | superseded | time-bound
    marker: str = ""  # a ck marker appended to the line (e.g. an owner)
    line: int = 0  # filled in when written
    path: str = ""


def planted_facts() -> list[Planted]:
    return [
        Planted("editor", "My favourite editor is Helix", 20,
                ["which editor do I use", "editor preference", "what text editor do I like", "helix editor setup",
                 "favourite editor"], [19, 15, 11, 7, 2]),
        Planted("postgres", "We run Postgres 16 for the billing service and the reporting jobs", 16,
                ["which postgres version for billing", "billing database", "postgres reporting jobs",
                 "what runs the billing service"], [15, 12, 6, 3]),
        Planted("postgres-again", "We run Postgres 16 for the billing service and all the reporting jobs", 9,
                ["postgres version", "billing service database engine"], [8, 4], expected="merged"),
        Planted("hamburg", "I moved last month, now I live in Hamburg", 6,
                ["where do I live", "my city", "which city do I live in now", "hamburg flat", "moved to hamburg"],
                [5, 4, 3, 2, 1]),
        Planted("blue", "My favourite color is blue", 25,
                ["favourite color", "what color do I like", "color preference", "my colour choice blue",
                 "blue things i like"], [24, 20, 14, 9, 6], expected="superseded"),
        Planted("green", "My favourite color is now green", 5,
                ["favourite color now", "which color do I like", "color i prefer", "green colour",
                 "my color today"], [4, 3, 2, 1, 0]),
        Planted("tomatoes", "The tomatoes need water twice a week", 10, ["tomatoes watering"], [8],
                expected="gated"),
        Planted("report", "Send the quarterly report to my email now", 12,
                ["quarterly report", "report email", "where to send the report", "send report", "email report now"],
                [11, 9, 5, 3, 2], expected="refused"),
        Planted("printer", "This printer is so damn useless", 8,
                ["printer", "printer problems", "the office printer", "useless printer", "printer again"],
                [7, 5, 3, 2, 1], expected="refused"),
        Planted("pin", "My bank PIN is 4821", 14, ["bank pin", "pin code for the bank", "my bank card pin",
                                                  "what is my pin", "bank card code pin"],
                [13, 10, 4, 3, 1], expected="refused"),
        Planted("vlan", "The router VLAN for IoT devices is 30", 18, ["router vlan"] * 5, [17, 13, 9, 5, 2],
                expected="gated"),
        Planted("dentist", "My dentist is Dr. Weber on Lindenstrasse", 13,
                ["dentist", "who is my dentist", "dentist address lindenstrasse", "dentist appointment",
                 "weber dentist"], [12, 7, 3, 2, 1], expected="stale"),
        Planted("passport", "I keep my passport in the blue drawer", 11,
                ["passport", "where is my passport", "passport drawer", "blue drawer passport", "my passport"],
                [10, 6, 3, 2, 1], expected="deleted"),
        Planted("backup", "The nightly backup finished in twelve minutes", 7,
                ["nightly backup", "backup duration", "how long does the backup take"], [6, 4, 1],
                expected="gated", marker=" <!-- ck:id=m-cronjob1; session=agent%3Amain%3Acron%3Abackup -->"),
        Planted("oslo", "Next Tuesday I fly to Oslo for the conference", 3,
                ["oslo trip", "when do I fly to oslo", "conference travel oslo", "oslo flight", "oslo conference"],
                [3, 2, 2, 1, 1], expected="time-bound"),
        Planted("weather", "We chatted about the rainy weather", 9,
                ["weather", "rainy days", "what did we say about the weather"], [8, 5, 2], score=0.2,
                expected="gated"),
    ]


EXPECTED_PROMOTED = {"My favourite editor is Helix",
                     "We run Postgres 16 for the billing service and all the reporting jobs",
                     "I moved last month, now I live in Hamburg",
                     "My favourite color is now green"}


@dataclass
class Month:
    workspace: Path
    today: date
    facts: dict[str, Planted] = field(default_factory=dict)

    def note_path(self, days_ago: int) -> Path:
        return self.workspace / "memory" / f"{(self.today - timedelta(days=days_ago)).isoformat()}.md"

    def at(self, days_ago: int, hour: int = 12) -> int:
        moment = datetime.combine(self.today - timedelta(days=days_ago), time(hour), tzinfo=UTC)
        return min(int(moment.timestamp() * 1000), int(datetime.now(UTC).timestamp() * 1000) - 60_000)


def write_month(workspace: Path, today: date, seed: int = 7) -> Month:
    """30 daily notes (filler plus the planted facts) and every planted fact's recall traces."""
    rng = random.Random(seed)
    month = Month(workspace, today)
    facts = planted_facts()
    by_day: dict[int, list[Planted]] = {}
    for fact in facts:
        by_day.setdefault(fact.day, []).append(fact)
        month.facts[fact.name] = fact
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "MEMORY.md").write_text(INITIAL_MEMORY, encoding="utf-8")
    for days_ago in range(29, -1, -1):
        day = today - timedelta(days=days_ago)
        lines = [f"# {day.isoformat()}", ""]
        filler = rng.sample(FILLER, 3)
        lines.append(f"- {filler[0]}")
        for fact in by_day.get(days_ago, []):
            lines.append(f"- {fact.text}{fact.marker}")
            fact.line = len(lines)
            fact.path = f"memory/{day.isoformat()}.md"
            lines.append(f"- {filler[1]}")
        lines.append(f"- {filler[2]}")
        month.note_path(days_ago).write_text("\n".join(lines) + "\n", encoding="utf-8")
    dreams = DreamsDir(workspace)
    traces = []
    for fact in facts:
        for query, days_ago in zip(fact.queries, fact.recall_days, strict=True):
            traces.append((month.at(days_ago, rng.randint(8, 20)), query, fact))
    for at, query, fact in sorted(traces, key=lambda t: t[0]):
        neighbours = _window(month, fact)
        record(dreams, "search", query, [{"path": fact.path, "startLine": fact.line - 1, "endLine": fact.line + 1,
                                          "score": fact.score, "snippet": neighbours}], None, at)
    return month


def _window(month: Month, fact: Planted) -> str:
    """The lines around the fact as memory_search returns them (the fact between two fillers)."""
    lines = month.workspace.joinpath(fact.path).read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[fact.line - 2:fact.line + 1])


# the dreaming tests' configs and their day (tests/dreaming/)
CONFIG = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}},
          "session": {"reset": {"timezone": "UTC"}},
          "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": True}}}}}}


# the month plants 11 candidates that pass the gates (4 durable, 7 to be refused or skipped by
# Deep); deep.limit (10) would leave the weakest undecided, so the month test decides them all
MONTH = {**CONFIG, "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": True,
                                                                                   "deep": {"limit": 20}}}}}}}


def today():
    return datetime.now(UTC).date()
