"""What a ledger line says of a request or an answer: whether its destination is local, the
ledger's name for each block, the bytes each part takes and the line itself."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlparse

import orjson

from larik_jupyter.egress.ledger import Part, RequestRecord, Withheld, now
from larik_jupyter.llm.messages import ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from larik_jupyter.llm.outside import PREFIX as OUTSIDE_PREFIX
from larik_jupyter.llm.provider import Destination

LOCAL_PROVIDERS = ("ollama", "openai-compatible")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


@functools.lru_cache(maxsize=64)
def is_local(destination: Destination) -> bool:
    """An `ollama:`/`openai-compatible:` server on this machine, or no server at all (the
    scripted model, whose requests never leave the process). An outside agent (`mcp:<client>`)
    never is: its model sees what it gets, and where that model runs larik cannot tell."""
    if destination.name.partition(":")[0] == OUTSIDE_PREFIX:
        return False
    if destination.base_url is None:
        return True
    host = urlparse(destination.base_url).hostname or ""
    return destination.name.partition(":")[0] in LOCAL_PROVIDERS and host in _LOCAL_HOSTS


def text_bytes(text: str) -> int:
    """The bytes `text` takes inside a JSON string of the request body."""
    return len(orjson.dumps(text)) - 2


# How the ledger names the part a call's result is: `result of call <id> (<tool>)`.
RESULT_OF_CALL = "result of call "


def where_of(block: Any, message: Message, names: dict[str, str]) -> str:
    """The ledger's name for the part a block is (`names`: each call's tool, by call id)."""
    if isinstance(block, ToolResultBlock):
        tool = names.get(block.tool_use_id)
        return f"{RESULT_OF_CALL}{block.tool_use_id}" + (f" ({tool})" if tool else "")
    if message.role == "assistant":
        return "the model's replies"
    if isinstance(block, TextBlock):
        if block.text.startswith("<notebook-context"):
            return "notebook context"
        if block.text.startswith("<notebook-data"):
            return "attachments"
        if block.text.startswith("<system-note>"):
            return "system notes"
        return "prompts" if message.is_prompt() else "earlier context"
    if isinstance(block, ImageBlock):
        return "images attached to prompts"
    return "earlier context"


def measure(block: Any, where: str) -> list[Part]:
    """The bytes `block` takes in the body, as parts named `where`."""
    if isinstance(block, TextBlock):
        return [Part(where, text_bytes(block.text))]
    if isinstance(block, ImageBlock):
        return [Part(where, len(str(block.source.get("data") or block.source.get("url") or "")))]
    if isinstance(block, ToolUseBlock):
        return [Part(where, len(orjson.dumps(block.input)))]
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return [Part(where, text_bytes(block.content))]
        return [p for item in block.content for p in measure(item, where)]
    text = getattr(block, "thinking", None)
    return [Part(where, text_bytes(text))] if isinstance(text, str) else []


def _merged(parts: list[Part]) -> list[Part]:
    """Parts of the same source added up, in first-seen order."""
    merged: dict[str, Part] = {}
    for part in parts:
        if part.source in merged:
            merged[part.source].bytes += part.bytes
        else:
            merged[part.source] = Part(part.source, part.bytes)
    return list(merged.values())


def ledger_line(
    destination: Destination, body: dict[str, Any], parts: list[Part], withheld: list[Withheld],
    turn: int | None, prompt: int | None, kind: str | None = None,
) -> RequestRecord:
    """The ledger line of `body` sent to `destination`: it is measured, and its `framing`
    part (appended to `parts`) is what the other parts do not cover."""
    total = len(orjson.dumps(body))
    parts.append(Part("framing", total - sum(p.bytes for p in parts)))
    return RequestRecord(
        time=now(), destination=destination.name, local=is_local(destination), bytes=total,
        parts=_merged(parts), withheld=withheld, turn=turn, prompt=prompt, kind=kind,
    )
