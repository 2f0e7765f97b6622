"""The `clawkeep` command line (cli.main: the commands; cli.app: the Typer application)."""

from __future__ import annotations

import gc
import importlib
import logging
import os
import sys
import types


def main() -> None:
    """The console script: one command per process, so two things a long-lived program needs
    are skipped. Collection is paused while the modules load (an import creates a few hundred
    thousand long-lived objects and no garbage; collecting meanwhile cost ~14% of a cold search),
    then everything loaded is frozen out of later collections. And the process ends with
    `os._exit` once the command has closed its engine and the output is flushed: tearing every
    module down again cost another ~15%. Pydantic plugins are not looked for (clawkeep uses
    none, and the look-up reads the metadata of every installed distribution) unless the
    environment asks for them: PYDANTIC_DISABLE_PLUGINS set to anything else wins."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    skip_plugin_loader()
    gc.disable()
    try:
        from .main import run  # deferred: every command's modules load here, with collection paused
    finally:
        gc.freeze()
        gc.enable()
    code = 0
    try:
        run()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe (`clawkeep … | head`): nothing more to say
        code = code or 1
    logging.shutdown()  # flush any file handlers
    os._exit(code)


PLUGINS_OFF = ("__all__", "1", "true")  # the values with which pydantic's get_plugins() returns ()


def skip_plugin_loader() -> None:
    """With plugins off, pydantic's plugin loader answers "none" without looking, but importing
    it still imports importlib.metadata (and email, zipfile, csv …): ~25 ms of a cold search,
    spent on the first validator built. A stand-in with the same answer is registered instead.
    Any other name asked of it loads the real loader, so a newer pydantic that wants more than
    get_plugins gets it (slowly) rather than an ImportError."""
    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in PLUGINS_OFF or name in sys.modules:
        return
    stand_in = types.ModuleType(name, "clawkeep's stand-in: plugins are disabled (PYDANTIC_DISABLE_PLUGINS)")

    def get_plugins() -> tuple[()]:
        return ()

    def real_attribute(attr: str) -> object:
        if attr.startswith("__"):  # the import system probing (`__path__` …): a plain module
            raise AttributeError(attr)
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)

    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = real_attribute  # type: ignore[attr-defined]
    sys.modules[name] = stand_in
