"""The CLI as a user runs it: `python -m clawkeep` in a separate process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self):
        return json.loads(self.stdout)


def run_cli(home: Path, *args: str, config: Path | None = None, timeout: float = 60) -> CliResult:
    """Run `python -m clawkeep` as a separate process, exactly as a user would."""
    command = [sys.executable, "-m", "clawkeep", "--home", str(home)]
    if config is not None:
        command += ["--config", str(config)]
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")}
    env["COLUMNS"] = "200"
    proc = subprocess.run(command + list(args), capture_output=True, text=True, timeout=timeout, env=env)
    return CliResult(proc)
