"""The MCP link between `larik-jupyter mcp` (the server process, `frontends/mcp/link.py`) and the
kernel (`notebook/outside.py`), declared once: each message that crosses it a msgspec struct
both ends encode and decode, and the one line of code that carries a message into the kernel.

- `Call`: an outside agent's tool call, sent as a silent execute request that awaits
  `call(raw)` in `KERNEL_END`; its `Answer` (an MCP tool result) is read back with the user
  expression `take(token)`.
- `Ask`: what the kernel asks the client's user (MCP elicitation), published as display data of
  type `ASK_TYPE`; its `AskAnswer` comes back as a comm opened to `ANSWER_TARGET`.
- `End`: the connection ended (`end(raw)`): its session closes.

The server process never imports the notebook layer (it runs no IPython), so the kernel's end
is named here, `KERNEL_END`, and `tests/test_import_layers.py` checks that it exists, takes these
messages and lies where the server may reach it. Imports only msgspec.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import msgspec

# The module each message is run through in the kernel, and its functions.
KERNEL_END = "larik_jupyter.frontends.mcp.kernel_end"
KERNEL_FUNCTIONS = ("call", "take", "end")
# The MIME type of an ask in the kernel's display data, and the comm target its answer opens.
ASK_TYPE = "application/vnd.larik.ask+json"
ANSWER_TARGET = "larik.outside.answer"

T = TypeVar("T")


class Call(msgspec.Struct, frozen=True):
    """One call of an outside agent: `key` names its connection (one session each), `client`
    the client (`clientInfo`), `notebook` the notebook it works in (None: the kernel's own);
    `elicit`: the client can be asked (MCP elicitation); `token` names its answer."""

    token: str
    key: str
    client: str
    tool: str
    arguments: dict[str, Any]
    notebook: str | None = None
    elicit: bool = False


class End(msgspec.Struct, frozen=True):
    """The connection `key` ended."""

    key: str


class Text(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    """Text content of an MCP tool result."""

    text: str


class Image(msgspec.Struct, frozen=True, tag="image", tag_field="type", rename={"mime_type": "mimeType"}):
    """An image of an MCP tool result: base64 data and its type."""

    data: str
    mime_type: str = "image/png"


class Answer(msgspec.Struct, frozen=True, rename={"is_error": "isError"}):
    """A call's answer: an MCP tool result, as the egress door let it out."""

    content: list[Text | Image]
    is_error: bool


class Ask(msgspec.Struct, frozen=True):
    """An approval put to the client's user: its `question`, what the call would do (`detail`)
    and what is asked (`ask`: `allow` a call, or `keep` what it did)."""

    id: str
    question: str
    detail: str
    ask: str = "allow"


class AskAnswer(msgspec.Struct, frozen=True):
    """The user's answer to ask `id` (`decision` None: nobody answered) and their reason."""

    id: str
    decision: Literal["allow", "deny"] | None
    message: str = ""


class VariableReportArguments(msgspec.Struct, frozen=True):
    """`variable_report`'s arguments: `call`, only that call (1-based), else all."""

    call: Annotated[int, msgspec.Meta(ge=1)] | msgspec.UnsetType = msgspec.UNSET


class UndoArguments(msgspec.Struct, frozen=True):
    """`undo`'s arguments: down to call `to` (else the newest), `force` or `skip_changed`."""

    to: Annotated[int, msgspec.Meta(ge=1)] | msgspec.UnsetType = msgspec.UNSET
    force: bool = False
    skip_changed: bool = False


class NoArguments(msgspec.Struct, frozen=True):
    """A view that takes no arguments (`undo_list`, `transcript`)."""


# The read-only views of an outside agent's own session, and `undo`, with their arguments.
VIEWS: dict[str, type[msgspec.Struct]] = {
    "variable_report": VariableReportArguments,
    "undo_list": NoArguments,
    "transcript": NoArguments,
    "undo": UndoArguments,
}


def input_schema(arguments: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of a view's arguments, as an MCP tool's `inputSchema`."""
    (_,), components = msgspec.json.schema_components([arguments])
    schema = components[arguments.__name__]
    out: dict[str, Any] = {"type": "object", "properties": schema["properties"]}
    return {**out, "required": schema["required"]} if schema["required"] else out


def _entry(function: str) -> str:
    return f"__import__({KERNEL_END!r}, fromlist=[{function!r}]).{function}"


def call_code(call: Call) -> str:
    """The line the kernel runs for `call` (its answer kept for `answer_expression`)."""
    return f"await {_entry('call')}({msgspec.json.encode(call)!r})"


def answer_expression(token: str) -> str:
    """The user expression that hands over the answer of call `token` (its JSON text)."""
    return f"{_entry('take')}({token!r})"


def end_code(end: End) -> str:
    """The line the kernel runs when a connection ends."""
    return f"{_entry('end')}({msgspec.json.encode(end)!r})"


def decode(raw: bytes | str, kind: type[T]) -> T:
    """`raw` JSON read as `kind`; a message that is not one says so in one sentence."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.DecodeError as exc:  # also a ValidationError
        raise ValueError(f"The MCP link sent a {kind.__name__} that does not read as one ({exc}).") from None
