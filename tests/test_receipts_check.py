"""`/check` lists the receipts that changed since the live run: each cell a `notebook_run` call of
the session ran is watched in the scratch kernel and its receipts compared with the recorded ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import nbformat
import pandas as pd
from test_notebook_check import write_notebook

from larik_jupyter.frames.receipt import to_builtins
from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.receipts import cell_receipts
from larik_jupyter.tools.calls import cell_run
from larik_jupyter.tools.check.tool import run_check
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import make_env
from tests.test_receipts import watched

JOIN = (
    "import pandas as pd\norders = pd.read_csv('orders.csv')\ncustomers = pd.read_csv('customers.csv')\n"
    "joined = orders.merge(customers, on='customer_id', how='left')"
)
CUSTOMERS = "customer_id,name\n1,a\n2,b\n2,c\n3,d\n"


def test_check_lists_a_receipt_that_changed_since_the_live_run(project: Path, monkeypatch: Any) -> None:
    (project / "orders.csv").write_text("order_id,customer_id\n1,1\n2,2\n3,3\n")
    (project / "customers.csv").write_text(CUSTOMERS)
    write_notebook(project / "flow.ipynb", [(JOIN, 1, [])])
    cell_id = nbformat.read(project / "flow.ipynb", as_version=4).cells[1].id
    monkeypatch.chdir(project)
    live: dict[str, Any] = {"pd": pd}
    recorded = {cell_id: watched(live, JOIN)}  # the live run's receipts, as its notebook_run stored them
    env = make_env(project, host=KernelHost(live))
    same = run_check(env, "flow.ipynb", timeout=120, receipts=recorded)
    assert same.receipts == [], same.text()
    (project / "customers.csv").write_text(CUSTOMERS + "3,e\n1,f\n")
    changed = run_check(env, "flow.ipynb", timeout=120, receipts=recorded)
    [receipt] = changed.receipts
    assert receipt.cell.id == cell_id
    assert receipt.change == "orders ⋈ customers on customer_id: rows out was 4, now 6; fan-out was +1, now +3"
    assert "Receipts that changed since the live run:" in changed.text()


def test_the_receipts_check_compares_are_each_cells_last_run_outside_undone_prompts() -> None:
    def run(call_id: str, cell: str, rows: int) -> list[Message]:
        receipt = watched({"df": pd.DataFrame({"a": range(rows)})}, "kept = df[df.a > 0]")
        return [Message(role="assistant", content=[ToolUseBlock(id=call_id, name="notebook_run", input={"cell_id": cell})]),
                Message(role="user", content=[ToolResultBlock(tool_use_id=call_id, receipts=to_builtins(receipt))])]

    messages = [user_text("one"), *run("t1", "c1", 3), *run("t2", "c1", 5), user_text("two"), *run("t3", "c1", 9)]
    assert [r.rows_in for r in cell_receipts(messages, cell_run)["c1"]] == [[9]]
    assert [r.rows_in for r in cell_receipts(messages, cell_run, undone=[2])["c1"]] == [[5]]
    assert msgspec.json.encode(cell_receipts(messages[:1], cell_run)) == b"{}"
