"""Live edits under jupyter-server-documents (Jupyter AI's `rtc-jsd` backend): the server owns
each open notebook's document and runs its cells, and no comm reaches the kernel, so larik sees
no page. A scripted turn run in the page edits the open notebook (refused with one sentence
naming the backend: the room's document, the running cell's output and the earlier cells'
counts stay) and a notebook no room holds (written); `/undo` puts that file back without
`--force`; once the page opens it too, the next `/undo` of it is refused with one sentence and
the file is left as the room has it (never written behind the room, with or without `--force`).
No widget renders there, so a call that needs an approval is asked through larik's server
extension: the page shows the card over the notebook, Deny leaves the file with the reason told
to the model, Allow lets the write happen, and interrupting the kernel (Stop) while a card waits
ends the turn and takes the card away. The streamed transcript is one output of the `%larik`
cell, also when the cell held outputs from an earlier run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from playwright.sync_api import Page

from tests.browser.conftest import SERVER_DOCUMENTS
from tests.browser.test_bridge_in_lab import edit, result_texts, run_cell, wait_idle_count
from tests.browser.test_collaboration_in_lab import ACTIVATE, CELLS, by_id, open_in
from tests.browser.test_notebook_live import body_has, shot
from tests.process_helpers import wait_until

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

NAME = "jsd.ipynb"
HELD = f"is open in a real-time collaboration room of {SERVER_DOCUMENTS},"

# How many outputs of the cell show `text` (the transcript, once per update that was appended).
SHOWING = """([id, text]) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const index = panel.content.model.sharedModel.cells.findIndex(c => c.getId() === id);
  const outputs = panel.content.widgets[index].node.querySelectorAll('.jp-OutputArea-output');
  return Array.from(outputs).filter(o => o.textContent.includes(text)).length;
}"""


def jsd_notebook(root: Path) -> None:
    """The open notebook (its `%larik` cell holds an earlier run's output, as a saved notebook
    does) and one no room holds; the scripted turns."""
    turn1 = nbformat.v4.new_code_cell("%larik --yes --model scripted:turn1.json edit the cells", id="turn1")
    turn1.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "an earlier run"})]
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell("x = 1", id="target"),
        turn1,
        nbformat.v4.new_code_cell("%larik /undo", id="undo1"),
        nbformat.v4.new_code_cell("%larik --yes --model scripted:turn2.json once more", id="turn2"),
        nbformat.v4.new_code_cell("%larik /undo", id="undo2"),
        nbformat.v4.new_code_cell("%larik --model scripted:turn3.json ask first", id="ask"),
        nbformat.v4.new_code_cell("%larik --model scripted:turn4.json ask again", id="ask2"),
        nbformat.v4.new_code_cell("%larik --model scripted:turn5.json ask, then stop", id="ask3"),
    ])  # fmt: skip
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / NAME)
    for other in ("closed.ipynb", "other.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("o = 1", id="o1")]), root / other)
    slow = "Working on the cells now, one careful step at a time."
    (root / "turn1.json").write_text(json.dumps({"responses": [
        {"content": [
            {"type": "text", "text": slow},
            edit(cell_id="target", new_source="x = 2"),  # the open notebook: its room holds it
            edit(path="closed.ipynb", cell_id="o1", new_source="o = 2"),  # in no room: its file
        ], "delay": 0.25},
        {"content": [{"type": "text", "text": "Edits done."}]},
    ]}))  # fmt: skip
    (root / "turn2.json").write_text(json.dumps({"responses": [
        {"content": [edit(path="closed.ipynb", cell_id="o1", new_source="o = 3")]},
        {"content": [{"type": "text", "text": "Edited again."}]},
    ]}))  # fmt: skip
    for turn, source, said in (("turn3", "o = 4", "Asked."), ("turn4", "o = 5", "Asked again."), ("turn5", "o = 6", "Not reached.")):
        (root / f"{turn}.json").write_text(json.dumps({"responses": [
            {"content": [edit(path="other.ipynb", cell_id="o1", new_source=source)]},
            {"content": [{"type": "text", "text": said}]},
        ]}))  # fmt: skip


def source_of(root: Path, name: str) -> str:
    """The first cell's source of the file as it is on disk, once it is whole: a room that holds
    the notebook saves it by truncating and writing, so a read may find it empty for a moment
    (its content is still what is asserted: an empty file is waited past, never a pass)."""
    found: list[str] = []

    def whole() -> bool:
        try:
            found.append(str(nbformat.read(root / name, 4).cells[0].source))
        except nbformat.reader.NotJSONError:
            return False
        return True

    wait_until(whole, f"{name} to be whole JSON", 10)
    return found[-1]


def run_and_wait(page: Page, index: int, cell_id: str, text: str) -> None:
    page.evaluate(ACTIVATE, NAME)
    run_cell(page, index)
    body_has(page, text)
    wait_idle_count(page, cell_id)


@pytest.mark.own_lab(collaboration=SERVER_DOCUMENTS)
def test_under_server_documents_the_open_notebook_is_never_written_behind_its_room(
    lab_page: Page, lab_server: LabServer
) -> None:
    pytest.importorskip("jupyter_server_documents", reason="needs jupyter-server-documents (the test extra)")
    root = lab_server.root
    jsd_notebook(root)
    open_in(lab_page, lab_server, NAME)  # the server's own kernel client is its one connection
    answer = lab_server.api(f"larik/api/room?path={NAME}")
    assert answer == {"backend": SERVER_DOCUMENTS, "open": True}, answer
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")

    run_and_wait(lab_page, 2, "turn1", "Edits done.")
    held, written = result_texts(root)
    assert held.startswith(f"Not landed: {NAME} {HELD}"), held
    assert "close it in every tab" in held and not written.startswith("Not landed"), (held, written)
    cells = by_id(lab_page.evaluate(CELLS, NAME))
    assert cells["target"]["source"] == "x = 1"  # the room's document, not a file loaded over it
    assert cells["load"]["execution_count"] is not None  # counts not wiped by a reload
    assert lab_page.evaluate(SHOWING, ["turn1", "Edits done."]) == 1  # the running cell's output kept, once
    assert lab_page.evaluate(SHOWING, ["turn1", "Working on"]) == 1  # each update replaced it
    assert lab_page.evaluate(SHOWING, ["turn1", "an earlier run"]) == 0
    assert source_of(root, NAME) == "%load_ext larik_jupyter" and "x = 1" in (root / NAME).read_text()
    assert source_of(root, "closed.ipynb") == "o = 2"
    shot(lab_page, "jsd_after_turn")

    # /undo of a notebook only larik changed, in no room: its file is put back, no --force.
    run_and_wait(lab_page, 3, "undo1", "Undid")
    assert source_of(root, "closed.ipynb") == "o = 1"
    run_and_wait(lab_page, 4, "turn2", "Edited again.")
    assert source_of(root, "closed.ipynb") == "o = 3"

    # Once a room holds it, /undo says in one sentence why it leaves the file as it is.
    open_in(lab_page, lab_server, "closed.ipynb")
    wait_until(
        lambda: lab_server.api("larik/api/room?path=closed.ipynb")["open"], "a room to hold closed.ipynb", 60
    )
    run_and_wait(lab_page, 5, "undo2", "so it was not restored; close it in every tab, and undo again once its room")
    body_has(lab_page, HELD)
    assert source_of(root, "closed.ipynb") == "o = 3"
    assert by_id(lab_page.evaluate(CELLS, "closed.ipynb"))["o1"]["source"] == "o = 3"
    lab_page.evaluate(ACTIVATE, NAME)
    lab_page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets[5].node.scrollIntoView()")
    shot(lab_page, "jsd_after_undo_refused")

    # No widget renders there: the ask comes to the page through the server, as a card over
    # the notebook; Deny leaves the file and tells the model the reason.
    lab_page.evaluate(ACTIVATE, NAME)
    run_cell(lab_page, 6)
    card = lab_page.locator(".larik-page-approval")
    card.wait_for(timeout=60_000)
    assert "other.ipynb" in card.inner_text() and "o = 4" in card.inner_text(), card.inner_text()
    shot(lab_page, "jsd_approval_card")
    card.locator("input").fill("not that one")
    card.get_by_role("button", name="Deny").click()
    body_has(lab_page, "Asked.")
    wait_idle_count(lab_page, "ask")
    denied = result_texts(root)[-1]
    assert denied.startswith("The user denied permission for ") and "not that one" in denied, denied
    assert source_of(root, "other.ipynb") == "o = 1"
    assert lab_page.locator(".larik-page-approval").count() == 0

    # Allow once lets the write happen.
    run_cell(lab_page, 7)
    card.wait_for(timeout=60_000)
    card.get_by_role("button", name="Allow once").click()
    body_has(lab_page, "Asked again.")
    wait_idle_count(lab_page, "ask2")
    assert source_of(root, "other.ipynb") == "o = 5"

    # Stop (the kernel interrupted) while a card waits: the turn ends, and the card goes with it.
    run_cell(lab_page, 8)
    card.wait_for(timeout=60_000)
    lab_page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.interrupt()")
    card.wait_for(state="detached", timeout=60_000)
    wait_idle_count(lab_page, "ask3")
    body_has(lab_page, '("o = 6"): cancelled, the turn ended before an answer')
    assert source_of(root, "other.ipynb") == "o = 5"
    assert lab_server.api(f"larik/api/approvals?path={NAME}") == {"live": True, "approvals": []}
    lab_page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets[8].node.scrollIntoView()")
    shot(lab_page, "jsd_after_stop")
