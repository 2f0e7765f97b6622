"""The `clawkeep` command line (cli.main: the commands; cli.app: the Typer application)."""

from __future__ import annotations

import gc
import os
import sys


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
    gc.disable()
    try:
        from .main import run
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
    import logging  # noqa: PLC0415 - already loaded by then; flush any file handlers

    logging.shutdown()
    os._exit(code)
