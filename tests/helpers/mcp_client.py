"""`clawkeep mcp` driven by the official MCP SDK's client: spawned over stdio, or served over
streamable HTTP on a free loopback port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")}


def server_args(home: Path, *extra: str) -> list[str]:
    return ["-m", "clawkeep", "--home", str(home), "mcp", *extra]


def over_stdio(home: Path, work, *extra: str):
    """Run `work(session)` against `clawkeep mcp …` spawned by the SDK's stdio client."""
    params = StdioServerParameters(command=sys.executable, args=server_args(home, *extra), env=server_env())

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return anyio.run(main)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(home: Path, *extra: str):
    port = free_port()
    proc = subprocess.Popen([sys.executable, *server_args(home, "--http", str(port), *extra)], env=server_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(20)


def over_http(url: str, work, headers: dict[str, str] | None = None):
    async def main():
        async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as client, \
                streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return anyio.run(main)


def payload(result):
    """The tool result's JSON text, checked against its structured twin when there is one."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data = json.loads(result.content[0].text)
    if isinstance(data, dict):
        assert result.structured_content == data
    return data
