"""Chat providers against a real local HTTP server speaking the OpenAI and Anthropic wire protocols."""

from __future__ import annotations

import time

import pytest

from clawkeep.errors import ClawkeepError, InputError
from clawkeep.models.chat import (
    AnthropicChatModel,
    ContextOverflowError,
    FallbackChain,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
    OpenAIChatModel,
    create_chain,
    create_chat_model,
)
from tests.helpers.scripted_server import Reply, ScriptedServer, sse_data, sse_events

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def config(url: str, api: str = "openai", name: str = "local", **extra) -> dict:
    provider = {"api": api, "baseUrl": url + ("/v1" if api == "openai" else ""), "retryBackoffMs": 5, **extra}
    return {"providers": {name: provider}}


def openai_model(server, **extra):
    return create_chat_model("local/test-model", config(server.url, "openai", apiKey="sk-test", **extra))


def anthropic_model(server, **extra):
    return create_chat_model(
        "claude/claude-test", config(server.url, "anthropic", name="claude", apiKey="ak-test", **extra)
    )


def openai_answer(text="Hi there", model="test-model", finish="stop", usage=(12, 3)):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def anthropic_answer(text="Hi there", stop="end_turn"):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text[:3]}, {"type": "text", "text": text[3:]}],
        "stop_reason": stop,
        "usage": {"input_tokens": 20, "cache_read_input_tokens": 5, "output_tokens": 7},
    }


def openai_error(message, code=None, kind="invalid_request_error"):
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(message, kind="invalid_request_error"):
    return {"type": "error", "error": {"type": kind, "message": message}}


# -- OpenAI-compatible ------------------------------------------------------------------------


def test_openai_complete_wire_format_and_usage(server):
    server.add(Reply(json=openai_answer()))
    model = openai_model(server)
    result = model.complete(HELLO, system="Be brief.", max_tokens=50, temperature=0.2)
    assert (result.text, result.provider, result.model, result.finish_reason) == (
        "Hi there",
        "local",
        "test-model",
        "stop",
    )
    assert result.usage == {"inputTokens": 12, "outputTokens": 3}
    [req] = server.requests
    assert (req.method, req.path) == ("POST", "/v1/chat/completions")
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.headers["content-type"] == "application/json"
    assert req.json() == {
        "model": "test-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}],
        "stream": False,
        "max_tokens": 50,
        "temperature": 0.2,
    }


def test_openai_without_key_sends_no_authorization_and_bare_host_gets_v1(server):
    server.add(Reply(json=openai_answer(usage=(1, 1))))
    cfg = {"providers": {"ollama": {"baseUrl": server.url}}}  # built-in api, overridden URL, no key
    model = create_chat_model("ollama/llama3.1:8b", cfg, env={})
    assert model.complete(HELLO).text == "Hi there"
    [req] = server.requests
    assert req.path == "/v1/chat/completions"
    assert "authorization" not in req.headers
    assert "max_tokens" not in req.json() and "temperature" not in req.json()


def test_openai_max_completion_tokens_field(server):
    server.add(Reply(json=openai_answer()))
    openai_model(server, maxTokensField="max_completion_tokens").complete(HELLO, max_tokens=9)
    body = server.requests[0].json()
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body


def test_openai_missing_usage_is_none(server):
    answer = openai_answer()
    del answer["usage"]
    server.add(Reply(json=answer))
    assert openai_model(server).complete(HELLO).usage == {"inputTokens": None, "outputTokens": None}


def test_openai_stream(server):
    chunks = [
        {"model": "test-model", "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
        {"model": "test-model", "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]},
        {"model": "test-model", "choices": [{"index": 0, "delta": {"content": "lo!"}, "finish_reason": None}]},
        {"model": "test-model", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        {"model": "test-model", "choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 2}},
    ]
    server.add(Reply(sse=[": keep-alive\n\n", *sse_data(*chunks, "[DONE]")]))
    stream = openai_model(server).stream(HELLO, system="sys")
    assert list(stream) == ["Hel", "lo!"]
    result = stream.result
    assert (result.text, result.finish_reason, result.provider) == ("Hello!", "length", "local")
    assert result.usage == {"inputTokens": 8, "outputTokens": 2}
    body = server.requests[0].json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "sys"}


def test_stream_result_read_early_drains(server):
    server.add(
        Reply(
            sse=sse_data(
                {"choices": [{"index": 0, "delta": {"content": "a"}}]},
                {"choices": [{"index": 0, "delta": {"content": "b"}, "finish_reason": "stop"}]},
                "[DONE]",
            )
        )
    )
    with openai_model(server).stream(HELLO) as stream:
        assert stream.result.text == "ab"
        assert list(stream) == []


def test_stream_answered_with_plain_json_is_one_delta(server):
    server.add(Reply(json=openai_answer("whole")))
    stream = openai_model(server).stream(HELLO)
    assert list(stream) == ["whole"] and stream.result.usage["inputTokens"] == 12


def test_openai_error_inside_stream_before_output(server):
    server.add(
        Reply(
            sse=sse_data(
                {
                    "error": {
                        "message": "This model's maximum context length is 4096 tokens. "
                        "However, you requested 5000 tokens"
                    }
                }
            )
        )
    )
    with pytest.raises(ContextOverflowError) as info:
        openai_model(server).stream(HELLO)
    assert info.value.observed_tokens == 5000 and info.value.limit_tokens == 4096


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_complete_wire_format_and_usage(server):
    server.add(Reply(json=anthropic_answer()))
    model = anthropic_model(server)
    messages = [
        {"role": "system", "content": "Rule two."},
        *HELLO,
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "again"},
    ]
    result = model.complete(messages, system="Rule one.", temperature=0)
    assert (result.text, result.provider, result.model, result.finish_reason) == (
        "Hi there",
        "claude",
        "claude-test",
        "stop",
    )
    assert result.usage == {"inputTokens": 25, "outputTokens": 7}
    [req] = server.requests
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.headers["x-api-key"] == "ak-test"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.json() == {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": "Rule one.\n\nRule two.",
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "yo"},
            {"role": "user", "content": "again"},
        ],
        "temperature": 0,
    }


def test_anthropic_max_tokens_from_call_and_from_model_config(server):
    server.add(Reply(json=anthropic_answer(stop="max_tokens")), Reply(json=anthropic_answer()))
    model = anthropic_model(server)
    assert model.complete(HELLO, max_tokens=64).finish_reason == "length"
    cfg = config(server.url, "anthropic", name="claude", apiKey="k", models={"claude-test": {"maxTokens": 333}})
    create_chat_model("claude/claude-test", cfg).complete(HELLO)
    assert [r.json()["max_tokens"] for r in server.requests] == [64, 333]


def test_anthropic_stream(server):
    events = sse_events(
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test-2",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 30, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 15}},
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    server.add(Reply(sse=events))
    stream = anthropic_model(server).stream(HELLO, system="S")
    assert list(stream) == ["Hel", "lo"]
    result = stream.result
    assert (result.text, result.model, result.finish_reason) == ("Hello", "claude-test-2", "stop")
    assert result.usage == {"inputTokens": 30, "outputTokens": 15}
    body = server.requests[0].json()
    assert body["stream"] is True and body["system"] == "S"


def test_anthropic_stream_error_event_overflow(server):
    server.add(
        Reply(sse=sse_events(("error", anthropic_error("prompt is too long: 208310 tokens > 200000 maximum"))))
    )
    with pytest.raises(ContextOverflowError) as info:
        anthropic_model(server).stream(HELLO)
    assert (info.value.observed_tokens, info.value.limit_tokens) == (208310, 200000)
    assert len(server.requests) == 1


def test_anthropic_overloaded_stream_event_is_retried(server):
    server.add(
        Reply(sse=sse_events(("error", anthropic_error("Overloaded", "overloaded_error")))),
        Reply(json=anthropic_answer("fine")),
    )
    assert anthropic_model(server).stream(HELLO).result.text == "fine"
    assert len(server.requests) == 2


def test_stream_ending_early_is_a_response_error(server):
    server.add(
        Reply(
            sse=sse_events(
                ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "par"}})
            )
        )
    )
    stream = anthropic_model(server, retries=0).stream(HELLO)
    assert next(stream) == "par"
    with pytest.raises(ModelResponseError, match="message_stop"):
        list(stream)


# -- retries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_retry_on_500_then_success(server, api):
    ok = openai_answer() if api == "openai" else anthropic_answer()
    server.add(Reply(status=500, json={"error": {"message": "boom"}}), Reply(json=ok))
    model = openai_model(server) if api == "openai" else anthropic_model(server)
    assert model.complete(HELLO).text == "Hi there"
    assert len(server.requests) == 2


def test_429_retry_after_is_honoured(server):
    server.add(
        Reply(status=429, headers={"Retry-After": "1"}, json=openai_error("Rate limit", kind="rate_limit")),
        Reply(json=openai_answer()),
    )
    started = time.monotonic()
    assert openai_model(server).complete(HELLO).text == "Hi there"
    assert time.monotonic() - started >= 0.9  # waited for Retry-After, not the 5 ms backoff
    assert len(server.requests) == 2


def test_retry_after_is_capped(server):
    server.add(Reply(status=429, headers={"Retry-After": "3600"}), Reply(json=openai_answer()))
    assert openai_model(server, retryAfterCapMs=50).complete(HELLO).text == "Hi there"
    assert len(server.requests) == 2


def test_no_retry_on_400(server):
    server.add(Reply(status=400, json=openai_error("Invalid 'messages'")), Reply(json=openai_answer()))
    with pytest.raises(ModelError) as info:
        openai_model(server).complete(HELLO)
    assert type(info.value) is ModelError and info.value.status == 400
    assert "local/test-model" in str(info.value) and "Invalid 'messages'" in str(info.value)
    assert len(server.requests) == 1


def test_retries_exhausted(server):
    server.add(*[Reply(status=503, body="unavailable")] * 3, Reply(json=openai_answer()))
    with pytest.raises(ModelError, match="HTTP 503"):
        openai_model(server).complete(HELLO)
    assert len(server.requests) == 3  # 1 + default 2 retries


def test_connection_refused_is_a_model_error(server):
    url = server.url
    server.stop()
    model = create_chat_model("local/m", config(url, retries=1))
    with pytest.raises(ModelError, match="local/m: connection to") as info:
        model.complete(HELLO)
    assert isinstance(info.value, ClawkeepError) and not isinstance(info.value, ModelTimeoutError)


def test_api_key_never_appears_in_errors(server):
    server.add(Reply(status=401, json=openai_error("Incorrect API key provided: sk-test")))
    with pytest.raises(ModelError) as info:
        openai_model(server).complete(HELLO)
    assert "sk-test" not in str(info.value)


# -- context overflow --------------------------------------------------------------------------

OVERFLOW_MESSAGES = [
    "request_too_large",
    "Context length exceeded",
    "context_length_exceeded",
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    "Input exceeds the maximum number of tokens",
    "Input token count exceeds the maximum number of input tokens",
    "Input is too long for the model",
    "prompt is too long: 208310 tokens > 200000 maximum",
    "Ollama error: context length exceeded",
]


@pytest.mark.parametrize("message", OVERFLOW_MESSAGES)
def test_overflow_strings_openai_shape(server, message):
    server.add(Reply(status=400, json=openai_error(message.upper() if "ollama" in message.lower() else message)))
    with pytest.raises(ContextOverflowError) as info:
        openai_model(server).complete(HELLO)
    assert "local/test-model" in str(info.value) and "context overflow" in str(info.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("message", OVERFLOW_MESSAGES)
def test_overflow_strings_anthropic_shape(server, message):
    status = 413 if message == "request_too_large" else 400
    body = (
        anthropic_error("Request exceeds the maximum size", "request_too_large")
        if status == 413
        else anthropic_error(message)
    )
    server.add(Reply(status=status, json=body))
    with pytest.raises(ContextOverflowError) as info:
        anthropic_model(server).complete(HELLO)
    assert info.value.status == status and info.value.provider == "claude"
    assert len(server.requests) == 1


def test_overflow_carries_observed_tokens(server):
    server.add(
        Reply(status=400, json=openai_error(OVERFLOW_MESSAGES[3], code="context_length_exceeded")),
        Reply(status=400, json=anthropic_error(OVERFLOW_MESSAGES[7])),
        Reply(status=400, json=openai_error("Context length exceeded")),
    )
    with pytest.raises(ContextOverflowError) as a:
        openai_model(server).complete(HELLO)
    with pytest.raises(ContextOverflowError) as b:
        anthropic_model(server).complete(HELLO)
    with pytest.raises(ContextOverflowError) as c:
        openai_model(server).complete(HELLO)
    assert (a.value.observed_tokens, a.value.limit_tokens) == (9000, 8192)
    assert "observed 9000 tokens" in str(a.value)
    assert (b.value.observed_tokens, b.value.limit_tokens) == (208310, 200000)
    assert c.value.observed_tokens is None


def test_overflow_in_a_5xx_body_is_not_retried(server):
    server.add(Reply(status=500, body="ollama error: context length exceeded"), Reply(json=openai_answer()))
    with pytest.raises(ContextOverflowError):
        openai_model(server).complete(HELLO)
    assert len(server.requests) == 1


# -- bad answers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body="<html>502 gateway</html>", headers={"Content-Type": "application/json"}),
        Reply(body=""),
        Reply(json={"choices": []}),
        Reply(json=[1, 2]),
        Reply(json={"choices": [{"index": 0}]}),
    ],
    ids=["garbage", "empty", "no-choices", "not-object", "no-message"],
)
def test_bad_openai_answers(server, reply):
    server.add(reply, Reply(json=openai_answer()))
    with pytest.raises(ModelResponseError) as info:
        openai_model(server).complete(HELLO)
    assert "local/test-model" in str(info.value)
    assert len(server.requests) == 1


def test_bad_anthropic_answer_and_bad_sse_chunk(server):
    server.add(Reply(json={"type": "message", "content": "nope"}), Reply(sse=["data: {not json\n\n"]))
    with pytest.raises(ModelResponseError, match="claude/claude-test"):
        anthropic_model(server).complete(HELLO)
    with pytest.raises(ModelResponseError, match="not valid JSON"):
        openai_model(server).stream(HELLO)


# -- timeouts ----------------------------------------------------------------------------------


def test_hanging_server_times_out(server):
    server.add(Reply(hang=True), Reply(json=openai_answer()))
    model = openai_model(server, timeoutMs=300)
    with pytest.raises(ModelTimeoutError, match="local/test-model"):
        model.complete(HELLO)
    assert len(server.requests) == 1  # a timeout is returned, not retried


def test_per_call_timeout_overrides_config(server):
    server.add(Reply(delay=5))
    with pytest.raises(ModelTimeoutError):
        anthropic_model(server).complete(HELLO, timeout_s=0.3)


def test_stalled_stream_times_out(server):
    server.add(
        Reply(
            sse=sse_data(
                {"choices": [{"index": 0, "delta": {"content": "a"}}]},
                {"choices": [{"index": 0, "delta": {"content": "b"}}]},
            ),
            stream_delay=5,
        )
    )
    stream = openai_model(server, timeoutMs=300).stream(HELLO)
    assert next(stream) == "a"
    with pytest.raises(ModelTimeoutError, match="stalled"):
        next(stream)


# -- fallback chain ----------------------------------------------------------------------------


def chain_config(url: str) -> dict:
    providers = {name: {"api": "openai", "baseUrl": url + "/v1", "retries": 0} for name in ("one", "two", "three")}
    return {"providers": providers}


def test_fallback_order_and_who_answered(server):
    server.add(
        Reply(status=500, body="down"),
        Reply(status=404, json=openai_error("no such model")),
        Reply(json=openai_answer(model="m3")),
    )
    chain = create_chain("one/m1", ["two/m2", "three/m3", "one/m1"], chain_config(server.url))
    assert isinstance(chain, FallbackChain) and len(chain.models) == 3
    result = chain.complete(HELLO)
    assert (result.provider, result.model, result.text) == ("three", "m3", "Hi there")
    assert [r.json()["model"] for r in server.requests] == ["m1", "m2", "m3"]
    assert chain.last_model is chain.models[2] and [e.status for e in chain.last_errors] == [500, 404]
    assert (chain.provider, chain.model) == ("one", "m1")


def test_fallback_does_not_skip_past_overflow(server):
    server.add(Reply(status=400, json=openai_error("context_length_exceeded")), Reply(json=openai_answer()))
    chain = create_chain("one/m1", ["two/m2"], chain_config(server.url))
    with pytest.raises(ContextOverflowError):
        chain.complete(HELLO)
    assert len(server.requests) == 1


def test_fallback_after_timeout_and_all_failing(server):
    server.add(Reply(hang=True), Reply(json=openai_answer(model="m2")))
    chain = FallbackChain([create_chat_model(ref, chain_config(server.url)) for ref in ("one/m1", "two/m2")])
    # the answering model gets as long as the hanging one: 1.5 s leaves room on a loaded machine
    assert chain.complete(HELLO, timeout_s=1.5).model == "m2"

    server.add(Reply(hang=True), Reply(hang=True))
    with pytest.raises(ModelTimeoutError, match="all 2 models"):
        chain.complete(HELLO, timeout_s=0.3)
    server.add(Reply(hang=True), Reply(status=502, body="bad gateway"))
    with pytest.raises(ModelError) as info:
        chain.complete(HELLO, timeout_s=0.3)
    assert type(info.value) is ModelError and "one/m1" in str(info.value) and "two/m2" in str(info.value)
    assert len(info.value.errors) == 2 and chain.last_model is None


def test_fallback_stream(server):
    server.add(
        Reply(status=503, body="busy"),
        Reply(sse=sse_data({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}, "[DONE]")),
    )
    chain = create_chain("one/m1", ["two/m2"], chain_config(server.url))
    stream = chain.stream(HELLO)
    assert list(stream) == ["ok"] and stream.result.provider == "two"


# -- factory and validation --------------------------------------------------------------------


def test_factory_types_and_context_windows(server):
    cfg = config(server.url, "anthropic", name="claude", apiKey="k", models={"claude-x": {"contextWindow": 50000}})
    cfg["providers"]["gw"] = {
        "api": "openai-completions",
        "baseUrl": "http://h:1/v1",
        "models": [{"id": "big", "contextWindow": 128000}],
    }
    assert isinstance(create_chat_model("claude/claude-x", cfg), AnthropicChatModel)
    assert create_chat_model("claude/claude-x", cfg).context_window == 50000
    assert create_chat_model("claude/claude-3-5-sonnet", cfg).context_window == 200000
    assert create_chat_model("gw/big", cfg).context_window == 128000
    assert create_chat_model("big", cfg).provider == "gw"  # bare id listed by exactly one provider
    assert create_chat_model("gw/openai/gpt-4o-mini", cfg).context_window == 128000
    assert create_chat_model("gw/mystery-7b", cfg).context_window == 32000
    model = create_chat_model("openai/gpt-4o", {}, env={"OPENAI_API_KEY": "sk-env"})
    assert isinstance(model, OpenAIChatModel) and model.max_tokens_field == "max_completion_tokens"
    assert model.timeout_s == 60 and model.retries == 2


def test_factory_key_from_env(server):
    server.add(Reply(json=openai_answer()))
    cfg = config(server.url, apiKeyEnv="MY_KEY")
    create_chat_model("local/m", cfg, env={"MY_KEY": "sk-from-env"}).complete(HELLO)
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.parametrize(
    ("ref", "cfg", "needle"),
    [
        ("nowhere/m", {}, "unknown provider 'nowhere'"),
        ("x/m", {"providers": {"x": {"api": "gemini", "baseUrl": "http://h"}}}, "models.providers.x.api = 'gemini'"),
        ("x/m", {"providers": {"x": {"api": "openai"}}}, "models.providers.x.baseUrl"),
        ("x/m", {"providers": {"x": {"api": "openai", "baseUrl": "ftp://h"}}}, "baseUrl = 'ftp://h'"),
        ("x/m", {"providers": {"x": {"api": "openai", "baseUrl": "http://h", "timeoutMs": -1}}}, "timeoutMs"),
        ("x/m", {"providers": {"x": {"api": "openai", "baseUrl": "http://h", "retries": 1.5}}}, "retries"),
        (
            "x/m",
            {"providers": {"x": {"api": "openai", "baseUrl": "http://h", "models": {"m": {"contextWindow": "big"}}}}},
            "providers.x.models.m.contextWindow",
        ),
        ("openai/gpt-4o", {}, "OPENAI_API_KEY"),
        ("just-a-model", {}, "'<provider>/<model>'"),
    ],
)
def test_factory_rejects_bad_config(ref, cfg, needle):
    with pytest.raises(InputError) as info:
        create_chat_model(ref, cfg, env={})
    assert needle in str(info.value)
    if "api = 'gemini'" in needle:
        assert "openai" in str(info.value) and "anthropic" in str(info.value)
    if "unknown provider" in needle:
        assert "anthropic" in str(info.value) and "ollama" in str(info.value)


def test_create_chain_shapes(server):
    cfg = chain_config(server.url)
    assert create_chain(None, [], cfg) is None
    assert create_chain("", None, cfg) is None
    single = create_chain(None, ["two/m2"], cfg)
    assert isinstance(single, OpenAIChatModel) and single.ref == "two/m2"
    assert isinstance(create_chain("one/m1", ["two/m2"], cfg), FallbackChain)


def test_bad_messages_are_input_errors(server):
    model = openai_model(server)
    for bad in ([], [{"role": "tool", "content": "x"}], [{"role": "user", "content": 3}], "hi"):
        with pytest.raises(InputError):
            model.complete(bad)
    with pytest.raises(InputError):
        model.complete(HELLO, max_tokens=0)
    with pytest.raises(InputError, match="system"):
        model.stream(HELLO, system=["not", "text"])
    with pytest.raises(InputError, match="at least one user or assistant"):
        anthropic_model(server).complete([{"role": "system", "content": "only"}])
    assert server.requests == []


def test_retry_policy_of_the_shared_http_layer():
    from clawkeep.models.http import RetryPolicy, parse_retry_after

    policy = RetryPolicy(retries=2, backoff_s=0.5, cap_s=3.0)
    assert [policy.wait(tries, None) for tries in range(4)] == [0.5, 1.0, 2.0, 3.0]  # doubled, capped
    assert policy.wait(0, 60.0) == 3.0 and policy.wait(0, 0.0) == 0.0  # Retry-After, capped too
    jittered = RetryPolicy(retries=2, backoff_s=1.0, cap_s=10.0, jitter=0.25)
    assert all(1.0 <= jittered.wait(0, None) <= 1.25 for _ in range(50))
    assert parse_retry_after("7") == 7.0 and parse_retry_after("-3") == 0.0 and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
