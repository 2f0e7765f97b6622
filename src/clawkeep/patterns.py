"""Regular expressions compiled on first use.

clawkeep's rule sets (credential redaction, the past-question detector, the write filters,
supersession, the plan reader) hold hundreds of patterns; compiling them all at import cost a
short-lived process — one CLI command — a large part of its CPU, although a command runs a
handful of them. `lazy(pattern, flags)` stands in for `re.compile(pattern, flags)`: it has the
`pattern` and `flags` of the compiled expression (so patterns can be composed from others
without compiling), and its first method call compiles it, after which the compiled methods
are bound on the object itself (no indirection per call).
"""

from __future__ import annotations

import re
from typing import Any

_METHODS = ("search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer", "scanner")


class LazyPattern:
    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = pattern
        self.flags = flags

    def compiled(self) -> re.Pattern[str]:
        found = self.__dict__.get("_compiled")
        if found is None:
            found = re.compile(self.pattern, self.flags)
            self.__dict__["_compiled"] = found
            for name in _METHODS:
                self.__dict__[name] = getattr(found, name)
        return found

    def __getattr__(self, name: str) -> Any:  # only for what is not bound yet
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self.flags!r})"


def lazy(pattern: str, flags: int = 0) -> Any:
    """`re.compile(pattern, flags)`, compiled when first used (typed as a Pattern for callers)."""
    return LazyPattern(pattern, flags)
