"""The scripted protocol server, spoken to with plain HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from larik_jupyter.llm.script import ScriptError
from larik_jupyter.testing import ScriptedHTTPServer

# The smallest request both APIs accept (the server refuses what the real APIs refuse).
HI: dict[str, Any] = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def post(
    url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def events(raw: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")
    ]


def test_anthropic_stream_events_in_protocol_order() -> None:
    reply = {
        "content": [{"type": "text", "text": "hello world"}],
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    with ScriptedHTTPServer([reply], fragment=3) as server:
        status, headers, raw = post(server.url + "/v1/messages", {**HI, "stream": True})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    kinds = [e["type"] for e in events(raw)]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    text = "".join(e["delta"]["text"] for e in events(raw) if e["type"] == "content_block_delta")
    assert text == "hello world"
    assert kinds.count("content_block_delta") == 4


def test_openai_stream_reports_usage_only_when_asked() -> None:
    reply = {
        "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    with ScriptedHTTPServer([reply, reply]) as server:
        url = server.openai_base_url + "/chat/completions"
        _, _, plain = post(url, {**HI, "stream": True})
        _, _, counted = post(
            url,
            {
                "model": "m",
                "stream": True,
                "messages": [],
                "stream_options": {"include_usage": True},
            },
        )
    assert not any("usage" in e for e in events(plain))
    assert events(counted)[-1]["usage"]["completion_tokens"] == 2
    assert plain.decode().rstrip().endswith("data: [DONE]")


def test_non_streaming_requests_get_a_whole_response() -> None:
    reply = {"content": [{"type": "tool_use", "name": "bash", "input": {"command": "ls"}}]}
    with ScriptedHTTPServer([reply, reply]) as server:
        _, _, anthropic_raw = post(server.url + "/v1/messages", HI)
        _, _, openai_raw = post(
            server.openai_base_url + "/chat/completions", {"model": "m", "messages": []}
        )
    assert json.loads(anthropic_raw)["content"][0]["input"] == {"command": "ls"}
    choice = json.loads(openai_raw)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "command": "ls"
    }


def test_errors_carry_status_body_and_retry_after() -> None:
    with ScriptedHTTPServer(
        [{"error": {"status": 429, "message": "slow down", "retry_after": 2}}]
    ) as server:
        status, headers, raw = post(server.url + "/v1/messages", {**HI, "stream": True})
    assert status == 429 and headers["retry-after"] == "2"
    assert json.loads(raw)["error"] == {"type": "rate_limit_error", "message": "slow down"}


def test_requests_are_recorded_with_headers_and_bodies() -> None:
    with ScriptedHTTPServer(
        [{"content": [{"type": "text", "text": "x"}]}], api_key="right"
    ) as server:
        denied, _, _ = post(server.url + "/v1/messages", HI, {"x-api-key": "wrong"})
        allowed, _, _ = post(server.url + "/v1/messages", HI, {"x-api-key": "right"})
        exhausted, _, raw = post(
            server.url + "/v1/messages", HI, {"x-api-key": "right"}
        )
        assert [r.headers["x-api-key"] for r in server.requests] == ["wrong", "right", "right"]
        assert (
            server.requests[0].body == HI and server.requests[0].path == "/v1/messages"
        )
        assert server.remaining == 0
    assert (denied, allowed, exhausted) == (401, 200, 400)
    assert "exhausted" in json.loads(raw)["error"]["message"]


def test_invalid_script_is_refused_with_the_place() -> None:
    with pytest.raises(ScriptError, match="responses.0"):
        ScriptedHTTPServer([{"content": [{"type": "nope"}]}])
