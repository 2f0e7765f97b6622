"""Modules imported on first use.

A few dependencies are heavy to import (numpy ≈ 60-100 ms of a one-shot CLI's CPU, jieba,
zstandard) and only some paths need them: a keyword search ranks without numpy, an English
query never segments Chinese. `deferred_import("numpy")` is declared once at the top of the
module that needs it, in place of `import numpy`; the first attribute read imports the module
and binds that attribute on the stand-in, so later reads cost as much as a module attribute.
Until then the module is not in `sys.modules` (tests/test_cold_start.py checks that).

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = deferred_import("numpy")  # why the import waits, in a few words

(`importlib.util.LazyLoader` does not fit: it puts the unloaded module in `sys.modules` at once.)
"""

from __future__ import annotations

import importlib
from typing import Any


class DeferredModule:
    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name

    def _loaded(self) -> Any:
        """The module itself, imported now if it is not yet."""
        return importlib.import_module(self._name)

    def __getattr__(self, attribute: str) -> Any:  # only for what is not bound yet
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        value = getattr(self._loaded(), attribute)
        self.__dict__[attribute] = value
        return value

    def __repr__(self) -> str:
        return f"deferred_import({self._name!r})"


def deferred_import(name: str) -> Any:
    """A stand-in for module `name` that imports it on first attribute read (see the module doc)."""
    return DeferredModule(name)
