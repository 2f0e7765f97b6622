"""Sanitised, size-bounded view of a transcript interval for sessions_history (SPEC S6).

The view is read by other agents, so it must not carry what the model never meant to say
in the open (reasoning, leaked tool-call syntax, chat-template tokens, injected memories)
nor credentials, and it must fit a fixed budget: 4000 characters per text block and 80 KB
of JSON for the whole answer.

Decisions worth knowing:
- Redaction runs before the per-block cap, so a cap can never cut a secret into a shape
  the redactor no longer recognises.
- Unclosed thinking, tool-call XML, memory and `<invoke` blocks are stripped to the end of
  the text; a stray closing tag is removed on its own (the text before it is kept, since it
  may be the user's own words).
- Downgraded scaffolds: `[Tool Result …]` is a header followed by its payload, so it is
  stripped to the end of its paragraph (next blank line). `[Tool Call: …]` goes to its
  matching `]`, with the `Arguments:` payload when one follows it (to the paragraph's end);
  the assistant's own text after a bare marker stays.
  `[Historical context …]` is one bracketed note: stripped to its matching `]`, or to the
  end of the paragraph when it never closes.
- `truncated` reports budget enforcement (rows dropped or replaced); per-block cuts are
  reported separately by `contentTruncated`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from clawkeep.redact import redact_secrets

from ..patterns import lazy

TEXT_MAX_CHARS = 4000
MAX_BYTES = 80 * 1024
TRUNCATION_MARKER = "…(truncated)…"
OMITTED_MARKER = "[sessions_history omitted: message too large]"
TOOL_ROLES = frozenset({"tool", "toolResult"})

# Stand-in for removed spans; whitespace is collapsed only around it, so untouched text
# (code indentation, tables) keeps its layout.
_GAP = "\x00"

_FLAGS = re.IGNORECASE | re.DOTALL
# A tag name ends at whitespace, `/` or `>`; `\b` would also accept `<think-tank>`.
_TAG_END = r"(?=[\s/>]|\Z)"


def _block_pattern(open_names: str, close_names: str | None = None) -> re.Pattern[str]:
    """`<name …>…</name>`; a block that never closes runs to the end of the text."""
    close = close_names or r"(?P=name)"
    # `[^<>]*` (not `[^>]*`) keeps many unterminated openers from rescanning the text.
    opener = rf"<(?P<name>{open_names}){_TAG_END}[^<>]*>"
    return lazy(rf"{opener}.*?(?:</{close}\s*>|\Z)", _FLAGS)


_THINKING_NAMES = r"think|thinking|thought|antthinking"
_MEMORY_NAMES = r"relevant[-_]memories"
_TOOL_XML_NAMES = r"tool_calls?|function_calls?|tool_results?|function_results?"

_BLOCKS: tuple[re.Pattern[str], ...] = (
    _block_pattern(_THINKING_NAMES),
    _block_pattern(_MEMORY_NAMES, _MEMORY_NAMES),
    _block_pattern(_TOOL_XML_NAMES),
    _block_pattern(r"minimax:tool_call"),
    # MiniMax invoke XML is often malformed (no `>`), so match from the bare opener.
    lazy(rf"<invoke{_TAG_END}.*?(?:</invoke\s*>|\Z)", _FLAGS),
    # DeepSeek wraps tool calls in full-width control tokens; drop the payload too.
    lazy(
        r"<[|｜]tool[▁_]calls[▁_]begin[|｜]>.*?(?:<[|｜]tool[▁_]calls[▁_]end[|｜]>|\Z)",
        _FLAGS,
    ),
)
_STRAY_TAGS = lazy(
    rf"</(?:{_THINKING_NAMES}|{_MEMORY_NAMES}|{_TOOL_XML_NAMES}|minimax:tool_call|invoke)\s*>",
    re.IGNORECASE,
)
# A leaked chat-template header takes its role word with it (ChatML, Llama 3).
_CHAT_HEADER = lazy(
    r"<[|｜](?:im_start|start_header_id)[|｜]>[ \t]*"
    r"(?:(?:system|user|assistant|tool|developer)\b)?(?:<[|｜]end_header_id[|｜]>)?",
    re.IGNORECASE,
)
# `<|im_end|>`, `<|endoftext|>`, `<｜end▁of▁sentence｜>`; no whitespace inside, which
# keeps operator soup such as `a <| b |> c` intact.
_CONTROL_TOKEN = lazy(r"<[|｜][^\s|｜<>]{1,64}[|｜]>")

_SCAFFOLD = lazy(
    r"\[(?:(?P<call>Tool Call:)|(?P<result>Tool Result\b)|Historical context\b)", re.IGNORECASE
)
# A downgraded call's payload: an `Arguments:` line right after its marker.
_CALL_ARGUMENTS = lazy(r"[ \t]*(?:\n[ \t]*)?Arguments:", re.IGNORECASE)
_BLANK_LINE = lazy(r"\n[ \t]*\n")
_GAP_LINE = lazy(rf"^[ \t]*{_GAP}[{_GAP} \t]*\n", re.MULTILINE)
_GAP_RUN = lazy(rf"[ \t]*{_GAP}[{_GAP} \t]*")
_BLANK_RUN = lazy(r"\n(?:[ \t]*\n){2,}")
_WHITESPACE = lazy(r"\s+")


def sanitize_text(text: str) -> str:
    """Strip reasoning, tool-call leakage, injected memories and template tokens."""
    text = text.replace(_GAP, "")
    for pattern in _BLOCKS:
        text = pattern.sub(_GAP, text)
    text = _CHAT_HEADER.sub(_GAP, text)
    text = _CONTROL_TOKEN.sub(_GAP, text)
    text = _strip_scaffolds(text)
    text = _STRAY_TAGS.sub(_GAP, text)
    if _GAP not in text:
        return text.strip()
    return _collapse_gaps(text)


def _strip_scaffolds(text: str) -> str:
    if "[" not in text:
        return text
    out: list[str] = []
    pos = 0
    while (m := _SCAFFOLD.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        out.append(_GAP)
        pos = _scaffold_end(text, m)
    out.append(text[pos:])
    return "".join(out)


def _scaffold_end(text: str, m: re.Match[str]) -> int:
    blank = _BLANK_LINE.search(text, m.start())
    paragraph_end = blank.start() if blank else len(text)
    if m.group("result"):  # a header whose payload (the result) runs to the paragraph's end
        return paragraph_end
    close = _matching_bracket(text, m.start(), paragraph_end)
    if close is None:
        return paragraph_end
    if m.group("call") and _CALL_ARGUMENTS.match(text, close):
        return paragraph_end  # the call's arguments; text after the marker otherwise stays (issue 33)
    return close


def _matching_bracket(text: str, start: int, limit: int) -> int | None:
    """Index just past the `]` closing the `[` at start; brackets inside "…" don't count."""
    depth = 0
    in_string = False
    i = start
    while i < limit:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _close_gap(m: re.Match[str]) -> str:
    # Between two words a removed span still separates them; at a line edge it vanishes.
    s = m.string
    before = s[m.start() - 1] if m.start() > 0 else "\n"
    after = s[m.end()] if m.end() < len(s) else "\n"
    return "" if before == "\n" or after == "\n" else " "


def _collapse_gaps(text: str) -> str:
    text = _GAP_LINE.sub("", text)  # a removed span that filled its line takes the line
    text = _GAP_RUN.sub(_close_gap, text)
    return _BLANK_RUN.sub("\n\n", text).strip()


@dataclass
class HistoryView:
    messages: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    dropped_messages: int = 0
    content_truncated: bool = False
    content_redacted: bool = False
    bytes: int = 2  # size of "[]"

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "truncated": self.truncated,
            "droppedMessages": self.dropped_messages,
            "contentTruncated": self.content_truncated,
            "contentRedacted": self.content_redacted,
            "bytes": self.bytes,
        }


@dataclass
class _Flags:
    truncated: bool = False
    redacted: bool = False


def build_history_view(
    messages: list[dict[str, Any]],
    include_tools: bool = False,
    *,
    text_cap: int = TEXT_MAX_CHARS,
    byte_cap: int = MAX_BYTES,
) -> HistoryView:
    """Render stored messages (oldest first) into the bounded sessions_history view."""
    flags = _Flags()
    kept, dropped, omitted = _fit_budget(list(_rows(messages, include_tools, text_cap, flags)), byte_cap)
    return _view(kept, dropped, omitted, flags)


def build_history_view_newest_first(
    messages: Iterable[dict[str, Any]],
    count_older: Callable[[], int],
    include_tools: bool = False,
    *,
    text_cap: int = TEXT_MAX_CHARS,
    byte_cap: int = MAX_BYTES,
) -> HistoryView:
    """The same view as `build_history_view`, from messages given newest first and consumed only
    until the byte budget is full: the row that does not fit ends the reading, and
    `count_older()` then says how many shown messages lie beyond it (for `droppedMessages`), so
    a long interval is never read whole. `contentTruncated` / `contentRedacted` describe the
    messages read (the answer and the one row that overflowed it)."""
    flags = _Flags()
    kept: list[dict[str, Any]] = []  # newest first
    total = 2  # "[]"
    dropped, omitted = 0, False
    for row in _rows(messages, include_tools, text_cap, flags):
        grow = json_size(row) + (2 if kept else 0)  # rows are joined by ", "
        if total + grow <= byte_cap:
            kept.append(row)
            total += grow
            continue
        older = count_older()
        if kept:  # this row and everything older are dropped
            dropped = 1 + older
        else:  # the newest row alone is too large: a marker in its place, as _fit_budget does
            omitted = True
            marker = [{**row, "text": OMITTED_MARKER}]
            kept, dropped = (marker, older) if json_size(marker) <= byte_cap else ([], older + 1)
        break
    kept.reverse()
    return _view(kept, dropped, omitted, flags)


def _rows(messages: Iterable[dict[str, Any]], include_tools: bool, text_cap: int, flags: _Flags
          ) -> Iterator[dict[str, Any]]:
    """The rows of the messages shown, rendered as they are asked for (a newest-first reading
    stops at the row that does not fit: nothing older is rendered)."""
    for msg in messages:
        if msg.get("role") in TOOL_ROLES and not include_tools:
            continue
        text = _render_message(msg, include_tools, text_cap, flags)
        if text:
            yield _row(msg, text)


def _view(kept: list[dict[str, Any]], dropped: int, omitted: bool, flags: _Flags) -> HistoryView:
    return HistoryView(
        messages=kept,
        truncated=dropped > 0 or omitted,
        dropped_messages=dropped,
        content_truncated=flags.truncated,
        content_redacted=flags.redacted,
        bytes=json_size(kept),
    )


def _row(msg: dict[str, Any], text: str) -> dict[str, Any]:
    row = {
        "messageId": msg.get("messageId", msg.get("id")),
        "role": msg.get("role"),
        "text": text,
        "timestamp": msg.get("timestamp"),
    }
    if msg.get("clientMessageId"):
        row["clientMessageId"] = msg["clientMessageId"]
    if msg.get("provenance"):
        row["provenance"] = msg["provenance"]
    return row


def _render_message(
    msg: dict[str, Any], include_tools: bool, text_cap: int, flags: _Flags
) -> str:
    parts: list[str] = []
    for block in _blocks(msg.get("content")):
        raw = _render_block(block, include_tools)
        if raw:
            parts.append(_redact_and_cap(raw, text_cap, flags))
    return "\n".join(parts)


def _blocks(content: Any) -> list[dict[str, Any]]:
    # Imported transcripts may store plain-string content.
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _render_block(block: dict[str, Any], include_tools: bool) -> str | None:
    kind = block.get("type")
    if kind == "text":
        return sanitize_text(str(block.get("text") or ""))
    if kind == "image":
        return _image_marker(block)
    if kind == "toolCall" and include_tools:
        return _tool_call_text(block)
    if kind == "toolResult" and include_tools:
        return _tool_result_text(block)
    return None  # thinking is never shown; unknown block types neither


def _tool_call_text(block: dict[str, Any]) -> str:
    args = json.dumps(
        block.get("arguments") or {}, ensure_ascii=False, separators=(",", ":"), default=str
    )
    return f"[tool call {block.get('name') or '?'}({args})]"


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    # Tool output is untrusted text headed for another model: same hygiene as replies.
    body = sanitize_text(content)
    label = "[tool result, error]" if block.get("isError") else "[tool result]"
    return f"{label} {body}" if body else label


def _image_marker(block: dict[str, Any]) -> str:
    data = block.get("data")
    if not isinstance(data, str):
        return "[image omitted]"
    return f"[image omitted: {_base64_size(data)} bytes]"


def _base64_size(data: str) -> int:
    # Arithmetic instead of decoding: images can be megabytes and we only need the size.
    if data.startswith("data:"):
        data = data.partition(",")[2]
    data = _WHITESPACE.sub("", data)
    padding = len(data) - len(data.rstrip("="))
    return max(len(data) * 3 // 4 - padding, 0)


def _redact_and_cap(text: str, text_cap: int, flags: _Flags) -> str:
    text, changed = redact_secrets(text)
    flags.redacted |= changed
    if len(text) > text_cap:
        flags.truncated = True
        text = f"{text[:text_cap]}\n{TRUNCATION_MARKER}"
    return text


def json_size(value: Any) -> int:
    """UTF-8 size of value as JSON, the unit of the sessions_history byte budget."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def _fit_budget(
    rows: list[dict[str, Any]], byte_cap: int
) -> tuple[list[dict[str, Any]], int, bool]:
    """Drop the oldest rows until the list fits; returns (kept, dropped, omitted)."""
    sizes = [json_size(r) for r in rows]
    # json.dumps of a list: "[" + rows joined by ", " + "]".
    total = 2 + sum(sizes) + 2 * max(len(rows) - 1, 0)
    start = 0
    while total > byte_cap and len(rows) - start > 1:
        total -= sizes[start] + 2
        start += 1
    kept = rows[start:]
    if total <= byte_cap or not kept:
        return kept, start, False
    kept = [{**kept[0], "text": OMITTED_MARKER}]
    if json_size(kept) > byte_cap:
        # A budget too small for even the marker: an empty answer keeps the contract.
        return [], start + 1, True
    return kept, start, True
