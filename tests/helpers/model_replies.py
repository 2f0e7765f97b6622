"""What the scripted model server (tests/helpers/scripted_server.py) answers, and the config that
points an engine or a gateway at it: OpenAI chat completions, plain and streamed."""

from __future__ import annotations

import json

from tests.helpers.scripted_server import Reply, sse_data


def completion(text="", calls=(), finish=None):
    message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}_{name}", "type": "function",
                                  "function": {"name": name, "arguments": args if isinstance(args, str)
                                               else json.dumps(args, ensure_ascii=False)}}
                                 for i, (name, args) in enumerate(calls)]
    return Reply(json={"id": "x", "object": "chat.completion", "model": "scripted-1",
                       "choices": [{"index": 0, "message": message,
                                    "finish_reason": finish or ("tool_calls" if calls else "stop")}],
                       "usage": {"prompt_tokens": 40, "completion_tokens": 5}})


def last_message(request):
    return request.json()["messages"][-1]


def config_for(server, api="openai", **defaults):
    base = server.url + ("/v1" if api == "openai" else "")
    return {
        "models": {"providers": {"local": {"api": api, "baseUrl": base, "timeoutMs": 3000, "retries": 0,
                                           "models": {"scripted-1": {"contextWindow": 32768}}}}},
        "agents": {"defaults": {"model": {"primary": "local/scripted-1"}, "memorySearch": {"provider": "none"},
                                **defaults}},
        "plugins": {"entries": {"active-memory": {"enabled": False}}},
    }


def model_config(server):
    return {"models": {"providers": {"local": {"api": "openai", "baseUrl": server.url + "/v1", "timeoutMs": 5000,
                                               "retries": 0, "models": {"scripted-1": {"contextWindow": 32768}}}}},
            "agents": {"defaults": {"model": {"primary": "local/scripted-1"}, "memorySearch": {"provider": "none"}}},
            "plugins": {"entries": {"active-memory": {"enabled": False}}}}


def stream_chunks(*pieces, calls=None):
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    if calls:
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
    chunks[-1]["choices"][0]["finish_reason"] = "tool_calls" if calls else "stop"
    return Reply(sse=sse_data(*chunks, "[DONE]"))


def read_sse(response):
    events, kind = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[6:])))
    return events
