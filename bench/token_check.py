"""`python -m bench.token_check [--requests N]`: the cost of the per-request token check.

Two `clawkeep gateway` processes in the same run, on two homes with the same sessions: one
without any token (a tokenless loopback gateway), one where requests carry a stored token that
is looked up in the store on every request (SHA-256 + one indexed read; no cache). The same
request (`GET /v1/sessions/<key>`, one keep-alive client, rounds interleaved so drift hits both)
is timed on each; the result is the p50 ratio (token / no token). A peer-scoped token (which also
resolves its calling session) is timed beside it for information.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from clawkeep import Engine

CONFIG = {"session": {"dmScope": "per-channel-peer", "reset": {"mode": "none"}},
          "agents": {"defaults": {"memorySearch": {"provider": "none"}}},
          "plugins": {"entries": {"active-memory": {"enabled": False}}}}
KEY = "agent:main:telegram:direct:alice"


def _home(root: Path, name: str, tokens: bool) -> tuple[Path, dict[str, str]]:
    home = root / name
    home.mkdir()
    (home / "clawkeep.json5").write_text(json.dumps(CONFIG))
    secrets: dict[str, str] = {}
    with Engine.open(home=home) as engine:
        for sender in ("alice", "bob", "carol"):
            engine.message(f"hello from {sender}", channel="telegram", sender=sender)
        if tokens:
            for n in range(50):  # a realistic table, not a single row
                engine.tokens_create(f"filler-{n}", f"peer:telegram:p{n}")
            secrets["operator"] = engine.tokens_create("op", "operator")["token"]
            secrets["peer"] = engine.tokens_create("alice", "peer:telegram:alice")["token"]
    return home, secrets


def _start(home: Path) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_GATEWAY_TOKEN")}
    proc = subprocess.Popen([sys.executable, "-m", "clawkeep", "--home", str(home), "gateway", "--port", "0",
                             "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().decode().strip().split()[-1]


def _timed(client: httpx.Client, headers: dict[str, str], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(f"/v1/sessions/{KEY}", headers=headers)
        out.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return out


def run(requests: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        open_home, _ = _home(Path(tmp), "open", tokens=False)
        token_home, secrets = _home(Path(tmp), "tokens", tokens=True)
        (p1, open_url), (p2, token_url) = _start(open_home), _start(token_home)
        try:
            samples: dict[str, list[float]] = {"none": [], "operator": [], "peer": []}
            with httpx.Client(base_url=open_url) as a, httpx.Client(base_url=token_url) as b:
                for client, headers in ((a, {}), (b, {"Authorization": f"Bearer {secrets['operator']}"})):
                    _timed(client, headers, 50)  # warm-up
                rounds = 10
                for _ in range(rounds):
                    samples["none"] += _timed(a, {}, requests // rounds)
                    samples["operator"] += _timed(b, {"Authorization": f"Bearer {secrets['operator']}"},
                                                  requests // rounds)
                    samples["peer"] += _timed(b, {"Authorization": f"Bearer {secrets['peer']}"}, requests // rounds)
        finally:
            for proc in (p1, p2):
                proc.terminate()
                proc.wait(30)
    p50 = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    return {**{f"p50_ms_{k}": round(v, 3) for k, v in p50.items()},
            "ratio_operator_token": round(p50["operator"] / p50["none"], 3),
            "ratio_peer_token": round(p50["peer"] / p50["none"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    print(json.dumps(run(parser.parse_args().requests), indent=2))


if __name__ == "__main__":
    main()
