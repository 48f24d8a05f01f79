"""The bridge's messages are declared once: the page's TypeScript is generated from the
declaration, and a message either side cannot read gets a typed error, never an exception."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from larik_jupyter.bridge_protocol import (
    REPLIES,
    ErrorReply,
    Focus,
    Get,
    Patch,
    ReadReply,
    RefusalCode,
    Restore,
    read_request,
    request_data,
    typescript,
)
from larik_jupyter.frontends.notebook.bridge import Bridge, NotLanded
from tests.test_notebook_bridge import connect, in_worker

ROOT = Path(__file__).resolve().parent.parent


def test_the_pages_protocol_types_are_generated_from_the_declaration() -> None:
    written = (ROOT / "labextension" / "src" / "protocol.ts").read_text(encoding="utf-8")
    assert written == typescript(), "run: python -m larik_jupyter.bridge_protocol > labextension/src/protocol.ts"
    # The refusal codes are one enum on both sides, and no protocol file types a value as `any`.
    assert "export enum RefusalCode {\n" + "".join(f"  {c.name} = \"{c.value}\",\n" for c in RefusalCode) in written
    for name in ("protocol.ts", "rest.ts", "json.ts"):
        text = (ROOT / "labextension" / "src" / name).read_text(encoding="utf-8")
        assert not re.search(r"\bany\b", text.replace("no-explicit-any", "")), name


def test_each_handler_of_the_page_answers_the_reply_its_request_declares() -> None:
    # Each handler states its op's reply type (`Answer<op>`, from the generated `Replies`), so
    # tsc rejects a field that reply does not declare; a new op needs its handler too.
    page = (ROOT / "labextension" / "src" / "bridge.ts").read_text(encoding="utf-8")
    handlers = re.findall(r"^  (\w+): \(doc, request\): Answer<'(\w+)'> => \{$", page, re.MULTILINE)
    assert sorted(op for op, declared in handlers if op == declared) == sorted(REPLIES)
    assert {reply.__name__ for reply in REPLIES.values()} == {"ReadReply", "ChangedReply", "ShownReply"}


def test_a_reply_of_another_requests_kind_is_malformed_and_fails_its_request_at_once(tmp_path: Path) -> None:
    bridge = Bridge()
    panel = connect(bridge, tmp_path, "nb.ipynb", lambda r: {"type": "shown", "cell_ids": ["a"]})
    with pytest.raises(NotLanded, match=r"reading the notebook failed in the open notebook: malformed message: a shown reply"):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Get(), timeout=60))
    (error,) = [m for m in panel.received if m["type"] == "error"]
    assert error["code"] == "malformed" and error["id"] == 1
    reply = in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="a"), timeout=60))
    assert reply is not None and reply.cell_ids == ["a"]


def test_a_reply_is_typed_at_the_door_and_reaches_the_tool_typed(tmp_path: Path) -> None:
    bridge = Bridge()
    panel = connect(bridge, tmp_path, "nb.ipynb", lambda r: {
        "type": "read", "notebook": {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": [{"id": "a"}]},
        "hashes": {"a": "h"}, "order": ["a"], "order_hash": "o",
    })
    reply = in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Get()))
    assert isinstance(reply, ReadReply) and reply.notebook.cells == [{"id": "a"}]
    assert bridge.cached(tmp_path / "nb.ipynb", ["a"]) is not None  # the kernel's copy took it in
    # A code the declaration does not know is a malformed reply, refused at the door.
    panel.answer = lambda r: panel.later({"type": "refused", "id": r["id"], "code": "exploded", "error": "?"})  # type: ignore[func-returns-value]
    with pytest.raises(NotLanded, match=r"malformed message: Invalid enum value 'exploded'"):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Get(), timeout=60))


def test_a_request_round_trips_with_its_id_path_and_op() -> None:
    data = request_data(Patch(cell_id="c1", old_string="a", new_string="b"), 7, "sub/nb.ipynb")
    assert data["type"] == "request" and data["id"] == 7 and data["path"] == "sub/nb.ipynb" and data["op"] == "patch"
    assert read_request(data) == Patch(id=7, path="sub/nb.ipynb", cell_id="c1", old_string="a", new_string="b")
    assert request_data(Restore(), 0, "nb.ipynb")["delete"] == []


@pytest.mark.parametrize(
    "data",
    [
        None,
        "get",
        {"type": "request", "id": 3, "path": "nb.ipynb", "op": "explode"},
        {"type": "request", "id": 3, "path": "nb.ipynb", "op": "patch", "cell_id": "c1"},
        {"type": "request", "id": 3, "path": "nb.ipynb", "op": "delete", "cell_id": 12},
    ],
)
def test_a_malformed_request_reads_as_a_typed_error(data: Any) -> None:
    error = read_request(data)
    assert isinstance(error, ErrorReply) and error.code is RefusalCode.MALFORMED and error.error.startswith("malformed request")
    assert error.id == (3 if isinstance(data, dict) else 0)
    assert msgspec.to_builtins(error)["type"] == "error"


def test_a_malformed_reply_from_the_page_gets_a_typed_error_and_fails_its_request_at_once(tmp_path: Path) -> None:
    bridge = Bridge()
    panel = connect(bridge, tmp_path, "nb.ipynb", lambda r: None)
    panel.answer = lambda r: panel.later({"type": "read", "id": r["id"], "order": "yes"})  # type: ignore[func-returns-value]
    started = time.monotonic()
    with pytest.raises(NotLanded, match=r"reading the notebook failed in the open notebook: malformed message: "):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Get(), timeout=60))
    assert time.monotonic() - started < 30  # not the 60 s reply timeout
    (error,) = [m for m in panel.received if m["type"] == "error"]
    assert error["code"] == "malformed" and error["id"] == 1 and "order" in error["error"]


def test_an_unknown_message_from_the_page_gets_a_typed_error_not_an_exception(tmp_path: Path) -> None:
    bridge = Bridge()
    panel = connect(bridge, tmp_path, "nb.ipynb", lambda r: None)
    for data in ({"type": "gossip"}, None, ["not", "an", "object"]):
        bridge._on_msg(panel, {"content": {"data": data}})
    assert [m["code"] for m in panel.received if m["type"] == "error"] == ["malformed"] * 3
    assert list(bridge.panels) == [panel.comm_id]  # the page is still connected
