"""A notebook's new JSON text made from its old text: only the values that changed are
written again, in the file's own layout; every other byte is copied from the old text.

Objects keep their members' order (a new key goes where the file's sorted order puts it, else
last); arrays are aligned old against new (`difflib`), so an inserted or deleted cell changes
only that cell and the comma and line break beside it. Where the text cannot be walked, or the
result would not read back as the new data, the whole notebook is written again in the file's
layout instead, and `Spliced.rewritten` says so.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from larik_jupyter.nbjson.layout import (
    Layout,
    Member,
    Unspliceable,
    detect,
    elements,
    line_indent,
    members,
    skip,
)


@dataclass(frozen=True)
class Spliced:
    """The new file's bytes, and whether the notebook had to be written whole (not spliced)."""

    raw: bytes
    rewritten: bool


@dataclass
class _Item:
    """One member or element of the new container: copied text (`text`, from old position
    `old`) or a new value to serialise (`value`, under `key` in an object)."""

    text: str | None = None
    old: int | None = None
    key: str | None = None
    value: Any = None


def splice(text: str, old: dict[str, Any], new: dict[str, Any], bom: str = "") -> Spliced:
    """The file `bom` + `text` (which parses to `old`) changed to hold `new`."""
    start = skip(text, 0)
    end = len(text.rstrip(" \t\r\n"))
    try:
        layout = detect(text, old)
    except (Unspliceable, IndexError):
        layout = Layout("\r\n" if "\r\n" in text else "\n")
    try:
        out = text[:start] + _value(text, start, end, old, new, layout) + text[end:]
        if same(json.loads(out), new):
            return Spliced((bom + out).encode("utf-8"), False)
    except (Unspliceable, ValueError, IndexError, RecursionError):
        pass
    return Spliced((bom + text[:start] + layout.dumps(new) + text[end:]).encode("utf-8"), True)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, type for type (`True` is not `1`, NaN is NaN); the same object at
    once."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (isinstance(a, float) and a != a and b != b)


def _value(text: str, start: int, end: int, old: Any, new: Any, layout: Layout) -> str:
    if same(old, new):
        return text[start:end]
    if isinstance(old, dict) and isinstance(new, dict) and text[start] == "{":
        return _object(text, start, old, new, layout)
    if isinstance(old, list) and isinstance(new, list) and text[start] == "[":
        return _array(text, start, old, new, layout)
    return layout.dumps(new, line_indent(text, start))


def _object(text: str, start: int, old: dict[str, Any], new: dict[str, Any], layout: Layout) -> str:
    found, close = members(text, start)
    keys = [m.key for m in found]
    # A key written twice: readers take the last; the earlier ones stay as they are.
    last = {m.key: i for i, m in enumerate(found)}
    items = [
        _Item(_member(text, m, old, new, layout) if last[m.key] == i else text[m.start:m.end], i, m.key)
        for i, m in enumerate(found)
        if m.key in new
    ]
    in_order = layout.sort_keys and keys == sorted(keys)
    for key in (k for k in new if k not in old):
        at = bisect.bisect([str(i.key) for i in items], key) if in_order else len(items)
        items.insert(at, _Item(key=key, value=new[key]))

    def render(item: _Item, indent: str) -> str:
        return json.dumps(item.key, ensure_ascii=layout.ensure_ascii) + layout.key_sep + layout.dumps(item.value, indent)

    return _join(text, start, close, [(m.start, m.end) for m in found], items, layout, "{}", render)


def _member(text: str, m: Member, old: dict[str, Any], new: dict[str, Any], layout: Layout) -> str:
    return text[m.start:m.value_start] + _value(text, m.value_start, m.end, old[m.key], new[m.key], layout)


def _identity(value: Any) -> Any:
    """What aligns an element with its old self: containers by object (unchanged cells are the
    same objects), scalars by value."""
    if isinstance(value, (dict, list)):
        return ("object", id(value))
    return (type(value).__name__, value)


def _array(text: str, start: int, old: list[Any], new: list[Any], layout: Layout) -> str:
    spans, close = elements(text, start)
    if len(spans) != len(old):
        raise Unspliceable("the array's elements do not match its text")
    items: list[_Item] = []
    matcher = SequenceMatcher(None, [_identity(v) for v in old], [_identity(v) for v in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        paired = min(i2 - i1, j2 - j1) if tag in ("equal", "replace") else 0
        for k in range(paired):
            s, e = spans[i1 + k]
            items.append(_Item(_value(text, s, e, old[i1 + k], new[j1 + k], layout), i1 + k))
        items += [_Item(value=v) for v in new[j1 + paired:j2]]

    # In a file with keys as written, a new object (a cell) takes its neighbours' key order.
    like = next((v for v in old if isinstance(v, dict)), None)

    def render(item: _Item, indent: str) -> str:
        value = item.value
        if like is not None and isinstance(value, dict) and not layout.sort_keys:
            value = {**{k: value[k] for k in like if k in value}, **value}
        return layout.dumps(value, indent)

    return _join(text, start, close, spans, items, layout, "[]", render)


def _join(
    text: str,
    start: int,
    close: int,
    spans: list[tuple[int, int]],
    items: list[_Item],
    layout: Layout,
    brackets: str,
    render: Callable[[_Item, str], str],
) -> str:
    """A container's new text: its items between the old text's own separators where two
    items stay neighbours, and the layout's separator where they do not."""
    if not items:
        return brackets
    base = line_indent(text, start)
    if spans:
        lead, trail = text[start + 1:spans[0][0]], text[spans[-1][1]:close]
    elif layout.indent is None:
        lead = trail = ""
    else:
        lead, trail = layout.newline + base + layout.indent, layout.newline + base
    if len(spans) > 1:
        gap = text[spans[0][1]:spans[1][0]]
    elif "\n" in lead:
        gap = layout.item_sep + lead
    else:
        gap = layout.item_sep if layout.indent is None else ", "
    out = [brackets[0]]
    previous: _Item | None = None
    for item in items:
        if previous is None:
            sep = lead
        elif previous.old is not None and item.old == previous.old + 1:
            sep = text[spans[previous.old][1]:spans[item.old][0]]
        else:
            sep = gap
        indent = sep.rsplit("\n", 1)[1] if "\n" in sep else base
        out += [sep, item.text if item.text is not None else render(item, indent)]
        previous = item
    out += [trail, brackets[1]]
    return "".join(out)
