"""The OpenAI chat completions API as the test server speaks it (`POST /v1/chat/completions`).

Thinking blocks are sent as `reasoning_content` deltas, the way vLLM and other
OpenAI-compatible servers stream reasoning.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from larik_jupyter.llm.script import (
    ScriptReply,
    ScriptText,
    ScriptThinking,
    ScriptToolUse,
    new_tool_id,
)
from larik_jupyter.testing.wire import Chunk, cut_input, pieces, sse

_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
_ERROR_TYPES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body of an error response."""
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _usage(reply: ScriptReply) -> dict[str, Any]:
    u = reply.usage
    prompt = u.input_tokens + u.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
    }


def _tool_calls(reply: ScriptReply) -> list[dict[str, Any]]:
    return [
        {
            "id": b.id or new_tool_id("call_"),
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.input)},
        }
        for b in reply.content
        if isinstance(b, ScriptToolUse)
    ]


def _text(reply: ScriptReply, kind: type[ScriptText] | type[ScriptThinking]) -> str:
    return "".join(
        b.text if isinstance(b, ScriptText) else b.thinking
        for b in reply.content
        if isinstance(b, kind)
    )


def full_response(reply: ScriptReply, request: dict[str, Any]) -> dict[str, Any]:
    """The non-streaming response body."""
    message: dict[str, Any] = {"role": "assistant", "content": _text(reply, ScriptText) or None}
    if calls := _tool_calls(reply):
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-" + secrets.token_hex(12),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": _usage(reply),
    }


def _finish(reply: ScriptReply) -> str:
    reason = reply.final_stop_reason()
    return _FINISH.get(reason, reason)


def stream_events(reply: ScriptReply, request: dict[str, Any], fragment: int) -> list[Chunk]:
    """The server-sent chunks of a streamed response; text and arguments arrive in `fragment`-sized deltas."""
    base = {
        "id": "chatcmpl-" + secrets.token_hex(12),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.get("model", ""),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, *, output: bool = True) -> Chunk:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse(base | {"choices": [choice]}, delta=output)

    chunks = [chunk({"role": "assistant", "content": ""}, output=False)]
    chunks += [
        chunk({"reasoning_content": p}) for p in pieces(_text(reply, ScriptThinking), fragment)
    ]
    chunks += [chunk({"content": p}) for p in pieces(_text(reply, ScriptText), fragment)]
    calls = _tool_calls(reply)
    for index, call in enumerate(calls):
        function = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call["id"], "type": "function", "function": function}
                    ]
                }
            )
        )
        arguments = cut_input(reply, call["function"]["arguments"], last=index == len(calls) - 1)
        for p in pieces(arguments, fragment):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}))
    chunks.append(chunk({}, _finish(reply), output=False))
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append(sse(base | {"choices": [], "usage": _usage(reply)}))
    chunks.append(sse("[DONE]"))
    return chunks
