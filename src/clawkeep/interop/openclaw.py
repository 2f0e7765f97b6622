"""The `import openclaw` service: an OpenClaw state directory into this clawkeep home."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import AGENT_ID
from ..errors import InputError
from ..memory.workspace import workspace_dir
from ..runtime import Runtime
from .importer import import_agent_sessions, iter_sizes
from .report import ImportReport
from .sources import SourceAgent, agent_dirs, check_home, leads_out, load_openclaw_config, read_agent, refused_links
from .workspace import merge_workspace

ProgressFactory = Callable[[int], Callable[[int], None]]  # total bytes → advance(bytes)


def openclaw_workspace(home: Path, config: dict[str, Any] | None, agent_id: str) -> Path:
    """Where OpenClaw kept this agent's workspace: the state directory's `workspace`
    (`workspace-<id>` for other agents) when it is there, else the path its config names."""
    own = home / ("workspace" if agent_id == "main" else f"workspace-{agent_id}")
    if own.is_dir():
        return own
    agents = (config or {}).get("agents") or {}
    candidates = [entry.get("workspace") for entry in agents.get("list") or []
                  if isinstance(entry, dict) and str(entry.get("id", "")).lower() == agent_id]
    if agent_id == "main":
        candidates.append((agents.get("defaults") or {}).get("workspace"))
    for value in candidates:
        if isinstance(value, str) and value and Path(value).expanduser().is_dir():
            return Path(value).expanduser()
    return own


def import_openclaw(rt: Runtime, path: str | Path, *, agent: str | None = None, dry_run: bool = False,
                    progress: ProgressFactory | None = None, accept_models: bool = False,
                    translate: Callable[[dict[str, Any], ImportReport], None] | None = None) -> ImportReport:
    """`accept_models`: the sessions' own model choices (OpenClaw's model overrides) are applied;
    without it they are only reported (see ImportReport.models)."""
    home = Path(path).expanduser().resolve()
    check_home(home)
    config = load_openclaw_config(home)
    report = ImportReport(str(home), dry_run=dry_run)
    for where, why in refused_links(home):
        report.error(where, why)
    directories = agent_dirs(home)
    if agent is not None:
        wanted = agent.strip().lower()
        directories = [d for d in directories if d.name.lower() == wanted]
        if not directories:
            available = ", ".join(d.name for d in agent_dirs(home)) or "none"
            raise InputError(f"{home} has no OpenClaw agent {agent!r}; agents there: {available}")
    agents: list[SourceAgent] = []
    for directory in directories:
        if not AGENT_ID.match(directory.name.lower()):
            report.error(str(directory), "agent id is not a valid clawkeep agent id (1-64 characters a-z, 0-9, "
                                         "'_' or '-'); this agent was not imported")
            continue
        agents.append(read_agent(directory, home))
    total = sum(sum(iter_sizes(a.sessions)) for a in agents) * 2
    advance = progress(total) if progress is not None else (lambda _n: None)
    for source in agents:
        for kind, file in source.skipped_files:
            report.unmapped_item(kind, file, file)
        for where, why in source.refused:
            report.error(where, why)
        store = rt.read_store(source.agent_id) if dry_run else rt.store(source.agent_id)
        import_agent_sessions(rt, store, source.sessions, report, dry_run=dry_run, progress=advance,
                              accept_models=accept_models)
    for agent_id in sorted({a.agent_id for a in agents} | ({"main"} if agent in (None, "main") else set())):
        workspace = openclaw_workspace(home, config, agent_id)
        if workspace.is_relative_to(home) and leads_out(workspace, home):
            report.error(str(workspace), f"a symbolic link to {workspace.resolve()}, outside the import directory: "
                                         "not followed; its memory files were not imported")
        elif workspace.is_dir():
            target = workspace_dir(rt.home, rt.config, agent_id)
            try:
                report.memory.extend(merge_workspace(workspace, target, dry_run=dry_run))
            except InputError as exc:
                report.error(str(workspace), str(exc))
    if config is not None and translate is not None:
        translate(config, report)
    return report
