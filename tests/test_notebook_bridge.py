"""The kernel's end of `larik.bridge` against panels that answer like the labextension does:
routing by notebook path, one page applying each request (a reloaded page replacing its stale
comm, a page that leaves or stops answering handing over to the next), replies, refusals, timeouts,
and a running turn's cell sent to a page that connects mid-turn."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import pytest
from IPython.core.interactiveshell import InteractiveShell

from larik_jupyter.agent import events as ae
from larik_jupyter.bridge_protocol import (
    Answer,
    Delete,
    ErrorReply,
    Focus,
    Get,
    Patch,
    read_request,
)
from larik_jupyter.frontends.notebook.bridge import Bridge, NotLanded
from larik_jupyter.frontends.notebook.pump import MainThreadPump
from larik_jupyter.frontends.notebook.reattach import MirroredCell
from larik_jupyter.frontends.notebook.turn_ui import TurnUI
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.notebook.cells import NotebookReadTool
from larik_jupyter.tools.notebook.edit import NotebookEditTool
from tests.process_helpers import wait_until


class Panel:
    """A comm whose other end is a panel: it answers each request with `answer(request)`,
    speaking the declared protocol (`bridge_protocol`) as the labextension does: each request
    is read with `read_request` (a malformed one gets its typed error, as the page sends it),
    handed on as the protocol's JSON of it, and each answer is checked as one of the replies (`Answer`)."""

    counter = 0

    def __init__(self, bridge: Bridge, answer: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        Panel.counter += 1
        self.comm_id = f"comm-{Panel.counter}"
        self.bridge, self.answer = bridge, answer
        self.sent: list[dict[str, Any]] = []  # the requests, as the protocol reads them
        self.received: list[dict[str, Any]] = []  # the kernel's other messages (hello, errors)
        self._handler: Callable[[dict[str, Any]], None] | None = None

    def on_msg(self, handler: Callable[[dict[str, Any]], None]) -> None:
        self._handler = handler

    def on_close(self, handler: Callable[[Any], None]) -> None:
        """Closing is not exercised here."""

    def send(self, data: dict[str, Any]) -> None:
        if data.get("type") in ("hello", "error"):
            self.received.append(data)
            return
        request = read_request(data)
        if isinstance(request, ErrorReply):
            answer: dict[str, Any] | None = msgspec.to_builtins(request)
        else:
            self.sent.append(msgspec.to_builtins(request))
            reply = self.answer(self.sent[-1])
            answer = None if reply is None else msgspec.to_builtins(msgspec.convert({"id": request.id, **reply}, Answer))
        if answer is not None and request.id and self._handler is not None:
            # The labextension answers on the kernel's main thread's comm dispatch.
            self.later(answer)

    def later(self, data: dict[str, Any]) -> None:
        """`data` from the page, delivered as ipykernel does (a moment later)."""
        assert self._handler is not None
        threading.Timer(0.01, self._handler, args=({"content": {"data": data}},)).start()

    def hello(self, path: str, root: Path, page: str | None = None) -> None:
        assert self._handler is not None
        data = {"type": "hello", "path": path, "root": str(root)}
        if page:
            data |= {"page": page, "client": f"connection-of-{page}"}
        self._handler({"content": {"data": data}})


def connect(
    bridge: Bridge, root: Path, path: str, answer: Callable[[dict[str, Any]], dict[str, Any] | None],
    page: str | None = None,
) -> Panel:
    panel = Panel(bridge, answer)
    bridge._attach(panel)
    panel.hello(path, root, page)
    return panel


def shown(cell_id: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A page's answer to a `focus`: the cell it showed."""
    return lambda _request: {"type": "shown", "cell_ids": [cell_id]}


def in_worker(fn: Callable[[], Any]) -> Any:
    """Requests wait from a worker thread, as tools do during a turn."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


def test_requests_go_to_the_panel_showing_the_notebook_and_return_its_cell_ids(tmp_path: Path) -> None:
    bridge = Bridge()
    other = connect(bridge, tmp_path, "other.ipynb", shown("o"))
    mine = connect(bridge, tmp_path, "sub/nb.ipynb", shown("c1"))
    assert bridge.notebook_path == (tmp_path / "other.ipynb").resolve()
    reply = in_worker(lambda: bridge.request(tmp_path / "sub" / "nb.ipynb", Focus(cell_id="x")))
    assert reply is not None and reply.cell_ids == ["c1"]
    assert mine.sent[0]["path"] == "sub/nb.ipynb" and not other.sent


def test_a_reloaded_page_replaces_its_stale_comm_and_a_later_page_does_not_take_over(tmp_path: Path) -> None:
    bridge = Bridge()
    first = connect(bridge, tmp_path, "nb.ipynb", shown("a"), page="tab-1")
    second = connect(bridge, tmp_path, "nb.ipynb", shown("b"), page="tab-2")
    assert in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="c"))).cell_ids == ["a"]
    assert first.sent[0]["to"] == "tab-1" and not second.sent  # one page applies it
    # The first tab reloads: its new comm says hello with the page id the tab kept.
    connect(bridge, tmp_path, "nb.ipynb", shown("c"), page="tab-1")
    assert in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="c"))).cell_ids == ["c"]
    assert len(first.sent) == 1 and not second.sent
    assert list(bridge.panels) == ["tab-1", "tab-2"]


def test_the_page_that_ran_the_larik_cell_applies_the_requests(tmp_path: Path) -> None:
    bridge = Bridge()
    bridge.lead("connection-of-runner")  # %load_ext ran in a page that has not said hello yet
    other = connect(bridge, tmp_path, "nb.ipynb", shown("o"), page="other")
    runner = connect(bridge, tmp_path, "nb.ipynb", shown("r"), page="runner")
    assert in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="c"))).cell_ids == ["r"]
    # A `%larik` cell runs in the other page: it applies the requests from now on.
    bridge.lead("connection-of-other")
    assert in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="c"))).cell_ids == ["o"]
    assert len(other.sent) == 1 and len(runner.sent) == 1


def test_a_page_that_says_bye_or_stops_answering_hands_the_notebook_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("larik_jupyter.frontends.notebook.bridge.HANDOVER", 0.3)
    bridge = Bridge()
    silent = connect(bridge, tmp_path, "nb.ipynb", lambda r: None, page="closed-tab")
    leaving = connect(bridge, tmp_path, "nb.ipynb", shown("l"), page="leaving")
    connect(bridge, tmp_path, "nb.ipynb", shown("s"), page="staying")
    # The first page's tab closed without a word: the request goes on, with its id, to the next.
    reply = in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="x")))
    assert reply is not None and reply.cell_ids == ["l"]
    assert silent.sent[0]["id"] == leaving.sent[0]["id"] and leaving.sent[0]["to"] == "leaving"
    assert list(bridge.panels) == ["leaving", "staying", "closed-tab"]  # the silent one goes last
    # The leading page closes its notebook: it says bye on the comm every page shares.
    leaving.later({"type": "bye", "page": "leaving"})
    wait_until(lambda: "leaving" not in bridge.panels, "the bye to reach the kernel")
    reply = in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Focus(cell_id="y")))
    assert reply is not None and reply.cell_ids == ["s"] and len(leaving.sent) == 1
    assert len(silent.sent) == 1  # the next request did not wait on the silent page again


def test_a_refused_edit_is_not_landed_with_the_browsers_reason(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb",
            lambda r: {"type": "refused", "code": "missing_cell", "error": "the notebook has no cell \"x\""})
    with pytest.raises(NotLanded, match=r"Not landed: editing of cell x failed in the open notebook: the notebook has no cell \"x\""):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Patch(cell_id="x", old_string="a", new_string="b")))


def test_a_closed_notebook_or_a_path_outside_the_root_falls_back_to_the_file(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path / "root", "nb.ipynb", lambda r: {"type": "refused", "code": "not_open", "error": "closed"})
    assert in_worker(lambda: bridge.request(tmp_path / "root" / "gone.ipynb", Get())) is None
    assert in_worker(lambda: bridge.request(tmp_path / "elsewhere.ipynb", Get())) is None
    assert Bridge().request(tmp_path / "nb.ipynb", Get()) is None  # nobody connected


def test_no_answer_is_not_landed_and_the_main_thread_never_waits(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb", lambda r: None)
    with pytest.raises(NotLanded, match=r"the open notebook did not confirm deleting cell c within 0.2 s"):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", Delete(cell_id="c"), timeout=0.2))
    with pytest.raises(NotLanded, match=r"put the prompt in a cell of its own"):
        bridge.request(tmp_path / "nb.ipynb", Delete(cell_id="c"))


def test_a_page_that_connects_mid_turn_is_sent_the_cells_outputs_until_the_turn_ends(tmp_path: Path) -> None:
    InteractiveShell.instance()  # display() hands back display handles
    bridge = Bridge()
    original = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    ui = TurnUI(MainThreadPump(), lambda: None, interactive=None)
    ui.show()
    ui.follow(MirroredCell(bridge, "cell-1", ui.outputs))
    ui.view.handle(ae.TurnStarted(turn=1, prompt="the answer?", model="scripted:demo"))
    original.hello("nb.ipynb", tmp_path)  # a rename in the page that ran the cell: it has the outputs

    reloaded = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    ui.view.handle(ae.TextDelta("The answer is forty-two."))
    ui.view.handle(ae.TurnEnded(turn=1, status="done"))
    ui.finish()
    # A reload that reconnects just after the turn ended still gets its final state.
    just_after = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)

    assert original.sent == []
    first, *_, last = [m for m in reloaded.sent if m["op"] == "show_outputs"]
    assert first["cell_id"] == "cell-1" and first["path"] == "nb.ipynb" and first["id"] == 0
    transcript, asks, controls = last["outputs"]
    assert "The answer is forty-two." in transcript["data"]["text/markdown"]
    assert "The answer is forty-two." not in first["outputs"][0]["data"]["text/markdown"]
    _, mid_asks, mid_controls = first["outputs"]
    assert mid_asks["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == ui.asks.model_id
    assert mid_controls["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == ui.controls.model_id
    assert asks["data"] == controls["data"] == {}  # the ended turn's cell keeps no blank widget
    (final,) = [m for m in just_after.sent if m["op"] == "show_outputs"]
    assert final["outputs"] == last["outputs"]

    # The next turn's cell replaces the ended one: a page joining now is not sent the old cell.
    MirroredCell(bridge, "cell-2", lambda: []).end()
    later = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    assert [m["cell_id"] for m in later.sent if m["op"] == "show_outputs"] == ["cell-2"]


def test_an_ended_turns_cell_is_not_sent_after_the_grace_period(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    ended = MirroredCell(bridge, "cell-1", lambda: [], grace=0.0)
    ended.end()
    wait_until(lambda: ended.ended_at is not None and time.monotonic() > ended.ended_at, "the 0 s grace to pass")
    late = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    assert [m for m in late.sent if m["op"] == "show_outputs"] == []
    assert bridge.joined == []


class Document:
    """A notebook as a page holds it, answering `get` and `replace` the way the labextension
    does: cells with fingerprints, and an edit sent with `expect` refused as `stale` when its
    cell is no longer that."""

    def __init__(self) -> None:
        self.cells = [
            {"id": f"c{i}", "cell_type": "code", "source": f"x = {i}", "metadata": {}, "outputs": [], "execution_count": None}
            for i in range(3)
        ]

    def state(self, cells: list[dict[str, Any]]) -> dict[str, Any]:
        order = [c["id"] for c in self.cells]
        hashes = {c["id"]: json.dumps(c, sort_keys=True) for c in cells}
        return {"cells": cells, "order": order, "hashes": hashes, "order_hash": json.dumps(order)}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "get":
            wanted = request.get("cell_ids")
            state = self.state([c for c in self.cells if wanted is None or c["id"] in wanted])
            return {"type": "read", "notebook": {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": state.pop("cells")}, **state}
        if request["op"] == "insert":
            index = [c["id"] for c in self.cells].index(request["after"]) + 1 if request["after"] else 0
            self.cells.insert(index, request["cell"])
            return {"type": "changed", "cell_ids": [request["cell"]["id"]], **self.state([request["cell"]])}
        assert request["op"] == "replace"
        index = [c["id"] for c in self.cells].index(request["cell_id"])
        expect = request.get("expect")
        order = json.dumps([c["id"] for c in self.cells])
        if expect and (expect["hash"] != json.dumps(self.cells[index], sort_keys=True) or expect["order"] != order):
            return {"type": "refused", "code": "stale", "error": "cell changed", **self.state([self.cells[index]])}
        self.cells[index] = {**request["cell"], "id": request["cell_id"]}
        return {"type": "changed", "cell_ids": [request["cell_id"]], **self.state([self.cells[index]])}


def live_env(tmp_path: Path, bridge: Bridge) -> Env:
    return Env(cwd=tmp_path, root=tmp_path, host=KernelHost({}, bridge=bridge))


def edit_cell(env: Env, cell_id: str, source: str) -> str:
    result = in_worker(lambda: NotebookEditTool().run(env, {"path": "nb.ipynb", "cell_id": cell_id, "new_source": source}))
    assert not result.is_error, result.content
    return str(result.content)


def test_an_edit_of_a_cell_read_before_is_one_request_checked_against_what_the_kernel_read(tmp_path: Path) -> None:
    bridge, document = Bridge(), Document()
    panel = connect(bridge, tmp_path, "nb.ipynb", document.answer)
    env = live_env(tmp_path, bridge)
    assert not in_worker(lambda: NotebookReadTool().run(env, {"path": "nb.ipynb"})).is_error
    read = len(panel.sent)
    edit_cell(env, "c1", "y = 1")
    (request,) = panel.sent[read:]
    assert request["op"] == "replace" and request["expect"]["order"] == '["c0", "c1", "c2"]'
    assert document.cells[1]["source"] == "y = 1"
    # The cell the edit left is held too: editing it again is one request as well.
    edit_cell(env, "c1", "y = 11")
    assert len(panel.sent) == read + 2 and document.cells[1]["source"] == "y = 11"

    # The user changed a cell since it was read: the edit is refused, worked out again from the
    # cell the refusal brought back, and lands.
    document.cells[2] = {**document.cells[2], "source": "x = 2  # typed", "execution_count": 7}
    before = len(panel.sent)
    assert "x = 2  # typed" in edit_cell(env, "c2", "y = 2")  # the diff is against what the user had
    refused, landed = panel.sent[before:]
    assert refused["op"] == landed["op"] == "replace" and refused["expect"] != landed["expect"]
    assert document.cells[2]["source"] == "y = 2"


def test_the_model_reads_open_notebook_for_a_notebook_a_page_shows_and_nothing_of_it_for_a_file(tmp_path: Path) -> None:
    bridge, document = Bridge(), Document()
    connect(bridge, tmp_path, "nb.ipynb", document.answer)
    env = live_env(tmp_path, bridge)
    read = str(in_worker(lambda: NotebookReadTool().run(env, {"path": "nb.ipynb"})).content)
    assert "(Read from the open notebook; the file may lag until the user saves it.)" in read
    assert "It landed in the open notebook (cells: c1); the file changes when the user saves." in edit_cell(env, "c1", "y = 1")
    # The same notebook as a file no page shows: read and edited on disk, no word of an open notebook.
    (tmp_path / "nb.ipynb").write_text(json.dumps(
        {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": document.cells}
    ))
    env = Env(cwd=tmp_path, root=tmp_path, host=KernelHost({}, bridge=Bridge()))
    read = str(in_worker(lambda: NotebookReadTool().run(env, {"path": "nb.ipynb"})).content)
    edited = edit_cell(env, "c1", "y = 2")
    assert "open notebook" not in read + edited and "y = 2" in (tmp_path / "nb.ipynb").read_text()


def test_a_page_after_a_reload_is_read_before_each_edit(tmp_path: Path) -> None:
    bridge, document = Bridge(), Document()
    panel = connect(bridge, tmp_path, "nb.ipynb", document.answer)
    env = live_env(tmp_path, bridge)
    in_worker(lambda: NotebookReadTool().run(env, {"path": "nb.ipynb"}))
    panel.hello("nb.ipynb", tmp_path)  # the page reloaded: its document may be the saved file
    read = len(panel.sent)
    edit_cell(env, "c1", "y = 1")
    assert [r["op"] for r in panel.sent[read:]] == ["get", "replace"]


def test_inserting_a_cell_into_an_open_notebook_does_not_import_nbformat(tmp_path: Path) -> None:
    # nbformat takes over a second to import; an edit of the open notebook does not need it.
    code = f"""
import sys
from pathlib import Path
from tests.test_notebook_bridge import Bridge, Document, connect, in_worker, live_env, NotebookEditTool
root = Path({str(tmp_path)!r})
bridge, document = Bridge(), Document()
connect(bridge, root, "nb.ipynb", document.answer)
args = {{"path": "nb.ipynb", "edit_mode": "insert", "cell_id": "c0", "new_source": "print(1)"}}
result = in_worker(lambda: NotebookEditTool().run(live_env(root, bridge), args))
assert not result.is_error, result.content
new = document.cells[1]
assert list(new) == ["id", "cell_type", "metadata", "execution_count", "source", "outputs"], new
assert len(new["id"]) == 8 and new["source"] == "print(1)"
print("nbformat" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
