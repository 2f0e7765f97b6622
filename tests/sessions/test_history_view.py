"""Tests for the sanitised sessions_history view (SPEC S6)."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from clawkeep.redact import REDACTED
from clawkeep.sessions.history_view import (
    MAX_BYTES,
    OMITTED_MARKER,
    TEXT_MAX_CHARS,
    TRUNCATION_MARKER,
    HistoryView,
    build_history_view,
    json_size,
    sanitize_text,
)

OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def msg(mid: str, role: str, *blocks: dict, ts: str = "2026-01-01T00:00:00Z") -> dict:
    return {"messageId": mid, "role": role, "timestamp": ts, "content": list(blocks)}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def utf8_json_size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


# === sanitize_text ============================================================================


class TestThinking:
    @pytest.mark.parametrize(
        "raw",
        [
            "<think>secret plan</think>Answer",
            "<thinking>secret plan</thinking>Answer",
            "<THINK>secret plan</THINK>Answer",
            '<thinking type="internal">secret plan</thinking>Answer',
            "<think>\nmulti\nline\nplan\n</think>\nAnswer",
            "<thought>secret plan</thought>Answer",
            "<antthinking>secret plan</antthinking>Answer",
        ],
    )
    def test_closed_blocks(self, raw: str) -> None:
        assert sanitize_text(raw) == "Answer"

    def test_unclosed_at_end_strips_to_end(self) -> None:
        assert sanitize_text("Answer first. <think>still reasoning about") == "Answer first."
        assert sanitize_text("Answer <thinking>\nnever\ncloses") == "Answer"

    def test_several_blocks(self) -> None:
        raw = "<think>a</think>One <think>b</think>two"
        assert sanitize_text(raw) == "One two"

    def test_stray_closing_tag_is_removed_text_before_kept(self) -> None:
        assert sanitize_text("part one</think>part two") == "part one part two"
        assert sanitize_text("done</thinking>") == "done"

    def test_similar_tag_names_are_kept(self) -> None:
        assert sanitize_text("<think-tank> meets today") == "<think-tank> meets today"
        assert sanitize_text("<thinker>Kant</thinker>") == "<thinker>Kant</thinker>"

    def test_only_thinking_becomes_empty(self) -> None:
        assert sanitize_text("<think>only this</think>") == ""


class TestRelevantMemories:
    @pytest.mark.parametrize("name", ["relevant-memories", "relevant_memories"])
    def test_block_removed(self, name: str) -> None:
        raw = f"Before\n<{name}>\n- user likes tea\n</{name}>\nAfter"
        assert sanitize_text(raw) == "Before\nAfter"

    def test_mixed_separator_close_and_attributes(self) -> None:
        raw = '<relevant-memories source="memory">x</relevant_memories>Hi'
        assert sanitize_text(raw) == "Hi"

    def test_unclosed_strips_to_end(self) -> None:
        assert sanitize_text("Hi\n<relevant_memories>\n- a\n- b") == "Hi"


class TestToolCallXml:
    @pytest.mark.parametrize("name", ["tool_call", "function_call", "tool_calls", "function_calls"])
    def test_closed(self, name: str) -> None:
        raw = f'Let me check.\n<{name}>{{"name": "search", "arguments": {{}}}}</{name}>\nDone.'
        assert sanitize_text(raw) == "Let me check.\nDone."

    @pytest.mark.parametrize("name", ["tool_call", "function_call", "tool_calls", "function_calls"])
    def test_unclosed_strips_to_end(self, name: str) -> None:
        raw = f'Let me check. <{name}>{{"name": "search", "arguments": {{"q": "x"'
        assert sanitize_text(raw) == "Let me check."

    def test_plural_wrapper_with_inner_singular_calls(self) -> None:
        raw = (
            "A<tool_calls><tool_call>{}</tool_call>\n<tool_call>{}</tool_call></tool_calls> B"
        )
        assert sanitize_text(raw) == "A B"

    def test_function_calls_with_invoke_inside(self) -> None:
        raw = (
            'Go<function_calls><invoke name="x"><parameter name="a">1</parameter></invoke>'
            "</function_calls>"
        )
        assert sanitize_text(raw) == "Go"

    def test_tool_result_xml_is_removed_too(self) -> None:
        assert sanitize_text("a <tool_result>42</tool_result> b") == "a b"

    def test_stray_closing_tags(self) -> None:
        assert sanitize_text("ok</tool_call>") == "ok"
        assert sanitize_text("ok </function_calls> fine") == "ok fine"


class TestMiniMax:
    def test_invoke_closed(self) -> None:
        raw = 'Hi <invoke name="search"><parameter name="q">x</parameter></invoke> there'
        assert sanitize_text(raw) == "Hi there"

    def test_invoke_malformed_opener_and_unclosed(self) -> None:
        assert sanitize_text('Hi\n<invoke name="search"\n<parameter name="q">x') == "Hi"

    def test_stray_minimax_close(self) -> None:
        assert sanitize_text("Answer</minimax:tool_call>") == "Answer"

    def test_minimax_block(self) -> None:
        raw = 'A<minimax:tool_call><invoke name="x"></invoke></minimax:tool_call>B'
        assert sanitize_text(raw) == "A B"

    def test_invoke_like_words_kept(self) -> None:
        assert sanitize_text("we <invoked> it") == "we <invoked> it"


class TestControlTokens:
    @pytest.mark.parametrize(
        "token",
        [
            "<|im_end|>",
            "<|im_start|>",
            "<|endoftext|>",
            "<|eot_id|>",
            "<｜end▁of▁sentence｜>",
            "<｜Assistant｜>",
            "<|tool▁call▁end|>",
        ],
    )
    def test_removed(self, token: str) -> None:
        assert sanitize_text(f"Hello{token}") == "Hello"
        assert sanitize_text(f"Hello {token} world") == "Hello world"

    @pytest.mark.parametrize(
        "raw",
        [
            "<|im_start|>assistant\nHello<|im_end|>",
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>",
            "<｜im_start｜>user Hello",
        ],
    )
    def test_chat_template_header_takes_role_word(self, raw: str) -> None:
        assert sanitize_text(raw) == "Hello"

    def test_role_word_without_header_kept(self) -> None:
        assert sanitize_text("<|im_end|>assistant said hi") == "assistant said hi"

    def test_deepseek_tool_call_section_removed(self) -> None:
        raw = (
            "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function"
            "<｜tool▁sep｜>search\n"
            '{"q": "x"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>Done.'
        )
        assert sanitize_text(raw) == "Checking. Done."

    def test_deepseek_tool_call_section_unclosed(self) -> None:
        assert sanitize_text('Checking.<｜tool▁calls▁begin｜>search {"q"') == "Checking."

    @pytest.mark.parametrize("raw", ["x |> f", "a <| b |> c", "a <||> b", "x < y | z > w"])
    def test_operators_kept(self, raw: str) -> None:
        assert sanitize_text(raw) == raw


class TestScaffolds:
    def test_tool_call_with_arguments_paragraph(self) -> None:
        raw = (
            "I'll look.\n\n[Tool Call: exec (ID: call_1)]\nArguments: {\"cmd\": \"ls\"}\n\n"
            "Here are the files."
        )
        assert sanitize_text(raw) == "I'll look.\n\nHere are the files."

    def test_tool_result_paragraph(self) -> None:
        raw = "[Tool Result for ID call_1]\nfile_a\nfile_b\n\nSummary: two files."
        assert sanitize_text(raw) == "Summary: two files."

    def test_tool_call_inline_after_text(self) -> None:
        assert sanitize_text("Sure. [Tool Call: read (ID: 7)]\nArguments: {}") == "Sure."

    def test_tool_call_marker_alone_keeps_the_text_after_it(self) -> None:
        assert sanitize_text("before [Tool Call: foo(1)] … after") == "before … after"
        assert sanitize_text("before [Tool Call: foo(\"]\")] after") == "before after"
        assert sanitize_text("before [Tool Call: never closed\nstill the call\n\nnext") == "before\n\nnext"

    def test_historical_context_bracket_only(self) -> None:
        raw = (
            '[Historical context: a different model called tool "search" with arguments '
            '{"q": ["a", "b]"]}. Do not mimic this format.] The answer is 42.'
        )
        assert sanitize_text(raw) == "The answer is 42."

    def test_historical_context_unclosed_runs_to_paragraph_end(self) -> None:
        raw = "[Historical context: called tool x with {\nkeep going\n\nNext paragraph."
        assert sanitize_text(raw) == "Next paragraph."

    def test_multiple_scaffolds(self) -> None:
        raw = (
            "[Tool Call: a (ID: 1)]\nArguments: {}\n\n[Tool Result for ID 1]\nok\n\n"
            "[Historical context: x] Final."
        )
        assert sanitize_text(raw) == "Final."

    def test_case_insensitive(self) -> None:
        assert sanitize_text("[tool call: x]\n\nkept") == "kept"

    def test_other_brackets_kept(self) -> None:
        raw = "[Tool] [Results] [History] [1] see [link](http://x)"
        assert sanitize_text(raw) == raw


class TestWhitespace:
    def test_removed_line_takes_its_line(self) -> None:
        assert sanitize_text("a\n<|im_end|>\nb") == "a\nb"

    def test_blank_line_runs_collapse(self) -> None:
        raw = "p1\n\n<think>x</think>\n\n\n<|im_end|>\n\np2"
        assert sanitize_text(raw) == "p1\n\np2"

    def test_untouched_layout_is_preserved(self) -> None:
        raw = "def f():\n    return  1\n\n\n\nx"
        assert sanitize_text(raw) == raw

    def test_indentation_after_removal_preserved(self) -> None:
        raw = "code:<|im_end|>\n    indented()"
        assert sanitize_text(raw) == "code:\n    indented()"

    def test_outer_whitespace_stripped(self) -> None:
        assert sanitize_text("  \n hello \n ") == "hello"

    def test_nul_in_input_is_dropped(self) -> None:
        assert sanitize_text("a\x00b") == "ab"

    def test_empty(self) -> None:
        assert sanitize_text("") == ""

    def test_everything_combined(self) -> None:
        raw = (
            "<|im_start|>assistant\n<think>plan</think>\n<relevant-memories>m</relevant-memories>\n"
            "Real answer.<tool_call>{\"name\": \"x\"}</tool_call>\n\n[Tool Result for ID 1]\nout"
            "<|im_end|>"
        )
        assert sanitize_text(raw) == "Real answer."


class TestAdversarial:
    @pytest.mark.parametrize(
        "raw",
        [
            "<think " * 30_000,  # unterminated openers once rescanned to the end each time
            "<tool_call a" * 30_000,
            "<relevant-memories x" * 30_000,
            "[Historical context [" * 30_000,
            "<|" * 200_000,
            "<|x|> " * 100_000,
            "<invoke " * 100_000,
        ],
    )
    def test_sanitize_handles_adversarial_input(self, raw: str) -> None:
        # These inputs once took quadratic time; now they must finish and never grow the text.
        # (Speed itself is measured in bench/, not asserted here.)
        cleaned = sanitize_text(raw)
        assert len(cleaned) <= len(raw)
        assert sanitize_text(cleaned) == cleaned


# === build_history_view ======================================================================


class TestShape:
    def test_rows_and_json(self) -> None:
        view = build_history_view(
            [msg("m1", "user", text("hi")), msg("m2", "assistant", text("hello"), ts="t2")]
        )
        assert view.messages == [
            {"messageId": "m1", "role": "user", "text": "hi", "timestamp": "2026-01-01T00:00:00Z"},
            {"messageId": "m2", "role": "assistant", "text": "hello", "timestamp": "t2"},
        ]
        assert view.to_json() == {
            "messages": view.messages,
            "truncated": False,
            "droppedMessages": 0,
            "contentTruncated": False,
            "contentRedacted": False,
            "bytes": utf8_json_size(view.messages),
        }

    def test_empty_input(self) -> None:
        view = build_history_view([])
        assert (view.messages, view.bytes, view.truncated) == ([], 2, False)

    def test_defaults(self) -> None:
        assert TEXT_MAX_CHARS == 4000
        assert MAX_BYTES == 80 * 1024
        assert isinstance(build_history_view([]), HistoryView)

    def test_text_blocks_joined_with_newline_and_sanitised(self) -> None:
        view = build_history_view(
            [msg("m", "assistant", text("<think>x</think>one"), text("two<|im_end|>"))]
        )
        assert view.messages[0]["text"] == "one\ntwo"

    def test_string_content_is_a_text_block(self) -> None:
        m = {"messageId": "m", "role": "user", "timestamp": "t", "content": "plain <|x|>"}
        assert build_history_view([m]).messages[0]["text"] == "plain"

    def test_system_messages_kept(self) -> None:
        view = build_history_view([msg("s", "system", text("be nice"))])
        assert [r["role"] for r in view.messages] == ["system"]

    def test_empty_after_sanitising_is_dropped_but_not_counted(self) -> None:
        view = build_history_view(
            [msg("a", "assistant", text("<think>only</think>")), msg("b", "user", text("  ")),
             msg("c", "user", text("kept"))]
        )
        assert [r["messageId"] for r in view.messages] == ["c"]
        assert view.dropped_messages == 0
        assert view.truncated is False

    def test_input_not_mutated(self) -> None:
        messages = [msg("m", "user", text(f"key {OPENAI} " + "x" * 50))]
        before = copy.deepcopy(messages)
        build_history_view(messages, text_cap=10, byte_cap=60)
        assert messages == before

    def test_unknown_block_types_ignored(self) -> None:
        view = build_history_view([msg("m", "user", {"type": "audio", "data": "xx"}, text("t"))])
        assert view.messages[0]["text"] == "t"


class TestTools:
    CALL = {"type": "toolCall", "id": "c1", "name": "search", "arguments": {"q": "上海", "n": 2}}
    RESULT = {"type": "toolResult", "toolCallId": "c1", "content": "3 hits", "isError": False}

    def conversation(self) -> list[dict]:
        return [
            msg("u", "user", text("find it")),
            msg("a", "assistant", text("Searching."), self.CALL),
            msg("t", "tool", self.RESULT),
            msg("a2", "assistant", self.CALL),
            msg("f", "assistant", text("Found 3.")),
        ]

    def test_excluded_by_default(self) -> None:
        view = build_history_view(self.conversation())
        assert [(r["messageId"], r["text"]) for r in view.messages] == [
            ("u", "find it"),
            ("a", "Searching."),
            ("f", "Found 3."),
        ]

    def test_included_on_request(self) -> None:
        view = build_history_view(self.conversation(), include_tools=True)
        texts = {r["messageId"]: r["text"] for r in view.messages}
        call = '[tool call search({"q":"上海","n":2})]'
        assert texts == {
            "u": "find it",
            "a": f"Searching.\n{call}",
            "t": "[tool result] 3 hits",
            "a2": call,
            "f": "Found 3.",
        }
        roles = [r["role"] for r in view.messages]
        assert roles == ["user", "assistant", "tool", "assistant", "assistant"]

    def test_error_result_and_empty_result(self) -> None:
        err = {**self.RESULT, "content": "boom", "isError": True}
        empty = {**self.RESULT, "content": ""}
        view = build_history_view([msg("e", "tool", err), msg("z", "tool", empty)], True)
        assert [r["text"] for r in view.messages] == ["[tool result, error] boom", "[tool result]"]

    def test_tool_result_role_variant_is_a_tool_message(self) -> None:
        m = msg("t", "toolResult", self.RESULT)
        assert build_history_view([m]).messages == []
        shown = build_history_view([m], include_tools=True).messages
        assert shown[0]["text"] == "[tool result] 3 hits"

    def test_tool_result_is_sanitised_and_redacted(self) -> None:
        res = {**self.RESULT, "content": f"<|im_end|>key={OPENAI}"}
        view = build_history_view([msg("t", "tool", res)], include_tools=True)
        assert view.messages[0]["text"] == f"[tool result] key=sk-…{REDACTED}"
        assert view.content_redacted is True

    def test_tool_call_arguments_are_redacted(self) -> None:
        call = {**self.CALL, "arguments": {"api_key": "hunter2"}}
        view = build_history_view([msg("a", "assistant", call)], include_tools=True)
        assert view.messages[0]["text"] == f'[tool call search({{"api_key":"{REDACTED}"}})]'
        assert view.content_redacted is True

    def test_thinking_never_shown(self) -> None:
        m = msg("a", "assistant", {"type": "thinking", "thinking": "private"}, text("public"))
        for include in (False, True):
            assert build_history_view([m], include_tools=include).messages[0]["text"] == "public"

    def test_thinking_only_message_dropped(self) -> None:
        m = msg("a", "assistant", {"type": "thinking", "thinking": "private"})
        assert build_history_view([m], include_tools=True).messages == []


class TestImages:
    def test_base64_image_marker_with_decoded_size(self) -> None:
        for size in (0, 1, 2, 3, 10, 1000):
            data = base64.b64encode(b"\x89" * size).decode()
            m = msg("i", "user", {"type": "image", "mimeType": "image/png", "data": data})
            expected = f"[image omitted: {size} bytes]"
            assert build_history_view([m]).messages[0]["text"] == expected

    def test_data_uri_and_wrapped_base64(self) -> None:
        data = base64.encodebytes(b"x" * 100).decode()  # has newlines every 76 chars
        m1 = msg("i", "user", {"type": "image", "mimeType": "image/png", "data": data})
        m2 = msg("j", "user", {"type": "image", "data": "data:image/png;base64,QUJD"})
        texts = [r["text"] for r in build_history_view([m1, m2]).messages]
        assert texts == ["[image omitted: 100 bytes]", "[image omitted: 3 bytes]"]

    def test_ref_image(self) -> None:
        image = {"type": "image", "mimeType": "image/png", "ref": "blob:1"}
        m = msg("i", "user", text("look"), image)
        assert build_history_view([m]).messages[0]["text"] == "look\n[image omitted]"


class TestTextCap:
    def test_exact_cap_not_truncated(self) -> None:
        view = build_history_view([msg("m", "user", text("a" * 50))], text_cap=50)
        assert view.messages[0]["text"] == "a" * 50
        assert view.content_truncated is False

    def test_one_over_cap_truncated_with_marker_on_new_line(self) -> None:
        view = build_history_view([msg("m", "user", text("a" * 50 + "b"))], text_cap=50)
        assert view.messages[0]["text"] == "a" * 50 + "\n" + TRUNCATION_MARKER
        assert TRUNCATION_MARKER == "…(truncated)…"
        assert view.content_truncated is True
        assert view.truncated is False  # per-block cut is reported separately

    def test_cap_is_per_block(self) -> None:
        view = build_history_view([msg("m", "user", text("a" * 50), text("b" * 50))], text_cap=50)
        assert view.messages[0]["text"] == "a" * 50 + "\n" + "b" * 50
        assert view.content_truncated is False

    def test_cap_counts_characters_not_bytes(self) -> None:
        view = build_history_view([msg("m", "user", text("上" * 50))], text_cap=50)
        assert view.messages[0]["text"] == "上" * 50
        assert view.content_truncated is False

    def test_cap_applies_after_sanitising(self) -> None:
        raw = "<think>" + "x" * 100 + "</think>" + "a" * 50
        view = build_history_view([msg("m", "user", text(raw))], text_cap=50)
        assert view.messages[0]["text"] == "a" * 50
        assert view.content_truncated is False

    def test_default_cap(self) -> None:
        view = build_history_view([msg("m", "user", text("z" * 4001))])
        assert view.messages[0]["text"] == "z" * 4000 + "\n" + TRUNCATION_MARKER

    def test_tool_call_rendering_is_capped(self) -> None:
        call = {"type": "toolCall", "id": "c", "name": "w", "arguments": {"s": "x" * 100}}
        view = build_history_view([msg("a", "assistant", call)], include_tools=True, text_cap=20)
        assert view.messages[0]["text"].endswith("\n" + TRUNCATION_MARKER)
        assert view.content_truncated is True


class TestRedaction:
    def test_redacted_and_flagged(self) -> None:
        view = build_history_view([msg("m", "user", text(f"my key is {OPENAI}"))])
        assert view.messages[0]["text"] == f"my key is sk-…{REDACTED}"
        assert view.content_redacted is True

    def test_clean_text_not_flagged(self) -> None:
        view = build_history_view([msg("m", "user", text("invoice INV-2024-0042"))])
        assert view.content_redacted is False

    def test_secret_straddling_the_cap_is_still_redacted(self) -> None:
        raw = "x" * 39 + " " + OPENAI  # the cap would cut the key in half
        view = build_history_view([msg("m", "user", text(raw))], text_cap=60)
        out = view.messages[0]["text"]
        assert OPENAI[:10] not in out
        assert view.content_redacted is True
        assert out == "x" * 39 + f" sk-…{REDACTED}"
        assert view.content_truncated is False


class TestByteBudget:
    def rows(self, n: int, size: int = 100) -> list[dict]:
        return [msg(f"m{i}", "user", text(str(i) * size)) for i in range(n)]

    def test_bytes_is_exact_json_size(self) -> None:
        view = build_history_view(self.rows(5))
        assert view.bytes == utf8_json_size(view.messages) == json_size(view.messages)

    def test_exact_fit_keeps_everything(self) -> None:
        full = build_history_view(self.rows(5)).bytes
        view = build_history_view(self.rows(5), byte_cap=full)
        assert len(view.messages) == 5
        assert (view.truncated, view.dropped_messages, view.bytes) == (False, 0, full)

    def test_one_byte_over_drops_oldest(self) -> None:
        full = build_history_view(self.rows(5)).bytes
        view = build_history_view(self.rows(5), byte_cap=full - 1)
        assert [r["messageId"] for r in view.messages] == ["m1", "m2", "m3", "m4"]
        assert view.dropped_messages == 1
        assert view.truncated is True
        assert view.bytes == utf8_json_size(view.messages) <= full - 1

    def test_drops_oldest_until_it_fits(self) -> None:
        keep_two = utf8_json_size(build_history_view(self.rows(5)).messages[-2:])
        view = build_history_view(self.rows(5), byte_cap=keep_two)
        assert [r["messageId"] for r in view.messages] == ["m3", "m4"]
        assert view.dropped_messages == 3
        assert view.bytes == keep_two

    def test_single_oversized_row_is_replaced_by_marker(self) -> None:
        view = build_history_view([msg("big", "user", text("x" * 3000))], byte_cap=500)
        assert view.messages == [
            {
                "messageId": "big",
                "role": "user",
                "text": OMITTED_MARKER,
                "timestamp": "2026-01-01T00:00:00Z",
            }
        ]
        assert OMITTED_MARKER == "[sessions_history omitted: message too large]"
        assert view.truncated is True
        assert view.dropped_messages == 0
        assert view.bytes == utf8_json_size(view.messages) <= 500

    def test_oversized_newest_after_dropping_older(self) -> None:
        messages = self.rows(3, size=10) + [msg("big", "assistant", text("y" * 3000))]
        view = build_history_view(messages, byte_cap=500)
        assert [(r["messageId"], r["text"]) for r in view.messages] == [("big", OMITTED_MARKER)]
        assert view.dropped_messages == 3
        assert view.truncated is True

    def test_budget_too_small_even_for_marker(self) -> None:
        view = build_history_view([msg("big", "user", text("x" * 300))], byte_cap=20)
        assert view.messages == []
        assert view.dropped_messages == 1
        assert view.truncated is True
        assert view.bytes == 2

    def test_cjk_counts_utf8_bytes(self) -> None:
        row_text = "下周二我去上海出差" * 10  # 90 chars, 270 UTF-8 bytes
        messages = [msg(f"c{i}", "user", text(row_text)) for i in range(3)]
        view = build_history_view(messages)
        assert view.bytes == utf8_json_size(view.messages)
        # ensure_ascii=True would count 6 bytes per char; characters would count 1.
        assert view.bytes > 3 * 270
        assert view.bytes < len(json.dumps(view.messages))
        one_row = utf8_json_size(view.messages[-1:])
        two_rows = utf8_json_size(view.messages[-2:])
        fitted = build_history_view(messages, byte_cap=two_rows)
        assert [r["messageId"] for r in fitted.messages] == ["c1", "c2"]
        assert fitted.dropped_messages == 1
        assert fitted.bytes == two_rows
        assert build_history_view(messages, byte_cap=two_rows - 1).bytes == one_row

    def test_cjk_row_over_budget_by_bytes_but_not_chars(self) -> None:
        m = msg("c", "user", text("上" * 300))  # 300 chars, 900 bytes
        view = build_history_view([m], byte_cap=600)
        assert view.messages[0]["text"] == OMITTED_MARKER

    def test_default_budget(self) -> None:
        # 30 rows of ~4 KB: over 80 KB in total, so the oldest go first.
        messages = [msg(f"m{i:02d}", "user", text("w" * 3990)) for i in range(30)]
        view = build_history_view(messages)
        assert view.truncated is True
        assert view.bytes <= 80 * 1024
        assert view.messages[-1]["messageId"] == "m29"
        assert view.dropped_messages + len(view.messages) == 30
        assert view.messages[0]["messageId"] == f"m{view.dropped_messages:02d}"
