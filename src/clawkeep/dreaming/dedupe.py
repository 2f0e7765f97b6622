"""Near-duplicate claims (Light's de-duplication): Jaccard similarity of their word sets at or
above a threshold (default 0.9), within one owner.

No pairwise scan: if |A ∩ B| / |A ∪ B| ≥ t then B holds at least ⌈t·|A|⌉ of A's words, so B
holds at least one of ANY |A| − ⌈t·|A|⌉ + 1 words of A. Probing that many of A's rarest words
in an inverted index finds every candidate; each is then verified exactly. At t = 0.9 a
ten-word claim probes two postings.
"""

from __future__ import annotations

import math
from collections.abc import Hashable


class NearDuplicates:
    def __init__(self, threshold: float):
        self.threshold = threshold
        self._sets: dict[Hashable, frozenset[str]] = {}
        self._groups: dict[Hashable, Hashable] = {}
        self._postings: dict[tuple[Hashable, str], set[Hashable]] = {}

    def add(self, key: Hashable, words: frozenset[str], group: Hashable = None) -> None:
        if key in self._sets:
            self.remove(key)
        self._sets[key] = words
        self._groups[key] = group
        for word in words:
            self._postings.setdefault((group, word), set()).add(key)

    def remove(self, key: Hashable) -> None:
        words = self._sets.pop(key, frozenset())
        group = self._groups.pop(key, None)
        for word in words:
            posting = self._postings.get((group, word))
            if posting is not None:
                posting.discard(key)
                if not posting:
                    del self._postings[(group, word)]

    def find(self, words: frozenset[str], group: Hashable = None, *, exclude: Hashable = None) -> Hashable | None:
        """The most similar known key at or above the threshold, or None."""
        if not words:
            return None
        probes = len(words) - math.ceil(self.threshold * len(words)) + 1
        rarest = sorted(words, key=lambda w: (len(self._postings.get((group, w), ())), w))[:max(1, probes)]
        candidates: set[Hashable] = set()
        for word in rarest:
            candidates |= self._postings.get((group, word), set())
        low, high = self.threshold * len(words), len(words) / self.threshold  # |B| bounds of a match
        best, best_score = None, 0.0
        for key in candidates:
            if key == exclude:
                continue
            other = self._sets[key]
            if not low <= len(other) <= high:
                continue
            shared = len(words & other)
            score = shared / (len(words) + len(other) - shared)
            if score >= self.threshold and (score > best_score or (score == best_score and str(key) < str(best))):
                best, best_score = key, score
        return best
