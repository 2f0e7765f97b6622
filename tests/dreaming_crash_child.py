"""Child process of the crash tests: runs one Dreaming sweep and, at the named step, says so
(a marker file) and waits to be killed with SIGKILL."""

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


with Engine.open(home=home, config=config) as engine:
    engine.runtime.events.subscribe(DreamingProgress, stop_here)
    print(json.dumps(engine.dream().to_json()))
