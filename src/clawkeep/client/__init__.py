"""`clawkeep.Client` and `clawkeep.AsyncClient`: the gateway's HTTP API with `Engine`'s methods.

    with clawkeep.Client("http://127.0.0.1:8787", token="…") as ck:
        ck.message("hello", channel="telegram", sender="ada")      # -> api.MessageResult
        ck.memory_search("coffee", limit=3).results                  # -> api.MemorySearchResult

Every method is generated from the operation registry (`api.operations.OPERATIONS`) and its HTTP
binding: the same name, arguments and result type as the `Engine` method, and the same `clawkeep`
exceptions with the gateway's message. `session=` (or a call's `caller=`) names the calling
session (X-Clawkeep-Session), as `caller=` does on Engine. Both clients share the sans-IO `core`;
they differ only in how they wait.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx

from .. import errors
from ..api.operations import OPERATIONS, Operation
from . import core
from .core import StreamEvent

__all__ = ["AsyncClient", "Client", "StreamEvent", "DEFAULT_TIMEOUT"]

# A turn may wait on a chat model (and sessions_send on another session's turn): reads get long;
# connecting to a gateway that is there takes milliseconds.
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=120.0, write=30.0, pool=10.0)
_UNSET: Any = object()


class _Base:
    def __init__(self, url: str, token: str | None, session: str | None) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise errors.InputError(f"url {url!r}: give the gateway's http:// or https:// address, "
                                    "e.g. http://127.0.0.1:8787")
        self.url = url.rstrip("/")
        self.session = session
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], caller: Any,
              stream: bool) -> core.Call:
        op = core.operation(name)
        who = self.session if caller is _UNSET else caller
        if stream and name != "message":
            raise errors.InputError(f"stream=True is for message only, not {name}")
        return core.build(op, core.arguments(op, args, kwargs), who, stream=stream)

    def _build(self, name: str, fields: dict[str, Any], caller: Any) -> core.Call:
        return core.build(core.operation(name), fields, self.session if caller is _UNSET else caller)

    def _failure(self, exc: httpx.HTTPError, call: core.Call) -> errors.ClawkeepError:
        """A transport failure as a clawkeep error naming the URL (never httpx's traceback)."""
        where = f"{self.url}{call.path}"
        if isinstance(exc, httpx.ConnectError):
            return errors.UnavailableError(f"cannot connect to the clawkeep gateway at {self.url} ({exc}); "
                                           "is it running (`clawkeep gateway`) and is the URL right?")
        if isinstance(exc, httpx.TimeoutException):
            return errors.UnavailableError(f"{call.method} {where} timed out ({type(exc).__name__}); "
                                           "raise the client's timeout= or check the gateway")
        return errors.UnavailableError(f"{call.method} {where} failed: {type(exc).__name__}: {exc}")

    def _response(self, tries: core.Tries) -> httpx.Response:
        """The last try's response; its transport error as a clawkeep error."""
        if isinstance(tries.last, httpx.HTTPError):
            raise self._failure(tries.last, tries.call) from None
        return tries.last

    def _request(self, call: core.Call) -> httpx.Request:
        return httpx.Request(call.method, self.url + call.path, params=call.params,
                             content=core.encode(call.body), headers={**self._headers, **call.headers})


class Client(_Base):
    """The gateway's API, synchronously (httpx.Client; reuses connections: close it or use `with`)."""

    def __init__(self, url: str, token: str | None = None, *, session: str | None = None,
                 timeout: float | httpx.Timeout = DEFAULT_TIMEOUT, transport: httpx.BaseTransport | None = None):
        super().__init__(url, token, session)
        self._http = httpx.Client(timeout=timeout, transport=transport)

    def call(self, name: str, *args: Any, caller: Any = _UNSET, stream: bool = False, **kwargs: Any) -> Any:
        """Run operation `name` with Engine's arguments; its result (stream: the events)."""
        call = self._call(name, args, kwargs, caller, stream)
        if stream:
            return self._events(call)
        response = self._send(call)
        return core.result(call, response.status_code, response.content, self.url)

    def run(self, name: str, fields: dict[str, Any], *, caller: Any = _UNSET) -> Any:
        """Operation `name` with its own argument fields (as `Operation.run` takes them: a tool call's)."""
        call = self._build(name, fields, caller)
        response = self._send(call)
        return core.result(call, response.status_code, response.content, self.url)

    def message_stream(self, text: str, **inbound: Any) -> Iterator[StreamEvent]:
        return self.call("message", text, stream=True, **inbound)

    def _send(self, call: core.Call) -> httpx.Response:
        tries = core.Tries(call)
        for pause in tries:
            if pause is not None:
                time.sleep(pause)
            try:
                tries.last = self._http.send(self._request(call))
            except httpx.HTTPError as exc:
                tries.last = exc
        return self._response(tries)

    def _events(self, call: core.Call) -> Iterator[StreamEvent]:
        parser = core.SSEParser(call, self.url)
        try:
            with self._http.stream(call.method, self.url + call.path, params=call.params,
                                   content=core.encode(call.body), headers={**self._headers, **call.headers}) as got:
                if got.status_code >= 400 or "text/event-stream" not in got.headers.get("content-type", ""):
                    got.read()
                    yield StreamEvent("result", core.result(call, got.status_code, got.content, self.url))
                    return
                for text in got.iter_text():
                    yield from parser.feed(text)
        except httpx.HTTPError as exc:
            raise self._failure(exc, call) from None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """The gateway's API for asyncio (httpx.AsyncClient): every method is a coroutine, except
    `message(..., stream=True)` / `message_stream`, which return an async iterator of events."""

    def __init__(self, url: str, token: str | None = None, *, session: str | None = None,
                 timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
                 transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(url, token, session)
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport)

    def call(self, name: str, *args: Any, caller: Any = _UNSET, stream: bool = False, **kwargs: Any) -> Any:
        call = self._call(name, args, kwargs, caller, stream)
        return self._events(call) if stream else self._result(call)

    async def run(self, name: str, fields: dict[str, Any], *, caller: Any = _UNSET) -> Any:
        """Operation `name` with its own argument fields (as `Operation.run` takes them: a tool call's)."""
        return await self._result(self._build(name, fields, caller))

    def message_stream(self, text: str, **inbound: Any) -> AsyncIterator[StreamEvent]:
        return self.call("message", text, stream=True, **inbound)

    async def _result(self, call: core.Call) -> Any:
        response = await self._send(call)
        return core.result(call, response.status_code, response.content, self.url)

    async def _send(self, call: core.Call) -> httpx.Response:
        tries = core.Tries(call)
        for pause in tries:
            if pause is not None:
                await asyncio.sleep(pause)
            try:
                tries.last = await self._http.send(self._request(call))
            except httpx.HTTPError as exc:
                tries.last = exc
        return self._response(tries)

    async def _events(self, call: core.Call) -> AsyncIterator[StreamEvent]:
        parser = core.SSEParser(call, self.url)
        try:
            async with self._http.stream(call.method, self.url + call.path, params=call.params,
                                         content=core.encode(call.body),
                                         headers={**self._headers, **call.headers}) as got:
                if got.status_code >= 400 or "text/event-stream" not in got.headers.get("content-type", ""):
                    await got.aread()
                    yield StreamEvent("result", core.result(call, got.status_code, got.content, self.url))
                    return
                async for text in got.aiter_text():
                    for event in parser.feed(text):
                        yield event
        except httpx.HTTPError as exc:
            raise self._failure(exc, call) from None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# --- the methods, generated from the registry ---------------------------------------------
def _signature(op: Operation) -> inspect.Signature:
    """Engine's signature for `op`: its positional parameters, then keywords under Engine's names."""
    http = op.http
    assert http is not None
    engine_name = {target: name for name, target in http.engine_names}
    fields = op.args.model_fields

    def parameter(name: str, kind: Any) -> inspect.Parameter:
        info = fields[name]
        default = inspect.Parameter.empty if info.is_required() else info.default
        return inspect.Parameter(engine_name.get(name, name), kind, default=default, annotation=info.annotation)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    leading = [parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in http.positional]
    for i in range(len(leading) - 2, -1, -1):  # before a required one, Engine takes it positionally (no default)
        if leading[i + 1].default is inspect.Parameter.empty:
            leading[i] = leading[i].replace(default=inspect.Parameter.empty)
    params += leading
    params += [parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in fields if name not in http.positional]
    if op.name == "message":
        params.append(inspect.Parameter("stream", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=bool))
    if not http.operator:
        params.append(inspect.Parameter("caller", inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=str | None))
    result: Any = list[op.result] if http.many else op.result  # type: ignore[name-defined]
    return inspect.Signature(params, return_annotation=result)


def _method(op: Operation) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self.call(op.name, *args, **kwargs)

    method.__name__ = method.__qualname__ = op.http.method_name(op.name) if op.http else op.name
    method.__doc__ = op.summary
    method.__signature__ = _signature(op)  # type: ignore[attr-defined]
    return method


for _op in OPERATIONS.values():
    if _op.http is not None:  # named like the Engine method (memory_edit's route is Engine.memory_correct)
        setattr(Client, _op.http.method_name(_op.name), _method(_op))
        setattr(AsyncClient, _op.http.method_name(_op.name), _method(_op))
