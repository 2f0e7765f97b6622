"""Installed versions of the model packages, read without importing importlib.metadata."""

from __future__ import annotations

import os
import sys

from ...deferred import deferred_import

metadata = deferred_import("importlib.metadata")  # deferred: a dozen modules, for a version the scan misses

_VERSIONS: dict[str, str | None] = {}


def package_version(package: str) -> str | None:
    """The installed version of a distribution (the index fingerprint, the snapshot key). Read from its
    `<name>-<version>.dist-info` folder on sys.path (what importlib.metadata reads, without
    importing it: a keyword search computes the fingerprint and must stay cheap); anything
    else (an egg, an unusual layout) asks importlib.metadata."""
    if package not in _VERSIONS:
        wanted = _normalised(package)
        found = None
        for entry in sys.path:
            try:
                names = os.listdir(entry or ".")
            except OSError:
                continue
            for name in names:
                dist, _, version = name.removesuffix(".dist-info").rpartition("-")
                if name.endswith(".dist-info") and version and _normalised(dist) == wanted:
                    found = version
                    break
            if found:
                break
        if found is None:
            try:
                found = metadata.version(package)
            except metadata.PackageNotFoundError:
                found = None
        _VERSIONS[package] = found
    return _VERSIONS[package]


def _normalised(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")
