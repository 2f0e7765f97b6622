"""FTS5's bm25 ranking, computed from posting lists kept in memory between searches.

FTS5 ranks a MATCH by calling bm25 on every matching row: a row's size and its position
lists are read each time, ≈1.5-2.5 µs a row, so two common words matching half of 10,000
chunks cost 5-12 ms a search however few results are wanted. A long-running process (the
gateway, an agent's tool loop) asks about the same common words again and again, so this
module keeps, until the next commit to the file, each row's size and each asked term's
(row, frequency) list, and scores with numpy by FTS5's own formula:

    score(row) = -Σ_phrase idf · tf·(k1+1) / (tf + k1·(1 − b + b·|row| / avg|row|)),
    idf = ln((N − n + 0.5) / (n + 0.5)), at least 1e-6;  k1 = 1.2, b = 0.75

(N rows, n rows holding the phrase; tf: the phrase's occurrences in the row). Results equal
FTS5's `ORDER BY bm25(...), rowid` to floating-point rounding. Phrases of several tokens (a
Chinese query's run of bigrams, "装修 修方 方案") are counted from their tokens' positions,
read once per phrase; prefix terms go to FTS5. A store uses this from its second search after a
commit, so a one-shot CLI process never pays for loading the sizes.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...deferred import deferred_import
from ..query import TextQuery

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: a one-shot CLI ranks with FTS5 alone

K1, B = 1.2, 0.75  # FTS5's bm25 constants
ACTIVATE_AFTER_SEARCHES = 1  # searches answered by FTS5 after a commit before the sizes are loaded
MAX_CACHED_POSTINGS = 2_000_000  # (row, tf) pairs kept in all (≈32 MB); least recently used terms go first
# Loaded ahead, on a background thread, once the cache is in use: the posting lists of the terms in
# at least WARM_MIN_ROWS rows (a cold one costs ≈1 µs a row, as FTS5 would to rank it), least
# common first, up to WARM_SHARE of the budget, so a long-running process rarely pays for a common
# word on the first search that asks for it.
WARM_MIN_ROWS = 500
WARM_SHARE = 0.5
WARM_EVERY_S = 600.0  # at most one load ahead per store in this long (see SqliteMemoryStore._warm_allowed)
WARM_AFTER_SEARCHES = 3  # searches since the commit before loading ahead: a one-shot CLI never does
WARM_BATCH = 4  # terms per read transaction of the loading thread (a search waits for at most one batch)

# Matching rows (summed over a query's phrases) up to which `_top` scores in a Python loop: numpy
# costs ≈1-2 µs a call, ≈25 µs a ranking, more than the loop over this many rows (identifiers,
# rare words).
SMALL_POSTINGS = 128

Rows = Callable[[str, Sequence[Any]], list[Any]]


def _idf(total: int, hits: int) -> float:
    """FTS5's idf of a phrase in `hits` of `total` rows (at least 1e-6, as FTS5 clamps it)."""
    idf = math.log((total - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def phrases(query: TextQuery) -> list[tuple[str, ...]] | None:
    """The phrases of `query` as FTS5 ranks them (one per alternative, repeats kept), or None
    when one is a prefix or holds a token FTS5 may read as something else (FTS5 ranks those)."""
    out = []
    for term in query.terms:
        if term.prefix:
            return None
        for phrase in term.phrases:
            if not phrase or not all(plain(token) for token in phrase):
                return None
            out.append(tuple(phrase))
    return out or None


class NotOneToken(Exception):
    """A phrase FTS5 tokenizes differently from its text (case, diacritics, a separator inside)."""


class OverBudget(Exception):
    """A phrase whose posting list is not kept, and the budget is spent (SizesWithPostings)."""


def quoted(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def plain(token: str) -> bool:
    """Text FTS5's unicode61 tokenizer keeps as it is: lower-case ASCII letters and digits, or
    letters of scripts without case or diacritics to fold (CJK, kana, hangul: U+2E80 on)."""
    return bool(token) and all(("a" <= ch <= "z") or ("0" <= ch <= "9") or (ord(ch) >= 0x2E80 and ch.isalnum())
                               for ch in token)


def _varints(blobs: list[bytes]) -> list[int]:
    """The first varint of each docsize record (one indexed column: the row's token count)."""
    out = []
    for blob in blobs:
        value = 0
        for byte in blob[:9]:
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


class Bm25Cache:
    """Row sizes and posting lists of one FTS5 table as of one committed state of the file."""

    def __init__(self, table: str, instances: str, version: Callable[[Rows], Any] | None = None) -> None:
        """`version(rows)`: a value every commit that changes `table` moves (without one, nothing
        is loaded ahead: a background load could not tell which state it read)."""
        self.table, self.instances, self._version = table, instances, version
        self.searches = 0
        self._lock = threading.Lock()
        self._ids: np.ndarray | None = None  # sorted rowids
        self._sizes: np.ndarray | None = None  # tokens per row, aligned with _ids
        self._total: int | None = None  # rows in the table, once the sizes are loaded
        self._average = 0.0
        self._postings: OrderedDict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cached = 0
        self._not_one: set[tuple[str, ...]] = set()
        self.generation: str | None = None  # the index's generation the sizes were read at
        self._warm = "no"  # "no" → "due" once the sizes are loaded → "started" (or "skipped")

    def take_warm_start(self, allowed: Callable[[], bool] = lambda: True) -> bool:
        """True once, when the background load of common terms should start (see `warm`): the
        sizes are loaded, this state of the index has been searched WARM_AFTER_SEARCHES times,
        and `allowed()` (asked then, once) agrees; otherwise it is "skipped" for this state."""
        with self._lock:
            if self._warm != "due" or self.searches < WARM_AFTER_SEARCHES:
                return False
            self._warm = "started" if allowed() else "skipped"
            return self._warm == "started"

    def warm(self, snapshot: Callable[[Callable[[Rows], Any]], Any], stop: threading.Event,
             min_rows: int = WARM_MIN_ROWS) -> None:
        """Load the posting lists of the terms in `min_rows` rows or more ahead of the searches,
        `snapshot(work)` running `work(rows)` in one read transaction of another connection.
        Stops when the index changed since the sizes were read (its generation moved), when
        `stop` is set, or on any error: everything it does is an optimisation."""
        def batch_of(terms: list[str]) -> list[tuple[str, Any]] | None:
            def work(rows: Rows) -> list[tuple[str, Any]] | None:
                if self._version(rows) != self.generation:
                    return None
                return [(term, self._read_posting(rows, term)) for term in terms]
            return snapshot(work)

        try:
            listed = snapshot(lambda rows: (self._version(rows), rows(
                f"SELECT term, doc FROM {self.table}_vocab WHERE doc >= ? ORDER BY doc, term", (min_rows,))))
            if listed[0] != self.generation:
                return
            budget = int(MAX_CACHED_POSTINGS * WARM_SHARE)
            terms = [term for term, _ in listed[1] if plain(term)]
            for start in range(0, len(terms), WARM_BATCH):
                if stop.is_set():
                    return
                loaded = batch_of(terms[start:start + WARM_BATCH])
                if loaded is None:
                    return
                with self._lock:
                    for term, posting in loaded:
                        if posting is None:
                            self._not_one.add((term,))
                        elif (term,) not in self._postings:
                            if self._cached + len(posting[0]) > budget:
                                return
                            self._keep((term,), posting)
        except Exception:  # noqa: BLE001 - a closed store, a locked file: searches load what they need
            return

    def wanted(self) -> bool:
        """Count this search; True once the cache is worth loading (see ACTIVATE_AFTER_SEARCHES)."""
        with self._lock:
            self.searches += 1
            return self._total is not None or self.searches > ACTIVATE_AFTER_SEARCHES

    def top(self, rows: Rows, phrases: list[tuple[str, ...]], limit: int) -> list[tuple[int, float]] | None:
        """(rowid, bm25) of the best `limit` rows matching any phrase, best first, ties by rowid;
        None when a phrase is not what FTS5 reads after all, or its list cannot be kept (FTS5
        must rank that query)."""
        try:
            return self._top(rows, phrases, limit)
        except (NotOneToken, OverBudget):
            return None

    def _top(self, rows: Rows, phrases: list[tuple[str, ...]], limit: int) -> list[tuple[int, float]]:
        with self._lock:
            total = self._load_sizes(rows)
            if total == 0 or limit <= 0:
                return []
            postings = [posting for posting in (self._sized_posting(rows, phrase) for phrase in phrases)
                        if len(posting[0])]
            if sum(len(posting[0]) for posting in postings) <= SMALL_POSTINGS:
                return self._top_in_python(postings, total, limit)
            found, scores = [], []
            for docs, freqs, lengths in postings:
                idf = _idf(total, len(docs))
                norm = K1 * (1 - B + B * lengths / self._average)
                found.append(docs)
                scores.append(idf * ((freqs * (K1 + 1)) / (freqs + norm)))  # FTS5's order of operations
        if not found:
            return []
        docs = np.concatenate(found)
        if len(found) == 1:
            unique, summed = docs, scores[0]
        else:
            unique, inverse = np.unique(docs, return_inverse=True)
            summed = np.bincount(inverse, weights=np.concatenate(scores))
        if len(unique) > limit:  # only the best `limit` (plus ties at the edge) are sorted
            edge = np.partition(-summed, limit - 1)[limit - 1]
            keep = -summed <= edge
            unique, summed = unique[keep], summed[keep]
        order = np.lexsort((unique, -summed))[:limit]
        return [(int(d), -float(s)) for d, s in zip(unique[order], summed[order], strict=True)]

    def _top_in_python(self, postings: list[tuple[np.ndarray, ...]], total: int, limit: int) -> list[tuple[int, float]]:
        """`_top` of a few rows, summed in a loop: the same operations in the same order on the
        same IEEE doubles as numpy's, so the same scores, without numpy's cost per call."""
        summed: dict[int, float] = {}
        for docs, freqs, lengths in postings:
            idf = _idf(total, len(docs))
            for doc, freq, length in zip(docs.tolist(), freqs.tolist(), lengths.tolist(), strict=True):
                norm = K1 * (1 - B + B * length / self._average)
                summed[doc] = summed.get(doc, 0.0) + idf * ((freq * (K1 + 1)) / (freq + norm))
        best = sorted(summed.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [(doc, -score) for doc, score in best]

    def _sized_posting(self, rows: Rows, phrase: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, occurrences, row sizes) of a phrase, rows another process added since the
        sizes were read left out."""
        assert self._ids is not None and self._sizes is not None
        docs, freqs = self._posting(rows, phrase)
        at = np.minimum(np.searchsorted(self._ids, docs), len(self._ids) - 1)
        known = self._ids[at] == docs  # False only for a row another process added since
        if not known.all():
            docs, freqs, at = docs[known], freqs[known], at[known]
        return docs, freqs, self._sizes[at]

    def _load_sizes(self, rows: Rows) -> int:
        """The table's row count, every row's size read on the first call."""
        if self._total is not None:
            return self._total

        before = self._version(rows) if self._version else None
        records = rows(f"SELECT id, sz FROM {self.table}_docsize ORDER BY id", ())
        if self._version and self._version(rows) == before:  # no commit between: `before`'s postings fit
            self.generation, self._warm = before, "due"
        self._ids = np.fromiter((r[0] for r in records), dtype=np.int64, count=len(records))
        self._sizes = np.asarray(_varints([r[1] for r in records]), dtype=np.float64)
        self._average = float(self._sizes.sum()) / len(records) if records else 0.0
        self._total = len(records)
        return self._total

    def _posting(self, rows: Rows, phrase: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        if phrase in self._not_one:
            raise NotOneToken(" ".join(phrase))
        cached = self._postings.get(phrase)
        if cached is not None:
            self._postings.move_to_end(phrase)
            return cached
        posting = self._read_posting(rows, phrase[0]) if len(phrase) == 1 else self._read_phrase(rows, phrase)
        if posting is None:
            self._not_one.add(phrase)
            raise NotOneToken(" ".join(phrase))
        self._keep(phrase, posting)
        return posting

    def _read_phrase(self, rows: Rows, phrase: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, occurrences) of a phrase of several tokens: the positions where token i sits i
        places after the first, counted per row; None unless FTS5 matches exactly those rows."""
        starts = None
        for shift, token in enumerate(phrase):
            # the table indexes one column (see _varints), so a row and an offset name a position
            found = rows(f"SELECT doc, offset FROM {self.instances} WHERE term = ?", (token,))
            table = np.array(found, dtype=np.int64).reshape(-1, 2)
            keys = (table[:, 0] << 32) + (table[:, 1] - shift)  # one int64: row, offset of the phrase's start
            starts = keys if starts is None else np.intersect1d(starts, keys, assume_unique=True)
            if not len(starts):
                break
        docs, counts = np.unique(starts >> 32, return_counts=True)
        matched = rows(f"SELECT count(*) FROM {self.table} WHERE {self.table} MATCH ?", (quoted(" ".join(phrase)),))
        if matched[0][0] != len(docs):
            return None
        return np.ascontiguousarray(docs), counts.astype(np.float64)

    def _read_posting(self, rows: Rows, token: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, frequencies) of one token, or None when FTS5 reads it as other tokens."""
        pairs = rows(f"SELECT doc, count(*) FROM {self.instances} WHERE term = ? GROUP BY doc", (token,))
        matched = rows(f"SELECT count(*) FROM {self.table} WHERE {self.table} MATCH ?", (quoted(token),))[0][0]
        if matched != len(pairs):  # FTS5 reads this phrase as other tokens than the text itself
            return None
        table = np.array(pairs, dtype=np.int64).reshape(-1, 2)  # converted in C: the GIL is held briefly
        return np.ascontiguousarray(table[:, 0]), table[:, 1].astype(np.float64)

    def _keep(self, token: tuple[str, ...], posting: tuple[np.ndarray, ...]) -> None:
        self._postings[token] = posting
        self._cached += len(posting[0])
        while self._cached > MAX_CACHED_POSTINGS and len(self._postings) > 1:
            _, old = self._postings.popitem(last=False)  # (rows, occurrences[, sizes])
            self._cached -= len(old[0])



def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """The SQLite varint at `at` of `blob` (7 bits a byte, high bit set on all but the last;
    values here stay far below the 9-byte form), and where the next one starts."""
    value = 0
    while True:
        byte = blob[at]
        at += 1
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at


def fts_row_count(averages: bytes | None) -> int:
    """The row count at the start of an FTS5 table's averages record (None or empty: no rows yet)."""
    return _varint(averages, 0)[0] if averages else 0


class SizesWithPostings(Bm25Cache):
    """A `Bm25Cache` that reads each posting list's row sizes with it, and the table's row count
    and token total from FTS5's averages record (what its bm25 reads too), never every row's size.

    For a table that commits often and grows large (transcripts: each message is a commit, a
    store holds up to millions of rows), where reading all sizes again after each commit would
    cost ≈1 µs a row; a posting list costs about what FTS5 spends ranking its rows, once per
    state of the table. Nothing is loaded ahead (no `version`). Occurrences and sizes are kept as
    int32 (16 bytes a row with its rowid, as the base class keeps): numpy and Python turn them into
    the same doubles FTS5 computes with, exactly."""

    def _load_sizes(self, rows: Rows) -> int:
        if self._total is None:
            # FTS5's averages record (row 1 of %_data): the row count, then each column's token total
            found = rows(f"SELECT block FROM {self.table}_data WHERE id = 1", ())
            count, at = _varint(found[0][0], 0) if found and found[0][0] else (0, 0)
            tokens = _varint(found[0][0], at)[0] if count else 0
            self._average = float(tokens) / float(count) if count else 0.0  # FTS5's avgdl, as it divides
            self._total = count
        return self._total

    def _sized_posting(self, rows: Rows, phrase: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if phrase not in self._postings and self._cached >= MAX_CACHED_POSTINGS:
            # Nothing is evicted: a million-row store's common words hold more rows than the
            # budget, and searches cycling through them would read every list again each time
            # (≈2-3x FTS5's ranking). Once it is spent, FTS5 ranks what is not kept, until the
            # next state of the index starts over.
            raise OverBudget(" ".join(phrase))
        return self._posting(rows, phrase)  # type: ignore[return-value]  # stored with their sizes

    def _keep(self, token: tuple[str, ...], posting: tuple[np.ndarray, ...]) -> None:
        """Kept whole, past the budget by one list at most (see `_sized_posting`)."""
        self._postings[token] = posting
        self._cached += len(posting[0])

    def _read_posting(self, rows: Rows, token: str) -> tuple[np.ndarray, ...] | None:
        found = rows(f"SELECT i.doc, i.n, d.sz FROM (SELECT doc, count(*) AS n FROM {self.instances} WHERE term = ? "
                     f"GROUP BY doc) i JOIN {self.table}_docsize d ON d.id = i.doc ORDER BY i.doc", (token,))
        matched = rows(f"SELECT count(*) FROM {self.table} WHERE {self.table} MATCH ?", (quoted(token),))[0][0]
        if matched != len(found):  # FTS5 reads this phrase as other tokens than the text itself
            return None
        docs = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        freqs = np.fromiter((r[1] for r in found), dtype=np.int32, count=len(found))
        return docs, freqs, self._sizes_of([r[2] for r in found])

    def _read_phrase(self, rows: Rows, phrase: tuple[str, ...]) -> tuple[np.ndarray, ...] | None:
        counted = super()._read_phrase(rows, phrase)
        if counted is None:
            return None
        docs, counts = counted
        # the rows' sizes, read by rowid in the order of `docs` (ascending, as FTS5 stores them)
        sizes = rows(f"SELECT sz FROM {self.table}_docsize WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                     (json.dumps(docs.tolist()),))
        if len(sizes) != len(docs):  # a row without its size record: FTS5 ranks this one
            return None
        return docs, counts.astype(np.int32), self._sizes_of([r[0] for r in sizes])

    @staticmethod
    def _sizes_of(blobs: list[bytes]) -> np.ndarray:
        return np.asarray(_varints(blobs), dtype=np.int32)
