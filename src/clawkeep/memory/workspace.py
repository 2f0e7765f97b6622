"""The agent workspace (M1): MEMORY.md, memory/YYYY-MM-DD.md daily notes, DREAMS.md.

Plain Markdown is the source of truth. The main agent's workspace is `<home>/workspace`,
another agent's `<home>/workspace-<agentId>`; `agents.defaults.workspace` (main) or an
`agents.list[].workspace` entry overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

from ..config import Config
from ..errors import InputError

MEMORY_FILE = "MEMORY.md"
DREAMS_FILE = "DREAMS.md"
NOTES_DIR = "memory"
# Bootstrap files are read-only in a memory-flush turn; only today's note may be appended.
READ_ONLY_FILES = ("MEMORY.md", "DREAMS.md", "SOUL.md", "TOOLS.md", "AGENTS.md")
TRUNCATION_NOTE = "\n\n[… MEMORY.md truncated for this session: {omitted} more characters on disk …]"


def workspace_dir(home: Path, config: Config, agent_id: str) -> Path:
    for entry in config.agents.agents_list:
        if entry.get("id") == agent_id and entry.get("workspace"):
            return Path(entry["workspace"]).expanduser()
    if agent_id == "main" and config.agents.defaults.workspace:
        return Path(config.agents.defaults.workspace).expanduser()
    return home / ("workspace" if agent_id == "main" else f"workspace-{agent_id}")


def daily_note(workspace: Path, day: str) -> Path:
    return workspace / NOTES_DIR / f"{day}.md"


def ensure_workspace(workspace: Path) -> Path:
    try:
        (workspace / NOTES_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"workspace {workspace} cannot be created: {exc}") from None
    return workspace


@dataclass
class BootstrapFile:
    path: str  # workspace-relative
    text: str  # what is injected (may be truncated)
    truncated: bool = False
    original_chars: int = 0


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return None  # unreadable files are reported by `memory status`, never crash a turn


def bootstrap_files(workspace: Path, now: datetime, *, chat_type: str | None, new_session: bool,
                    max_chars: int) -> list[BootstrapFile]:
    """What a turn injects: MEMORY.md at the start of a DM session (budgeted; the file on disk
    is never cut) and today's and yesterday's daily notes."""
    files: list[BootstrapFile] = []
    if chat_type == "direct" and new_session:
        text = _read(workspace / MEMORY_FILE)
        if text:
            files.append(_budgeted(MEMORY_FILE, text, max_chars))
    for day in (now - timedelta(days=1), now):
        name = f"{NOTES_DIR}/{day:%Y-%m-%d}.md"
        text = _read(workspace / name)
        if text:
            files.append(BootstrapFile(name, text, False, len(text)))
    return files


def _budgeted(name: str, text: str, max_chars: int) -> BootstrapFile:
    if len(text) <= max_chars:
        return BootstrapFile(name, text, False, len(text))
    cut = text[:max_chars]
    if "\n" in cut[max_chars // 2:]:
        cut = cut[: cut.rfind("\n")]  # end on a whole line
    return BootstrapFile(name, cut + TRUNCATION_NOTE.format(omitted=len(text) - len(cut)), True, len(text))


def local_now(ms: int, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=tz)
