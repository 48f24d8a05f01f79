"""Both SDK providers against the local protocol server, through the real SDKs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from larik_jupyter.llm.anthropic_provider import AnthropicProvider
from larik_jupyter.llm.events import (
    MessageEnd,
    Retrying,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from larik_jupyter.llm.messages import Usage, user_text
from larik_jupyter.llm.openai_provider import OpenAIProvider
from larik_jupyter.llm.provider import Provider, ProviderError, ToolSchema
from larik_jupyter.llm.retry import RetryPolicy
from larik_jupyter.testing import ScriptedHTTPServer, collect, final

KEY = "sk-test-0123456789abcdef"
FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.01)
WRITE = ToolSchema(
    "write", "Write a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)


def make(kind: str, server: ScriptedHTTPServer, key: str = KEY) -> Provider:
    if kind == "anthropic":
        return AnthropicProvider(
            "claude-test", api_key=key, base_url=server.anthropic_base_url, retry=FAST
        )
    return OpenAIProvider("gpt-test", api_key=key, base_url=server.openai_base_url, retry=FAST)


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def serve(*responses: dict[str, Any]) -> ScriptedHTTPServer:
    return ScriptedHTTPServer(list(responses), api_key=KEY, fragment=4)


@pytest.fixture
def text_reply() -> Iterator[dict[str, Any]]:
    yield {"content": [{"type": "text", "text": "Hello from the test server!"}]}


def test_text_streams_in_deltas_and_ends_with_the_whole_message(
    kind: str, text_reply: dict[str, Any]
) -> None:
    with serve(text_reply) as server:
        events = collect(make(kind, server), [user_text("hi")], system="be brief")
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3
    assert "".join(deltas) == "Hello from the test server!"
    end = final(events)
    assert end.stop_reason == "end_turn"
    assert end.error is None
    assert end.message.role == "assistant"
    assert end.message.text() == "Hello from the test server!"
    assert not end.message.interrupted


def test_tool_call_input_arrives_in_fragments_and_is_parsed(kind: str) -> None:
    tool_input = {"path": "notes/todo.txt", "content": "buy milk\nand bread"}
    reply = {
        "content": [
            {"type": "text", "text": "Writing."},
            {"type": "tool_use", "name": "write", "input": tool_input},
        ]
    }
    with serve(reply) as server:
        events = collect(make(kind, server), [user_text("write it")], tools=[WRITE])
        body = server.requests[0].body
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [s.name for s in starts] == ["write"]
    assert len(fragments) > 3
    assert all(f.id == starts[0].id for f in fragments)
    assert ends == [ToolCallEnd(starts[0].id, "write", tool_input)]
    end = final(events)
    assert end.stop_reason == "tool_use"
    [tool_use] = end.message.tool_uses()
    assert (tool_use.id, tool_use.name, tool_use.input) == (starts[0].id, "write", tool_input)
    sent_names = [t.get("name") or t["function"]["name"] for t in body["tools"]]
    assert sent_names == ["write"]


def test_two_tool_calls_in_one_message(kind: str) -> None:
    reply = {
        "content": [
            {"type": "tool_use", "name": "read", "input": {"path": "a.txt"}},
            {"type": "tool_use", "name": "read", "input": {"path": "b.txt"}},
        ]
    }
    with serve(reply) as server:
        events = collect(make(kind, server), [user_text("read both")], tools=[WRITE])
    uses = final(events).message.tool_uses()
    assert [u.input for u in uses] == [{"path": "a.txt"}, {"path": "b.txt"}]
    assert len({u.id for u in uses}) == 2
    assert [e.input for e in events if isinstance(e, ToolCallEnd)] == [
        {"path": "a.txt"},
        {"path": "b.txt"},
    ]


def test_usage_is_captured(kind: str) -> None:
    usage = {
        "input_tokens": 120,
        "output_tokens": 42,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 0,
    }
    reply = {"content": [{"type": "text", "text": "ok"}], "usage": usage}
    with serve(reply) as server:
        end = final(collect(make(kind, server), [user_text("hi")]))
    assert end.usage == Usage(input_tokens=120, output_tokens=42, cache_read_tokens=1000)


def test_anthropic_usage_includes_cache_writes() -> None:
    usage = {
        "input_tokens": 5,
        "output_tokens": 7,
        "cache_read_tokens": 11,
        "cache_write_tokens": 13,
    }
    with serve({"content": [{"type": "text", "text": "ok"}], "usage": usage}) as server:
        end = final(collect(make("anthropic", server), [user_text("hi")]))
    assert end.usage == Usage(
        input_tokens=5, output_tokens=7, cache_read_tokens=11, cache_write_tokens=13
    )


def test_429_then_success_is_retried_and_the_retry_is_reported(
    kind: str, text_reply: dict[str, Any]
) -> None:
    with serve({"error": {"status": 429}}, text_reply) as server:
        events = collect(make(kind, server), [user_text("hi")])
        assert len(server.requests) == 2
    retries = [e for e in events if isinstance(e, Retrying)]
    assert len(retries) == 1
    assert retries[0].attempt == 2 and retries[0].max_attempts == 3
    assert "429" in retries[0].reason
    assert final(events).message.text() == "Hello from the test server!"


def test_retry_after_header_sets_the_wait(kind: str, text_reply: dict[str, Any]) -> None:
    with serve({"error": {"status": 503, "retry_after": 0.2}}, text_reply) as server:
        events = collect(make(kind, server), [user_text("hi")])
    [retry] = [e for e in events if isinstance(e, Retrying)]
    assert retry.wait_seconds == pytest.approx(0.2)
    assert isinstance(events[-1], MessageEnd)


def test_500_three_times_gives_one_clear_error(kind: str) -> None:
    failures = [{"error": {"status": 500, "message": "boom"}}] * 3
    with serve(*failures) as server:
        provider = make(kind, server)
        seen: list[Any] = []
        with pytest.raises(ProviderError) as caught:
            seen.extend(collect(provider, [user_text("hi")]))
        assert len(server.requests) == 3
    message = str(caught.value)
    assert caught.value.status == 500
    assert provider.name in message
    assert "after 3 attempts" in message and "500" in message
    assert "\n" not in message


def test_dropped_stream_returns_the_partial_message_marked_interrupted(kind: str) -> None:
    reply = {
        "content": [{"type": "text", "text": "This answer will be cut in the middle."}],
        "drop_after": 3,
    }
    with serve(reply) as server:
        events = collect(make(kind, server), [user_text("hi")])
        assert len(server.requests) == 1
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    end = final(events)
    assert streamed == "This answer "
    assert end.stop_reason == "interrupted"
    assert end.message.interrupted is True
    assert end.message.text() == "This answer "
    assert end.error and "cut off" in end.error


def test_dropped_stream_inside_a_tool_call_keeps_only_finished_blocks(kind: str) -> None:
    reply = {
        "content": [
            {"type": "text", "text": "Hi"},
            {"type": "tool_use", "name": "write", "input": {"path": "long/path.txt"}},
        ],
        "drop_after": 3,
    }
    with serve(reply) as server:
        end = final(collect(make(kind, server), [user_text("hi")], tools=[WRITE]))
    assert end.message.interrupted is True
    assert end.message.text() == "Hi"
    assert end.message.tool_uses() == []


def test_drop_before_any_output_is_retried(kind: str, text_reply: dict[str, Any]) -> None:
    with serve(
        {"content": [{"type": "text", "text": "lost"}], "drop_after": 0}, text_reply
    ) as server:
        events = collect(make(kind, server), [user_text("hi")])
    assert any(isinstance(e, Retrying) for e in events)
    assert final(events).message.text() == "Hello from the test server!"


def test_invalid_key_gives_a_clear_error_without_the_key(
    kind: str, text_reply: dict[str, Any]
) -> None:
    wrong = "sk-wrong-SECRET-9f8e7d6c5b4a"
    with serve(text_reply) as server:
        provider = make(kind, server, key=wrong)
        with pytest.raises(ProviderError) as caught:
            collect(provider, [user_text("hi")])
        assert len(server.requests) == 1
    message = str(caught.value)
    assert caught.value.status == 401
    assert "401" in message and "API key" in message
    assert ("ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY") in message
    assert wrong not in message and "SECRET" not in message
    assert wrong not in repr(caught.value.args) and wrong not in repr(provider)


def test_unknown_model_404_names_the_model(kind: str) -> None:
    with serve({"error": {"status": 404, "message": "model not found"}}) as server:
        with pytest.raises(ProviderError) as caught:
            collect(make(kind, server), [user_text("hi")])
        assert len(server.requests) == 1
    assert caught.value.status == 404
    assert "-test'" in str(caught.value) and "404" in str(caught.value)


def test_bad_request_is_not_retried_and_quotes_the_server(kind: str) -> None:
    with serve({"error": {"status": 400, "message": "messages: field required"}}) as server:
        with pytest.raises(ProviderError, match="messages: field required") as caught:
            collect(make(kind, server), [user_text("hi")])
        assert len(server.requests) == 1
    assert caught.value.status == 400


def test_unreachable_server_fails_clearly_after_retries(kind: str) -> None:
    with serve() as server:
        provider = make(kind, server)
    # The server is closed now: connections are refused.
    with pytest.raises(ProviderError, match="after 3 attempts") as caught:
        collect(provider, [user_text("hi")])
    assert "failed" in str(caught.value)


def test_missing_key_names_the_variable_to_set(kind: str) -> None:
    with pytest.raises(ProviderError, match="MY_KEY_VAR is not set"):
        if kind == "anthropic":
            AnthropicProvider("claude-test", key_env="MY_KEY_VAR")
        else:
            OpenAIProvider("gpt-test", key_env="MY_KEY_VAR")


def test_a_consumer_can_stop_midway_and_call_again(kind: str, text_reply: dict[str, Any]) -> None:
    async def first_delta_then_stop(provider: Provider) -> str:
        stream = provider.stream("", [user_text("hi")], [])
        async for event in stream:
            if isinstance(event, TextDelta):
                await stream.aclose()  # type: ignore[attr-defined]
                return event.text
        return ""

    with serve(text_reply, text_reply) as server:
        provider = make(kind, server)
        assert asyncio.run(first_delta_then_stop(provider)) == "Hell"
        assert (
            final(collect(provider, [user_text("again")])).message.text()
            == "Hello from the test server!"
        )
