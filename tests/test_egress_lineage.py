"""Lineage: a variable the agent made from a restricted one is restricted by the same policy.
Through `%larik` against the wire fake: `top`, made from `cust` in one turn, printed and plotted
in the next, sends neither its rows nor the plot; `/egress` shows `top (from cust, schema)`; the
lineage is recorded with the call, so a session resumed in a new process keeps it; `/egress top
full` lifts it (made false: the plot goes, and no marker of `top`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from IPython.utils.capture import capture_output

from larik_jupyter import Agent
from larik_jupyter.session.reader import load_entries
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, scripted, tool, wire_model
from tests.widget_helpers import larik, shell_with_magics, turn_sent

KEY = "sk-egress-lineage"
EMAIL = "line.canary.3318@ex.com"
MAKE = "top = cust[cust.amount > 0].copy()"
# Prints `top` and plots it with a customer's email as the title; makes no variable of its own.
SHOW = (
    "__import__('matplotlib').use('Agg')\nprint(top.to_string())\n"
    "top.plot(y='amount', title=top['email'].iloc[0], figsize=(2, 2)).figure"
)


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"email": [EMAIL, "b.other9@ex.com"], "amount": [15519.29, -1.0]})


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_frame_made_from_a_restricted_one_is_withheld_plots_included(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    script = [
        {"content": [tool("python", code=MAKE)]}, {"content": done("made")},
        {"content": [tool("python", code=SHOW)]}, {"content": done("shown")},
        {"content": [tool("python", code=SHOW)]}, {"content": done("shown again")},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model(wire, server, KEY, monkeypatch)
        shell, magics = shell_with_magics(project, model)
        shell.user_ns["cust"] = _frame()
        try:
            larik(shell, "/egress cust schema")
            turn_sent(server, shell, "--no-context keep the positive rows")
            shown = turn_sent(server, shell, "--no-context show them")
            with capture_output() as listed:
                larik(shell, "/egress")
            session, path = magics.kernel.require().session_id, magics.kernel.require().session_path
            larik(shell, "/new")  # the kernel's next session: `top` stays restricted there too
            # The first session resumed in a new process (a new kernel holding the same data).
            resumed = Agent(project, session=session, model=scripted(tmp_path, done("ok")), yes=True,
                            host=KernelHost({"cust": _frame(), "top": _frame()}))
            try:
                report = resumed.egress.report()
            finally:
                resumed.close()
            # Made false: the person lifts it; the same call sends the plot.
            larik(shell, "/egress top full")
            lifted = turn_sent(server, shell, "--no-context show them again")
        finally:
            shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')")
    assert EMAIL not in shown and '"image/png"' not in shown and "data:image/png" not in shown
    assert "[withheld: top — policy schema" in shown
    said = "\n".join(str(o.data.get("text/markdown", "")) for o in listed.outputs)
    assert "- variable top (from cust, schema)" in said
    # (its text still meets the value search: the rows are `cust`'s, which stays restricted)
    assert "[withheld: top" not in lifted and ('"image/png"' in lifted or "data:image/png" in lifted)
    # Recorded with the call: the session's result says what made `top` restricted ...
    entries = load_entries(path).entries
    changes = [c for e in entries if e.message for b in e.message.tool_results() for c in (b.variables or [])]
    assert {"name": "top", "change": "created", "after": "DataFrame 1×2", "restricted_from": ["cust"],
            "policy": "schema"} in changes
    # ... so the session resumed in a new process keeps it.
    assert "- variable top (from cust, schema)" in report
