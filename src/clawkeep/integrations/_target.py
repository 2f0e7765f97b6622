"""Calling an `Engine`, a `Client` or an `AsyncClient` the same way from async adapter code.

Engine and Client block (SQLite, the embedding model, HTTP): they run in a worker thread so the
framework's event loop keeps going. AsyncClient is awaited directly.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from ..api.operations import OPERATIONS


async def call(target: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """`target.method(*args, **kwargs)` without blocking the event loop."""
    bound = getattr(target, method)
    if _is_async(target):
        return await bound(*args, **kwargs)
    return await asyncio.to_thread(bound, *args, **kwargs)


def call_sync(target: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """`target.method(*args, **kwargs)` from synchronous code (an AsyncClient gets its own loop run)."""
    result = getattr(target, method)(*args, **kwargs)
    if inspect.isawaitable(result):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def run_op(target: Any, name: str, arguments: Any, caller: str | None) -> Any:
    """Operation `name` with the operation's own argument fields (a tool call's), on any target."""
    op = OPERATIONS[name]
    parsed = op.parse(arguments)
    if hasattr(target, "run"):  # a Client/AsyncClient: argument fields over HTTP
        fields = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        if _is_async(target):
            return await target.run(name, fields, caller=caller)
        return await asyncio.to_thread(target.run, name, fields, caller=caller)
    return await asyncio.to_thread(op.run, target, parsed, caller)


def _is_async(target: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(type(target), "aclose", None))
