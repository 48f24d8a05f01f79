"""The messages of `larik.bridge`, declared once: the kernel's requests to the page that shows a
notebook (each a discriminated `op`, each an `Op[R]` declaring the reply `R` it gets), the
page's `hello` and replies (`read`, `changed`, `shown`, or `refused`), and the error either side
sends back for a message it cannot read, with the codes of a refusal (`RefusalCode`). The
page's TypeScript types and its check of incoming requests (`labextension/src/protocol.ts`) are
generated from these models (`python -m larik_jupyter.bridge_protocol >
labextension/src/protocol.ts`; a test keeps the file equal to the output). Replies stay these
typed structs all the way to the tool that asked. Imports only the TypeScript generator of its
layer, so `tools` and `checkpoint` build requests with it.
"""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, get_args

import msgspec

from larik_jupyter.typescript import declarations, module

Json = dict[str, Any]
R = TypeVar("R", bound="Reply")


class RefusalCode(enum.Enum):
    """Why the page did not apply a request (a reply's `code`), or could not read a message."""

    NOT_OPEN = "not_open"  # the page does not show the notebook: the kernel edits the file
    MISSING_CELL = "missing_cell"  # no cell has the id the request names
    STALE = "stale"  # the cell or the cell order changed since the kernel read them
    NO_MATCH = "no_match"  # a patch's old_string is not in the cell exactly once
    REFUSED = "refused"  # the request cannot be applied (say, outputs for a markdown cell)
    ERROR = "error"  # applying it failed in the page
    MALFORMED = "malformed"  # the message does not match its declaration


class PageNotebook(msgspec.Struct):
    """The document as a `get` reply sends it: its cells (with `cell_ids`, only those) and the
    rest of the notebook's JSON."""

    cells: list[Json]
    metadata: Json
    nbformat: int
    nbformat_minor: int

    def head(self) -> Json:
        """The notebook's JSON without its cells."""
        return {"metadata": self.metadata, "nbformat": self.nbformat, "nbformat_minor": self.nbformat_minor}


class Reply(msgspec.Struct, tag_field="type", kw_only=True):
    """The page's answer to request `id`; each request declares which reply it gets (`Op[R]`),
    or a `RefusedReply`. With the cells a reply sends come their fingerprints (`hashes`, by id),
    and with the order of all cell ids its fingerprint (`order_hash`)."""

    id: int


class ReadReply(Reply, tag="read"):
    """A `get`'s answer: the document (with the request's `cell_ids`, only those cells)."""

    notebook: PageNotebook
    hashes: dict[str, str]
    order: list[str]
    order_hash: str


class ChangedReply(Reply, tag="changed"):
    """A change's answer: the cells it changed or created (`cell_ids`), as the document holds
    them now, and the cell order after it."""

    cell_ids: list[str]
    cells: list[Json]
    hashes: dict[str, str]
    order: list[str]
    order_hash: str


class ShownReply(Reply, tag="shown"):
    """The answer to a request that changes the view, not the document (`show_outputs`,
    `focus`): the cell it showed."""

    cell_ids: list[str]


class RefusedReply(Reply, tag="refused", omit_defaults=True):
    """A request the page did not apply: why (`code`, `error`), and what it holds now of the
    cells the request named (`missing_cell`: the order; `stale`: the cell and the order)."""

    code: RefusalCode
    error: str
    cells: list[Json] = []
    hashes: dict[str, str] = {}
    order: list[str] | None = None
    order_hash: str | None = None


class Expect(msgspec.Struct, omit_defaults=True):
    """What the kernel read of the cell it edits: the edit lands only on that state."""

    hash: str | None = None
    order: str | None = None


class Op(msgspec.Struct, Generic[R], tag_field="op", kw_only=True):
    """A request whose answer is an `R` (or a `RefusedReply`). Its envelope: its id (0: no reply wanted), the notebook's path on the page, and
    the page that applies it (`to`, the `page` its hello named; every other page showing the
    kernel ignores it, "": whichever page receives it); every field is sent (null where unset),
    except an execution count not given. A request may reach its page twice (sent again to
    another page when the first did not answer): each op checks the document's state and
    changes nothing the second time."""

    type: Literal["request"] = "request"
    id: int = 0
    path: str = ""
    to: str = ""


class Get(Op[ReadReply], tag="get"):
    """The document (with `cell_ids`, only those cells)."""

    cell_ids: list[str] | None = None


class Insert(Op[ChangedReply], tag="insert"):
    """`cell` inserted after the cell `after` (None: first)."""

    after: str | None
    cell: Json
    expect: Expect | None = None


class Replace(Op[ChangedReply], tag="replace"):
    """The cell `cell_id` becomes `cell` (its id kept)."""

    cell_id: str
    cell: Json
    expect: Expect | None = None


class Patch(Op[ChangedReply], tag="patch"):
    """`old_string`, found exactly once in the cell's source, replaced by `new_string`."""

    cell_id: str
    old_string: str
    new_string: str
    metadata: Json | None = None
    expect: Expect | None = None


class Delete(Op[ChangedReply], tag="delete"):
    cell_id: str
    expect: Expect | None = None


class SetOutputs(Op[ChangedReply], tag="set_outputs"):
    """A code cell's outputs (and, when given, its execution count) as a run left them."""

    cell_id: str
    outputs: list[Json] = []
    execution_count: int | None | msgspec.UnsetType = msgspec.UNSET
    metadata: Json | None = None


class ShowOutputs(Op[ShownReply], tag="show_outputs"):
    """A running turn's outputs shown in the cell's view (not the document)."""

    cell_id: str
    outputs: list[Json] = []


class SetMetadata(Op[ChangedReply], tag="set_metadata"):
    cell_id: str
    metadata: Json


class Focus(Op[ShownReply], tag="focus"):
    """The cell selected and scrolled into view (a `/check` problem the user clicked)."""

    cell_id: str


class Restore(Op[ChangedReply], tag="restore"):
    """The cells a turn created (`delete`) go, and those it changed (`cells`) are put back, so
    that the document's cells stand in `order` (worked out by the kernel,
    `checkpoint/cells.py` `placed_order`, from the order `expect` fingerprints)."""

    delete: list[str] = []
    cells: list[Json] = []
    order: list[str] = []
    expect: Expect | None = None


CellChange = Insert | Replace | Patch | Delete | SetOutputs
"""The requests a tool sends to change a cell (checkpointed first)."""

Request = Get | Insert | Replace | Patch | Delete | SetOutputs | ShowOutputs | SetMetadata | Focus | Restore


class Hello(msgspec.Struct, tag_field="type", tag="hello", omit_defaults=True):
    """A page saying which notebook it shows (the kernel's own hello carries no path), which
    page it is (`page`: an id the browser tab keeps across its reloads) and which connection to
    the kernel it runs cells through (`client`: the `session` of its messages' headers)."""

    path: str | None = None
    root: str | None = None
    page: str | None = None
    client: str | None = None


class Bye(msgspec.Struct, tag_field="type", tag="bye"):
    """A page no longer showing the kernel's notebook (its panel closed, the tab going away):
    the kernel's requests go to another page. Sent, not a comm close, since the comm the kernel
    opened is shared by every page."""

    page: str


class ErrorReply(msgspec.Struct, tag_field="type", tag="error", kw_only=True):
    """The answer to a message its receiver cannot read (`code` "malformed")."""

    code: RefusalCode = RefusalCode.MALFORMED
    error: str
    id: int = 0


Answer = ReadReply | ChangedReply | ShownReply | RefusedReply
"""A page's reply to a request."""

PageMessage = Hello | Bye | ReadReply | ChangedReply | ShownReply | RefusedReply | ErrorReply
"""What the page sends the kernel."""


def _declared_reply(op: type[Op[Any]]) -> type[Reply]:
    """The reply `op` declares (the `R` of its `Op[R]`)."""
    (reply,) = get_args(op.__orig_bases__[0])  # type: ignore[attr-defined]
    declared: type[Reply] = reply
    return declared


REPLIES: dict[str, type[Reply]] = {
    str(op.__struct_config__.tag): _declared_reply(op) for op in get_args(Request)
}
"""Each request's `op` and the reply it gets, when the page applies it."""


def reply_type(op: Op[R]) -> type[R]:
    """The reply `op` gets when the page applies it."""
    reply: type[R] = REPLIES[str(op.__struct_config__.tag)]  # type: ignore[assignment]
    return reply


def request_data(op: Op[Any], request_id: int, path: str, to: str = "") -> Json:
    """`op` as the comm sends it, with its id, the page's name of the notebook and the page
    that applies it."""
    data: Json = msgspec.to_builtins(msgspec.structs.replace(op, id=request_id, path=path, to=to))
    return data


def read_request(data: Any) -> Request | ErrorReply:
    """A request from its comm data, or the error to send back for a malformed one."""
    try:
        return msgspec.convert(data, Request)
    except msgspec.ValidationError as exc:
        return ErrorReply(error=f"malformed request: {exc}", id=_id(data))


@dataclass(frozen=True)
class Unreadable:
    """A page's message that does not match its declaration: `reply` is the error to send back."""

    reply: ErrorReply


def read_page_message(data: Any) -> Hello | Bye | Answer | ErrorReply | Unreadable:
    """A page's message, or what to send back for a malformed one."""
    try:
        return msgspec.convert(data, PageMessage)
    except msgspec.ValidationError as exc:
        return Unreadable(ErrorReply(error=f"malformed message: {exc}", id=_id(data)))


def _id(data: Any) -> int:
    value = data["id"] if isinstance(data, dict) and "id" in data else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- TypeScript ------------------------------------------------------------------------------


def _json_types(schema: dict[str, Any], components: dict[str, Any]) -> list[str]:
    """The JSON types (as `typeof`/`Array.isArray` name them) a field's value may have."""
    if "$ref" in schema:
        schema = components[str(schema["$ref"]).rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        return sorted({kind for inner in schema["anyOf"] for kind in _json_types(inner, components)})
    if "enum" in schema or "const" in schema:
        return ["string"]
    if "type" not in schema:  # any JSON value
        return ["array", "boolean", "null", "number", "object", "string"]
    kind = str(schema["type"])
    return [{"integer": "number"}.get(kind, kind)]


def typescript() -> str:
    """`labextension/src/protocol.ts`: an interface per message, the refusal codes, and the
    fields each request must carry (name → the JSON types it may have), for the page's check."""
    (request, page), components = msgspec.json.schema_components([Request, PageMessage])
    out = declarations(components, {RefusalCode.__name__: RefusalCode})
    names = [str(s["$ref"]).rsplit("/", 1)[-1] for s in request["anyOf"]]
    out += ["", f"export type Request = {' | '.join(names)};"]
    out += [f"export type PageMessage = {' | '.join(str(s['$ref']).rsplit('/', 1)[-1] for s in page['anyOf'])};"]
    out += ["", "/** The reply each request gets when the page applies it (else a `RefusedReply`). */"]
    out += ["export interface Replies {"]
    out += [f"  {op}: {reply.__name__};" for op, reply in REPLIES.items()]
    out += ["}", "", "/** The `type` of the reply each request gets. */"]
    out += ["export const REPLY_TYPES: { [Op in keyof Replies]: Replies[Op]['type'] } = {"]
    out += [f"  {op}: {json.dumps(reply.__struct_config__.tag)}," for op, reply in REPLIES.items()]
    out += ["};"]
    out += ["", "/** Each request's fields: the JSON types each may have, and whether it must be there. */"]
    out += ["export const FIELDS: { [op: string]: { [field: string]: [string[], boolean] } } = {"]
    for name in names:
        schema = components[name]
        required = set(schema.get("required", [])) | {"id", "path"}
        fields = {
            field: [_json_types(inner, components), field in required]
            for field, inner in schema["properties"].items()
        }
        out.append(f"  {schema['properties']['op']['enum'][0]}: {json.dumps(fields)},")
    out.append("};")
    return module("python -m larik_jupyter.bridge_protocol", "larik_jupyter/bridge_protocol.py", out)


if __name__ == "__main__":
    sys.stdout.write(typescript())
