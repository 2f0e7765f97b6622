"""One OpenClaw transcript event → one clawkeep transcript entry (or a report line).

OpenClaw's transcript is a stream of JSON events (the same shape in its SQLite
`transcript_events.event_json` and in legacy `<sessionId>.jsonl` files): a `session` header,
then `message` (user / assistant / toolResult), `model_change`, `compaction`, `reset`,
`custom_message`, `branch_summary`, and extension state (`custom`, `thinking_level_change`, …).

What maps: messages (text, thinking, tool calls, tool results, images) to `message` entries of
role user / assistant / tool; `model_change`; `compaction` (summary, first kept entry, tokens);
`reset` boundaries; `custom_message` and `branch_summary` as `system_event` entries. Fields of an
event that have no column of ours are kept under the entry's `meta.openclaw`, so nothing is
lost. What does not map at all — extension state that never entered the model's context, and
event types this importer does not know — is reported by the caller (counted, one example).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..storage import EntryRecord

ROLE_MAP = {"user": "user", "assistant": "assistant", "toolResult": "tool"}
KNOWN_BLOCKS = ("text", "thinking", "toolCall", "image")
# event / message fields that the mapping consumes; anything else goes to meta.openclaw
_EVENT_FIELDS = {"type", "id", "parentId", "timestamp", "message", "provenance"}
_MESSAGE_FIELDS = {"role", "content", "timestamp", "provider", "model", "usage", "stopReason",
                   "toolCallId", "toolName", "isError", "provenance"}


class Unmapped(Exception):
    """This event has no clawkeep equivalent: `kind` is what the report counts it under."""

    def __init__(self, kind: str, sample: Any = None):
        super().__init__(kind)
        self.kind, self.sample = kind, sample


@dataclass
class Mapping:
    entry: EntryRecord
    notes: list[tuple[str, Any]]  # (kind, sample): partly understood pieces, reported, kept verbatim
    first_kept_event_id: str | None = None  # compaction / reset: an OpenClaw event id to resolve


def event_time(event: dict[str, Any], fallback: int) -> int:
    """Milliseconds: the message's own time, else the event's ISO time, else `fallback`."""
    message = event.get("message")
    if isinstance(message, dict) and _is_ms(message.get("timestamp")):
        return int(message["timestamp"])
    return parse_time(event.get("timestamp"), fallback)


def parse_time(value: Any, fallback: int) -> int:
    if _is_ms(value):
        return int(value)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return fallback
    return fallback


def _is_ms(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 7_258_118_400_000


def _leftovers(data: dict[str, Any], consumed: set[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in consumed}


def _with_openclaw(meta: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in extra.items() if v not in (None, {}, [])}
    if extra:
        meta["openclaw"] = extra
    return meta


def content_blocks(content: Any, notes: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """OpenClaw message content (a string or a list of blocks) as our blocks. Our block shapes
    are OpenClaw's (text, thinking, toolCall, image), so known blocks are copied; an unknown
    block is kept as it is (no reader of ours uses it) and reported."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        if content is not None:
            notes.append(("message content that is neither text nor a list (kept as text)", content))
            return [{"type": "text", "text": str(content)}]
        return []
    blocks = []
    for block in content:
        if isinstance(block, str):
            blocks.append({"type": "text", "text": block})
        elif isinstance(block, dict) and block.get("type") in KNOWN_BLOCKS:
            blocks.append(dict(block))
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            notes.append((f"content block {kind!s} (kept as is, not used by clawkeep)", block))
            blocks.append(block if isinstance(block, dict) else {"type": "unknown", "value": block})
    return blocks


def _result_content(content: Any) -> Any:
    """A tool result's blocks: text only becomes one string (as our own tool results are);
    anything else (an image) keeps OpenClaw's block list."""
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content)
    return content


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    out = {"inputTokens": usage.get("input"), "outputTokens": usage.get("output"),
           "cacheReadTokens": usage.get("cacheRead"), "cacheWriteTokens": usage.get("cacheWrite"),
           "totalTokens": usage.get("totalTokens")}
    cost = usage.get("cost")
    if isinstance(cost, dict) and cost.get("total") is not None:
        out["cost"] = cost.get("total")
    return {k: v for k, v in out.items() if v is not None}


def _message(event: dict[str, Any], at: int, notes: list[tuple[str, Any]]) -> EntryRecord:
    message = event.get("message")
    if not isinstance(message, dict):
        raise Unmapped("message event without a message object", event)
    role = message.get("role")
    if role not in ROLE_MAP:
        raise Unmapped(f"message role {role!s}", message)
    meta: dict[str, Any] = {}
    if role == "toolResult":
        content = [{"type": "toolResult", "toolCallId": message.get("toolCallId"), "name": message.get("toolName"),
                    "content": _result_content(message.get("content")), "isError": bool(message.get("isError"))}]
    else:
        content = content_blocks(message.get("content"), notes)
    if message.get("provider") or message.get("model"):
        meta["model"] = "/".join(str(p) for p in (message.get("provider"), message.get("model")) if p)
    usage = _usage(message.get("usage"))
    if usage:
        meta["usage"] = usage
    if message.get("stopReason"):
        meta["stopReason"] = message["stopReason"]
    provenance = message.get("provenance") or event.get("provenance")
    if isinstance(provenance, dict):  # inter-session input (sessions_send): the same shape as ours
        meta["provenance"] = provenance
    rest = _leftovers(message, _MESSAGE_FIELDS)
    details = rest.get("details")
    if role == "toolResult" and isinstance(details, dict) and details.get("content") == content[0]["content"]:
        rest["details"] = {k: v for k, v in details.items() if k != "content"}  # the result itself, a second time
    extra = {"event": _leftovers(event, _EVENT_FIELDS), "message": rest}
    return EntryRecord("", "", "message", at, role=ROLE_MAP[role], content=content,
                       meta=_with_openclaw(meta, {k: v for k, v in extra.items() if v}))


def map_event(event: dict[str, Any], at: int) -> Mapping:
    """Map one non-header event; raises Unmapped for what has no clawkeep equivalent.
    The entry's id and session are filled in by the importer."""
    kind = event.get("type")
    notes: list[tuple[str, Any]] = []
    if kind == "message":
        return Mapping(_message(event, at, notes), notes)
    rest = _leftovers(event, _EVENT_FIELDS)
    if kind == "model_change":
        model = "/".join(str(p) for p in (event.get("provider"), event.get("modelId")) if p)
        extra = {k: v for k, v in rest.items() if k not in ("provider", "modelId")}
        return Mapping(EntryRecord("", "", "model_change", at,
                                   meta=_with_openclaw({"model": model, "source": "openclaw"}, extra)), notes)
    if kind == "compaction":
        meta = {"summary": str(event.get("summary") or ""), "tokensBefore": event.get("tokensBefore"),
                "summarizer": "openclaw", "reason": "imported"}
        extra = {k: v for k, v in rest.items() if k not in ("summary", "tokensBefore", "firstKeptEntryId")}
        return Mapping(EntryRecord("", "", "compaction", at, meta=_with_openclaw(meta, extra)), notes,
                       first_kept_event_id=event.get("firstKeptEntryId"))
    if kind == "reset":
        meta = {"reason": str(event.get("reason") or "openclaw"), "droppedNotices": 0}
        extra = {k: v for k, v in rest.items() if k != "reason"}
        if event.get("firstKeptEntryId"):
            notes.append(("reset that kept earlier messages in the new interval (firstKeptEntryId: clawkeep "
                          "starts the interval empty; the kept messages stay readable in the closed one)",
                          event.get("firstKeptEntryId")))
        return Mapping(EntryRecord("", "", "reset", at, meta=_with_openclaw(meta, extra)), notes)
    if kind in ("custom_message", "branch_summary"):
        text = event.get("summary") if kind == "branch_summary" else None
        blocks = ([{"type": "text", "text": str(text)}] if text is not None
                  else content_blocks(event.get("content"), notes))
        extra = {"type": kind, **{k: v for k, v in rest.items() if k not in ("content", "summary")}}
        return Mapping(EntryRecord("", "", "system_event", at, role="system", content=blocks,
                                   meta=_with_openclaw({"queued": False}, extra)), notes)
    if kind == "custom":
        raise Unmapped(f"custom:{event.get('customType')} (extension state, never in the model's context)", event)
    if kind == "thinking_level_change":
        raise Unmapped("thinking_level_change (clawkeep has no thinking levels)", event)
    raise Unmapped(f"unknown entry type {kind!s}", event)


def header_entry(event: dict[str, Any], key: str, at: int) -> EntryRecord:
    extra = {k: v for k, v in event.items() if k not in ("type", "id", "timestamp")}
    return EntryRecord("", "", "session", at, meta=_with_openclaw({"key": key, "importedFrom": "openclaw"}, extra))
