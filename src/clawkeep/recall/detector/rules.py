"""The rule machinery every language uses: guards (force "no"), a question test, ordered rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ...patterns import lazy

Check = Callable[[re.Match[str], str, bool], bool]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    needs_question: bool = False
    check: Check | None = None  # extra acceptance test on (match, text, is_question)


@dataclass(frozen=True, slots=True)
class Language:
    code: str
    prepare: Callable[[str], str]
    is_question: Callable[[str], bool]
    guards: tuple[re.Pattern[str], ...]
    rules: tuple[Rule, ...]

    def match(self, normalised: str) -> str | None:
        text = self.prepare(normalised)
        if not text or any(g.search(text) for g in self.guards):
            return None
        question = self.is_question(text)
        for rule in self.rules:
            if rule.needs_question and not question:
                continue
            for m in rule.pattern.finditer(text):
                if rule.check is None or rule.check(m, text, question):
                    return f"{self.code}:{rule.name}"
        return None


def ci(pattern: str) -> re.Pattern[str]:
    """A case-insensitive pattern."""
    return lazy(pattern, re.IGNORECASE)
