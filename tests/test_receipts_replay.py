"""Replay compares each call's receipts with the recorded ones: a join whose fan-out grew since is
a `changed` row that says so (`fan-out was +1, now +3`), even where the code printed nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.analysis.replay import replay_branch
from tests.agent_helpers import done, scripted, tool

JOIN = (
    "import pandas as pd\norders = pd.read_csv('orders.csv')\ncustomers = pd.read_csv('customers.csv')\n"
    "joined = orders.merge(customers, on='customer_id', how='left')"
)


def test_a_join_whose_fan_out_grew_is_a_changed_row(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "orders.csv").write_text("order_id,customer_id\n1,1\n2,2\n3,3\n")
    (project / "customers.csv").write_text("customer_id,name\n1,a\n2,b\n2,c\n3,d\n")
    monkeypatch.chdir(project)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=JOIN)], done()), yes=True,
                  host=KernelHost({}))
    agent.run("join the orders to their customers")
    agent.sync()
    same = replay_branch(agent.session_id, cwd=project)
    assert [(r.status, r.detail) for r in same.rows] == [("same", [])], same.text()
    (project / "customers.csv").write_text("customer_id,name\n1,a\n2,b\n2,c\n3,d\n3,e\n1,f\n")
    changed = replay_branch(agent.session_id, cwd=project)
    agent.close()
    [row] = changed.rows
    assert row.status == "changed"
    assert row.detail == ["orders ⋈ customers on customer_id: rows out was 4, now 6; fan-out was +1, now +3"]
