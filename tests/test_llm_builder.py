"""Assembling the final message from stream events."""

from __future__ import annotations

from larik_jupyter.llm.builder import MessageBuilder, parse_tool_input
from larik_jupyter.llm.events import (
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
)
from larik_jupyter.llm.messages import TextBlock, ThinkingBlock, ToolUseBlock


def test_blocks_keep_their_order_and_signatures_close_thinking_blocks() -> None:
    builder = MessageBuilder()
    events: list[StreamEvent] = [
        ThinkingDelta(thinking="first "),
        ThinkingDelta(thinking="thought"),
        ThinkingDelta(signature="s1"),
        ThinkingDelta(thinking="second"),
        ThinkingDelta(signature="s2"),
        TextDelta("Hel"),
        TextDelta("lo"),
        ToolCallStart("t1", "read"),
        ToolCallDelta("t1", '{"path": '),
        ToolCallDelta("t1", '"a"}'),
    ]
    for event in events:
        builder.add(event)
    end = builder.end_tool("t1")
    builder.add(ToolCallStart("t2", "read"))
    builder.add(ToolCallDelta("t2", '{"pa'))
    assert end.input == {"path": "a"}
    assert builder.open_tools() == ["t2"]
    cut = builder.message(interrupted=True)
    assert cut.interrupted is True
    assert cut.content == [
        ThinkingBlock(thinking="first thought", signature="s1"),
        ThinkingBlock(thinking="second", signature="s2"),
        TextBlock(text="Hello"),
        ToolUseBlock(id="t1", name="read", input={"path": "a"}),
    ]


def test_tool_input_that_is_not_a_json_object_is_kept_raw() -> None:
    assert parse_tool_input("") == {}
    assert parse_tool_input('{"a": 1}') == {"a": 1}
    assert parse_tool_input('{"a": ') == {"_raw_arguments": '{"a": '}
    assert parse_tool_input("[1]") == {"_raw_arguments": "[1]"}
