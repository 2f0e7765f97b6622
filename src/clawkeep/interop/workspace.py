"""Merging OpenClaw's workspace memory files (MEMORY.md, memory/*.md) into ours.

Nothing of ours is overwritten: a file we do not have is copied as it is; a file we have with
the same text is left alone; a file we have with other text gets the OpenClaw lines it lacks
appended under one heading (`## Imported from OpenClaw (<file>)`), in their order. A line
counts as present when a line of ours has the same text once stripped, so importing again
adds nothing. Only regular files inside the OpenClaw workspace are read (no symlink out).

Credentials written by hand into OpenClaw's notes (a password, an API key, a card number) are
redacted on the way in, as every other write into long-term memory is (SPEC M7); the OpenClaw
files themselves are left as they are, so nothing is lost, and the report counts the lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileio import replace_text
from ..memory.workspace import MEMORY_FILE, NOTES_DIR, contained_file
from ..redact import redact_secrets, secret_kinds
from ..validation import control_character

MAX_MEMORY_FILE_BYTES = 16 * 1024 * 1024
HEADING = "## Imported from OpenClaw ({name})"


def memory_files(workspace: Path) -> list[str]:
    """Relative paths of MEMORY.md and memory/*.md in an OpenClaw workspace."""
    found = []
    if contained_file(workspace / MEMORY_FILE, workspace):
        found.append(MEMORY_FILE)
    notes = workspace / NOTES_DIR
    if notes.is_dir():
        for path in sorted(notes.iterdir()):
            if path.suffix == ".md" and not path.name.startswith(".") and contained_file(path, workspace):
                found.append(f"{NOTES_DIR}/{path.name}")
    return found


def _read(path: Path) -> str:
    if path.stat().st_size > MAX_MEMORY_FILE_BYTES:
        raise InputError(f"{path} is larger than {MAX_MEMORY_FILE_BYTES // (1024 * 1024)} MiB; not a memory file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if (bad := control_character(line)) is not None:  # as `memory remember` refuses it (a NUL hid MEMORY.md)
            raise InputError(f"{path}:{number} contains the control character {bad}; memory files may hold tab but "
                             "no other control character; remove it and import again (nothing of this file was "
                             "imported)")
    return text


def _without_secrets(text: str) -> tuple[str, dict[str, Any]]:
    """The text with credentials redacted line by line, and what was redacted (lines, kinds)."""
    lines, redacted, kinds = text.split("\n"), 0, {}
    for number, line in enumerate(lines):
        clean, changed = redact_secrets(line)
        if changed:
            redacted += 1
            kinds.update(dict.fromkeys(secret_kinds(line)))
            lines[number] = clean
    return "\n".join(lines), ({"redactedLines": redacted, "redactedKinds": list(kinds)} if redacted else {})


def merge_file(source: Path, target: Path, name: str, *, dry_run: bool) -> dict[str, Any]:
    """Merge one file; returns what was (or would be) done."""
    text, redaction = _without_secrets(_read(source))
    result: dict[str, Any] = {"file": name, "from": str(source), "to": str(target), **redaction}
    if not target.exists():
        if not dry_run:
            replace_text(target, text)
        return {**result, "action": "copied", "lines": len(text.splitlines())}
    if not contained_file(target, target.parent) or target.is_symlink():
        raise InputError(f"{target} exists and is not a regular file; not merging {source} into it")
    ours = _read(target)
    if ours == text:
        return {**result, "action": "unchanged", "lines": 0}
    present = {line.strip() for line in ours.splitlines()}
    heading = HEADING.format(name=name)
    missing = [line for line in text.splitlines() if line.strip() and line.strip() not in present
               and line.strip() != heading]
    if not missing:
        return {**result, "action": "unchanged", "lines": 0}
    if not dry_run:
        block = ("" if ours.endswith("\n") or not ours else "\n") + f"\n{heading}\n\n" + "\n".join(missing) + "\n"
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
    return {**result, "action": "appended", "lines": len(missing)}



def merge_workspace(source: Path, target: Path, *, dry_run: bool) -> list[dict[str, Any]]:
    return [merge_file(source / name, target / name, name, dry_run=dry_run) for name in memory_files(source)]
