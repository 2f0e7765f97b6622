"""A home where Dreaming has really run, for the Dreams tab's tests: daily notes written as a
person would, searched through the engine's public API (each search a recall trace), and one
sweep run by the CLI (`clawkeep memory dream`). Nothing is written into memory/.dreams/ by hand.

What the sweep does by construction: the operator's editor fact and alice's seat preference
(stated in her own DM: its owner marker says so) are promoted; the cron job's line (a system
origin) never is; an incognito thread's searches leave no trace at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine
from tests.helpers.gateway_process import write_config

ALICE = "agent:main:telegram:direct:alice"
BOB = "agent:main:telegram:direct:bob"
CRON = "agent:main:cron:backup"
INITIAL_MEMORY = "# Memory\n\n- I live in Berlin <!-- ck:id=m-berlin00; at=2026-01-10 -->\n"
EDITOR = "My favourite editor is Helix"
SEATS = "Alice prefers window seats on trains"
BACKUP = "The nightly backup finished in twelve minutes"
INCOGNITO_WORD = "quokkazanzibar"
SEARCHES = {EDITOR: ["favourite editor", "editor helix", "my favourite editor", "helix as my editor"],
            SEATS: ["window seats", "train seats", "seats on trains", "window seats on trains"],
            BACKUP: ["nightly backup", "backup minutes", "how long the nightly backup took", "backup finished"]}


def dreaming_config(enabled: bool = True) -> dict:
    return {"agents": {"defaults": {"memorySearch": {"provider": "none"}}},
            "session": {"dmScope": "per-channel-peer", "reset": {"timezone": "UTC"}},
            "plugins": {"entries": {"memory-core": {"config": {"dreaming": {
                "enabled": enabled, "deep": {"minScore": 0.5}}}}}}}


@dataclass
class Dreamed:
    home: Path
    config: Path
    run_id: str
    promoted: dict[str, str]  # text -> item id

    @property
    def memory_md(self) -> Path:
        return self.home / "workspace" / "MEMORY.md"


def dream_home(home: Path) -> Dreamed:
    ws = home / "workspace"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    ws.joinpath("MEMORY.md").write_text(INITIAL_MEMORY)
    day = (datetime.now(UTC).date() - timedelta(days=2)).isoformat()
    ws.joinpath("memory", f"{day}.md").write_text(
        f"# {day}\n\n- {EDITOR}\n"
        f"- {SEATS} <!-- ck:id=m-alice001; session={quote(ALICE, safe='')} -->\n"
        f"- {BACKUP} <!-- ck:id=m-cronjob1; session={quote(CRON, safe='')} -->\n")
    config = dreaming_config()
    with open_engine(home, config) as eng:
        for queries in SEARCHES.values():
            for query in queries:
                assert eng.memory_search(query)["results"], query
        hidden = eng.sessions_create(incognito=True).key
        for query in (f"{INCOGNITO_WORD} editor", f"{INCOGNITO_WORD} seats", f"{INCOGNITO_WORD} backup"):
            eng.memory_search(query, caller=hidden)
    path = write_config(home, config)
    swept = run_cli(home, "memory", "dream", "--json", config=path)
    assert swept.code == 0, swept.stderr
    report = swept.json()
    promoted = {row["text"]: row["id"] for row in report["promoted"]}
    assert set(promoted) == {EDITOR, SEATS}, report["deep"]
    return Dreamed(home, path, report["runId"], promoted)
