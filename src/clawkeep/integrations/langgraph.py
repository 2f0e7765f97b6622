"""LangGraph's long-term memory store on clawkeep: `ClawkeepStore(engine_or_client)`, a
`langgraph.store.base.BaseStore`. `pip install 'clawkeep[langgraph]'`.

    store = ClawkeepStore(clawkeep.Client("http://127.0.0.1:8787", token="…"))   # or an Engine
    graph = builder.compile(store=store)
    store.put(("users", "ada"), "tea", {"text": "Ada drinks jasmine tea"})
    store.search(("users", "ada"), query="what tea?")          # clawkeep's hybrid search

Each namespace is one Markdown file of the memory workspace, `memory/store/<label>/…/<label>.md`
(each label percent-encoded), so the notes are memory people can read and edit, indexed and found
by clawkeep's hybrid search like every other memory file:

    # users / ada
    <!-- clawkeep-store {"namespace": ["users", "ada"]} -->
    - tea: Ada drinks jasmine tea <!-- clawkeep-item {"key": "tea", "value": {…}, …} -->

The bullet's text is what is searched: the `index` fields of the value (LangGraph's `index=[…]`;
default: every top-level field), only the key with `index=False`. The JSON comment keeps the
exact value, times and TTL. `filter` takes exact values and $eq/$ne/$gt/$gte/$lt/$lte; `ttl`
(minutes) hides an expired item and drops it at its file's next write; `refresh_ttl` extends it
on read.

Namespaces map onto clawkeep owners by their first labels (the engine decides from the path, so
no client can claim another's): `("users", "CHANNEL:SENDER", …)` is that peer's (owned by the
session routing gives its direct messages), `("sessions", KEY, …)` that session's, `("agent", …)`
the agent's shared one, anything else the operator's. A store run as a calling session (a Client
with a peer, session or agent token, or `caller=`) reads, writes and lists only its own
namespaces and reads the agent's; another's is a ForbiddenError and never listed. A namespace sees
only its own file (get) or the files under its prefix (search, list): a search hit in another
namespace's file is never returned.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ..errors import ConflictError, InputError

ROOT = "memory/store"
SEARCH_POOL = 50  # hits asked of clawkeep's search before the namespace and filter narrow them
WRITE_ATTEMPTS = 8
_HEADER = re.compile(r"^<!-- clawkeep-store (\{.*\}) -->$")
_ITEM = re.compile(r"^- .*<!-- clawkeep-item (\{.*\}) -->$")


# --- namespaces as files --------------------------------------------------------------------
def namespace_path(namespace: tuple[str, ...]) -> str:
    if not namespace or any(not isinstance(label, str) or not label for label in namespace):
        raise InputError(f"namespace {namespace!r}: give a tuple of non-empty strings, e.g. ('users', 'ada')")
    return f"{ROOT}/" + "/".join(_label(label) for label in namespace) + ".md"


def _label(label: str) -> str:
    encoded = quote(label, safe="-_")
    return encoded.replace(".", "%2E")  # "." and ".." never become folder names


def path_namespace(path: str) -> tuple[str, ...]:
    return tuple(unquote(part) for part in path[len(ROOT) + 1:-3].split("/"))


@dataclass
class _Entry:
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str
    index: Any = None
    ttl: float | None = None
    expires_at: str | None = None
    line: int = 0

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and datetime.fromisoformat(self.expires_at) <= now

    def item(self, namespace: tuple[str, ...], score: float | None = None, searched: bool = False) -> Item:
        times = dict(created_at=datetime.fromisoformat(self.created_at),
                     updated_at=datetime.fromisoformat(self.updated_at))
        if searched:
            return SearchItem(namespace, self.key, self.value, score=score, **times)
        return Item(value=self.value, key=self.key, namespace=namespace, **times)


@dataclass
class _File:
    path: str
    namespace: tuple[str, ...]
    sha256: str = ""
    entries: dict[str, _Entry] = field(default_factory=dict)

    def render(self, now: datetime) -> str:
        live = [e for e in self.entries.values() if not e.expired(now)]
        if not live:
            return ""  # an empty namespace has no file
        header = {"namespace": list(self.namespace)}
        lines = [f"# {' / '.join(self.namespace)}", f"<!-- clawkeep-store {_comment_json(header)} -->", ""]
        lines += [_bullet(entry) for entry in live]
        return "\n".join(lines) + "\n"


def _bullet(entry: _Entry) -> str:
    meta = {"key": entry.key, "value": entry.value, "createdAt": entry.created_at, "updatedAt": entry.updated_at,
            "index": entry.index, "ttl": entry.ttl, "expiresAt": entry.expires_at}
    encoded = _comment_json(meta)
    return f"- {_readable(entry)} <!-- clawkeep-item {encoded} -->"


def _comment_json(data: Any) -> str:
    """JSON for an HTML comment: a value never closes it (">") nor opens a clawkeep marker ("<")."""
    return json.dumps(data, ensure_ascii=False).replace(">", "\\u003e").replace("<", "\\u003c")


def _readable(entry: _Entry) -> str:
    """The searched text: the indexed fields' values (LangGraph's `index`), on one line."""
    if entry.index is False:
        return _one_line(entry.key)
    fields = entry.index if isinstance(entry.index, list) else list(entry.value)
    parts = [_text(_field(entry.value, name)) for name in fields]
    return _one_line(f"{entry.key}: " + "; ".join(p for p in parts if p))


def _field(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("<!--", "<!-").strip()


def parse(path: str, text: str, sha256: str) -> _File:
    parsed = _File(path, path_namespace(path), sha256)
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            parsed.namespace = tuple(json.loads(header.group(1))["namespace"])
            continue
        found = _ITEM.match(line)
        if found:
            meta = json.loads(found.group(1))
            parsed.entries[meta["key"]] = _Entry(meta["key"], meta["value"], meta["createdAt"], meta["updatedAt"],
                                                 meta.get("index"), meta.get("ttl"), meta.get("expiresAt"), number)
    return parsed


# --- filters and namespace conditions -------------------------------------------------------
_COMPARE = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
            "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    for name, wanted in (conditions or {}).items():
        actual = _field(value, name)
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            for operator, operand in wanted.items():
                if operator not in _COMPARE:
                    raise InputError(f"filter {name}: operator {operator!r} is not supported; "
                                     f"allowed: {', '.join(_COMPARE)}")
                try:
                    if not _COMPARE[operator](actual, operand):
                        return False
                except TypeError:  # None > 3, "a" > 1: not a match
                    return False
        elif actual != wanted:
            return False
    return True


def _condition_holds(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(pattern) > len(namespace):
        return False
    part = namespace[:len(pattern)] if condition.match_type == "prefix" else namespace[len(namespace) - len(pattern):]
    return all(p == "*" or p == n for p, n in zip(pattern, part, strict=True))


# --- the store ------------------------------------------------------------------------------
class ClawkeepStore(BaseStore):
    """A LangGraph BaseStore whose namespaces are Markdown memory files of a clawkeep agent."""

    supports_ttl = True

    def __init__(self, engine_or_client: Any, *, caller: str | None = None, ttl: TTLConfig | None = None):
        """`caller`: the calling session the store runs as (an Engine's `caller=`, a Client's
        X-Clawkeep-Session); without it an Engine is the operator and a Client its token's own."""
        if hasattr(engine_or_client, "aclose") and not hasattr(engine_or_client, "close"):
            raise InputError("ClawkeepStore takes an Engine or a clawkeep.Client (its async methods run the "
                             "sync calls in a thread); an AsyncClient cannot be called from batch()")
        self.target = engine_or_client
        self._as = {"caller": caller} if caller is not None else {}
        self.ttl_config = ttl or TTLConfig(refresh_on_read=True)

    # -- BaseStore ------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        now = datetime.now(UTC)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, now))
            elif isinstance(op, PutOp):
                self._put(op, now)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op, now))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op, now))
            else:
                raise InputError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations -----------------------------------------------------------------------
    def _read(self, path: str) -> _File:
        got = self.target.memory_store_read(path, **self._as)
        return parse(path, got.text, got.sha256)

    def _files(self, prefix: tuple[str, ...]) -> list[_File]:
        folder = ROOT if not prefix else namespace_path(prefix)[:-3]
        return [parse(f.path, f.text, f.sha256) for f in self.target.memory_store_files(prefix=folder, **self._as)]

    def _write(self, path: str, namespace: tuple[str, ...], change: Any, now: datetime) -> None:
        """Apply `change(file)` and write the file, again from a fresh read if another writer won."""
        for _ in range(WRITE_ATTEMPTS):
            current = self._read(path)
            current.namespace = namespace
            change(current)
            try:
                self.target.memory_store_write(path, current.render(now), current.sha256, **self._as)
                return
            except ConflictError:
                continue
        raise ConflictError(f"store file {path} kept changing under {WRITE_ATTEMPTS} attempts to write it")

    def _get(self, op: GetOp, now: datetime) -> Item | None:
        path = namespace_path(op.namespace)
        entry = self._read(path).entries.get(op.key)
        if entry is None or entry.expired(now):
            return None
        if op.refresh_ttl and entry.ttl is not None and self.ttl_config.get("refresh_on_read", True):
            self._refresh(path, op.namespace, [op.key], now)
        return entry.item(op.namespace)

    def _put(self, op: PutOp, now: datetime) -> None:
        stamp = now.isoformat()
        ttl = op.ttl if op.ttl is not None else self.ttl_config.get("default_ttl")

        def change(file: _File) -> None:
            if op.value is None:
                file.entries.pop(op.key, None)
                return
            before = file.entries.get(op.key)
            created = before.created_at if before is not None and not before.expired(now) else stamp
            expires = (now + timedelta(minutes=ttl)).isoformat() if ttl is not None else None
            file.entries[op.key] = _Entry(op.key, dict(op.value), created, stamp, op.index, ttl, expires)

        self._write(namespace_path(op.namespace), op.namespace, change, now)

    def _refresh(self, path: str, namespace: tuple[str, ...], keys: list[str], now: datetime) -> None:
        def change(file: _File) -> None:
            for key in keys:
                entry = file.entries.get(key)
                if entry is not None and entry.ttl is not None and not entry.expired(now):
                    entry.expires_at = (now + timedelta(minutes=entry.ttl)).isoformat()

        self._write(path, namespace, change, now)

    def _search(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        files = {f.path: f for f in self._files(op.namespace_prefix)}
        ranked: list[tuple[_File, _Entry, float | None]] = []
        if op.query:
            best: dict[tuple[str, str], float] = {}
            found = self.target.memory_search(op.query, corpus="memory", limit=SEARCH_POOL, **self._as)
            for hit in found.results:
                file = files.get(hit.path)  # a hit outside the prefix's files is another namespace's
                for entry in file.entries.values() if file is not None else ():
                    if hit.start_line <= entry.line <= hit.end_line:
                        slot = (file.path, entry.key)
                        best[slot] = max(best.get(slot, 0.0), hit.score)
            order = sorted(best.items(), key=lambda kv: -kv[1])
            ranked = [(files[p], files[p].entries[k], score) for (p, k), score in order]
        else:
            ranked = [(f, e, None) for f in files.values() for e in f.entries.values()]
        kept = [(f, e, s) for f, e, s in ranked if not e.expired(now) and matches(e.value, op.filter)]
        page = kept[op.offset:op.offset + op.limit]
        if op.refresh_ttl and self.ttl_config.get("refresh_on_read", True):
            for file in {f.path: f for f, e, _ in page if e.ttl is not None}.values():
                self._refresh(file.path, file.namespace, [e.key for f, e, _ in page if f is file], now)
        return [e.item(f.namespace, s, searched=True) for f, e, s in page]

    def _namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        found = {f.namespace for f in self._files(()) if any(not e.expired(now) for e in f.entries.values())}
        chosen = [ns for ns in found if all(_condition_holds(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            chosen = list({ns[:op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset:op.offset + op.limit]
