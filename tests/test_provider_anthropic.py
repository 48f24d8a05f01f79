"""Anthropic specifics: thinking blocks round-tripped with signatures, prompt caching."""

from __future__ import annotations

from larik_jupyter.llm.anthropic_provider import AnthropicProvider
from larik_jupyter.llm.events import ThinkingDelta
from larik_jupyter.llm.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    user_text,
)
from larik_jupyter.llm.provider import ToolSchema
from larik_jupyter.testing import ScriptedHTTPServer, collect, final

BASH = ToolSchema(
    "bash",
    "Run a shell command.",
    {"type": "object", "properties": {"command": {"type": "string"}}},
)


def provider(
    server: ScriptedHTTPServer, thinking_budget: int | None = None, model: str = "claude-sonnet-4-5"
) -> AnthropicProvider:
    return AnthropicProvider(
        model,
        api_key="k",
        base_url=server.anthropic_base_url,
        thinking_budget=thinking_budget,
    )


def test_thinking_is_kept_with_its_signature_and_sent_back_unchanged() -> None:
    first = {
        "content": [
            {
                "type": "thinking",
                "thinking": "The user wants the files listed.",
                "signature": "EqSig+abc/123==",
            },
            {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB"},
            {"type": "tool_use", "name": "bash", "input": {"command": "ls"}},
        ]
    }
    second = {"content": [{"type": "text", "text": "There are two files."}]}
    with ScriptedHTTPServer([first, second]) as server:
        llm = provider(server, thinking_budget=2048)
        events = collect(llm, [user_text("list files")], tools=[BASH])
        reply = final(events).message
        assert reply.content[0] == ThinkingBlock(
            thinking="The user wants the files listed.", signature="EqSig+abc/123=="
        )
        assert reply.content[1] == RedactedThinkingBlock(data="ENCRYPTED-BLOB")
        assert (
            "".join(e.thinking for e in events if isinstance(e, ThinkingDelta))
            == "The user wants the files listed."
        )
        [call] = reply.tool_uses()
        answer = Message(
            role="user", content=[ToolResultBlock(tool_use_id=call.id, content="a.txt\nb.txt")]
        )
        final(collect(llm, [user_text("list files"), reply, answer], tools=[BASH]))
        first_body, second_body = (r.body for r in server.requests)
    assert first_body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first_body["max_tokens"] > 2048
    sent = second_body["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"][0] == {
        "type": "thinking",
        "thinking": "The user wants the files listed.",
        "signature": "EqSig+abc/123==",
    }
    assert sent["content"][1] == {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB"}
    assert sent["content"][2] == {
        "type": "tool_use",
        "id": call.id,
        "name": "bash",
        "input": {"command": "ls"},
    }
    assert second_body["messages"][2]["content"][0]["tool_use_id"] == call.id


def test_system_prompt_and_the_last_user_messages_carry_cache_breakpoints() -> None:
    history = [
        user_text("first question"),
        Message(role="assistant", content=[TextBlock(text="first answer")]),
        user_text("second question"),
    ]
    with ScriptedHTTPServer([{"content": [{"type": "text", "text": "ok"}]}]) as server:
        final(collect(provider(server), history, system="You are helpful."))
        body = server.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}
    ]
    marked = [
        (i, j)
        for i, m in enumerate(body["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    # The newest user message (written for the next call) and the one before it (where the
    # previous call's request ended: read from the cache).
    assert marked == [(0, 0), (2, 0)]


def test_unsigned_thinking_from_an_interrupted_reply_is_not_sent_back() -> None:
    cut = Message(
        role="assistant",
        content=[ThinkingBlock(thinking="half a thought"), TextBlock(text="Par")],
        interrupted=True,
    )
    with ScriptedHTTPServer([{"content": [{"type": "text", "text": "ok"}]}]) as server:
        final(collect(provider(server), [user_text("q"), cut, user_text("go on")]))
        body = server.requests[0].body
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Par"}]
    assert "interrupted" not in str(body)


def test_key_is_sent_to_the_server_but_never_shown() -> None:
    with ScriptedHTTPServer(
        [{"content": [{"type": "text", "text": "ok"}]}], api_key="sk-ant-secret"
    ) as server:
        llm = AnthropicProvider(
            "claude-test", api_key="sk-ant-secret", base_url=server.anthropic_base_url
        )
        final(collect(llm, [user_text("hi")]))
    assert "sk-ant-secret" not in repr(llm)
    assert llm.name == "anthropic:claude-test"
