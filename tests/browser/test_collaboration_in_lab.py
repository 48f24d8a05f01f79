"""Live edits under jupyter-collaboration's real-time collaboration: two pages (two browser
contexts, two collaborators) on one notebook and one kernel. A scripted turn run in page 1
replaces, inserts, deletes and runs cells while page 2 types into another cell; a page 3 opens
after `%load_ext` and leaves; `/undo` puts the cells back; page 1 then leaves and the next turn,
run in page 2, lands through page 2.
Both pages' shared document and the saved file hold each change exactly once, and the cells
nobody touched keep their JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
import pytest
from playwright.sync_api import Browser, Page

from tests.browser.test_bridge_in_lab import (
    edit,
    open_notebook,
    result_texts,
    run_cell,
    wait_idle_count,
)
from tests.browser.test_notebook_live import body_has, shot
from tests.process_helpers import wait_until

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

NAME = "collab.ipynb"

# Every cell of the open notebook: id, source, outputs and execution count, as the page holds it.
CELLS = """path => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  return panel.content.model.sharedModel.cells.map(c => c.toJSON());
}"""

HAND_EDIT = """([path, id, text]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  const cell = panel.content.model.sharedModel.cells.find(c => c.getId() === id);
  cell.setSource(cell.getSource() + text);
}"""

REVERT = """async path => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  await panel.context.revert();
}"""
SAVE = """async path => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  await panel.context.save();
}"""


def collab_notebook(root: Path) -> dict[str, Any]:
    """The notebook both collaborators open; its untouched cells' JSON, by id."""
    nb = nbformat.v4.new_notebook()
    kept = nbformat.v4.new_code_cell("y = 2\ny", id="keep", execution_count=7)
    kept.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=7)]
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell("x = 1", id="target"),
        nbformat.v4.new_code_cell("print('bye')", id="gone"),
        kept,
        nbformat.v4.new_markdown_cell("Notes:", id="hand"),
        nbformat.v4.new_code_cell("%larik --yes --model scripted:turn1.json edit the cells", id="turn1"),
        nbformat.v4.new_code_cell("%larik /undo", id="undo"),
        nbformat.v4.new_code_cell("%larik --model scripted:turn2.json once more", id="turn2"),
        nbformat.v4.new_code_cell("%larik /undo --to 1", id="undo_to"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / NAME)
    for other in ("other.ipynb", "closed.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("o = 1", id="o1")]), root / other)
    return {"keep": json.loads(json.dumps(kept))}


def scripts(root: Path) -> None:
    slow = "Working on the cells now, one careful step at a time, while you type."
    (root / "turn1.json").write_text(json.dumps({"responses": [
        {"content": [
            {"type": "text", "text": slow},
            edit(cell_id="target", new_source="x = 2\nprint('x is', x)"),
            edit(edit_mode="insert", cell_id="target", new_source="z = 3"),
            edit(edit_mode="delete", cell_id="gone"),
            {"type": "tool_use", "name": "notebook_run", "input": {"cell_id": "target"}},
            # Open only in page 2's room, on another kernel: not written behind the room.
            edit(path="other.ipynb", cell_id="o1", new_source="o = 2"),
            edit(path="closed.ipynb", cell_id="o1", new_source="o = 2"),  # in no room: its file
        ], "delay": 0.25},
        {"content": [{"type": "text", "text": "Edits done."}]},
    ]}))
    (root / "turn2.json").write_text(json.dumps({"responses": [
        {"content": [edit(cell_id="target", new_source="x = 5")]},
        {"content": [{"type": "text", "text": "Edited from page 2."}]},
    ]}))


@contextmanager
def another_page(browser: Browser, lab: LabServer, name: str) -> Iterator[Page]:
    """One more collaborator: a browser context of its own with JupyterLab loaded, in a
    workspace of its own (nothing restored from another page's layout)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    folder = f"/tree/{lab.prefix}" if lab.prefix else ""
    page.goto(f"{lab.url}lab/workspaces/{lab.prefix}{name}{folder}")
    page.wait_for_function("!!window.jupyterapp", timeout=120_000)
    page.evaluate("window.jupyterapp.restored.then(() => true)")
    try:
        yield page
    finally:
        context.close()


def open_in(page: Page, lab: LabServer, name: str) -> None:
    """Open `name` in `page` (another notebook may be open there) until it has its kernel's info."""
    page.evaluate("async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", name)
    page.wait_for_function(
        "path => Array.from(window.jupyterapp.shell.widgets('main'))"
        ".find(w => w.context?.path === path)?.content.model?.getMetadata('language_info')?.name",
        arg=name, timeout=60_000,
    )


def errors_of(page: Page) -> list[str]:
    seen: list[str] = []
    page.on("console", lambda m: seen.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.append(str(e)))
    return seen


def ids_once(cells: list[dict[str, Any]]) -> list[str]:
    ids = [str(c["id"]) for c in cells]
    assert len(ids) == len(set(ids)), f"a cell is there twice: {ids}"
    return ids


def by_id(cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(c["id"]): c for c in cells}


def text(outputs: list[dict[str, Any]]) -> str:
    return "".join("".join(o.get("text", "")) for o in outputs)


def saved(lab: LabServer, page: Page, check: str) -> dict[str, dict[str, Any]]:
    """Save through `page` and wait for the file to hold `check`; its cells by id."""
    page.evaluate(SAVE, NAME)
    wait_until(lambda: check in (lab.root / NAME).read_text(), f"the saved {NAME} to hold {check!r}", 60)
    cells = [json.loads(json.dumps(c)) for c in nbformat.read(lab.root / NAME, 4).cells]
    ids_once(cells)
    return by_id(cells)


ACTIVATE = """path => {
  const w = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  window.jupyterapp.shell.activateById(w.id);
}"""
ORDER = ["load", "target", "gone", "keep", "hand", "turn1", "undo", "turn2", "undo_to"]


# The ids of the cells that show "edited by Larik" in the page's panel of a notebook.
MARKED = """path => Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path)
  .content.widgets.filter(w => w.node.querySelector(':scope > .jp-larik-marker')).map(w => w.model.id)"""


@pytest.mark.own_lab(collaboration=True)
def test_two_collaborators_see_each_edit_once_and_a_leaving_page_hands_the_notebook_on(
    lab_page: Page, lab_server: LabServer, lab_browser: Browser
) -> None:
    pytest.importorskip("jupyter_server_ydoc", reason="needs jupyter-collaboration (the test extra)")
    root = lab_server.root
    untouched = collab_notebook(root)
    scripts(root)
    page1_errors = errors_of(lab_page)
    open_notebook(lab_page, lab_server, NAME)

    with ExitStack() as stack:  # the other pages close with the test, whatever happens
        # Page 2 shows the notebook before %load_ext: both pages hear the comm the kernel opens.
        page2 = stack.enter_context(another_page(lab_browser, lab_server, "page2"))
        page2_errors = errors_of(page2)
        open_in(page2, lab_server, "other.ipynb")
        open_in(page2, lab_server, NAME)
        assert page2.evaluate(CELLS, NAME) == lab_page.evaluate(CELLS, NAME)
        kept = by_id(lab_page.evaluate(CELLS, NAME))["keep"]  # as the page holds it (JupyterLab adds `trusted`)
        run_cell(lab_page, 0)
        wait_idle_count(lab_page, "load")

        run_cell(lab_page, 5)
        body_has(lab_page, "Working on")
        page2.evaluate(HAND_EDIT, [NAME, "hand", " typed by page 2"])  # typing while the turn runs
        body_has(lab_page, "Edits done.")
        wait_idle_count(lab_page, "turn1")

        for page in (lab_page, page2):
            wait_until(lambda p=page: by_id(p.evaluate(CELLS, NAME))["target"]["outputs"], "target's output", 60)
            cells = page.evaluate(CELLS, NAME)
            ids = ids_once(cells)
            cell = by_id(cells)
            assert ids[:2] == ["load", "target"] and ids[3:5] == ["keep", "hand"] and len(ids) == 9, ids
            assert cell[ids[2]]["source"] == "z = 3"
            assert cell["target"]["source"] == "x = 2\nprint('x is', x)"
            assert text(cell["target"]["outputs"]) == "x is 2\n"  # once, not once per page
            assert cell["hand"]["source"] == "Notes: typed by page 2"
            assert cell["keep"] == kept
            # Page 2 applied none of the edits: their markers came with the shared document.
            wait_until(lambda p=page, i=ids: set(p.evaluate(MARKED, NAME)) == {"target", i[2]}, "the markers", 30)
        *_, other, closed = result_texts(root)
        assert other.startswith(
            "Not landed: other.ipynb is open in a real-time collaboration room of jupyter-collaboration,"
        ), other
        assert "o = 1" in (root / "other.ipynb").read_text() and "o = 2" in (root / "closed.ipynb").read_text()
        shot(lab_page, "collab_page1_after_turn")
        shot(page2, "collab_page2_after_turn")

        file = saved(lab_server, lab_page, "x is 2")
        assert file["target"]["source"] == "x = 2\nprint('x is', x)" and "gone" not in file
        assert text(file["target"]["outputs"]) == "x is 2\n"
        assert file["hand"]["source"] == "Notes: typed by page 2"
        assert file["keep"] == untouched["keep"]

        # Page 3 opens the notebook after %load_ext and leaves mid-session; /undo in page 1
        # puts the turn's cells back, once each.
        with another_page(lab_browser, lab_server, "page3") as page3:
            page3_errors = errors_of(page3)
            open_in(page3, lab_server, NAME)
        run_cell(lab_page, 6)  # the inserted cell moved /undo down one
        body_has(lab_page, "in the open notebook")
        wait_idle_count(lab_page, "undo")
        for page in (lab_page, page2):
            cells = page.evaluate(CELLS, NAME)
            assert ids_once(cells) == ORDER
            assert by_id(cells)["target"]["source"] == "x = 1" and by_id(cells)["gone"]["source"] == "print('bye')"
            assert by_id(cells)["hand"]["source"] == "Notes: typed by page 2"  # undo keeps the collaborator's typing
        shot(lab_page, "collab_page1_after_undo")
        shot(page2, "collab_page2_after_undo")

        # Page 1 leaves; the next turn, run in page 2, asks there and lands through page 2.
        lab_page.goto("about:blank")  # the tab leaves JupyterLab
        page2.evaluate(ACTIVATE, NAME)
        run_cell(page2, 7)
        allow = page2.get_by_role("button", name="Allow once")
        allow.wait_for(timeout=60_000)
        shot(page2, "collab_page2_approval")
        allow.click()
        body_has(page2, "Edited from page 2.")
        wait_idle_count(page2, "turn2")
        cells = page2.evaluate(CELLS, NAME)
        assert by_id(cells)["target"]["source"] == "x = 5"
        assert ids_once(cells) == ORDER
        shot(page2, "collab_page2_after_handover")
        file = saved(lab_server, page2, "x = 5")
        assert file["keep"] == untouched["keep"]

        # /undo --to 1 in page 2: prompt 2's edit goes (prompt 1 is undone already).
        run_cell(page2, 8)
        body_has(page2, "Undid prompt 2")
        wait_idle_count(page2, "undo_to")
        cells = page2.evaluate(CELLS, NAME)
        assert ids_once(cells) == ORDER and by_id(cells)["target"]["source"] == "x = 1"
        shot(page2, "collab_page2_after_undo_to")
        assert saved(lab_server, page2, "Undid prompt 2")["target"]["source"] == "x = 1"
        assert [e for e in page1_errors + page2_errors + page3_errors if "larik" in e or "TypeError" in e] == []


def test_without_collaboration_each_page_keeps_its_own_copy_exact(
    lab_page: Page, lab_server: LabServer, lab_browser: Browser
) -> None:
    """The default (no collaboration backend): two pages on one notebook each hold their own
    copy; the page that ran the turn answers, the other follows the edits silently, and each
    holds every change once. A page that opened the notebook after `%load_ext` shows the edits,
    with their markers, once it reloads the notebook from the saved file."""
    root = lab_server.root
    collab_notebook(root)
    scripts(root)
    name = lab_server.path(NAME)
    open_notebook(lab_page, lab_server, NAME)
    with ExitStack() as stack:
        page2 = stack.enter_context(another_page(lab_browser, lab_server, "page2"))
        open_in(page2, lab_server, name)
        run_cell(lab_page, 0)
        wait_idle_count(lab_page, "load")
        page3 = stack.enter_context(another_page(lab_browser, lab_server, "page3"))
        open_in(page3, lab_server, name)
        run_cell(lab_page, 5)
        body_has(lab_page, "Edits done.")
        wait_idle_count(lab_page, "turn1")
        for page in (lab_page, page2):
            cells = page.evaluate(CELLS, name)
            ids = ids_once(cells)
            assert ids[:2] == ["load", "target"] and ids[3:5] == ["keep", "hand"] and "gone" not in ids, ids
            assert by_id(cells)["target"]["source"] == "x = 2\nprint('x is', x)"
            assert text(by_id(cells)["target"]["outputs"]) == "x is 2\n"
        shot(page2, "own_copies_page2")
        lab_page.evaluate(SAVE, name)
        wait_until(lambda: "x is 2" in (root / NAME).read_text(), f"the saved {NAME}", 60)
        page3.evaluate(REVERT, name)
        page3.wait_for_function(
            f"path => ({CELLS})(path).some(c => c.id === 'target' && c.source.startsWith('x = 2'))", arg=name
        )
        inserted = ids_once(lab_page.evaluate(CELLS, name))[2]
        wait_until(lambda: set(page3.evaluate(MARKED, name)) == {"target", inserted}, "page 3's markers", 30)
        shot(page3, "own_copies_page3_reloaded")
        assert page2.evaluate("path => Array.from(window.jupyterapp.shell.widgets('main'))"
                              ".find(w => w.context?.path === path).context.model.collaborative", name) is False
