"""How a notebook file's JSON is laid out (indent, separators, key order, line endings,
escapes), read from the file itself, and values serialised the same way."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BOM = "\ufeff"
WHITESPACE = re.compile(r"[ \t\r\n]*")
DECODER = json.JSONDecoder()
_LINE_INDENT = re.compile(r"[ \t]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A \u escape of a character outside ASCII: the writer escaped everything non-ASCII.
_ESCAPED = re.compile(r"\\u(?!00[0-7])[0-9a-fA-F]{4}")


class Unspliceable(Exception):
    """The text cannot be walked as the JSON it parses to (duplicate keys, odd syntax)."""


@dataclass(frozen=True)
class Member:
    """One `"key": value` of an object: where it starts, where its value starts and ends."""

    key: str
    start: int
    key_end: int
    value_start: int
    end: int


@dataclass(frozen=True)
class Layout:
    """What `json.dumps` needs to write like the file: `indent` None is a one-line file."""

    newline: str = "\n"
    indent: str | None = " "
    item_sep: str = ","
    key_sep: str = ": "
    ensure_ascii: bool = False
    sort_keys: bool = True

    def dumps(self, value: Any, line_indent: str = "") -> str:
        """`value` as the file would hold it, on a line indented by `line_indent`."""
        text = json.dumps(
            value,
            indent=self.indent,
            separators=(self.item_sep, self.key_sep),
            ensure_ascii=self.ensure_ascii,
            sort_keys=self.sort_keys,
        )
        # A lone surrogate (the file held it as a \uXXXX escape) stays an escape: UTF-8 cannot
        # hold it.
        text = _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
        return text if self.indent is None else text.replace("\n", self.newline + line_indent)


def decode(raw: bytes) -> tuple[str, str]:
    """The byte-order mark (or "") and the text of a UTF-8 file."""
    text = raw.decode("utf-8")
    return (BOM, text[1:]) if text.startswith(BOM) else ("", text)


def line_indent(text: str, pos: int) -> str:
    """The indentation of the line `pos` is on."""
    start = text.rfind("\n", 0, pos) + 1
    found = _LINE_INDENT.match(text, start, pos)
    return found.group() if found else ""


def skip(text: str, pos: int) -> int:
    found = WHITESPACE.match(text, pos)
    return found.end() if found else pos


def value_end(text: str, pos: int) -> int:
    """Where the JSON value starting at `pos` ends."""
    try:
        return int(DECODER.raw_decode(text, pos)[1])
    except ValueError as exc:
        raise Unspliceable(str(exc)) from None


def _items(text: str, pos: int, close: str, item: Callable[[int], int]) -> int:
    """Walk the items of the container whose opening bracket is at `pos`, `item(start)` reading
    each and returning where it ends; the position of the closing bracket `close`."""
    pos = skip(text, pos + 1)
    if text[pos:pos + 1] == close:
        return pos
    while True:
        pos = skip(text, item(pos))
        if text[pos:pos + 1] == ",":
            pos = skip(text, pos + 1)
        elif text[pos:pos + 1] == close:
            return pos
        else:
            raise Unspliceable(f"expected ',' or {close!r} at {pos}")


def members(text: str, pos: int) -> tuple[list[Member], int]:
    """The members of the object at `pos` (its `{`) and the position of its `}`."""
    out: list[Member] = []

    def member(start: int) -> int:
        if text[start:start + 1] != '"':
            raise Unspliceable(f"expected a key at {start}")
        key_end = value_end(text, start)
        colon = skip(text, key_end)
        if text[colon:colon + 1] != ":":
            raise Unspliceable(f"expected ':' at {colon}")
        value = skip(text, colon + 1)
        end = value_end(text, value)
        out.append(Member(json.loads(text[start:key_end]), start, key_end, value, end))
        return end

    return out, _items(text, pos, "}", member)


def elements(text: str, pos: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of the elements of the array at `pos` (its `[`) and the position of its `]`."""
    out: list[tuple[int, int]] = []

    def element(start: int) -> int:
        out.append((start, value_end(text, start)))
        return out[-1][1]

    return out, _items(text, pos, "]", element)


def detect(text: str, data: dict[str, Any]) -> Layout:
    """The layout of a notebook's `text` (which parses to `data`); nbformat's where the text
    does not say (a file with a single key, say)."""
    start = skip(text, 0)
    found, _ = members(text, start)
    newline = "\r\n" if "\r\n" in text else "\n"
    indent: str | None = None
    item_sep, key_sep = ",", ": "
    if found:
        lead = text[start + 1:found[0].start]
        if "\n" in lead:
            indent = lead.rsplit("\n", 1)[1][len(line_indent(text, start)):]
        key_sep = text[found[0].key_end:found[0].value_start]
        if len(found) > 1:
            gap = text[found[0].end:found[1].start]
            item_sep = gap.split("\n", 1)[0].rstrip("\r") if indent is not None else gap
        elif indent is None:
            item_sep = ", "
    ensure_ascii = text.isascii() and _ESCAPED.search(text) is not None
    keys = [m.key for m in found]
    sort_keys = keys == sorted(keys)
    cells = data.get("cells")
    if sort_keys and isinstance(cells, list) and cells and isinstance(cells[0], dict):
        sort_keys = list(cells[0]) == sorted(cells[0])
    return Layout(newline, indent, item_sep, key_sep, ensure_ascii, sort_keys)
