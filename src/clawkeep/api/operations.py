"""The operations every surface exposes, each with its typed arguments and result.

One registry, `OPERATIONS`: the HTTP gateway builds its routes from it, the MCP server its
tools, the reply model's tool loop its function schemas (`tool_schema()`), and the CLI prints
the same result shapes. An operation runs as `op.run(engine, args, caller)`; `caller` is the
calling session (visibility, S8) or None for the operator.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError
from pydantic.alias_generators import to_camel

from ..errors import InputError
from ..validation import MAX_GET_LINES, MAX_INT, MAX_MEMORY_SEARCH, MAX_SESSIONS_SEARCH, shown
from . import shapes
from .shapes import SEND_TIMEOUT_DEFAULT_S, SEND_TIMEOUT_MAX_S


class Args(BaseModel):
    """Base of operation arguments: camelCase in JSON, unknown keys refused, and strict types — an
    integer is a JSON integer (not true, "3" or 1.0), a flag is true or false (docs/input-limits.md);
    lax coercion let `timeoutSeconds: true` through as a 1 s wait."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class MessageArgs(Args):
    text: str = Field(description="The message text; a slash command (/new, /reset, /status, …) is executed.")
    channel: str = "cli"
    account: str | None = None
    sender: str = "owner"
    chat_type: Literal["direct", "group", "channel"] = "direct"
    group: str | None = None
    thread: str | None = None
    role: Literal["user", "assistant"] = "user"
    message_id: str | None = Field(None, description="The channel's own id, idempotent per conversation.")
    # StrictInt: epoch ms as a JSON integer (a boolean or 1.5 is refused, not read as a time)
    at: str | StrictInt | None = Field(None, description="Time of the message (import, replay): ISO-8601 text or "
                                       "epoch ms.")
    session: str | None = Field(None, description="Deliver into this existing session instead of routing.")
    record_only: StrictBool = Field(False, description="Record the message without answering it (another system "
                                    "already answered: the OpenClaw plugin's capture); no model is called and "
                                    "the memory steps run as in record mode.")


_ROUTING_FIELDS = ("channel", "account", "sender", "chat_type", "group", "thread")


def scoped_message(args: MessageArgs, caller: str | None) -> MessageArgs:
    """The message a calling session may send. A session-scoped request (S8: it runs as that
    session, like `--as`) never routes by channel and sender — that would reach whichever
    conversation the fields name, another user's included; it delivers into `session` (which
    must be visible to the caller: checked by whoever runs it) or, without one, into the
    calling session itself. The operator (caller None) routes freely."""
    if caller is None:
        return args
    if args.model_fields_set & set(_ROUTING_FIELDS):
        raise InputError(_routing_refused(args))
    return args if args.session is not None else args.model_copy(update={"session": caller})


def _routing_refused(args: MessageArgs) -> str:
    given = ", ".join(sorted(to_camel(f) for f in args.model_fields_set & set(_ROUTING_FIELDS)))
    # a header or a scoped token can make the caller: name both, a token's user never sent the header
    return (f"routing fields ({given}) are not allowed in a request that runs as a calling session or peer "
            "(the X-Clawkeep-Session header, or a session- or peer-scoped token): leave them out and the message "
            "goes into that session, or into `session` (one it can see); only the operator routes by channel "
            "and sender")


# routing.keys.KINDS, spelled out: the api layer sits below routing (.importlinter); test_contract
# keeps the two equal. A Literal, so an unknown kind is an error (not an empty list) and the schema lists them.
SessionKind = Literal["main", "direct", "group", "channel", "thread", "cron", "hook", "heartbeat", "subagent",
                      "dashboard", "coding", "other"]


class SessionsListArgs(Args):
    kind: SessionKind | None = None
    label: str | None = None
    agent_id: str | None = None
    active_minutes: int | None = Field(None, ge=1, le=MAX_INT,
                                       description="Only sessions active in the last N minutes.")
    search: str | None = Field(None, description="Text in the key, label or title.")
    preview: bool = False
    recent_messages: int = Field(0, ge=0, le=20)


class SessionsHistoryArgs(Args):
    session_key: str = Field(description="A session key or id.")
    message_id: str | None = Field(None, description="Re-open the interval this message lies in.")
    include_tools: bool = False


class SessionsTimelineArgs(Args):
    session_key: str = Field(description="A session key or id.")


class SessionsSearchArgs(Args):
    query: str = Field(max_length=4096)
    limit: int | None = Field(None, ge=1, le=MAX_SESSIONS_SEARCH)


class SessionStatusArgs(Args):
    session_key: str | None = Field(None, description="Default: the calling session; \"current\" also names it.")




class SessionsSendArgs(Args):
    session_key: str = Field(description="The target session's key or id: another session you can see, not a "
                             "key ending in :thread:<id>.")
    message: str = Field(description="What to tell the other session; it receives this as inter-session data, "
                         "not as its user's words.")
    timeout_seconds: int = Field(SEND_TIMEOUT_DEFAULT_S, ge=0, le=SEND_TIMEOUT_MAX_S,
                                 description="0: send and return at once; otherwise wait up to this many seconds "
                                 "for the target's reply.")


class SessionRefArgs(Args):
    session_key: str


class SessionsCreateArgs(Args):
    incognito: StrictBool = False  # "yes" or 1 is refused: a typo must not create an unintended thread kind
    label: str | None = None
    coding: str | None = Field(None, description="Create the coding session agent:<id>:coding:<name> instead "
                               "(name: letters, digits, '.', '_', '-').")
    key: str | None = Field(None, description="Open the session with this key, creating it if missing (another "
                            "system's conversation, e.g. an OpenClaw session key, mapped as import maps it).")


class MemorySearchArgs(Args):
    query: str = Field(max_length=4096, description="What to look for, in the user's words or key terms.")
    max_results: int | None = Field(None, ge=1, le=MAX_MEMORY_SEARCH)
    min_score: float | None = Field(None, ge=0, le=1, description="Drop hits scoring below this (0-1).")
    corpus: Literal["all", "memory", "sessions"] = Field(
        "all", description="memory: the Markdown memory files; sessions: indexed past conversations.")
    mode: Literal["hybrid", "keyword", "vector"] = "hybrid"


class MemoryGetArgs(Args):
    path: str = Field(max_length=1024, description="A path exactly as memory_search returned it (MEMORY.md, "
                      "memory/…, extra:…).")
    from_line: int | None = Field(None, alias="from", ge=1, le=MAX_INT)
    lines: int | None = Field(None, ge=1, le=MAX_GET_LINES)


class MemoryRememberArgs(Args):
    text: str = Field(max_length=2000, description="One durable fact in a single line, in the user's language; "
                      "a dated plan expires after its day. Secrets and one-off requests are refused.")


class MemoryIndexArgs(Args):
    force: StrictBool = Field(False, description="Rebuild the whole index instead of catching up.")


class MemoryRefusalsArgs(Args):
    days: int = Field(7, ge=1, le=30, description="Refusals of the last N days (the log keeps 30).")


class MemoryEditArgs(Args):
    item_id: str
    text: str
    base_text: str | None = Field(None, description="The item's text the edit started from: when another writer "
                                  "changed it since, the edit is refused as a conflict (409) instead of overwriting.")


class MemoryItemArgs(Args):
    item_id: str


_ITEM_ID = "The line's id (from memory_remember)."
_OLD_TEXT = "Or the line's current text, as memory_search showed it."


class MemoryCorrectArgs(Args):
    item_id: str | None = Field(None, description=_ITEM_ID)
    old_text: str | None = Field(None, max_length=2000, description=_OLD_TEXT)
    text: str = Field(max_length=2000, description="The corrected fact, one line. Secrets and one-off requests "
                      "are refused.")


class MemoryForgetArgs(Args):
    item_id: str | None = Field(None, description=_ITEM_ID)
    old_text: str | None = Field(None, max_length=2000, description=_OLD_TEXT)


class MemoryUndoArgs(Args):
    item_id: str = Field(description="The `undo` id memory_edit or memory_forget answered with.")


class RecallArgs(Args):
    text: str
    session: str


class NoArgs(Args):
    pass


class DreamArgs(Args):
    phase: Literal["all", "light", "rem", "deep"] = Field("all", description="Every phase in order, or one.")


class DreamingEnableArgs(Args):
    enabled: StrictBool  # a real boolean: "false" (a non-empty string) must not switch anything


class DreamingReviewArgs(Args):
    limit: int = Field(20, ge=1, le=200, description="The newest N promotion runs and diary entries.")


class PromoteArgs(Args):
    limit: int | None = Field(None, ge=1, le=1000)
    min_score: float | None = Field(None, ge=0, le=1)
    min_recall_count: int | None = Field(None, ge=0, le=MAX_INT)
    min_unique_queries: int | None = Field(None, ge=0, le=32)


class PromoteExplainArgs(Args):
    query: str = Field(max_length=4096)


class PromoteUndoArgs(Args):
    target: str | None = Field(None, description="A promotion run id or a promoted item id; default the last run.")


class RemHarnessArgs(Args):
    path: str | None = None
    grounded: bool = False


class RemBackfillArgs(Args):
    path: str | None = None
    stage_short_term: bool = False
    rollback: bool = False
    rollback_short_term: bool = False


class StoreReadArgs(Args):
    path: str = Field(max_length=1024, description="memory/store/<name>.md (folders allowed).")


class StoreWriteArgs(Args):
    path: str = Field(max_length=1024, description="memory/store/<name>.md (folders allowed).")
    text: str = Field(description="The whole new Markdown text; empty deletes the file.")
    base_sha256: str | None = Field(None, description="The sha256 the text was read at (\"\" for a new file): "
                                    "if the file changed since, nothing is written (409).")


class StoreFilesArgs(Args):
    prefix: str = Field("memory/store", max_length=1024, description="A folder or file path (without .md).")


class MemoryItemsArgs(Args):
    status: Literal["active", "superseded", "expired", "forgotten"] | None = Field(
        None, description="Only items in this state.")


class MemoryStatusArgs(Args):
    deep: StrictBool = Field(False, description="Also probe the embedding provider and the vector store.")


@dataclass(frozen=True)
class Http:
    """Where an operation lives on the HTTP gateway, and who may call it there; the gateway builds
    the route from this alone (gateway/app.py `_operation_routes`). `path` names its parameters by
    argument field (`{session_key}`); `query` lists the fields sent in the query string, each as
    `field` or `field:param` when the parameter is spelt otherwise (default: the field's camelCase
    alias); every other field goes in the JSON body (left out entirely when every body field has a
    default). `many`: the result is a list of `result`.

    Who may call it: `operator` — the operator only: a request naming a calling session, or a scoped
    token, is refused (403); `agent_token` — with `operator`, a token of the agent this gateway serves
    (without a calling session) may call it too; `own_agent` — refused to a token of another agent.
    `what` is the call as the refusal names it ("… is for the operator"). Anything more a route
    checks is gateway policy (gateway/app.py `POLICIES`). `tag` groups it in the OpenAPI document
    (default: the path's first segment after /v1/) and `doc` is what the HTTP reference adds to the
    operation's summary.

    `positional` and `engine_names` give the `Engine` method's signature over these fields (its
    leading positional parameters; a keyword the method spells otherwise, e.g. `limit` for
    `max_results`) and `engine_method` its name when it is not the operation's, so the Python client
    mirrors Engine."""

    method: Literal["GET", "POST", "PUT", "DELETE"]
    path: str
    query: tuple[str, ...] = ()
    operator: bool = False
    many: bool = False
    agent_token: bool = False
    own_agent: bool = False
    what: str = ""
    tag: str = ""
    doc: str = ""
    positional: tuple[str, ...] = ()
    engine_names: tuple[tuple[str, str], ...] = ()  # (engine keyword, argument field)
    engine_method: str | None = None  # the Engine method, when it is not named like the operation

    def method_name(self, operation: str) -> str:
        return self.engine_method or operation

    @property
    def group(self) -> str:
        """The OpenAPI tag."""
        return self.tag or self.path.split("/")[2]

    @property
    def path_fields(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.path))

    def query_params(self, args: type[Args]) -> dict[str, str]:
        """Each query field and its parameter name."""
        names = {}
        for entry in self.query:
            field, _, param = entry.partition(":")
            names[field] = param or args.model_fields[field].alias or field
        return names

    def body_fields(self, args: type[Args]) -> tuple[str, ...]:
        taken = set(self.path_fields) | set(self.query_params(args))
        return tuple(name for name in args.model_fields if name not in taken)


def GET(path: str, *query: str, **rest: Any) -> Http:  # noqa: N802 - reads like the route table
    return Http("GET", path, query, **rest)


def POST(path: str, **rest: Any) -> Http:  # noqa: N802
    return Http("POST", path, **rest)


def PUT(path: str, **rest: Any) -> Http:  # noqa: N802
    return Http("PUT", path, **rest)


def DELETE(path: str, **rest: Any) -> Http:  # noqa: N802
    return Http("DELETE", path, **rest)


_SESSION = (("session", "session_key"),)  # Engine's sessions_* methods call the key `session`
_MEMORY: dict[str, Any] = {"own_agent": True, "what": "memory"}  # this gateway's agent's memory
# a calling session uses its own namespaces only (memory/store_files.py decides from the path)
_STORE: dict[str, Any] = {"own_agent": True, "what": "the key/value store"}
_MESSAGE_DOC = ("`?stream=true` answers with server-sent events: `token` (visible reply text), `discard`, "
                "`tool_call`, then `result` or `error`. A client message id reused for another text is a 409.")
_CREATE_DOC = ("`incognito`: kept in memory only, never written to disk; with `coding: NAME` the coding session "
               "agent:<id>:coding:NAME (409 when it exists); with `key`, the session of that key, created if "
               "missing (`created` says whether this call made it). A session or peer token may not create one.")
_SEND_DOC = ("S7: delivered into the other session marked as inter-session data; `timeoutSeconds: 0` returns at "
             "once, otherwise the call waits for the reply.")


@dataclass(frozen=True)
class Operation:
    name: str
    summary: str
    args: type[Args]
    result: type[BaseModel]
    call: Callable[[Any, Any, str | None], Any]  # (engine, args, caller) -> result
    tool: bool = False  # offered to the reply model and over MCP (SPEC §P "Agent tools")
    writes: bool = False
    http: Http | None = None  # None: not an HTTP route (CLI, MCP or the model's tools only)

    def run(self, engine: Any, args: Args | dict[str, Any], caller: str | None = None) -> Any:
        parsed = args if isinstance(args, self.args) else self.args.model_validate(args)
        return self.call(engine, parsed, caller)

    def parse(self, arguments: Any) -> Args:
        """Arguments from a tool call (the model's, an MCP client's): the typed model, or an
        InputError naming each argument that does not fit the schema."""
        if not isinstance(arguments, dict):
            raise InputError(f"the arguments of {self.name} must be a JSON object, got {type(arguments).__name__}")
        try:
            return self.args.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(_problem(e) for e in exc.errors())
            raise InputError(f"invalid arguments for {self.name}: {problems}") from None

    def tool_schema(self) -> dict[str, Any]:
        """A JSON-schema function description (OpenAI `tools` / Anthropic `input_schema`)."""
        return {"name": self.name, "description": self.summary,
                "parameters": _compact(self.args.model_json_schema(by_alias=True))}


def _problem(error: Any) -> str:
    """One schema error: the argument, what is allowed and (unless it is missing or unknown) what was given."""
    where = ".".join(map(str, error["loc"])) or "arguments"
    if error["type"] in ("missing", "extra_forbidden"):
        return f"{where}: {error['msg']}"
    given = error.get("input")
    return f"{where}: {error['msg']}, got {type(given).__name__} {shown(given)}"


def result_json(result: Any) -> Any:
    """An operation's result as its documented JSON (a list result: the list of shapes)."""
    if isinstance(result, list):
        return [item.to_json() if hasattr(item, "to_json") else item for item in result]
    return result.to_json() if hasattr(result, "to_json") else result


def _compact(schema: Any) -> Any:
    """The schema without what costs the model tokens and tells it nothing: titles, MAX_INT bounds, the
    `anyOf [X, null]` + `default: null` of optional arguments (leaving one out means null)."""
    if isinstance(schema, list):
        return [_compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    # (a bound of MAX_INT guards the API; to a model it is noise)
    out = {k: _compact(v) for k, v in schema.items() if k != "title" and not (k == "maximum" and v == MAX_INT)}
    options = out.get("anyOf")
    if isinstance(options, list) and out.get("default", ...) is None and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1:
            out.pop("anyOf")
            out.pop("default")
            out = {**rest[0], **out}
    return out


def _visible_message(engine: Any, args: MessageArgs, caller: str | None) -> MessageArgs:
    """`scoped_message`, its target checked visible to the caller (a hidden session is missing)."""
    scoped = scoped_message(args, caller)
    if caller is not None:
        engine.session_status(scoped.session, caller=caller)
    return scoped


def _ops() -> list[Operation]:
    return [
        Operation("message", "Send one inbound message through the turn.", MessageArgs, shapes.MessageResult,
                  lambda e, a, c: e.message(**_visible_message(e, a, c).model_dump()), writes=True,
                  http=POST("/v1/messages", positional=("text",), doc=_MESSAGE_DOC)),
        Operation("sessions_list", "List the sessions the caller may see.", SessionsListArgs, shapes.SessionInfo,
                  lambda e, a, c: e.sessions_list(
                      kind=a.kind, label=a.label, agent_id=a.agent_id, active_minutes=a.active_minutes,
                      search_text=a.search, preview=a.preview, recent_messages=a.recent_messages, caller=c),
                  tool=True,
                  http=GET("/v1/sessions", "kind", "label", "agent_id", "active_minutes:active", "search", "preview",
                           "recent_messages", many=True, engine_names=(("search_text", "search"),))),
        Operation("sessions_history", "Read a session's current interval (or the one a message lies in), sanitised.",
                  SessionsHistoryArgs, shapes.History,
                  lambda e, a, c: e.sessions_history(a.session_key, message_id=a.message_id,
                                                     include_tools=a.include_tools, caller=c), tool=True,
                  http=GET("/v1/sessions/{session_key}/history", "message_id", "include_tools",
                           positional=("session_key",), engine_names=_SESSION)),
        Operation("sessions_timeline", "A session's intervals with their reset boundaries and compactions.",
                  SessionsTimelineArgs, shapes.Timeline,
                  lambda e, a, c: e.sessions_timeline(a.session_key, caller=c),
                  http=GET("/v1/sessions/{session_key}/timeline", positional=("session_key",), engine_names=_SESSION,
                           doc="Open a closed interval with `…/history?messageId=<its firstMessageId>`.")),
        Operation("sessions_search", "Full-text search over past conversations the caller may see.",
                  SessionsSearchArgs, shapes.SearchResult,
                  lambda e, a, c: e.sessions_search(a.query, limit=a.limit, caller=c), tool=True,
                  http=GET("/v1/search", "query:q", "limit", positional=("query",), tag="sessions")),
        Operation("session_status", "Times, counters, next reset and usage of a session.", SessionStatusArgs,
                  shapes.SessionStatus, lambda e, a, c: e.session_status(a.session_key, caller=c), tool=True,
                  http=GET("/v1/sessions/{session_key}", positional=("session_key",), engine_names=_SESSION)),
        Operation("sessions_send", "Send a message into another session and (unless timeoutSeconds is 0) wait for "
                  "its reply; the two sessions may then go back and forth until one answers REPLY_SKIP.",
                  SessionsSendArgs, shapes.SendResult,
                  lambda e, a, c: e.sessions_send(a.session_key, a.message, timeout_seconds=a.timeout_seconds,
                                                  caller=c), tool=True, writes=True,
                  http=POST("/v1/sessions/{session_key}/send", positional=("session_key", "message"), doc=_SEND_DOC,
                            engine_names=_SESSION)),
        Operation("sessions_reset", "Close the session's current interval.", SessionRefArgs, shapes.ResetResult,
                  lambda e, a, c: e.sessions_reset(a.session_key, caller=c), writes=True,
                  http=POST("/v1/sessions/{session_key}/reset", positional=("session_key",), engine_names=_SESSION)),
        Operation("sessions_fork", "A new dashboard thread continuing from the session.", SessionRefArgs,
                  shapes.SessionInfo, lambda e, a, c: e.sessions_fork(a.session_key, caller=c), writes=True,
                  http=POST("/v1/sessions/{session_key}/fork", positional=("session_key",), engine_names=_SESSION)),
        Operation("sessions_create", "A new dashboard thread (incognito: never stored), a named coding session, or "
                  "the session of a key (opened, created if missing).", SessionsCreateArgs, shapes.SessionInfo,
                  lambda e, a, c: e.sessions_create(incognito=a.incognito, label=a.label, coding=a.coding, key=a.key,
                                                    caller=c),
                  writes=True,
                  http=POST("/v1/sessions", own_agent=True, what="creating a thread", doc=_CREATE_DOC)),
        Operation("memory_search", "Hybrid search over the memory files (and indexed transcripts).",
                  MemorySearchArgs, shapes.MemorySearchResult,
                  lambda e, a, c: e.memory_search(a.query, limit=a.max_results, mode=a.mode, min_score=a.min_score,
                                                  corpus=a.corpus, caller=c), tool=True,
                  http=GET("/v1/memory/search", "query:q", "max_results:limit", "mode", "min_score", "corpus",
                           **_MEMORY, positional=("query",), engine_names=(("limit", "max_results"),))),
        Operation("memory_get", "Read lines of a memory file inside the workspace.", MemoryGetArgs,
                  shapes.MemoryFile,
                  lambda e, a, c: e.memory_get(a.path, from_line=a.from_line, lines=a.lines, caller=c),
                  tool=True,
                  http=GET("/v1/memory/file", "path", "from_line", "lines", positional=("path",), **_MEMORY)),
        Operation("memory_remember", "Write one durable fact (or a dated plan) to memory; filters apply.",
                  MemoryRememberArgs, shapes.RememberResult, lambda e, a, c: e.memory_remember(a.text, caller=c),
                  tool=True, writes=True,
                  http=POST("/v1/memory/remember", positional=("text",), **_MEMORY)),
        Operation("memory_items", "The remembered items with their status.", MemoryItemsArgs, shapes.MemoryItem,
                  lambda e, a, c: e.memory_items(status=a.status),
                  http=GET("/v1/memory/items", "status", operator=True, what="listing every memory item", many=True)),
        Operation("memory_refusals", "What the write filters refused lately, with the reason (excerpts redacted).",
                  MemoryRefusalsArgs, shapes.Refusal, lambda e, a, c: e.memory_refusals(days=a.days),
                  http=GET("/v1/memory/refusals", "days", operator=True, what="reading the refusal log", many=True)),
        Operation("memory_edit", "Correct a remembered line that is wrong or outdated; the old line is kept as "
                  "superseded (memory_undo reverts). Your own lines only.",
                  MemoryCorrectArgs, shapes.MemoryChange,
                  lambda e, a, c: e.memory_correct(a.item_id, a.text, old_text=a.old_text, caller=c),
                  tool=True, writes=True,
                  http=POST("/v1/memory/edit", positional=("item_id", "text"), engine_method="memory_correct")),
        Operation("memory_forget", "Forget a remembered line that is no longer true or that the user wants gone "
                  "(memory_undo reverts). Your own lines only.",
                  MemoryForgetArgs, shapes.MemoryChange,
                  lambda e, a, c: e.memory_forget(a.item_id, old_text=a.old_text, caller=c), tool=True, writes=True,
                  http=POST("/v1/memory/forget", positional=("item_id",))),
        Operation("memory_undo", "Undo a memory_edit or memory_forget by the `undo` id it answered with.",
                  MemoryUndoArgs, shapes.MemoryChange, lambda e, a, c: e.memory_undo(a.item_id, caller=c),
                  tool=True, writes=True, http=POST("/v1/memory/undo", positional=("item_id",))),
        Operation("memory_item_edit", "Replace a remembered item's text in place (the operator's edit).",
                  MemoryEditArgs, shapes.MemoryItem,
                  lambda e, a, c: e.memory_edit(a.item_id, a.text, a.base_text), writes=True,
                  http=PUT("/v1/memory/items/{item_id}", operator=True, what="editing memory",
                           positional=("item_id", "text", "base_text"),
                           engine_method="memory_edit")),
        Operation("memory_delete", "Delete a remembered item.", MemoryItemArgs, shapes.DeleteResult,
                  lambda e, a, c: e.memory_delete(a.item_id), writes=True,
                  http=DELETE("/v1/memory/items/{item_id}", operator=True, what="deleting memory",
                              positional=("item_id",))),
        Operation("memory_index", "Bring the memory index up to date (force: rebuild it).", MemoryIndexArgs,
                  shapes.IndexReport, lambda e, a, c: e.memory_index(force=a.force), writes=True,
                  http=POST("/v1/memory/index", operator=True, agent_token=True, what="indexing memory",
                            doc="The gateway also indexes by itself.")),
        Operation("memory_store_read", "A key/value store file (memory/store/) whole, with its sha256.",
                  StoreReadArgs, shapes.StoreFile, lambda e, a, c: e.memory_store_read(a.path, caller=c),
                  http=GET("/v1/memory/store/file", "path", positional=("path",), **_STORE)),
        Operation("memory_store_write", "Replace a key/value store file (409 if it changed since base_sha256).",
                  StoreWriteArgs, shapes.StoreFile,
                  lambda e, a, c: e.memory_store_write(a.path, a.text, a.base_sha256, caller=c), writes=True,
                  http=PUT("/v1/memory/store/file", positional=("path", "text", "base_sha256"), **_STORE)),
        Operation("memory_store_files", "The key/value store files under a prefix, with their text.",
                  StoreFilesArgs, shapes.StoreFile, lambda e, a, c: e.memory_store_files(prefix=a.prefix, caller=c),
                  http=GET("/v1/memory/store", "prefix", many=True, **_STORE)),
        Operation("memory_status", "Workspace, provider, vector store and index health.", MemoryStatusArgs,
                  shapes.MemoryStatus, lambda e, a, c: e.memory_status(deep=a.deep),
                  http=GET("/v1/memory/status", "deep", operator=True, agent_token=True,
                           what="the memory index status")),
        Operation("recall", "Active Memory for a would-be user message (nothing stored).", RecallArgs,
                  shapes.RecallResult, lambda e, a, c: e.recall(a.text, session=a.session),
                  http=POST("/v1/recall", positional=("text",))),
        Operation("status", "The engine's state.", NoArgs, shapes.EngineStatus, lambda e, a, c: e.status(),
                  http=GET("/v1/status")),
        Operation("dreaming_status", "Dreaming's schedule, last sweep, lock and counts.", NoArgs,
                  shapes.DreamingStatus, lambda e, a, c: e.dreaming_status(),
                  http=GET("/v1/dreaming", operator=True, what="Dreaming's state")),
        Operation("dreaming_enable", "Switch Dreaming on or off (the overrides file).", DreamingEnableArgs,
                  shapes.DreamingToggle, lambda e, a, c: e.dreaming_enable(a.enabled), writes=True,
                  http=PUT("/v1/dreaming", operator=True, what="switching Dreaming on or off",
                           positional=("enabled",))),
        Operation("dreaming_review", "What Dreaming did: DREAMS.md's phase blocks, the diary, each promotion run.",
                  DreamingReviewArgs, shapes.DreamsReview,
                  lambda e, a, c: e.dreaming_review(limit=a.limit, caller=c),
                  http=GET("/v1/dreaming/review", "limit", **_MEMORY)),
        Operation("dream", "Run a Dreaming sweep now (Light → REM → Deep, or one phase).", DreamArgs,
                  shapes.SweepReport, lambda e, a, c: e.dream(phase=a.phase), writes=True,
                  http=POST("/v1/dreaming/sweep", operator=True, what="running a Dreaming sweep",
                            doc='`"status": "locked"` (with the holder) when another sweep runs.')),
        Operation("memory_promote", "The ranked promotion candidates and Deep's would-be decisions.", PromoteArgs,
                  shapes.PromoteReport, lambda e, a, c: e.memory_promote(**a.model_dump())),
        Operation("memory_promote_apply", "Run Light and Deep now: promote the candidates passing the gates.",
                  PromoteArgs, shapes.SweepReport, lambda e, a, c: e.memory_promote(apply=True, **a.model_dump()),
                  writes=True),
        Operation("memory_promote_explain", "Each signal, gate and decision for the candidates a query names.",
                  PromoteExplainArgs, shapes.ExplainReport, lambda e, a, c: e.memory_promote_explain(a.query)),
        Operation("memory_promote_undo", "Undo a promotion run or one promoted item.", PromoteUndoArgs,
                  shapes.UndoReport, lambda e, a, c: e.memory_promote_undo(a.target), writes=True,
                  http=POST("/v1/dreaming/undo", operator=True, what="undoing a promotion", positional=("target",))),
        Operation("rem_harness", "Preview REM's themes and Deep's promotions (or read historical notes).",
                  RemHarnessArgs, shapes.HarnessReport,
                  lambda e, a, c: e.rem_harness(path=a.path, grounded=a.grounded)),
        Operation("rem_backfill", "Replay historical notes into reversible diary entries (or roll them back).",
                  RemBackfillArgs, shapes.BackfillReport, lambda e, a, c: e.rem_backfill(**a.model_dump()),
                  writes=True),
    ]


OPERATIONS: dict[str, Operation] = {op.name: op for op in _ops()}
AGENT_TOOLS: tuple[str, ...] = tuple(name for name, op in OPERATIONS.items() if op.tool)
