"""Facts about the source tree's layout, read by parsing it (nothing is imported).

Function-local imports (issue 29): an import inside a function hides a module's dependencies
from its reader and from import-linter's layer contracts, so one is kept only to defer a heavy
import on purpose (numpy, httpx, an SDK, a model, a module of many patterns) or to look up a
plugin point late, and then says why in a comment on its line or the line before
(`# deferred: …`). Their number is capped so that new ones are a decision, not a habit."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "clawkeep"
MAX_FUNCTION_LOCAL_IMPORTS = 40
_NOQA = re.compile(r"noqa(?::\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?", re.IGNORECASE)


def checked_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def function_local_imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    found: dict[int, ast.Import | ast.ImportFrom] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):  # nested functions are walked twice: keyed by node
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found[id(inner)] = inner
    return sorted(found.values(), key=lambda n: n.lineno)


def comments(path: Path) -> dict[int, str]:
    """Line number → the text of the comment on it (a `#` inside a string is not one)."""
    out: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type == tokenize.COMMENT:
            out[token.start[0]] = token.string
    return out


def says_why(comment: str | None) -> bool:
    """A comment with words in it, beyond a bare `# noqa: CODE`."""
    return bool(comment) and bool(re.search(r"[A-Za-z]{3}", _NOQA.sub("", comment.lstrip("#"))))


def test_every_function_local_import_says_why_and_there_are_few():
    total, silent = 0, []
    for path in checked_files():
        notes = comments(path)
        for node in function_local_imports(path):
            total += 1
            lines = range(node.lineno - 1, (node.end_lineno or node.lineno) + 1)  # the line before, then its own
            if not any(says_why(notes.get(line)) for line in lines):
                silent.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert not silent, ("function-local imports without a comment saying why (move them to the top of the module, "
                        "or say why they wait, e.g. `# deferred: numpy, only for vectors`):\n" + "\n".join(silent))
    assert total <= MAX_FUNCTION_LOCAL_IMPORTS, (
        f"{total} function-local imports in src/clawkeep; "
        f"at most {MAX_FUNCTION_LOCAL_IMPORTS}: import at module level unless the import is heavy on purpose")


def test_every_deferred_module_says_why():
    """`deferred_import("numpy")` is a module-level import that waits: it says why like a local one."""
    silent = []
    for path in checked_files():
        notes = comments(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "deferred_import":
                lines = range(node.lineno - 1, (node.end_lineno or node.lineno) + 1)
                if not any(says_why(notes.get(line)) for line in lines):
                    silent.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert not silent, "deferred imports without a comment saying why:\n" + "\n".join(silent)


def test_the_checks_see_what_they_look_for(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\n\ndef f():\n    import json  # noqa: PLC0415\n"
                      "    # deferred: numpy is heavy\n    import numpy\n\n    def g():\n        from . import x\n"
                      "    return json, numpy, g\n", encoding="utf-8")
    found = function_local_imports(sample)
    assert [n.lineno for n in found] == [5, 7, 10]  # not the module-level one; the nested function's once
    notes = comments(sample)
    assert [says_why(notes.get(n.lineno)) or says_why(notes.get(n.lineno - 1)) for n in found] == [False, True, False]


def test_the_readme_opens_with_exactly_the_two_commands():
    """QA: a third line (`CLAWKEEP_HOME=/tmp/ck make run`) had crept into the README's opening
    block; a fresh machine is told exactly `make run` and `make test`, nothing else."""
    readme = (SRC.parents[1] / "README.md").read_text(encoding="utf-8").splitlines()
    assert readme[0] == "```sh" and readme[3] == "```", readme[:4]
    assert [line.split("#")[0].strip() for line in readme[1:3]] == ["make run", "make test"]
