"""Undo of the cells a turn changed in an open notebook: the checkpoint records each cell's
state before the turn, `/undo` puts the document back through the bridge, or the file when
the notebook was closed meanwhile, and a cell-only turn is undoable like any other."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.checkpoint.cells import placed
from larik_jupyter.checkpoint.manifest import read_manifest
from larik_jupyter.frontends.notebook.bridge import Bridge
from larik_jupyter.frontends.notebook.widgets.undo import page_data, undo_data
from larik_jupyter.paths import checkpoints_dir
from tests.agent_helpers import done, scripted, tool
from tests.test_notebook_bridge import connect, in_worker


class Page:
    """The browser's document of one notebook, answering bridge requests as `bridge.ts` does."""

    def __init__(self, nb: nbformat.NotebookNode) -> None:
        self.cells: list[dict[str, Any]] = [_plain(c) for c in nb.cells]
        self.open = True
        self.restores = 0

    def changed(self, cell_ids: list[str]) -> dict[str, Any]:
        """A change's reply: the cells it left (without fingerprints: the kernel holds none of
        them) and the order."""
        cells = [copy.deepcopy(c) for c in self.cells if c["id"] in cell_ids]
        return {"type": "changed", "cell_ids": cell_ids, "cells": cells, "hashes": {},
                "order": [c["id"] for c in self.cells], "order_hash": ""}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if not self.open:
            return {"type": "refused", "code": "not_open", "error": "nb.ipynb is not open in this browser"}
        op = request["op"]
        ids = [c["id"] for c in self.cells]
        if op == "get":
            wanted = request.get("cell_ids")
            cells = [c for c in self.cells if wanted is None or c["id"] in wanted]
            head = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5}
            return {"type": "read", "notebook": {**head, "cells": copy.deepcopy(cells)}, "hashes": {}, "order": ids, "order_hash": ""}
        if op == "insert":
            cell = {**request["cell"], "source": _text(request["cell"]["source"])}
            self.cells.insert(ids.index(request["after"]) + 1 if request["after"] else 0, cell)
            return self.changed([cell["id"]])
        if request.get("cell_id") and request["cell_id"] not in ids:
            return {"type": "refused", "code": "missing_cell", "error": "no such cell"}
        if op == "delete":
            del self.cells[ids.index(request["cell_id"])]
            return self.changed([])
        if op == "set_outputs":
            cell = self.cells[ids.index(request["cell_id"])]
            cell["outputs"] = request["outputs"]
            if "execution_count" in request:
                cell["execution_count"] = request["execution_count"]
            return self.changed([cell["id"]])
        if op == "patch":
            cell = self.cells[ids.index(request["cell_id"])]
            cell["source"] = cell["source"].replace(request["old_string"], request["new_string"], 1)
            cell["metadata"] = {**cell["metadata"], "larik": request["metadata"]["larik"]}
            cell["outputs"], cell["execution_count"] = [], None
            return self.changed([cell["id"]])
        if op == "restore":
            self.restores += 1
            # As the page does: no placement rule of its own, the cells end in `order`.
            back = {c["id"]: c for c in request["cells"]}
            kept = {c["id"]: c for c in self.cells if c["id"] not in set(request["delete"]) | set(back)}
            self.cells = [kept.get(i) or back[i] for i in request["order"]]
            return self.changed(list(back))
        return {"type": "refused", "code": "refused", "error": f"unknown request {op}"}


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _plain(node: Any) -> Any:
    return json.loads(json.dumps(node))


def original(root: Path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    ran = nbformat.v4.new_code_cell("print('ran')", id="ran", execution_count=3)
    ran.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title", id="title"),
        nbformat.v4.new_code_cell("x = 1\ny = 2", id="calc"),
        ran,
        nbformat.v4.new_code_cell("z = 3", id="tail"),
    ]
    nbformat.write(nb, root / "nb.ipynb")
    return nb


def turn_script(tmp_path: Path) -> str:
    """Insert a cell first, edit `calc`, delete `ran`: positions shift as the turn goes."""
    return scripted(
        tmp_path,
        [tool("notebook_edit", path="nb.ipynb", edit_mode="insert", new_source="import os")],
        [tool("notebook_edit", path="nb.ipynb", cell_id="calc", old_string="y = 2", new_string="y = 20")],
        [tool("notebook_edit", path="nb.ipynb", cell_id="ran", edit_mode="delete")],
        done(),
    )


def agent_on_page(tmp_path: Path, kind: type[Page] = Page) -> tuple[Agent, Page, bytes]:
    nb = original(tmp_path)
    before = (tmp_path / "nb.ipynb").read_bytes()
    page = kind(nb)
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb", page.answer)
    agent = Agent(tmp_path, model=turn_script(tmp_path), yes=True, host=KernelHost({}, bridge=bridge))
    agent.run("edit the notebook")
    return agent, page, before


def test_the_checkpoint_records_each_changed_cell_before_the_turn(tmp_path: Path) -> None:
    agent, page, before = agent_on_page(tmp_path)
    assert [c["id"] for c in page.cells][1:] == ["title", "calc", "tail"]
    assert (tmp_path / "nb.ipynb").read_bytes() == before  # live edits never touch the file
    (turn,) = agent.history.checkpoints()  # a turn that changed only cells is undoable
    assert turn.files == [] and turn.prompt == 1
    manifest = read_manifest(checkpoints_dir(agent.session_id) / str(turn.turn))
    (record,) = manifest.notebooks or []
    assert record.path == "nb.ipynb"
    created, calc, ran = record.cells
    assert not created.existed and created.cell is None and created.source_after == "import os"
    # Positions are those before the turn, although the insert shifted the document first.
    assert (calc.position, calc.previous, calc.cell["source"], calc.source_after) == (1, "title", "x = 1\ny = 2", "x = 1\ny = 20")
    assert (ran.position, ran.previous, ran.deleted) == (2, "calc", True)
    assert ran.cell["outputs"] == [{"name": "stdout", "output_type": "stream", "text": "ran\n"}]
    assert ran.cell["execution_count"] == 3


def test_undo_puts_the_open_document_back_through_the_bridge(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path)
    want = [_plain(c) for c in original(tmp_path).cells]
    (result,) = in_worker(agent.undo)
    assert result.ok and result.restored_cells == [("nb.ipynb", 3, "the open notebook")]
    assert page.cells == want
    assert agent.history.checkpoints() == []
    assert "reverted the notebook cells prompt 1 changed" in (agent.loop.pending_note or "")


class RacingPage(Page):
    """A page where the user adds a cell between undo's read of the cell order and its
    restore, which the page then refuses as `stale` (as `bridge.ts` does when the order's
    fingerprint no longer holds)."""

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "restore" and not any(c["id"] == "mine" for c in self.cells):
            self.cells.append({"id": "mine", "cell_type": "markdown", "source": "my note", "metadata": {}})
            return {"type": "refused", "code": "stale", "error": "cells were added, removed or moved in the open notebook since the kernel read it"}
        return super().answer(request)


def test_undo_works_the_order_out_again_when_the_cells_moved_before_its_restore(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path, RacingPage)
    (result,) = in_worker(agent.undo)
    assert result.ok and result.restored_cells == [("nb.ipynb", 3, "the open notebook")]
    assert [c["id"] for c in page.cells] == ["title", "calc", "ran", "tail", "mine"]


def test_undo_from_the_kernels_main_thread_keeps_the_turn_to_retry(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path)
    (result,) = agent.undo()  # the thread that would deliver the browser's reply: never waited on
    assert not result.ok and result.refused[0][0] == "nb.ipynb"
    assert "its cells were not restored in the open notebook" in result.refused[0][1]
    assert page.restores == 0 and len(agent.history.checkpoints()) == 1
    assert in_worker(agent.undo).ok and page.cells == [_plain(c) for c in original(tmp_path).cells]


def test_undo_of_a_notebook_closed_since_restores_its_file_byte_for_byte(tmp_path: Path) -> None:
    agent, page, before = agent_on_page(tmp_path)
    saved = nbformat.v4.new_notebook()  # the user saved the edits, then closed the notebook
    saved.cells = [nbformat.from_dict(c) for c in page.cells]
    nbformat.write(saved, tmp_path / "nb.ipynb")
    page.open = False
    (result,) = in_worker(agent.undo)
    assert result.restored_cells == [("nb.ipynb", 3, "the file")]
    assert (tmp_path / "nb.ipynb").read_bytes() == before


def test_a_symlinked_notebook_is_not_followed_on_restore(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path)
    page.open = False
    target = tmp_path / "elsewhere.ipynb"
    (tmp_path / "nb.ipynb").rename(target)
    (tmp_path / "nb.ipynb").symlink_to(target)
    kept = target.read_bytes()
    (result,) = in_worker(agent.undo)
    assert not result.ok and result.refused == [
        ("nb.ipynb", "is a symbolic link, so its cells were not restored in the file")
    ]
    assert target.read_bytes() == kept


def test_the_undo_panel_shows_the_turns_cell_diffs(tmp_path: Path) -> None:
    agent, _, _ = agent_on_page(tmp_path)
    (turn,) = page_data(undo_data(agent))["turns"]
    changes = {c["path"].partition("#")[2]: c for c in turn["changes"]}
    assert [changes[i]["change"] for i in ("calc", "ran")] == ["edited", "deleted"]
    assert "-y = 2\n" in changes["calc"]["diff"] and "+y = 20\n" in changes["calc"]["diff"] and "a/nb.ipynb cell 2 (calc)" in changes["calc"]["diff"]
    assert changes["calc"]["name"] == "nb.ipynb cell 2 (calc)"  # one name for the cell, in the diff and the list
    assert "-print('ran')" in changes["ran"]["diff"]
    (inserted,) = [c for c in turn["changes"] if c["change"] == "inserted"]
    assert "+import os" in inserted["diff"]


def test_rewind_with_files_restores_the_cells_too(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path)
    source = agent.session_id
    in_worker(lambda: agent.rewind(1, files=True))
    assert agent.session_id != source
    assert page.cells == [_plain(c) for c in original(tmp_path).cells]
    assert [r.restored_cells for r in agent.last_undo] == [[("nb.ipynb", 3, "the open notebook")]]


@pytest.mark.parametrize("edited_since", [False, True])
def test_placed_puts_cells_after_the_cell_that_preceded_them(edited_since: bool) -> None:
    from larik_jupyter.checkpoint.manifest import CellRecord, NotebookRecord

    cell = lambda i, s="": {"id": i, "cell_type": "code", "source": s or i, "metadata": {}, "outputs": [], "execution_count": None}  # noqa: E731
    record = NotebookRecord(path="nb.ipynb", cells=[
        CellRecord(id="new", existed=False),
        CellRecord(id="b", existed=True, position=1, previous="a", cell=cell("b")),
        CellRecord(id="c", existed=True, position=2, previous="b", cell=cell("c")),
    ])
    now = [cell("a"), cell("new"), cell("b", "changed"), cell("d")]
    if edited_since:  # the user added a cell at the top after the turn: still after `a`
        now.insert(0, cell("user"))
    ids = [c["id"] for c in placed(now, record)]
    assert ids == (["user"] if edited_since else []) + ["a", "b", "c", "d"]


def test_the_cli_lists_and_undoes_a_cell_only_turn(tmp_path: Path) -> None:
    import subprocess
    import sys

    agent, _, before = agent_on_page(tmp_path)
    session_id = agent.session_id
    agent.close()
    cli = [sys.executable, "-m", "larik_jupyter"]
    listing = subprocess.run([*cli, "checkpoints", session_id], capture_output=True, text=True, check=True)
    assert "0 files, 3 notebook cells" in listing.stdout and "changed  nb.ipynb cell 2 (calc)" in listing.stdout
    undone = subprocess.run([*cli, "undo", session_id], capture_output=True, text=True, check=True)
    assert "- restored 3 cells of nb.ipynb in the file" in undone.stdout
    assert (tmp_path / "nb.ipynb").read_bytes() == before


def test_the_sidebar_and_the_rewind_confirmation_list_the_cells(tmp_path: Path) -> None:
    from larik_jupyter.frontends.notebook.widgets.tree import rewind_plan
    from larik_jupyter.frontends.server.turn_diffs import checkpoints

    agent, _, _ = agent_on_page(tmp_path)
    (turn,) = checkpoints(agent.session_id, tmp_path, str(tmp_path)).turns
    rows = {f.path: f for f in turn.files}
    assert "+y = 20\n" in rows["nb.ipynb#calc"].diff and rows["nb.ipynb#calc"].existed
    # The inserted cell, then calc, then ran: the order the turn first changed them.
    assert rewind_plan(agent.history.checkpoints(), 1).cells == [row.name for row in rows.values()]
    assert list(rows)[1:] == ["nb.ipynb#calc", "nb.ipynb#ran"]


def test_undo_puts_back_the_outputs_notebook_run_replaced(tmp_path: Path) -> None:
    from larik_jupyter.tools.notebook.run import CellRun

    nb = original(tmp_path)
    page = Page(nb)
    bridge = Bridge()
    connect(bridge, tmp_path, "nb.ipynb", page.answer)

    async def run_cell(source: str, **_: Any) -> CellRun:  # the kernel's runner, as it reports
        return CellRun([{"output_type": "stream", "name": "stdout", "text": "again\n"}], 9)

    model = scripted(tmp_path, [tool("notebook_run", cell_id="ran")], done())
    agent = Agent(tmp_path, model=model, yes=True, host=KernelHost({}, bridge=bridge, run_cell=run_cell))
    agent.run("run it")
    ran = next(c for c in page.cells if c["id"] == "ran")
    assert ran["outputs"][0]["text"] == "again\n" and ran["execution_count"] == 9
    (turn,) = page_data(undo_data(agent))["turns"]
    assert [c["change"] for c in turn["changes"]] == ["outputs"]
    assert in_worker(agent.undo).ok
    assert page.cells == [_plain(c) for c in original(tmp_path).cells]


def _mixed_turn(rnd: Any, ids: list[str]) -> list[list[dict[str, Any]]]:
    """A turn of 3 to 6 notebook edits: inserts (after any cell, or first), deletes and rewrites."""
    doc, steps = list(ids), []
    for k in range(rnd.randint(3, 6)):
        kind = rnd.choice(["insert", "delete", "replace"])
        if kind == "insert":
            after = rnd.choice([*doc, None])
            where = {"cell_id": after} if after else {}
            steps.append([tool("notebook_edit", path="nb.ipynb", edit_mode="insert", new_source=f"new {k}", **where)])
        elif kind == "delete" and len(doc) > 1:
            gone = rnd.choice(doc)
            doc.remove(gone)
            steps.append([tool("notebook_edit", path="nb.ipynb", cell_id=gone, edit_mode="delete")])
        else:
            steps.append([tool("notebook_edit", path="nb.ipynb", cell_id=rnd.choice(doc), new_source=f"rewritten {k}")])
    return steps


@pytest.mark.parametrize("closed", [False, True])
def test_undo_of_inserts_deletes_and_rewrites_restores_the_cell_order(tmp_path: Path, closed: bool) -> None:
    """The turn the issue saw (insert after cell 0, delete a scratch cell, rewrite cell 0) and
    random mixes: undo gives back the cells in their order, in the document or in its file."""
    import random

    issue = [
        [tool("notebook_edit", path="nb.ipynb", edit_mode="insert", cell_id="c0", new_source="import pandas")],
        [tool("notebook_edit", path="nb.ipynb", cell_id="c2", edit_mode="delete")],
        [tool("notebook_edit", path="nb.ipynb", cell_id="c0", new_source="df = load()")],
    ]
    for trial in range(8):
        root = tmp_path / str(trial)
        root.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"x{i} = {i}", id=f"c{i}") for i in range(5)]
        nbformat.write(nb, root / "nb.ipynb")
        before = (root / "nb.ipynb").read_bytes()
        steps = issue if trial == 0 else _mixed_turn(random.Random(trial), [f"c{i}" for i in range(5)])
        page = Page(nb)
        bridge = Bridge()
        connect(bridge, root, "nb.ipynb", page.answer)
        agent = Agent(root, model=scripted(root, *steps, done()), yes=True, host=KernelHost({}, bridge=bridge))
        agent.run("rework the notebook")
        assert [c["id"] for c in page.cells] != [c.id for c in nb.cells] or trial
        if closed:  # saved and closed since: the file is put back
            saved = nbformat.v4.new_notebook()
            saved.cells = [nbformat.from_dict(c) for c in page.cells]
            nbformat.write(saved, root / "nb.ipynb")
            page.open = False
        (result,) = in_worker(agent.undo)
        assert result.ok, (trial, result.refused)
        if closed:
            assert (root / "nb.ipynb").read_bytes() == before, trial
        else:
            assert page.cells == [_plain(c) for c in nb.cells], trial
        agent.close()
