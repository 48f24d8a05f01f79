"""The Anthropic Messages API as the test server speaks it (`POST /v1/messages`)."""

from __future__ import annotations

import json
import secrets
from typing import Any

from larik_jupyter.llm.script import (
    ScriptRedactedThinking,
    ScriptReply,
    ScriptText,
    ScriptThinking,
    ScriptToolUse,
    new_tool_id,
)
from larik_jupyter.testing.wire import Chunk, cut_input, pieces, sse

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body of an error response."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _usage(reply: ScriptReply) -> dict[str, int]:
    u = reply.usage
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
    }


def _blocks(reply: ScriptReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for b in reply.content:
        if isinstance(b, ScriptText):
            blocks.append({"type": "text", "text": b.text})
        elif isinstance(b, ScriptThinking):
            blocks.append(
                {"type": "thinking", "thinking": b.thinking, "signature": b.signature or ""}
            )
        elif isinstance(b, ScriptRedactedThinking):
            blocks.append({"type": "redacted_thinking", "data": b.data})
        elif isinstance(b, ScriptToolUse):
            blocks.append(
                {"type": "tool_use", "id": b.id or new_tool_id(), "name": b.name, "input": b.input}
            )
    return blocks


def full_response(reply: ScriptReply, request: dict[str, Any]) -> dict[str, Any]:
    """The non-streaming response body."""
    return {
        "id": "msg_" + secrets.token_hex(12),
        "type": "message",
        "role": "assistant",
        "model": request.get("model", ""),
        "content": _blocks(reply),
        "stop_reason": reply.final_stop_reason(),
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def stream_events(reply: ScriptReply, request: dict[str, Any], fragment: int) -> list[Chunk]:
    """The server-sent events of a streamed response; text and JSON arrive in `fragment`-sized deltas."""
    head = full_response(reply, request) | {"content": [], "stop_reason": None}
    head["usage"] = _usage(reply) | {"output_tokens": 1}
    chunks = [sse({"type": "message_start", "message": head}, "message_start")]
    blocks = _blocks(reply)
    for index, block in enumerate(blocks):
        start = dict(block)
        deltas: list[dict[str, Any]] = []
        if block["type"] == "text":
            start["text"] = ""
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"], fragment)]
        elif block["type"] == "thinking":
            start |= {"thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in pieces(block["thinking"], fragment)
            ]
            if block["signature"]:
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "tool_use":
            start["input"] = {}
            raw = cut_input(reply, json.dumps(block["input"]), last=index == len(blocks) - 1)
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in pieces(raw, fragment)
            ]
        chunks.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        for d in deltas:
            chunks.append(
                sse(
                    {"type": "content_block_delta", "index": index, "delta": d},
                    "content_block_delta",
                    delta=True,
                )
            )
        chunks.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    chunks.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.final_stop_reason(), "stop_sequence": None},
                "usage": {"output_tokens": reply.usage.output_tokens},
            },
            "message_delta",
        )
    )
    chunks.append(sse({"type": "message_stop"}, "message_stop"))
    return chunks
