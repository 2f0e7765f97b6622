"""The runtime every service function receives: home, config, the open stores, and the
process-wide parts a long-running engine keeps warm (chat models, the memory index, the
event bus, Active Memory's circuit breaker). Per-session turn locks belong to the stores
(`AgentStore.session_lock`)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .config import Config
from .errors import NotFoundError
from .events import EventBus
from .models.registry import ChatModels
from .routing.keys import normalize_agent_id, parse_key
from .storage import (
    AgentStore,
    SessionRecord,
    agent_store_exists,
    known_agent_ids,
    open_agent_store,
    open_in_memory_store,
)
from .timeutil import now_ms
from .visibility import NO_LIMIT, OPERATOR_SCOPE, Caller, Limit, Scope, descendants, scope_for, within_limit

AGENT_LIST_TTL_S = 5.0


def default_home() -> Path:
    return Path(os.environ.get("CLAWKEEP_HOME") or Path.home() / ".clawkeep").expanduser()


class Background:
    """Work a call started and did not wait for (a fire-and-forget sessions_send, a ping-pong
    exchange): the runtime waits for it when it closes, so a short-lived process (the CLI)
    never drops work it acknowledged."""

    def __init__(self) -> None:
        self._threads: set[threading.Thread] = set()
        self._guard = threading.Lock()

    def start(self, name: str, work: Callable[[], None]) -> None:
        """Run `work` in a thread; what it needs of the caller's turn (held locks, the limit) it
        is handed explicitly (turns.send)."""

        def run() -> None:
            try:
                work()
            finally:
                with self._guard:
                    self._threads.discard(threading.current_thread())

        thread = threading.Thread(target=run, name=f"clawkeep-{name}", daemon=True)
        with self._guard:
            self._threads.add(thread)
        thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no background work is left (work started meanwhile included); False if
        `timeout` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._guard:
                pending = [t for t in self._threads if t is not threading.current_thread()]
            if not pending:
                return True
            for thread in pending:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                thread.join(left)


class Runtime:
    def __init__(self, home: Path, config: Config, agent_id: str = "main"):
        self.home = Path(home).expanduser()
        self.config = config
        self.agent_id = normalize_agent_id(agent_id)
        self._stores: dict[str, AgentStore] = {}
        self._incognito: dict[str, AgentStore] = {}
        self._empty: dict[str, AgentStore] = {}  # stand-ins for agents without a database (reads only)
        self._opening = threading.RLock()  # one opener at a time: see `_open_once`
        self._closers: list = []
        self._agents: tuple[float, list[str]] | None = None
        self.warnings: list[str] = []
        self.config_path: Path | None = None  # the file `/active-memory --global` writes to
        self.events = EventBus()
        defaults = config.agents.defaults.model
        self.models = ChatModels(config.models, defaults.primary, defaults.fallbacks)
        self.memory_index: Any | None = None  # memory.service.open_index caches the agent's index here
        self.recall_breaker: Any | None = None  # recall.service: the circuit breaker across turns
        self.compaction_providers: list[Any] = []  # Engine.register_compaction_provider
        self.tool_host: Any | None = None  # the Engine the reply model's tools run on (turns.tools)
        self.metrics: Any | None = None  # hooks.metrics.MetricsRecorder: G5 counters, flushed to the store
        self.background = Background()  # sessions_send deliveries and exchanges still running
        self.limit: Limit = NO_LIMIT  # the credential's limit on what callers see (`with_limit`)
        # who this process is when it holds a lease on a shared database (SPEC D2)
        self.instance_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"

    def now(self) -> int:
        return now_ms()

    def store(self, agent_id: str | None = None) -> AgentStore:
        agent = agent_id or self.agent_id
        found = self._stores.get(agent)  # the hot path: no lock, no closure
        if found is not None:
            return found
        return self._open_once(self._stores, agent, lambda: open_agent_store(self.home, agent, self.config.storage))

    def _open_once(self, opened: dict[str, AgentStore], agent: str, open_store: Callable[[], AgentStore]
                   ) -> AgentStore:
        """`opened[agent]`, opened by the first caller only. A gateway's warm-up and its first
        requests ask at the same moment; two stores for one agent would each bring their own
        mirror of the memory documents (PostgreSQL mode), and each mirror would take the other's
        writes for a human's edits and record a conflict again (or split an incognito session
        between two in-memory stores)."""
        found = opened.get(agent)
        if found is not None:
            return found
        with self._opening:
            found = opened.get(agent)
            if found is None:
                found = opened[agent] = open_store()
            return found

    def has_database(self, agent_id: str | None = None) -> bool:
        agent = agent_id or self.agent_id
        return agent in self._stores or agent_store_exists(self.home, agent, self.config.storage)

    def read_store(self, agent_id: str | None = None) -> AgentStore:
        """For reads: the agent's database, or an empty in-memory stand-in when the agent has none —
        a read (search, list, status, history) never creates a database for an unknown agent."""
        agent = agent_id or self.agent_id
        if self.has_database(agent):
            return self.store(agent)
        return self._open_once(self._empty, agent, lambda: open_in_memory_store(agent))

    def read_store_for_key(self, key: str) -> AgentStore:
        parsed = parse_key(key)
        return self.incognito_store(parsed.agent_id) if parsed.incognito else self.read_store(parsed.agent_id)

    def release_store(self, agent_id: str) -> None:
        """Close this process's connection to an agent's database (before it is replaced on disk)."""
        with self._opening:
            store = self._stores.pop(agent_id, None)
        if store is not None:
            store.close()

    def incognito_store(self, agent_id: str | None = None) -> AgentStore:
        agent = agent_id or self.agent_id
        return self._open_once(self._incognito, agent, lambda: open_in_memory_store(agent))

    def store_for_key(self, key: str) -> AgentStore:
        parsed = parse_key(key)
        return self.incognito_store(parsed.agent_id) if parsed.incognito else self.store(parsed.agent_id)

    def agent_ids(self) -> list[str]:
        """Agents with a database under the home, plus the current one (re-listed at most every 5 s:
        a search must not glob the home each time, a long-running gateway must still see new agents)."""
        now = time.monotonic()
        cached = self._agents
        if cached and now - cached[0] < AGENT_LIST_TTL_S:
            return cached[1]
        found = {self.agent_id} | known_agent_ids(self.home, self.config.storage)
        self._agents = (now, sorted(found))
        return self._agents[1]

    def stores_in(self, scope: Scope) -> list[AgentStore]:
        return [self.store(a) for a in self.agent_ids() if scope.allows_agent(a) and self.has_database(a)]

    def caller_session(self, caller: Caller) -> SessionRecord:
        assert caller.key is not None
        key = parse_key(caller.key).key
        session = self.read_store_for_key(key).get_session_by_key(key)
        if session is None:
            raise NotFoundError(f"calling session {caller.key!r} not found")
        return session

    def with_limit(self, limit: Limit) -> Runtime:
        """This runtime as one credential's calls see it: the same stores, models and state, with
        `limit` applied to every scope it computes (`scope`). `NO_LIMIT` gives the runtime itself."""
        base = self.base
        return base if limit == NO_LIMIT else LimitedRuntime(base, limit)

    @property
    def base(self) -> Runtime:
        """The runtime every limited view shares (itself, here)."""
        return self

    def scope(self, caller: Caller) -> Scope:
        """What `caller` may see (S8), within this runtime's credential limit (`with_limit`): a
        sandboxed credential makes every caller sandboxed, an agent credential confines to its agent."""
        limit = self.limit
        if caller.key is None:
            return within_limit(OPERATOR_SCOPE, limit)
        if limit.sandboxed and not caller.sandboxed:
            caller = Caller(caller.key, sandboxed=True)
        own = self.caller_session(caller)
        stores = [self.read_store_for_key(own.key)]
        if own.meta.get("incognito"):
            stores.append(self.read_store(own.agent_id))
        return within_limit(scope_for(self.config, caller, own, lambda root: descendants(root, stores)), limit)

    def log_warning(self, message: str) -> None:
        """Warnings that must not fail the operation (hooks, background sync)."""
        self.warnings.append(message)
        logging.getLogger("clawkeep").warning(message)

    def on_close(self, closer) -> None:
        """Register something (an index, a watcher) to close with the runtime."""
        self._closers.append(closer)

    def close(self) -> None:
        self.background.wait()  # bounded by the model calls' own timeouts
        for closer in reversed(self._closers):
            closer()
        self._closers.clear()
        self.models.close()
        for store in [*self._stores.values(), *self._incognito.values(), *self._empty.values()]:
            store.close()
        self._stores.clear()
        self._incognito.clear()
        self._empty.clear()


class LimitedRuntime(Runtime):
    """A view of a runtime under one credential's `Limit` (`Runtime.with_limit`). It owns
    nothing: every attribute is the base runtime's (read and written there: an index opened or a
    cache filled through the view is the runtime's), except `limit`."""

    def __init__(self, base: Runtime, limit: Limit):  # noqa: D107 - no Runtime.__init__: nothing is opened
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "limit", limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_base"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_base"), name, value)

    @property
    def base(self) -> Runtime:
        return object.__getattribute__(self, "_base")
