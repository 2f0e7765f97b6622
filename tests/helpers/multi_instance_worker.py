"""One engine instance of the multi-instance tests (tests/storage/test_multi_instance.py): its own home,
the shared PostgreSQL database from CLAWKEEP_STORAGE_URL / CLAWKEEP_STORAGE_SCHEMA.

argv: a JSON object {"home", "clients": [[client, first, last], ...], "groups", "delay"}; one
thread per client sends messages first..last in order into the group chat `g<client % groups>`,
each with the client message id `<client>-<n>`, and prints `ACK <client> <n> <seconds>` once the
engine acknowledged it (stdout is flushed per line, so a SIGKILL loses only unprinted acks).
"""

from __future__ import annotations

import json
import sys
import threading
import time

from clawkeep import Engine
from clawkeep.errors import ClawkeepError


def main() -> None:
    spec = json.loads(sys.argv[1])
    out_lock = threading.Lock()
    failures: list[str] = []
    with Engine.open(home=spec["home"]) as engine:
        def client(name: str, first: int, last: int) -> None:
            group = f"g{int(name[1:]) % spec['groups']}"
            for n in range(first, last + 1):
                started = time.perf_counter()
                for attempt in range(20):  # a busy session lock or a lost connection: try again, same id
                    try:
                        engine.message(f"{name} says {n}", channel="loadtest", sender=name, chat_type="group",
                                       group=group, message_id=f"{name}-{n}")
                        break
                    except ClawkeepError as exc:
                        if attempt == 19:
                            failures.append(f"{name}-{n}: {exc}")
                            return
                        time.sleep(0.05)
                with out_lock:
                    print(f"ACK {name} {n} {time.perf_counter() - started:.4f}", flush=True)
                if spec.get("delay"):
                    time.sleep(spec["delay"])

        threads = [threading.Thread(target=client, args=tuple(c)) for c in spec["clients"]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for failure in failures:
        print(f"FAIL {failure}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
