"""`larik-jupyter mcp` against a notebook open in a real JupyterLab: the `mcp` SDK's stdio client
drives a ten-step analysis (found through the server's runtime files), the edits land in the
open notebook, the sidebar lists the client's session, `/undo` in the notebook reverts the
DataFrame and the cell, and protect mode asks in the page."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
import nbformat
from mcp import ClientSession, StdioServerParameters, stdio_client
from playwright.sync_api import Page, expect

from larik_jupyter.session.catalog import list_sessions
from tests.agent_helpers import personal
from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

CLIENT = "lab-client"
ALLOW = {"permissions": {"allow": ["python", "notebook_edit", "notebook_run", "notebook_check"]}}
SOURCE_OF = """id => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
  .find(c => c.getId() === id).getSource()"""
OUTPUTS_OF = """id => JSON.stringify(window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
  .find(c => c.getId() === id).toJSON().outputs)"""
ADD_CELL = """([source, id]) => { const panel = window.jupyterapp.shell.currentWidget;
  const model = panel.content.model.sharedModel;
  model.insertCell(model.cells.length, {cell_type: 'code', source, id}); return model.cells.length - 1; }"""


def analysis(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})", id="load"),
        nbformat.v4.new_code_cell("total = df['a'].sum()\ntotal", id="total"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "analysis.ipynb")


class Client(threading.Thread):
    """The stdio client on a thread of its own (the page is driven from this one meanwhile)."""

    def __init__(self, lab: LabServer, steps: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(daemon=True)
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(lab.runtime_dir)}
        self.params = StdioServerParameters(
            command=sys.executable, args=["-m", "larik_jupyter", "mcp", "--notebook", "analysis.ipynb"],
            env=env, cwd=str(lab.root),
        )
        self.steps = steps
        self.results: list[types.CallToolResult] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._drive())
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    async def _drive(self) -> None:
        async with stdio_client(self.params) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session:
                await session.initialize()
                for name, args in self.steps:
                    self.results.append(await session.call_tool(name, args))

    def texts(self) -> list[str]:
        return ["\n".join(c.text for c in r.content if isinstance(c, types.TextContent)) for r in self.results]


def finished(client: Client) -> list[str]:
    client.join(180)
    assert not client.is_alive() and client.error is None, client.error
    return client.texts()


def run_new_cell(page: Page, source: str, cell_id: str) -> None:
    index = page.evaluate(ADD_CELL, [source, cell_id])
    run_cell(page, index)
    wait_idle_count(page, cell_id)


def test_outside_agent_works_in_the_open_notebook_and_the_person_undoes_it(lab_page: Page, lab_server: LabServer) -> None:
    personal(ALLOW)
    root = lab_server.root
    analysis(root)
    open_notebook(lab_page, lab_server, "analysis.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")

    steps: list[tuple[str, dict[str, Any]]] = [
        ("notebook_read", {}),
        ("python", {"code": "df['b'] = df['a'] * 10\nprint(df.shape)"}),
        ("variable_report", {}),
        ("notebook_edit", {"cell_id": "total", "edit_mode": "replace", "new_source": "total = df['b'].sum()\ntotal"}),
        ("notebook_run", {"cell_id": "total"}),
        ("notebook_read", {}),
        ("notebook_check", {}),
        ("undo_list", {}),
        ("transcript", {}),
        ("python", {"code": "print(sorted(df.columns))"}),
    ]
    client = Client(lab_server, steps)
    client.start()
    said = finished(client)
    assert not any(r.is_error for r in client.results), said
    assert "(3, 2)" in said[1] and "3×1 → 3×2" in said[2]
    # The edit and the run landed in the open notebook, not behind it in the file.
    assert lab_page.evaluate(SOURCE_OF, "total") == "total = df['b'].sum()\ntotal"
    assert "60" in lab_page.evaluate(OUTPUTS_OF, "total")
    assert "df['b'].sum()" not in nbformat.read(root / "analysis.ipynb", as_version=4).cells[1].source

    # The sidebar lists the client's session, named after it.
    [info] = list_sessions(root)
    lab_page.click('li[data-id="larik-sessions"]')
    row = lab_page.locator(f'.jp-larik-node[data-session-id="{info.id}"] > .jp-larik-row')
    expect(row).to_contain_text(f"{CLIENT}: ")

    # /undo in the notebook takes back the cell edit and the DataFrame change (calls 2 to 4).
    run_new_cell(lab_page, f"%larik /resume {info.id}", "resume")
    run_new_cell(lab_page, "%larik /undo --to 2", "undo")
    run_new_cell(lab_page, "print(sorted(df.columns))", "columns")
    assert "['a']" in lab_page.evaluate(OUTPUTS_OF, "columns")
    assert lab_page.evaluate(SOURCE_OF, "total") == "total = df['a'].sum()\ntotal"


def test_protect_mode_asks_in_the_page(lab_page: Page, lab_server: LabServer) -> None:
    personal({**ALLOW, "protect_variables": True})
    analysis(lab_server.root)
    open_notebook(lab_page, lab_server, "analysis.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    client = Client(lab_server, [("python", {"code": "df['c'] = 1"}), ("python", {"code": "df['d'] = 2"})])
    client.start()
    lab_page.get_by_role("button", name="Deny").first.click()
    lab_page.get_by_role("button", name="Allow once").first.wait_for(timeout=60_000)
    expect(lab_page.get_by_role("button", name="Allow once")).to_have_count(1)
    lab_page.get_by_role("button", name="Allow once").first.click()
    said = finished(client)
    assert client.results[0].is_error and "denied" in said[0]
    assert not client.results[1].is_error, said[1]
    run_new_cell(lab_page, "print(sorted(df.columns))", "columns")
    assert "['a', 'd']" in lab_page.evaluate(OUTPUTS_OF, "columns")
