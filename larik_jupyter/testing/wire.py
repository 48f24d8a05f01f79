"""What the protocol encoders of the test server share: SSE framing and fragmenting."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from larik_jupyter.llm.script import ScriptReply


@dataclass(frozen=True)
class Chunk:
    """One server-sent event; `delta` marks events that carry model output."""

    data: bytes
    delta: bool = False


def sse(payload: dict[str, Any] | str, event: str | None = None, *, delta: bool = False) -> Chunk:
    """Frame `payload` (JSON-encoded unless a string) as a server-sent event."""
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return Chunk(f"{head}data: {data}\n\n".encode(), delta)


def pieces(text: str, size: int) -> list[str]:
    """`text` cut into pieces of at most `size` characters (none for empty text)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def cut_input(reply: ScriptReply, raw: str, *, last: bool) -> str:
    """A tool call's JSON input as streamed: the last call of a reply that stops at the output
    limit (`max_tokens`) is cut halfway, as the real APIs cut it."""
    return raw[: len(raw) // 2] if last and reply.final_stop_reason() == "max_tokens" else raw
