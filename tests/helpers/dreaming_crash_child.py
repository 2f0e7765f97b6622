"""Child process of the crash tests: runs one Dreaming sweep and, at the named step, says so
(a marker file) and waits to be killed with SIGKILL.

A step `after-rename:<file>` stops at the first rename that follows the one that put <file> of
`memory/.dreams/` in place: watched through Python's audit events (os.replace raises
`os.rename`), so the kill lands right after that file, before the next, with no clawkeep code
patched."""

import json
import sys
import time
from pathlib import Path

from clawkeep import Engine
from clawkeep.events import DreamingProgress

home, config, step, marker = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], Path(sys.argv[4])


def stop_here(event):
    if step == "started-running" and event.step == "started":
        marker.write_text(event.run_id)  # the parent kills us at a moment of its choosing
    elif event.step == step:
        marker.write_text(event.run_id)
        time.sleep(120)  # the parent kills us here


renamed = False


def stop_after_rename(event, args):
    global renamed
    if event != "os.rename":
        return
    if renamed:
        marker.write_text(str(args[1]))  # the rename about to happen: it never does
        time.sleep(120)
    renamed = str(args[1]).endswith(f".dreams/{step.partition(':')[2]}")


if step.startswith("after-rename:"):
    sys.addaudithook(stop_after_rename)

with Engine.open(home=home, config=config) as engine:
    engine.subscribe(DreamingProgress, stop_here)
    print(json.dumps(engine.dream().to_json()))
