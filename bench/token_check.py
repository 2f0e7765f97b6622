"""`python -m bench.token_check [--requests N]`: the cost of the per-request token check.

Two `clawkeep gateway` processes in the same run, on two homes with the same sessions: one
without any token (a tokenless loopback gateway), one where requests carry a stored token that
is looked up in the store on every request (SHA-256 + one indexed read; no cache). The same
request (`GET /v1/sessions/<key>`, one keep-alive client, rounds interleaved so drift hits both)
is timed on each; the result is the p50 ratio (token / no token). A peer-scoped token (which also
resolves its calling session) is timed beside it for information. `--baseline-src DIR` adds a
third, tokenless gateway run from another source tree (e.g. the main checkout's src/): the cost
of the change itself for a gateway that has no tokens.
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


def _baseline_home(root: Path, src: str) -> Path:
    """The open home's sessions, written by the baseline tree's own CLI (its schema may be older)."""
    home = root / "baseline"
    home.mkdir()
    (home / "clawkeep.json5").write_text(json.dumps(CONFIG))
    env = {**{k: v for k, v in os.environ.items() if k != "CLAWKEEP_HOME"}, "PYTHONPATH": src}
    for sender in ("alice", "bob", "carol"):
        subprocess.run([sys.executable, "-m", "clawkeep", "--home", str(home), "message", f"hello from {sender}",
                        "--channel", "telegram", "--sender", sender], env=env, check=True, capture_output=True)
    return home


def _start(home: Path, src: str | None = None) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_GATEWAY_TOKEN")}
    if src is not None:
        env["PYTHONPATH"] = src
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


def run(requests: int, baseline_src: str | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        open_home, _ = _home(Path(tmp), "open", tokens=False)
        token_home, secrets = _home(Path(tmp), "tokens", tokens=True)
        operator = {"Authorization": f"Bearer {secrets['operator']}"}
        plans = {"none": (open_home, None, {}), "operator": (token_home, None, operator),
                 "peer": (token_home, None, {"Authorization": f"Bearer {secrets['peer']}"})}
        if baseline_src:
            plans["baseline"] = (_baseline_home(Path(tmp), baseline_src), baseline_src, {})
        started = {name: _start(home, src) for name, (home, src, _) in plans.items() if name != "peer"}
        started["peer"] = started["operator"]  # the same gateway, another token
        samples: dict[str, list[float]] = {name: [] for name in plans}
        clients = {name: httpx.Client(base_url=url) for name, (_, url) in started.items()}
        try:
            for name, (_, _, headers) in plans.items():
                _timed(clients[name], headers, 50)  # warm-up
            rounds = 10
            for _ in range(rounds):  # interleaved: drift and neighbours' load hit every variant alike
                for name, (_, _, headers) in plans.items():
                    samples[name] += _timed(clients[name], headers, requests // rounds)
        finally:
            for client in clients.values():
                client.close()
            for proc, _ in {id(p): (p, u) for p, u in started.values()}.values():
                proc.terminate()
                proc.wait(30)
    p50 = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    out = {**{f"p50_ms_{k}": round(v, 3) for k, v in p50.items()},
           "ratio_operator_token": round(p50["operator"] / p50["none"], 3),
           "ratio_peer_token": round(p50["peer"] / p50["none"], 3)}
    if "baseline" in p50:
        out["ratio_none_vs_baseline"] = round(p50["none"] / p50["baseline"], 3)
        out["ratio_operator_token_vs_baseline"] = round(p50["operator"] / p50["baseline"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--baseline-src", help="a source tree to run a tokenless baseline gateway from")
    args = parser.parse_args()
    print(json.dumps(run(args.requests, args.baseline_src), indent=2))


if __name__ == "__main__":
    main()
