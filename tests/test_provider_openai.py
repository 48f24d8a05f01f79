"""OpenAI specifics: message conversion, reasoning deltas, local servers without a key."""

from __future__ import annotations

import json

from larik_jupyter.llm.events import ThinkingDelta
from larik_jupyter.llm.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from larik_jupyter.llm.openai_provider import OpenAIProvider
from larik_jupyter.testing import ScriptedHTTPServer, collect, final


def test_tool_use_and_results_become_tool_calls_and_tool_messages() -> None:
    history = [
        user_text("read a and b"),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(thinking="private", signature="sig"),
                TextBlock(text="Reading both."),
                ToolUseBlock(id="call_1", name="read", input={"path": "a"}),
                ToolUseBlock(id="call_2", name="read", input={"path": "b"}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultBlock(tool_use_id="call_1", content="A"),
                ToolResultBlock(tool_use_id="call_2", content="no such file", is_error=True),
                TextBlock(text="<system-note>b is missing</system-note>"),
            ],
        ),
    ]
    with ScriptedHTTPServer([{"content": [{"type": "text", "text": "done"}]}]) as server:
        llm = OpenAIProvider("gpt-test", api_key="k", base_url=server.openai_base_url)
        final(collect(llm, history, system="sys"))
        body = server.requests[0].body
    assert body["stream_options"] == {"include_usage": True}
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assistant = messages[2]
    assert assistant["content"] == "Reading both."
    assert [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant["tool_calls"]
    ] == [
        ("call_1", "read", {"path": "a"}),
        ("call_2", "read", {"path": "b"}),
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "A"}
    assert messages[4] == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "Error: no such file",
    }
    assert messages[5] == {"role": "user", "content": "<system-note>b is missing</system-note>"}
    assert "private" not in json.dumps(body)


def test_reasoning_deltas_become_an_unsigned_thinking_block() -> None:
    reply = {
        "content": [
            {"type": "thinking", "thinking": "Let me see."},
            {"type": "text", "text": "Yes."},
        ]
    }
    with ScriptedHTTPServer([reply]) as server:
        llm = OpenAIProvider(
            "qwen3", prefix="ollama", title="Ollama", key_env=None, base_url=server.openai_base_url
        )
        events = collect(llm, [user_text("?")])
    assert "".join(e.thinking for e in events if isinstance(e, ThinkingDelta)) == "Let me see."
    assert final(events).message.content == [
        ThinkingBlock(thinking="Let me see."),
        TextBlock(text="Yes."),
    ]
    assert llm.name == "ollama:qwen3"
