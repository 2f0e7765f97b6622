"""Salvage the readable rows of a damaged SQLite file (`clawkeep doctor --repair`).

Two sources, merged per table:

1. SQLite itself. Preferred: the `sqlite3` shell's `.recover` when it is on PATH and works
   (Debian 12's build cannot: its library lacks the sqlite_dbpage table `.recover` needs, so
   every run fails with "SQL logic error"). Otherwise each table is read by rowid ranges through
   the normal B-tree; a range that fails is split in two until single rows, so only the rows
   behind an unreadable page are lost on this path.
2. A pure-Python scan of every table-leaf page in the file (page header, cell pointers,
   varints, overflow chains, record format). It finds rows that no B-tree path reaches any more
   (a damaged interior page, a damaged schema page, a garbage file header) and is only used for
   rowids the first source could not read, so rows SQLite reads normally are never second-guessed
   and deleted rows on free pages (excluded when the header's freelist is readable) do not
   come back where SQLite can tell.

A scanned row is attributed to a table by shape: the caller's `accept` check on the row mapped
to that table's columns. Nothing here writes to the file being salvaged: callers pass a copy.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAGIC = b"SQLite format 3\x00"
TABLE_LEAF, TABLE_INTERIOR, INDEX_LEAF, INDEX_INTERIOR = 0x0D, 0x05, 0x0A, 0x02
PROBE_BUDGET = 200_000  # single-row reads before the rest of a failing range is left to the page scan
SHELL_TIMEOUT_S = 600


@dataclass
class TableSpec:
    """A table to salvage: its current columns (used to map scanned rows when the file's own
    schema is unreadable), the INTEGER PRIMARY KEY column if any, and a shape check."""

    name: str
    columns: list[str]
    accept: Callable[[dict[str, Any]], bool]
    rowid_column: str | None = None


@dataclass
class TableResult:
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)  # rowid -> column values
    read: int = 0  # rows read through SQLite (.recover or B-tree)
    scanned: int = 0  # rows only the page scan found
    unreadable: list[tuple[int, int]] = field(default_factory=list)  # rowid ranges SQLite could not read
    readable: bool = False  # SQLite could reach the table at all
    expected_max_rowid: int | None = None  # sqlite_sequence / max(rowid), when readable


@dataclass
class Salvage:
    method: str
    tables: dict[str, TableResult]
    header: dict[str, Any]
    notes: list[str] = field(default_factory=list)


# --- the file header ---------------------------------------------------------------------------
def read_header(data: bytes) -> dict[str, Any]:
    """The 100-byte header's fields, or {"valid": False} when it is not an SQLite header."""
    if len(data) < 100 or data[:16] != MAGIC:
        return {"valid": False}
    size = int.from_bytes(data[16:18], "big")
    size = 65536 if size == 1 else size
    if size < 512 or size > 65536 or size & (size - 1):
        return {"valid": False}
    return {"valid": True, "pageSize": size, "reserved": data[20],
            "pageCount": int.from_bytes(data[28:32], "big"), "freelistTrunk": int.from_bytes(data[32:36], "big"),
            "freelistPages": int.from_bytes(data[36:40], "big"), "userVersion": int.from_bytes(data[60:64], "big"),
            "textEncoding": int.from_bytes(data[56:60], "big")}


def _u16(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 2], "big")


def _u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "big")


def _plausible_btree_page(data: bytes, base: int, page_size: int, header_at: int) -> bool:
    h = base + header_at
    kind = data[h]
    if kind not in (TABLE_LEAF, TABLE_INTERIOR, INDEX_LEAF, INDEX_INTERIOR):
        return False
    cells = _u16(data, h + 3)
    content = _u16(data, h + 5) or 65536
    header_len = 8 if kind in (TABLE_LEAF, INDEX_LEAF) else 12
    return header_at + header_len + 2 * cells <= content <= page_size


def guess_page_size(data: bytes) -> int | None:
    """When the header is garbage: the page size at which most pages look like B-tree pages."""
    best, best_score = None, 0.0
    for size in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        if len(data) < 2 * size or len(data) % size:
            continue
        pages = len(data) // size
        good = sum(_plausible_btree_page(data, (n - 1) * size, size, 0) for n in range(2, pages + 1))
        score = good / (pages - 1)
        if score > best_score:
            best, best_score = size, score
    return best if best_score >= 0.2 else None


def freelist_pages(data: bytes, header: dict[str, Any]) -> set[int]:
    """Pages on the free list (trunks and leaves), so deleted rows on them are not revived."""
    size, total = header["pageSize"], len(data) // header["pageSize"]
    found: set[int] = set()
    trunk = header["freelistTrunk"]
    while 0 < trunk <= total and trunk not in found:
        found.add(trunk)
        base = (trunk - 1) * size
        count = min(_u32(data, base + 4), (size - 8) // 4)
        found.update(p for p in (_u32(data, base + 8 + 4 * i) for i in range(count)) if 0 < p <= total)
        trunk = _u32(data, base)
    return found


# --- records -----------------------------------------------------------------------------------
def _varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


_INT_SIZES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def decode_record(payload: bytes) -> list[Any]:
    """An SQLite record (UTF-8 text) as Python values; ValueError/IndexError when malformed."""
    header_size, at = _varint(payload, 0)
    if header_size > len(payload):
        raise ValueError("record header past the payload")
    types = []
    while at < header_size:
        serial, at = _varint(payload, at)
        types.append(serial)
    pos, values = header_size, []
    for serial in types:
        if serial == 0:
            values.append(None)
        elif serial in _INT_SIZES:
            n = _INT_SIZES[serial]
            values.append(int.from_bytes(payload[pos:pos + n], "big", signed=True))
            pos += n
        elif serial == 7:
            values.append(struct.unpack(">d", payload[pos:pos + 8])[0])
            pos += 8
        elif serial in (8, 9):
            values.append(serial - 8)
        elif serial >= 12:
            n = (serial - 12) // 2
            raw = payload[pos:pos + n]
            if len(raw) != n:
                raise ValueError("value past the payload")
            values.append(raw.decode("utf-8") if serial % 2 else bytes(raw))
            pos += n
        else:
            raise ValueError(f"reserved serial type {serial}")
    if pos > len(payload):
        raise ValueError("record longer than its payload")
    return values


def _payload(data: bytes, at: int, length: int, page_end: int, size: int, usable: int, total: int) -> bytes:
    max_local = usable - 35
    if length <= max_local:
        local = length
    else:
        min_local = ((usable - 12) * 32 // 255) - 23
        local = min_local + (length - min_local) % (usable - 4)
        local = local if local <= max_local else min_local
    if at + local > page_end:
        raise ValueError("cell past its page")
    out = bytearray(data[at:at + local])
    if local < length:
        page, seen = _u32(data, at + local), set()
        while len(out) < length:
            if not 0 < page <= total or page in seen:
                raise ValueError("broken overflow chain")
            seen.add(page)
            base = (page - 1) * size
            out += data[base + 4:base + usable][:length - len(out)]
            page = _u32(data, base)
    return bytes(out)


def scan_leaf_rows(data: bytes, page_size: int, *, reserved: int = 0,
                   skip: set[int] = frozenset()) -> Iterator[tuple[int, int, list[Any]]]:
    """(page, rowid, values) of every decodable cell on every table-leaf page."""
    usable, total = page_size - reserved, len(data) // page_size
    for page in range(1, total + 1):
        if page in skip:
            continue
        base = (page - 1) * page_size
        h = base + (100 if page == 1 else 0)
        if data[h] != TABLE_LEAF:
            continue
        cells = _u16(data, h + 3)
        if 8 + 2 * cells > usable:
            continue
        for i in range(cells):
            try:
                pointer = _u16(data, h + 8 + 2 * i)
                if not h - base + 8 + 2 * cells <= pointer < usable:
                    continue
                length, at = _varint(data, base + pointer)
                rowid, at = _varint(data, at)
                rowid = rowid - (1 << 64) if rowid >= 1 << 63 else rowid
                payload = _payload(data, at, length, base + usable, page_size, usable, total)
                yield page, rowid, decode_record(payload)
            except (ValueError, IndexError, UnicodeDecodeError, struct.error):
                continue


def _map_row(values: list[Any], columns: list[str], rowid: int, rowid_column: str | None) -> dict[str, Any] | None:
    if len(values) > len(columns) or len(values) < min(len(columns), 2):
        return None
    row = dict(zip(columns, values + [None] * (len(columns) - len(values)), strict=True))
    if rowid_column:
        if row.get(rowid_column) not in (None, rowid):
            return None
        row[rowid_column] = rowid
    return row


# --- reading through SQLite -----------------------------------------------------------------------
def _original_columns(conn: sqlite3.Connection, table: str) -> list[str] | None:
    try:
        columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
    except sqlite3.DatabaseError:
        return None
    return columns or None


def _scalar(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> Any:
    try:
        row = conn.execute(sql, params).fetchone()
    except sqlite3.DatabaseError:
        return None
    return row[0] if row else None


class _Budget:
    def __init__(self, probes: int):
        self.left = probes


def read_by_rowid(conn: sqlite3.Connection, table: str, low: int, high: int,
                  budget: _Budget) -> tuple[dict[int, dict[str, Any]], list[tuple[int, int]]]:
    """Rows of `table` with rowid in [low, high] through its B-tree; a failing range is halved
    down to single rows. Returns (rows, unreadable rowid ranges)."""
    sql = f'SELECT rowid AS "__rowid__", * FROM "{table}" NOT INDEXED WHERE rowid BETWEEN ? AND ?'
    rows: dict[int, dict[str, Any]] = {}
    bad: list[tuple[int, int]] = []
    stack = [(low, high)]
    while stack:
        a, b = stack.pop()
        try:
            cursor = conn.execute(sql, (a, b))
            names = [d[0] for d in cursor.description]
            fetched = cursor.fetchall()
        except sqlite3.DatabaseError:
            if a == b or budget.left <= 0:
                bad.append((a, b))
            elif b - a < 16:
                stack.extend((r, r) for r in range(b, a - 1, -1))
            else:
                mid = (a + b) // 2
                stack.extend([(mid + 1, b), (a, mid)])
            budget.left -= 1
            continue
        for values in fetched:
            row = dict(zip(names, values, strict=True))
            rows[row.pop("__rowid__")] = row
    bad.sort()
    merged: list[tuple[int, int]] = []
    for a, b in bad:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return rows, merged


def _in_ranges(rowid: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= rowid <= b for a, b in ranges)


# --- the sqlite3 shell's .recover ------------------------------------------------------------------
def recover_with_shell(source: Path, work: Path) -> tuple[sqlite3.Connection | None, str]:
    """A database rebuilt from `sqlite3 SOURCE .recover`, or (None, why not)."""
    shell = shutil.which("sqlite3")
    if shell is None:
        return None, "the sqlite3 shell is not installed"
    dump = work / "recover.sql"
    try:
        with open(dump, "wb") as out:
            proc = subprocess.run([shell, str(source), ".recover --ignore-freelist"], stdout=out,
                                  stderr=subprocess.PIPE, timeout=SHELL_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"sqlite3 .recover could not run: {exc}"
    tail = dump.read_bytes()[-200:]
    if proc.returncode != 0 or b"COMMIT" not in tail:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"sqlite3 .recover failed ({why[-1] if why else f'exit {proc.returncode}'})"
    target = work / "recovered-by-shell.sqlite"
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.executescript(dump.read_text(encoding="utf-8", errors="replace"))
    except sqlite3.Error as exc:
        conn.close()
        return None, f"the SQL from sqlite3 .recover did not load ({exc})"
    return conn, "sqlite3 .recover"


def _lost_and_found(conn: sqlite3.Connection) -> Iterator[tuple[int, list[Any]]]:
    """Rows `.recover` could not attribute: (rowid, values) from its lost_and_found table."""
    try:
        cursor = conn.execute('SELECT * FROM "lost_and_found"')
    except sqlite3.DatabaseError:
        return
    names = [d[0] for d in cursor.description]
    for row in cursor:
        data = dict(zip(names, row, strict=True))
        count = data.get("nfield") or 0
        values = [data.get(f"c{i}") for i in range(count)]
        if data.get("id") is not None:
            yield data["id"], values


# --- the whole salvage -------------------------------------------------------------------------------
def salvage(source: Path, specs: list[TableSpec], work: Path) -> Salvage:
    """Read what is readable of `source` (a copy: it may be checkpointed) into rows per table."""
    notes: list[str] = []
    try:  # fold a copied -wal into the copy first, so both passes see the same pages
        probe = sqlite3.connect(source, isolation_level=None)
        probe.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        probe.close()
    except sqlite3.DatabaseError:
        notes.append("the write-ahead log could not be folded in (unreadable header)")
    data = source.read_bytes()
    header = read_header(data)
    if header["valid"]:
        page_size, reserved = header["pageSize"], header["reserved"]
        skip = freelist_pages(data, header)
    else:
        page_size, reserved, skip = guess_page_size(data), 0, set()
        notes.append("the file header is unreadable; pages were scanned at a guessed page size "
                     f"{page_size}" if page_size else "the file header is unreadable and no page size fits")
    info = {"headerReadable": header["valid"], "pageSize": page_size, "fileBytes": len(data),
            "pageCount": header.get("pageCount"), "userVersion": header.get("userVersion")}

    shell, method = (recover_with_shell(source, work) if header["valid"]
                     else (None, "sqlite3 .recover needs a readable header"))
    if shell is None:
        notes.append(f"{method}; used the pure-Python salvage")
        method = "python"
    conn = shell
    if conn is None:
        try:
            conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        except sqlite3.DatabaseError:
            conn = None

    results = {spec.name: TableResult() for spec in specs}
    columns = {spec.name: (conn and _original_columns(conn, spec.name)) or spec.columns for spec in specs}
    if header["valid"] and conn is not None:
        original = sqlite3.connect(f"file:{source}?mode=ro", uri=True) if shell is not None else conn
        for spec in specs:
            seq = _scalar(original, "SELECT seq FROM sqlite_sequence WHERE name = ?", (spec.name,))
            top = _scalar(original, f'SELECT max(rowid) FROM "{spec.name}"')
            results[spec.name].expected_max_rowid = max((v for v in (seq, top) if isinstance(v, int)), default=None)
        if shell is not None:
            original.close()

    # The page scan (or .recover's lost_and_found) runs first: it also tells the rowid pass how
    # far rowids go when max(rowid) itself is unreadable.
    found: dict[str, dict[int, dict[str, Any]]] = {spec.name: {} for spec in specs}

    def attribute(rowid: int, values: list[Any]) -> None:
        for spec in specs:
            row = _map_row(values, columns[spec.name], rowid, spec.rowid_column)
            if row is not None and _safe_accept(spec, row):
                found[spec.name].setdefault(rowid, row)
                return

    if shell is not None:
        for rowid, values in _lost_and_found(shell):
            attribute(rowid, values)
    elif page_size:
        for _page, rowid, values in scan_leaf_rows(data, page_size, reserved=reserved, skip=skip):
            attribute(rowid, values)

    budget = _Budget(PROBE_BUDGET)
    for spec in specs:
        result, extra = results[spec.name], found[spec.name]
        if conn is not None and _original_columns(conn, spec.name):
            high = max([result.expected_max_rowid or 0, *extra], default=0)
            low = min([1, *extra])
            rows, bad = read_by_rowid(conn, spec.name, low, high, budget) if high >= low else ({}, [])
            result.readable = not bad or bool(rows)
            result.unreadable = bad
            result.rows = {rowid: row for rowid, row in rows.items() if _safe_accept(spec, row)}
            result.read = len(result.rows)
        for rowid, row in extra.items():
            if rowid in result.rows:
                continue
            # .recover already left freelist pages out; a scanned row only fills what SQLite could not read
            if shell is not None or not result.readable or _in_ranges(rowid, result.unreadable):
                result.rows[rowid] = row
                result.scanned += 1
    if conn is not None:
        conn.close()
    return Salvage(method, results, info, notes)


def _safe_accept(spec: TableSpec, row: dict[str, Any]) -> bool:
    try:
        return bool(spec.accept(row))
    except (ValueError, TypeError, KeyError, AttributeError):
        return False
