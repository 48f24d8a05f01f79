"""The egress door in a real kernel: `%load_ext`, `/egress`, and `notebook_run` of a cell that
prints a restricted frame, against the wire fake (nbclient, so no browser: the cell runs in the
kernel and its outputs go to the file)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.session_helpers import ledger_lines

KEY = "sk-egress-kernel"
CANARY = "kern.canary.9931@ex.com"


def test_notebook_run_of_a_restricted_frame_sends_its_marker_not_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("print(secret.to_string())", id="show")]
    nbformat.write(work, tmp_path / "work.ipynb")
    script = [{"content": [tool("notebook_run", path="work.ipynb", cell_id="show")]}, {"content": done("ok")}]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model("anthropic", server, KEY, monkeypatch)
        driver = nbformat.v4.new_notebook()
        driver.cells = [
            nbformat.v4.new_code_cell(source)
            for source in (
                "%load_ext larik_jupyter",
                f"import pandas as pd\nsecret = pd.DataFrame({{'email': ['{CANARY}'], 'n': [1]}})",
                "%larik /egress secret never",
                f"%larik --yes --no-context --model {model} run the cell",
            )
        ]
        NotebookClient(driver, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
        sent = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)
        sizes = [r.size for r in server.requests]
    # The cell really ran and printed the row (into the notebook file, on this machine).
    assert CANARY in nbformat.read(tmp_path / "work.ipynb", 4).cells[0].outputs[0].text
    assert len(sizes) == 2 and CANARY not in sent
    assert "[withheld: secret — policy never" in sent
    (info,) = list_sessions(tmp_path)
    records = [r for r in ledger_lines(Path(info.path)) if r["type"] == "request"]
    assert [r["bytes"] for r in records] == sizes
    assert any(w["source"] == "secret" and "(notebook_run)" in w["where"] for w in records[-1]["withheld"])
