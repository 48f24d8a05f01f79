"""The notebook bridge in a real JupyterLab: a scripted turn's cell edits land in the open page
(no reload, no dialog, the file untouched until save), a vanished cell is reported as not landed,
notebook_run puts text and a PNG into the cell, and the bridge survives a reload and a restart."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
from playwright.sync_api import Page

from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.browser.test_notebook_live import body_has, shot
from tests.process_helpers import wait_until

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

# A 1x1 PNG, displayed by the cell notebook_run runs.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201"
        "e5274de20000000049454e44ae426082"
    )
).decode()

SOURCES = """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
  .map(c => c.getId() + '|' + c.getSource())"""

CELL = """id => {
  const cell = window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
    .find(c => c.getId() === id);
  return cell ? cell.toJSON() : null;
}"""


def notebook(root: Path, name: str, prompt_cell: str, extra: list[Any] | None = None) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell("x = 1", id="target"),
        nbformat.v4.new_code_cell("print('bye')", id="gone"),
        *(extra or []),
        nbformat.v4.new_code_cell(prompt_cell, id="prompt"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / name)
    return (root / name).read_bytes()


def edit(**args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": "notebook_edit", "input": args}


def open_notebook(page: Page, lab: LabServer, name: str) -> None:
    page.evaluate("async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", lab.path(name))
    page.wait_for_selector(".jp-Notebook")
    lab.wait_for_idle_kernel()
    # The page has the kernel's info (it writes `language_info` into the notebook's metadata):
    # a save before that writes other bytes than every save after it.
    page.wait_for_function(
        "path => Array.from(window.jupyterapp.shell.widgets('main'))"
        ".find(w => w.context?.path === path)?.content.model?.getMetadata('language_info')?.name",
        arg=lab.path(name), timeout=60_000,
    )


def run_cell(page: Page, index: int) -> None:
    page.evaluate(
        """i => { const panel = window.jupyterapp.shell.currentWidget;
                  panel.content.activeCellIndex = i;
                  window.jupyterapp.commands.execute('notebook:run-cell'); }""",
        index,
    )


def wait_idle_count(page: Page, cell_id: str, timeout: float = 60_000) -> None:
    """Until the cell has an execution count and the kernel is idle."""
    page.wait_for_function(
        """id => { const panel = window.jupyterapp.shell.currentWidget;
                   const cell = panel.content.model.sharedModel.cells.find(c => c.getId() === id);
                   return cell && cell.execution_count && panel.sessionContext.session?.kernel?.status === 'idle'; }""",
        arg=cell_id,
        timeout=timeout,
    )


def result_texts(root: Path) -> list[str]:
    """The tool results of the newest session, as text."""
    info = max(list_sessions(root), key=lambda s: Path(s.path).name)
    out = []
    for entry in load_entries(info.path).entries:
        if entry.message is None:
            continue
        for block in entry.message.tool_results():
            content = block.content
            out.append(content if isinstance(content, str) else json.dumps([b.model_dump() for b in content]))
    return out


def test_scripted_turn_edits_land_in_the_open_page_and_a_vanished_cell_is_not_landed(
    lab_page: Page, lab_server: LabServer
) -> None:
    script = {
        "responses": [
            {"content": [
                edit(cell_id="target", new_source="x = 2"),
                edit(edit_mode="insert", cell_id="target", new_source="print('inserted', x)"),
                edit(cell_id="target", old_string="2", new_string="40 + 2"),
                edit(edit_mode="delete", cell_id="gone"),
                edit(cell_id="gone", new_source="print('again')"),
            ]},
            {"content": [{"type": "text", "text": "Edits done."}]},
        ]
    }
    (lab_server.root / "script.json").write_text(json.dumps(script))
    original = notebook(lab_server.root, "edit.ipynb", "%larik --yes --model scripted:script.json edit cells")
    open_notebook(lab_page, lab_server, "edit.ipynb")
    lab_page.evaluate("window.__marker = 'same page'")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 3)
    body_has(lab_page, "Edits done.")
    sources = lab_page.evaluate(SOURCES)
    assert sources[:3] == ["load|%load_ext larik_jupyter", "target|x = 40 + 2", sources[2]]
    assert sources[2].endswith("|print('inserted', x)")
    assert not any(s.startswith("gone|") for s in sources)
    # The same page (no reload), no dialog, a dirty document, the file untouched until saved.
    assert lab_page.evaluate("window.__marker") == "same page"
    assert lab_page.locator(".jp-Dialog").count() == 0
    assert lab_page.evaluate("window.jupyterapp.shell.currentWidget.context.model.dirty")
    assert (lab_server.root / "edit.ipynb").read_bytes() == original
    # Provenance and the visible marker on the changed cells.
    target = lab_page.evaluate(CELL, "target")
    assert target["metadata"]["larik"]["prompt"] == 1
    assert target["metadata"]["larik"]["tool_use_id"]
    assert lab_page.locator(".jp-larik-marker", has_text="edited by Larik · prompt 1").count() == 2
    results = result_texts(lab_server.root)
    assert "landed in the open notebook" in results[0]
    assert results[-1].startswith("Not landed:") and "'gone'" in results[-1]
    shot(lab_page, "bridge_edits_landed")
    # Saving writes the live document; the marker goes when the user edits the cell.
    lab_page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    wait_until(lambda: (lab_server.root / "edit.ipynb").read_bytes() != original, "the save to write edit.ipynb", 60)
    saved = nbformat.read(lab_server.root / "edit.ipynb", 4)
    assert [c.source for c in saved.cells][1] == "x = 40 + 2"
    lab_page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
             .find(c => c.getId() === 'target').setSource('x = 3')"""
    )
    assert lab_page.locator(".jp-larik-marker").count() == 1


def test_notebook_run_puts_text_and_a_png_into_the_cell(lab_page: Page, lab_server: LabServer) -> None:
    code = (
        "from IPython.display import Image, display\nimport base64\n"
        f"print('ran with', x)\ndisplay(Image(data=base64.b64decode('{PNG}')))\nx * 2"
    )
    script = {
        "responses": [
            {"content": [edit(cell_id="gone", new_source=code),
                         {"type": "tool_use", "name": "notebook_run", "input": {"cell_id": "gone"}}]},
            {"content": [{"type": "text", "text": "Ran it."}]},
        ]
    }
    (lab_server.root / "script.json").write_text(json.dumps(script))
    notebook(lab_server.root, "run.ipynb", "%larik --yes --model scripted:script.json run a cell")
    open_notebook(lab_page, lab_server, "run.ipynb")
    for index, cell_id in ((0, "load"), (1, "target")):
        run_cell(lab_page, index)
        wait_idle_count(lab_page, cell_id)
    run_cell(lab_page, 3)
    body_has(lab_page, "Ran it.")
    cell = lab_page.evaluate(CELL, "gone")
    kinds = [o["output_type"] for o in cell["outputs"]]
    assert kinds == ["stream", "display_data", "execute_result"], cell["outputs"]
    assert cell["outputs"][0]["text"] == "ran with 1\n"
    assert cell["outputs"][1]["data"]["image/png"]
    assert cell["outputs"][2]["data"]["text/plain"] == "2"
    assert cell["execution_count"] and cell["execution_count"] > 2
    lab_page.locator(".jp-Cell img").first.wait_for()
    results = result_texts(lab_server.root)
    assert "ran with 1" in results[-1] and "image" in results[-1]
    shot(lab_page, "bridge_notebook_run")


def test_bridge_survives_page_reload_and_kernel_restart(lab_page: Page, lab_server: LabServer) -> None:
    script = {
        "responses": [
            {"content": [edit(cell_id="target", new_source="x = 'again'")]},
            {"content": [{"type": "text", "text": "Edited again."}]},
        ]
    }
    (lab_server.root / "script.json").write_text(json.dumps(script))
    notebook(lab_server.root, "keep.ipynb", "%larik --yes --model scripted:script.json edit once")
    open_notebook(lab_page, lab_server, "keep.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    # Reload the page: the panel reopens and connects to the kernel that has the extension.
    lab_page.reload()
    lab_page.wait_for_function("!!window.jupyterapp")
    lab_page.evaluate("window.jupyterapp.restored.then(() => true)")
    open_notebook(lab_page, lab_server, "keep.ipynb")
    run_cell(lab_page, 3)
    body_has(lab_page, "Edited again.")
    assert lab_page.evaluate(CELL, "target")["source"] == "x = 'again'"
    # Restart the kernel, load the extension again: the kernel's own comm reaches the panel.
    lab_page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab_server.wait_for_idle_kernel()
    (lab_server.root / "script.json").write_text(json.dumps({
        "responses": [
            {"content": [edit(cell_id="target", new_source="x = 'restarted'")]},
            {"content": [{"type": "text", "text": "After restart."}]},
        ]
    }))
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 3)
    body_has(lab_page, "After restart.")
    assert lab_page.evaluate(CELL, "target")["source"] == "x = 'restarted'"
    results = result_texts(lab_server.root)
    assert all("landed in the open notebook" in r for r in results[-1:])


def test_approval_card_shows_the_cell_diff_before_the_edit_lands(lab_page: Page, lab_server: LabServer) -> None:
    script = {
        "responses": [
            {"content": [edit(cell_id="target", new_source="x = 'approved'")]},
            {"content": [{"type": "text", "text": "Approved edit done."}]},
        ]
    }
    (lab_server.root / "script.json").write_text(json.dumps(script))
    notebook(lab_server.root, "ask.ipynb", "%larik --model scripted:script.json change x")
    open_notebook(lab_page, lab_server, "ask.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 3)
    allow = lab_page.get_by_role("button", name="Allow once")
    allow.wait_for(timeout=60_000)
    card = lab_page.locator(".jp-OutputArea-output", has=allow)
    text = card.inner_text()
    assert "-x = 1" in text and "+x = 'approved'" in text and "ask.ipynb cell 2 (target)" in text
    assert lab_page.evaluate(CELL, "target")["source"] == "x = 1"
    shot(lab_page, "bridge_approval_diff")
    allow.click()
    body_has(lab_page, "Approved edit done.")
    assert lab_page.evaluate(CELL, "target")["source"] == "x = 'approved'"


def test_fix_with_larik_button_inserts_and_runs_a_fix_prompt(lab_page: Page, lab_server: LabServer) -> None:
    script = {
        "responses": [
            {"content": [edit(cell_id="boom", new_source="1 / 1"),
                         {"type": "tool_use", "name": "notebook_run", "input": {"cell_id": "boom"}}]},
            {"content": [{"type": "text", "text": "Fixed the division."}]},
        ]
    }
    (lab_server.root / "script.json").write_text(json.dumps(script))
    setup = (
        "import os\nos.environ['LARIK_MODEL'] = 'scripted:script.json'\n"
        "get_ipython().magics_manager.registry['LarikMagics'].yes = True"
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell(setup, id="setup"),
        nbformat.v4.new_code_cell("1 / 0", id="boom"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab_server.root / "fix.ipynb")
    open_notebook(lab_page, lab_server, "fix.ipynb")
    for index, cell_id in ((0, "load"), (1, "setup")):
        run_cell(lab_page, index)
        wait_idle_count(lab_page, cell_id)
    run_cell(lab_page, 2)
    button = lab_page.get_by_role("button", name="Fix with Larik")
    button.wait_for(timeout=60_000)
    shot(lab_page, "bridge_fix_button")
    button.click()
    body_has(lab_page, "Fixed the division.")
    sources = lab_page.evaluate(SOURCES)
    assert sources[3].split("|", 1)[1].startswith("%%larik\nFix the error in cell boom")
    assert "ZeroDivisionError" in sources[3]
    boom = lab_page.evaluate(CELL, "boom")
    assert boom["source"] == "1 / 1"
    assert [o["output_type"] for o in boom["outputs"]] == ["execute_result"]
    assert lab_page.get_by_role("button", name="Fix with Larik").count() == 0


MALFORMED = """import asyncio
from larik_jupyter.frontends.notebook import extension
from larik_jupyter.bridge_protocol import Delete
bridge = extension._magics.bridge
try:
    await asyncio.to_thread(bridge.request, bridge.notebook_path, Delete(cell_id=12))
except Exception as exc:
    print(type(exc).__name__, exc)"""


def test_a_malformed_request_gets_the_pages_typed_error(lab_page: Page, lab_server: LabServer) -> None:
    # A `delete` whose cell id is a number, not a string: the page answers with the declared
    # protocol's error, and the kernel's request fails with the page's reason (its words below,
    # not the reply timeout's "within 10 s").
    notebook(lab_server.root, "malformed.ipynb", MALFORMED)
    open_notebook(lab_page, lab_server, "malformed.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 3)
    wait_idle_count(lab_page, "prompt")
    (output,) = lab_page.evaluate(CELL, "prompt")["outputs"]
    text = "".join(output["text"])
    assert "Refused Not landed: deleting cell 12 failed in the open notebook: malformed request: " in text
    assert "delete's cell_id is number, not string" in text
    assert lab_page.evaluate(SOURCES)[:3] == ["load|%load_ext larik_jupyter", "target|x = 1", "gone|print('bye')"]


TWICE = """import asyncio
from larik_jupyter.frontends.notebook import extension
from larik_jupyter.bridge_protocol import Delete, Insert, Patch, Replace
bridge = extension._magics.bridge
def code(cell_id, source):
    return {"id": cell_id, "cell_type": "code", "source": source, "metadata": {}, "outputs": [], "execution_count": None}
def patch(old, new, call):
    mark = {"larik": {"session": "20260101-000000-aaaaaa", "prompt": 1, "tool_use_id": call}}
    return Patch(cell_id="other", old_string=old, new_string=new, metadata=mark)
ops = [Insert(after="target", cell=code("dup", "d = 1")), Insert(after="target", cell=code("dup", "d = 1")),
       Insert(after="target", cell=code("other", "d = 1")),
       Replace(cell_id="target", cell=code("target", "x = 9")), Replace(cell_id="target", cell=code("target", "x = 9")),
       Delete(cell_id="gone"), Delete(cell_id="gone"),
       patch("d = 1", "d = 1 + 1", "call1"), patch("d = 1", "d = 1 + 1", "call1"), patch("1 + 1", "2", "call2")]
for op in ops:
    reply = await asyncio.to_thread(bridge.request, bridge.notebook_path, op)
    print(op.__struct_config__.tag, reply.__struct_config__.tag, reply.cell_ids)"""


def test_a_request_that_reaches_the_notebook_twice_changes_it_once(lab_page: Page, lab_server: LabServer) -> None:
    # A request may be sent again (to another page, when the first did not answer): each op
    # checks the document first. The made-false twins: an insert of another id is a new cell,
    # a patch of another call changes the cell again.
    notebook(lab_server.root, "twice.ipynb", TWICE)
    open_notebook(lab_page, lab_server, "twice.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 3)
    wait_idle_count(lab_page, "prompt")
    (output,) = lab_page.evaluate(CELL, "prompt")["outputs"]
    assert "".join(output["text"]).splitlines() == [
        "insert changed ['dup']", "insert changed ['dup']", "insert changed ['other']",
        "replace changed ['target']", "replace changed ['target']", "delete changed []", "delete changed []",
        "patch changed ['other']", "patch changed ['other']", "patch changed ['other']",
    ]
    # A patch that came twice leaves `d = 1 + 1` (not `d = 1 + 1 + 1`); another call's patch lands.
    assert lab_page.evaluate(SOURCES)[:4] == ["load|%load_ext larik_jupyter", "target|x = 9", "other|d = 2", "dup|d = 1"]
    assert lab_page.evaluate(SOURCES)[4].startswith("prompt|")
