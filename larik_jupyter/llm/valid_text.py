"""Text from a model or a tool made valid UTF-8 before it is stored or sent.

A model can stream a lone surrogate (`"\\ud800"` in a JSON string decodes to one), and a
tool can hand back one (a file's undecodable bytes kept as surrogates); UTF-8 cannot hold
either, so the session store, the debug trace, the kernel's messages and the provider's
request would all fail on it. Each lone surrogate becomes U+FFFD (the replacement
character); a high and low surrogate side by side become the character they encode. A JSON
integer past 64 bits (a model may send `-9223372036854775809` as a tool's argument) becomes the
float a JSON reader makes of it (past a float's range, its digits), as the session store's
encoder holds no larger integer.
"""

from __future__ import annotations

from typing import Any

from larik_jupyter.llm import events as ev
from larik_jupyter.llm.messages import Message


def valid_text(text: str) -> str:
    """`text` as valid UTF-8 can hold it (the same object when it already is)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_json(value: Any) -> Any:
    """A JSON-like value with every string (keys too) made valid, and integers kept within 64
    bits; the same object when nothing needed it."""
    if isinstance(value, str):
        return valid_text(value)
    if type(value) is int and not -(1 << 63) <= value < 1 << 64:
        return float(value) if abs(value) < 1 << 1023 else str(value)
    if isinstance(value, dict):
        items = [(valid_json(k), valid_json(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        cleaned = [valid_json(item) for item in value]
        if all(a is b for a, b in zip(cleaned, value, strict=True)):
            return value
        return cleaned
    return value


def valid_message(message: Message) -> Message:
    """`message` with all its text valid (the same object when it already was)."""
    dumped = message.model_dump()
    cleaned = valid_json(dumped)
    return message if cleaned is dumped else Message.model_validate(cleaned)


def valid_event(event: ev.StreamEvent) -> ev.StreamEvent:
    """A provider's stream event with the model's text, thinking and tool input made valid."""
    if isinstance(event, ev.TextDelta) and (text := valid_text(event.text)) is not event.text:
        return ev.TextDelta(text)
    if isinstance(event, ev.ThinkingDelta) and (thinking := valid_text(event.thinking)) is not event.thinking:
        return ev.ThinkingDelta(thinking, event.signature)
    if isinstance(event, ev.ToolCallEnd) and (data := valid_json(event.input)) is not event.input:
        return ev.ToolCallEnd(event.id, event.name, data)
    if isinstance(event, ev.MessageEnd) and (message := valid_message(event.message)) is not event.message:
        return ev.MessageEnd(message, event.stop_reason, event.usage, event.error)
    return event
