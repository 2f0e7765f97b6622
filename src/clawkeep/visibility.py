"""Which sessions a caller may see (S8): self, tree, agent, all.

A hidden session must look exactly like a missing one, so every read path asks
`Scope.allows` and answers "not found" on False. Incognito sessions are visible only to
themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .config import Config
from .storage import AgentStore, SessionFilter, SessionRecord


@dataclass(frozen=True)
class Limit:
    """What the credential behind a request allows beyond S8: `agent_id` confines every scope
    to one agent; `sandboxed` makes each caller sandboxed. It travels explicitly: the surface
    that checked the credential (gateway, MCP) asks for `Engine.limited(limit)`, whose runtime
    (`Runtime.with_limit`) applies it to every scope it computes, and a turn carries it on its
    `Turn` to the engine its tools run on."""

    agent_id: str | None = None
    sandboxed: bool = False


NO_LIMIT = Limit()


@dataclass(frozen=True)
class Caller:
    """The session calling a tool; `key=None` is the operator (CLI/HTTP without --as). A runtime
    under a sandboxed credential's limit treats every caller as sandboxed (`Runtime.scope`)."""

    key: str | None = None
    sandboxed: bool = False


@dataclass(frozen=True)
class Scope:
    agent_id: str | None  # None: every agent
    session_ids: frozenset[str] | None  # None: every session of the visible agents
    own_session_id: str | None = None

    def allows(self, session: SessionRecord) -> bool:
        if session.meta.get("incognito") and self.own_session_id not in (None, session.session_id):
            return False  # other sessions never see an incognito thread; the operator (UI) does
        if self.agent_id is not None and session.agent_id != self.agent_id:
            return False
        return self.session_ids is None or session.session_id in self.session_ids

    def allows_agent(self, agent_id: str) -> bool:
        return self.agent_id is None or self.agent_id == agent_id


OPERATOR_SCOPE = Scope(agent_id=None, session_ids=None)


def within_limit(scope: Scope, limit: Limit) -> Scope:
    """`scope` confined to the credential's agent: another agent's scope sees nothing."""
    if limit.agent_id is None or scope.agent_id == limit.agent_id:
        return scope
    if scope.agent_id is None:
        return Scope(limit.agent_id, scope.session_ids, scope.own_session_id)
    return Scope(limit.agent_id, frozenset(), scope.own_session_id)


def effective_level(config: Config, caller: Caller) -> str:
    level = config.tools.sessions.visibility
    if caller.sandboxed and config.agents.defaults.sandbox.session_tools_visibility == "spawned":
        return "self" if level == "self" else "tree"
    return level


def scope_for(config: Config, caller: Caller, own: SessionRecord,
              below: Callable[[str], set[str]]) -> Scope:
    """The scope of a calling session; `below(root)` is `root` and the sessions spawned or
    forked under it (asked only for the `tree` level)."""
    level = effective_level(config, caller)
    if level == "all":
        return Scope(None, None, own.session_id)
    if level == "agent" or (level == "tree" and own.kind == "main" and not caller.sandboxed):
        # the main session owns its agent: `tree` widens to the agent, never across agents
        return Scope(own.agent_id, None, own.session_id)
    if level == "self":
        return Scope(own.agent_id, frozenset({own.session_id}), own.session_id)
    return Scope(own.agent_id, frozenset(below(own.session_id)), own.session_id)


def descendants(root: str, stores: Sequence[AgentStore]) -> set[str]:
    """`root` and every current (non-archived) session below it by parent links, across
    `stores` (an incognito session's store and its agent's durable one)."""
    found, frontier = {root}, (root,)
    while frontier:
        new: set[str] = set()
        for store in stores:
            new.update(s.session_id for s in store.list_sessions(SessionFilter(descendants_of=frontier)))
        if len(stores) == 1:
            return found | new  # one store answers the whole walk at once
        frontier = tuple(sorted(new - found))
        found |= new
    return found
