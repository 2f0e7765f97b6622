"""The type checker's view of clawkeep.Client / AsyncClient (src/clawkeep/client/__init__.pyi) is
generated from the operations registry by tools/client_stubs.py: it must be current, and name every
operation method the clients make at import time."""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import clawkeep
from clawkeep.api.operations import OPERATIONS

TOOL = Path(__file__).resolve().parents[2] / "tools" / "client_stubs.py"


def _tool():
    spec = importlib.util.spec_from_file_location("client_stubs", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stub_is_current() -> None:
    tool = _tool()
    assert tool.STUB.read_text(encoding="utf-8") == tool.render(), \
        "src/clawkeep/client/__init__.pyi is stale: run python tools/client_stubs.py"


def test_the_stub_names_every_method_with_its_runtime_signature() -> None:
    tree = ast.parse(_tool().STUB.read_text(encoding="utf-8"))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    routed = {op.http.method_name(op.name) for op in OPERATIONS.values() if op.http is not None}
    for cls, asynchronous in ((clawkeep.Client, False), (clawkeep.AsyncClient, True)):
        stubbed: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for node in classes[cls.__name__].body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                stubbed.setdefault(node.name, []).append(node)
        assert routed <= set(stubbed), routed - set(stubbed)
        for name in routed:
            runtime = list(inspect.signature(getattr(cls, name)).parameters)
            for node in stubbed[name]:  # message: its two overloads (stream=False / True)
                args = [a.arg for a in node.args.args + node.args.kwonlyargs]
                assert sorted(args) == sorted(runtime), (cls.__name__, name, args, runtime)
                assert [a.arg for a in node.args.args] == runtime[:len(node.args.args)]  # positional order
                assert isinstance(node, ast.AsyncFunctionDef) == (asynchronous and name != "message"), name
    search = next(n for n in classes["Client"].body if getattr(n, "name", "") == "memory_search")
    assert ast.unparse(search.returns) == "api.MemorySearchResult"
