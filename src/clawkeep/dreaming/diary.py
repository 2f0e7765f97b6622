"""The Dream Diary: a short narrative entry per sweep in DREAMS.md, for people to read.

With a model (`dreaming.model`, else the agent's primary) the model writes it from the sweep's
facts; without one, or when the model fails, it is written from the same facts by rule. The
diary is never a source of memory: DREAMS.md is not indexed and Dreaming never stages it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..errors import ClawkeepError
from .dreams_file import safe

MAX_DIARY_CHARS = 1200
PROMPT = ("Write a short dream-diary entry (at most 120 words, first person, calm) about tonight's memory "
          "consolidation, from these facts only. Do not invent anything. Plain text, no headings.")


def facts(light: Any, rem: Any, decisions: list[Any]) -> list[str]:
    """The sweep as short sentences (what both the model and the rule-based entry are written from)."""
    lines = []
    if light is not None:
        lines.append(f"Read {light.traces} recall trace(s), {light.notes} daily note(s) and "
                     f"{light.transcripts} conversation(s); staged {len(light.staged)} candidate(s).")
    if rem is not None and rem.themes:
        lines.append("Themes: " + "; ".join(f"{t.title} ({len(t.members)} notes)" for t in rem.themes[:3]) + ".")
    kept = [d for d in decisions if d.status == "promoted" and d.item is not None]
    if kept:
        lines.append("Kept for the long run: " + "; ".join(f"“{d.item.text[:100]}”" for d in kept[:5]) + ".")
    aside = Counter(d.status for d in decisions if d.status != "promoted")
    if aside:
        lines.append("Let go: " + ", ".join(f"{n} {status}" for status, n in sorted(aside.items())) + ".")
    return lines


def deterministic(light: Any, rem: Any, decisions: list[Any]) -> str:
    parts = []
    if light is not None:
        parts.append(f"I went through {light.traces} recalled moment(s) and {light.notes} page(s) of notes.")
    if rem is not None and rem.themes:
        parts.append(f"The thread I kept finding was “{rem.themes[0].title}”.")
    else:
        parts.append("No thread stood out yet.")
    kept = [d for d in decisions if d.status == "promoted" and d.item is not None]
    if kept:
        parts.append(f"I kept {len(kept)} thing(s) for the long run: "
                     + ", ".join(f"“{d.item.text[:80]}”" for d in kept[:3]) + ".")
    else:
        parts.append("Nothing was strong enough to keep yet.")
    aside = Counter(d.status for d in decisions if d.status != "promoted")
    if aside:
        parts.append("I let go of " + ", ".join(f"{n} {status}" for status, n in sorted(aside.items())) + ".")
    return " ".join(parts)


def write(model: Any, light: Any, rem: Any, decisions: list[Any]) -> tuple[str, str]:
    """(the entry text, who wrote it: `model <ref>` or `deterministic`)."""
    if model is not None:
        try:
            answer = model.complete([{"role": "user", "content": "\n".join(facts(light, rem, decisions))}],
                                    system=PROMPT, max_tokens=300, timeout_s=60).text
            text = " ".join((answer or "").split())[:MAX_DIARY_CHARS]
            if text:
                return safe(text), f"model {getattr(model, 'ref', 'configured')}"
        except ClawkeepError:
            pass  # the diary is best effort: the rule-based entry is written instead
    return safe(deterministic(light, rem, decisions)), "deterministic"


def entry(heading: str, text: str) -> str:
    return f"### {safe(heading)}\n\n{text}"
