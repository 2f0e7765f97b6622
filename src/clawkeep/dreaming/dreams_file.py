"""DREAMS.md, the human side of Dreaming: three managed phase blocks and the Dream Diary.

    # Dreams

    ## Light Sleep
    <!-- clawkeep:dreaming:light:start -->
    …replaced by every Light run…
    <!-- clawkeep:dreaming:light:end -->

    ## REM Sleep            (same, `rem`)
    ## Deep Sleep           (same, `deep`)

    ## Dream Diary
    <!-- clawkeep:dreaming:diary:start -->
    ### 2026-05-30 03:00 · d-20260530-0300-1a2b      newest first, entries are kept
    …
    <!-- clawkeep:dreaming:diary:end -->

Only the text between a block's markers is replaced; anything a person writes outside them
is kept. An existing lowercase `dreams.md` is used instead of creating `DREAMS.md`. Generated
text is neutralised so it can neither open nor close a comment (no forged marker). Backfill
entries (`memory rem-backfill`) sit in the diary between `<!-- clawkeep:backfill … -->` and
`<!-- /clawkeep:backfill -->`, so their rollback removes exactly them.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import StorageError
from ..memory.documents import write_document
from ..memory.workspace import DREAMS_FILE
from .store import write_atomic

PHASE_TITLES = {"light": "Light Sleep", "rem": "REM Sleep", "deep": "Deep Sleep", "diary": "Dream Diary"}
BACKFILL_START = "<!-- clawkeep:backfill"
BACKFILL_END = "<!-- /clawkeep:backfill -->"
_BACKFILL = re.compile(r"<!-- clawkeep:backfill[^>]*-->\n.*?<!-- /clawkeep:backfill -->\n?", re.DOTALL)


def start_marker(block: str) -> str:
    return f"<!-- clawkeep:dreaming:{block}:start -->"


def end_marker(block: str) -> str:
    return f"<!-- clawkeep:dreaming:{block}:end -->"


def dreams_path(workspace: Path) -> Path:
    lower = workspace / DREAMS_FILE.lower()
    if not (workspace / DREAMS_FILE).exists() and lower.exists():
        return lower
    return workspace / DREAMS_FILE


def safe(text: str) -> str:
    """Generated text that cannot open or close an HTML comment."""
    return text.replace("<!--", "<!- -").replace("-->", "- ->")


def read(workspace: Path) -> str | None:
    path = dreams_path(workspace)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"{path} cannot be read ({exc}); fix or move it, Dreaming rewrites only its own "
                           "blocks") from None


def block(text: str | None, name: str) -> str | None:
    """The body of a managed block, or None when the file has none."""
    if not text:
        return None
    start, end = start_marker(name), end_marker(name)
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        return None
    return text[i + len(start):j].strip("\n")


def with_block(text: str | None, name: str, body: str) -> str:
    """`text` with block `name` replaced by `body` (the block and its heading added if missing)."""
    text = text if text else "# Dreams\n"
    if name != "diary":  # diary entries are made safe by their writer (they carry backfill markers)
        body = safe(body)
    start, end = start_marker(name), end_marker(name)
    content = f"{start}\n{body.rstrip()}\n{end}" if body.strip() else f"{start}\n{end}"
    i, j = text.find(start), text.find(end)
    if i >= 0 and j > i:
        return text[:i] + content + text[j + len(end):]
    section = f"## {PHASE_TITLES[name]}\n{content}\n"
    if name != "diary":  # phase blocks go before the diary, in phase order
        diary = text.find(f"## {PHASE_TITLES['diary']}")
        if diary >= 0:
            return text[:diary] + section + "\n" + text[diary:]
    return text.rstrip("\n") + "\n\n" + section


def with_diary_entry(text: str | None, entry: str) -> str:
    """`text` with `entry` added at the top of the diary."""
    body = block(text, "diary") or ""
    return with_block(text, "diary", entry.rstrip() + ("\n\n" + body if body.strip() else ""))


def without_backfill(text: str) -> tuple[str, int]:
    """`text` without the backfill entries, and how many there were."""
    body = block(text, "diary")
    if body is None:
        return text, 0
    kept, removed = _BACKFILL.subn("", body + "\n")
    kept = re.sub(r"\n{3,}", "\n\n", kept).strip("\n")
    return with_block(text, "diary", kept), removed


def write(workspace: Path, text: str | None) -> None:
    """Replace DREAMS.md atomically (None: remove it — a rollback to before it existed)."""
    write_document(workspace, dreams_path(workspace).relative_to(workspace).as_posix(), text, write_atomic)
