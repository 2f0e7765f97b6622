"""Session key shapes (S1).

A session key is the routing address of a conversation; every key starts with
`agent:<agentId>:` and its remaining segments say what kind of conversation it is:

| kind        | key                                                          |
|-------------|--------------------------------------------------------------|
| main        | `agent:<id>:<mainKey>` (every DM under dmScope `main`)        |
| direct      | `agent:<id>:direct:<peer>` / `agent:<id>:<ch>:direct:<peer>` / `agent:<id>:<ch>:<acct>:direct:<peer>` |
| group       | `agent:<id>:<ch>:group:<groupId>`                            |
| channel     | `agent:<id>:<ch>:channel:<channelId>`                        |
| thread      | any of the above + `:thread:<threadId>`                      |
| cron        | `agent:<id>:cron:<jobId>`                                    |
| hook        | `agent:<id>:hook:<hookId>`                                   |
| heartbeat   | `agent:<id>:heartbeat`                                       |
| subagent    | `agent:<id>:subagent:<uuid>`                                 |
| dashboard   | `agent:<id>:dashboard:<uuid4>` (`incognito-<uuid4>` when incognito) |
| coding      | `agent:<id>:coding:<name>`                                   |
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from functools import lru_cache

from ..config import AGENT_ID
from ..errors import InputError

_SEGMENT = re.compile(r"^[^\s:\x00-\x1f\x7f]{1,600}$")
MAX_SEGMENT_CHARS = 200  # as given; escaping may lengthen it up to 600
MAX_KEY_CHARS = 2048
INCOGNITO_MARK = "incognito-"
CODING_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)  # the <name> of agent:<id>:coding:<name>

KINDS = (
    "main",
    "direct",
    "group",
    "channel",
    "thread",
    "cron",
    "hook",
    "heartbeat",
    "subagent",
    "dashboard",
    "coding",
    "other",
)
# Kinds that point at a durable outside conversation: maintenance never ages them out (S4).
DURABLE_KINDS = frozenset({"main", "direct", "group", "channel", "thread", "dashboard", "coding"})
# Kinds whose sessions are machine-driven, not a person chatting.
SYNTHETIC_KINDS = frozenset({"cron", "hook", "heartbeat", "subagent"})


def normalize_agent_id(agent_id: str) -> str:
    """An agent id exactly as given: `CON` or ` main` is refused, not quietly turned into
    another agent's id (keys, folders and the error text all say lowercase)."""
    if not isinstance(agent_id, str) or not AGENT_ID.fullmatch(agent_id):
        raise InputError(
            f"agent id {agent_id!r} is invalid; use 1-64 characters a-z, 0-9, '_' or '-', "
            "starting with a letter or digit"
        )
    return agent_id


# Characters an id keeps as they are inside a key; everything else is percent-escaped so two
# different ids never become one key (':' separates segments, '%' starts an escape).
_SAFE_PUNCT = frozenset("._@+-~#/!$&*,()[]=^|")


def escape_segment(text: str) -> str:
    """Percent-escape what would break a key or merge two ids (injective: '%' is escaped too)."""
    out = []
    for ch in text:
        if ch.isalnum() or ch in _SAFE_PUNCT:
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    return "".join(out)


def normalize_segment(value: str, what: str) -> str:
    """An id as one key segment: trimmed and lowercased (ids match case-insensitively, as in
    OpenClaw), every other distinction kept by escaping — `@alice:example.org`,
    `@alice-example.org` and `@alice example.org` are three different peers."""
    text = (value or "").strip().lower()
    if not text:
        raise InputError(f"{what} must not be empty")
    if len(text) > MAX_SEGMENT_CHARS:
        raise InputError(f"{what} is {len(text)} characters long; at most {MAX_SEGMENT_CHARS} are allowed")
    escaped = escape_segment(text)
    if not _SEGMENT.match(escaped):
        raise InputError(f"{what} {value!r} is too long once escaped for a session key ({len(escaped)} "
                         "characters; at most 600): use a shorter id")
    return escaped


@dataclass(frozen=True)
class ParsedKey:
    key: str
    agent_id: str
    kind: str
    chat_type: str | None
    channel: str | None
    incognito: bool


@lru_cache(maxsize=4096)  # pure and hot: every turn parses the same few keys several times
def parse_key(key: str) -> ParsedKey:
    """Validate a session key and classify it; raises InputError naming the problem."""
    text = (key or "").strip()
    if len(text) > MAX_KEY_CHARS:
        raise InputError(f"session key is {len(text)} characters long; at most {MAX_KEY_CHARS} are allowed")
    parts = text.split(":")
    if len(parts) < 3 or parts[0] != "agent":
        raise InputError(
            f"session key {key!r} is invalid; a key looks like agent:<agentId>:<rest>, e.g. agent:main:main"
        )
    if not AGENT_ID.match(parts[1]) or not all(_SEGMENT.match(p) for p in parts[2:]):
        raise InputError(
            f"session key {key!r} is invalid; segments must be non-empty, without spaces, and the agent id "
            "lowercase a-z, 0-9, '_' or '-'"
        )
    return _classify(text, parts)


def _classify(key: str, parts: list[str]) -> ParsedKey:
    """Classify by position, never by a word appearing anywhere: a channel, account or group
    literally named `direct`, `dm`, `cron` or `thread` must not change what a key is."""
    agent, rest = parts[1], parts[2:]
    if len(rest) >= 3 and rest[-2] == "thread":
        base = _classify(":".join(parts[:-2]), parts[:-2])
        return ParsedKey(key, agent, "thread", base.chat_type, base.channel, base.incognito)
    head = rest[0]
    if len(rest) == 1:
        if head == "heartbeat":
            return ParsedKey(key, agent, "heartbeat", None, None, False)
        return ParsedKey(key, agent, "main", "direct", None, False)
    if len(rest) == 2:
        if head == "dashboard":
            # Incognito comes only from `sessions create --incognito`, which mints this exact shape.
            incognito = rest[1].startswith(INCOGNITO_MARK)
            return ParsedKey(key, agent, "dashboard", "direct", "dashboard", incognito)
        if head in ("cron", "hook", "subagent", "coding"):
            return ParsedKey(key, agent, head, None, None, False)
        if head in ("direct", "dm"):
            return ParsedKey(key, agent, "direct", "direct", None, False)
    if len(rest) == 3 and rest[1] in ("direct", "dm"):
        return ParsedKey(key, agent, "direct", "direct", head, False)
    if len(rest) == 3 and rest[1] in ("group", "channel", "room"):
        chat = "channel" if rest[1] == "channel" else "group"
        return ParsedKey(key, agent, chat, chat, head, False)
    if len(rest) == 4 and rest[2] in ("direct", "dm"):
        return ParsedKey(key, agent, "direct", "direct", head, False)
    return ParsedKey(key, agent, "other", None, None, False)


def foreign_key(key: str, agent_id: str) -> tuple[str, str | None]:
    """Another system's session key (OpenClaw's) as a clawkeep key of `agent_id`, and why it
    changed (None: it did not). Import and the OpenClaw plugin's sessions map keys alike."""
    text = (key or "").strip()
    parts = text.split(":")
    if len(parts) >= 3 and parts[0] == "agent":
        rest = ["thread" if p == "topic" and 0 < i < len(parts[2:]) - 1 else p for i, p in enumerate(parts[2:])]
        why = "a Telegram topic (`:topic:<id>`) is a clawkeep thread (`:thread:<id>`)" if rest != parts[2:] else None
        if parts[1].lower() != agent_id:
            why = "key of another agent id than the agent directory: imported into the directory's agent"
    elif len(parts) >= 2 and parts[0] in ("cron", "hook"):
        rest, why = [parts[0], *parts[1:]], "clawkeep keys start with agent:<id>: (cron and hook keys too)"
    else:
        rest, why = [text], "clawkeep keys start with agent:<id>:"
    rest = [p.lower() if _plain(p.lower()) else escape_segment(p.lower()) for p in rest if p] or ["main"]
    mapped = ":".join(["agent", agent_id, *rest])
    try:
        parse_key(mapped)
    except InputError:
        mapped = f"agent:{agent_id}:{escape_segment(text.lower()) or 'main'}"
        why = "key segments escaped to clawkeep's key alphabet"
    if mapped != text and why is None:
        why = "key segments escaped to clawkeep's key alphabet"
    return mapped, why if mapped != text else None


def _plain(segment: str) -> bool:
    return bool(segment) and escape_segment(segment) == segment


def dashboard_key(agent_id: str, *, incognito: bool = False) -> str:
    token = str(uuid.uuid4())
    return f"agent:{agent_id}:dashboard:{INCOGNITO_MARK + token if incognito else token}"


def coding_key(agent_id: str, name: str) -> str:
    """`agent:<id>:coding:<name>`; the name is refused (not rewritten) unless it fits CODING_NAME."""
    if not isinstance(name, str) or not CODING_NAME.fullmatch(name):
        raise InputError(f"coding session name {str(name)[:100]!r} is not allowed; use 1-64 characters: letters, "
                         "digits, '.', '_' or '-', starting with a letter or digit (e.g. clawkeep or my-app.v2)")
    return f"agent:{agent_id}:coding:{name}"


def subagent_key(agent_id: str) -> str:
    return f"agent:{agent_id}:subagent:{uuid.uuid4()}"


def new_session_id() -> str:
    """Transcript ids are random v4 UUIDs: never derived from the key, never reused."""
    return str(uuid.uuid4())


def is_session_id(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except (ValueError, AttributeError):
        return False
