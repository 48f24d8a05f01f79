"""The kernel's end of `larik.bridge` against panels that answer like the labextension does:
routing by notebook path, a reloaded page replacing its stale comm, replies, refusals, timeouts,
and a running turn's cell sent to a page that connects mid-turn."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from larik_jupyter.agent import events as ae
from larik_jupyter.notebook.bridge import Bridge, NotLanded
from larik_jupyter.notebook.pump import MainThreadPump
from larik_jupyter.notebook.reattach import LiveCell
from larik_jupyter.notebook.turn_ui import TurnUI


class Panel:
    """A comm whose other end is a panel: it answers each request with `answer(request)`."""

    counter = 0

    def __init__(self, bridge: Bridge, answer: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        Panel.counter += 1
        self.comm_id = f"comm-{Panel.counter}"
        self.bridge, self.answer = bridge, answer
        self.sent: list[dict[str, Any]] = []
        self._handler: Callable[[dict[str, Any]], None] | None = None

    def on_msg(self, handler: Callable[[dict[str, Any]], None]) -> None:
        self._handler = handler

    def on_close(self, handler: Callable[[Any], None]) -> None:
        """Closing is not exercised here."""

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)
        reply = self.answer(data)
        if reply is not None and self._handler is not None:
            # The labextension answers on the kernel's main thread's comm dispatch.
            threading.Timer(0.01, self._handler, args=({"content": {"data": {"type": "reply", "id": data["id"], **reply}}},)).start()

    def hello(self, path: str, root: Path) -> None:
        assert self._handler is not None
        self._handler({"content": {"data": {"type": "hello", "path": path, "root": str(root)}}})


def connect(bridge: Bridge, root: Path, path: str, answer: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Panel:
    panel = Panel(bridge, answer)
    bridge._attach(panel)
    panel.hello(path, root)
    return panel


def in_worker(fn: Callable[[], Any]) -> Any:
    """Requests wait from a worker thread, as tools do during a turn."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


def test_requests_go_to_the_panel_showing_the_notebook_and_return_its_cell_ids(tmp_path: Path) -> None:
    bridge = Bridge()
    other = connect(bridge, tmp_path, "other.ipynb", lambda r: {"ok": True, "cell_ids": ["o"]})
    mine = connect(bridge, tmp_path, "sub/nb.ipynb", lambda r: {"ok": True, "cell_ids": ["c1"]})
    assert bridge.notebook_path == (tmp_path / "other.ipynb").resolve()
    reply = in_worker(lambda: bridge.request(tmp_path / "sub" / "nb.ipynb", {"op": "delete", "cell_id": "x"}))
    assert reply["cell_ids"] == ["c1"]
    assert mine.sent[0]["path"] == "sub/nb.ipynb" and not other.sent


def test_a_reloaded_page_replaces_the_stale_comm_of_the_same_notebook(tmp_path: Path) -> None:
    bridge = Bridge()
    stale = connect(bridge, tmp_path, "nb.ipynb", lambda r: None)  # the old page: nobody answers
    fresh = connect(bridge, tmp_path, "nb.ipynb", lambda r: {"ok": True, "cell_ids": ["a"]})
    assert in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", {"op": "get"}))["ok"]
    assert fresh.sent and not stale.sent
    assert list(bridge.panels) == [fresh.comm_id]


def test_a_refused_edit_is_not_landed_with_the_browsers_reason(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb",
            lambda r: {"ok": False, "code": "missing_cell", "error": "the notebook has no cell \"x\""})
    with pytest.raises(NotLanded, match=r"Not landed: editing of cell x failed in the open notebook: the notebook has no cell \"x\""):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", {"op": "patch", "cell_id": "x"}))


def test_a_closed_notebook_or_a_path_outside_the_root_falls_back_to_the_file(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path / "root", "nb.ipynb", lambda r: {"ok": False, "code": "not_open", "error": "closed"})
    assert in_worker(lambda: bridge.request(tmp_path / "root" / "gone.ipynb", {"op": "get"})) is None
    assert in_worker(lambda: bridge.request(tmp_path / "elsewhere.ipynb", {"op": "get"})) is None
    assert Bridge().request(tmp_path / "nb.ipynb", {"op": "get"}) is None  # nobody connected


def test_no_answer_is_not_landed_and_the_main_thread_never_waits(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb", lambda r: None)
    with pytest.raises(NotLanded, match=r"did not confirm deleting cell c within 0.2 s"):
        in_worker(lambda: bridge.request(tmp_path / "nb.ipynb", {"op": "delete", "cell_id": "c"}, timeout=0.2))
    with pytest.raises(NotLanded, match=r"put the prompt in a cell of its own"):
        bridge.request(tmp_path / "nb.ipynb", {"op": "delete", "cell_id": "c"})


def test_a_page_that_connects_mid_turn_is_sent_the_cells_outputs_until_the_turn_ends(tmp_path: Path) -> None:
    InteractiveShell.instance()  # display() hands back display handles
    bridge = Bridge()
    original = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    ui = TurnUI(MainThreadPump(), lambda: None, interactive=None)
    ui.show()
    ui.follow(LiveCell(bridge, "cell-1", ui.outputs))
    ui.view.handle(ae.TurnStarted(turn=1, prompt="the answer?", model="scripted:demo"))
    original.hello("nb.ipynb", tmp_path)  # a rename in the page that ran the cell: it has the outputs

    reloaded = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    ui.view.handle(ae.TextDelta("The answer is 42."))
    ui.view.handle(ae.TurnEnded(turn=1, status="done"))
    ui.finish()
    # A reload that reconnects just after the turn ended still gets its final state.
    just_after = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)

    assert original.sent == []
    first, *_, last = [m for m in reloaded.sent if m["op"] == "show_outputs"]
    assert first["cell_id"] == "cell-1" and first["path"] == "nb.ipynb" and first["id"] == 0
    transcript, asks, controls = last["outputs"]
    assert "The answer is 42." in transcript["data"]["text/markdown"]
    assert "The answer is 42." not in first["outputs"][0]["data"]["text/markdown"]
    assert asks["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == ui.asks.model_id
    assert controls["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == ui.controls.model_id
    (final,) = [m for m in just_after.sent if m["op"] == "show_outputs"]
    assert final["outputs"] == last["outputs"]

    # The next turn's cell replaces the ended one: a page joining now is not sent the old cell.
    LiveCell(bridge, "cell-2", lambda: []).end()
    later = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    assert [m["cell_id"] for m in later.sent if m["op"] == "show_outputs"] == ["cell-2"]


def test_an_ended_turns_cell_is_not_sent_after_the_grace_period(tmp_path: Path) -> None:
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    LiveCell(bridge, "cell-1", lambda: [], grace=0.0).end()
    time.sleep(0.01)
    late = connect(bridge, tmp_path, "nb.ipynb", lambda _request: None)
    assert [m for m in late.sent if m["op"] == "show_outputs"] == []
    assert bridge.joined == []
