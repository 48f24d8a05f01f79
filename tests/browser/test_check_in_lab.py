"""In a real JupyterLab: the line under a `python` call says what it did to the user's
variables, and a problem of the `/check` report links to its cell in the open notebook."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page, expect

from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has, shot

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

ACTIVE = "() => window.jupyterapp.shell.currentWidget.content.activeCell.model.id"
CELLS = ["load", "setup", "data", "change", "broken", "later", "check"]


def test_variable_line_under_a_python_call_and_check_links_to_the_failing_cell(
    lab_page: Page, lab_server: LabServer
) -> None:
    page = lab_page
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": "data.append(4); x = 5"}}]},
        {"content": [{"type": "text", "text": "Changed."}]},
    ]}
    (lab_server.root / "script.json").write_text(json.dumps(script))
    setup = (
        "import os\nos.environ['LARIK_MODEL'] = 'scripted:script.json'\n"
        "get_ipython().magics_manager.registry['LarikMagics'].yes = True"
    )
    sources = ["%load_ext larik_jupyter", setup, "data = [1, 2, 3]", "%larik change data",
               "total = missing + 1", "print('after')", "%larik /check"]  # fmt: skip
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s, id=i) for i, s in zip(CELLS, sources, strict=True)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab_server.root / "check.ipynb")
    open_notebook(page, lab_server, "check.ipynb")
    for index in range(4):
        run_cell(page, index)
        wait_idle_count(page, CELLS[index])
    body_has(page, "data: list len 3 → len 4, changed in place · x: created int")
    shot(page, "check_variable_line")

    run_cell(page, 6)
    wait_idle_count(page, "check", timeout=120_000)
    link = page.locator(".larik-check-link", has_text="NameError: name 'missing' is not defined")
    expect(link).to_have_count(1)
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")
    link.click()
    page.wait_for_function(f"() => ({ACTIVE})() === 'broken'", timeout=20_000)
    shot(page, "check_links_to_cell")


def test_the_sidebar_shows_the_variable_line_under_a_python_result(lab_page: Page, lab_server: LabServer) -> None:
    import os
    from pathlib import Path

    from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock, user_text
    from larik_jupyter.session.store import Session

    root = Path(os.path.realpath(lab_server.root))
    changes = [
        {"name": "data", "change": "changed", "before": "list len 3", "after": "list len 4"},
        {"name": "x", "change": "created", "after": "int"},
    ]
    with Session.create(root, "scripted", "demo") as session:
        session.append_message(user_text("change data"))
        call = ToolUseBlock(id="t1", name="python", input={"code": "data.append(4); x = 5"})
        session.append_message(Message(role="assistant", content=[call]))
        result = ToolResultBlock(tool_use_id="t1", content="(no output)", variables=changes)
        session.append_message(Message(role="user", content=[result]))
        sid = session.id
    page = lab_page
    page.click('li[data-id="larik-sessions"]')
    page.click(f'.jp-larik-node[data-session-id="{sid}"] > .jp-larik-row')
    line = page.locator(".jp-larik-transcript .jp-larik-variables")
    expect(line).to_have_text("Variables · data: list len 3 → len 4, changed in place · x: created int")
    shot(page, "sidebar_variable_line")
