"""Canary values planted in frames, files and outputs under each egress policy, driven through
every route a request is made of (tool results of python, notebook_run's kin notebook_read,
read, bash, inspect_variables, a subagent, a plot, an error; `--with` attachments; the
notebook context; the model's own earlier replies) against the wire fakes of both APIs: no
canary of a never/schema/stats source is in any byte sent, `sample N` sends at most N rows,
the ledger accounts for every byte of every request, and with the policy off the canaries
do go (so the test can fail)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from larik_jupyter.config.layers import user_config_path
from larik_jupyter.frontends.notebook.capture import KernelCapture
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.session_helpers import ledger_lines
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-egress-test"
NEVER = ["nev.canary.7741@ex.com", "98765.4321"]
SCHEMA = ["sch.canary.5521@ex.com", "55443.2211"]
STATS = ["sta.canary.3391@ex.com", "66554.3312"]
FILE = ["filecanary.4471@ex.com", "31415.9265"]
SAMPLE_IDS = [f"SAMROW{i}Q7" for i in range(6)]
SAMPLE_EMAILS = [f"sam{i}.canary@ex.com" for i in range(6)]
FULL = "ful.canary.8812@ex.com"
HIDDEN = NEVER + SCHEMA + STATS + FILE + SAMPLE_EMAILS + ["NEVERCELL", "bad row 98765"]

SETUP = f"""
import pandas as pd
nev = pd.DataFrame({{"email": ["{NEVER[0]}", "other1.x@ex.com"], "amount": [{NEVER[1]}, 1.5]}})
sch = pd.DataFrame({{"email": ["{SCHEMA[0]}", "other2.x@ex.com"], "amount": [{SCHEMA[1]}, 2.5]}})
sta = pd.DataFrame({{"email": ["{STATS[0]}", "other3.x@ex.com"], "amount": [{STATS[1]}, 3.5]}})
sam = pd.DataFrame({{"id": {SAMPLE_IDS!r}, "email": {SAMPLE_EMAILS!r}}})
ful = pd.DataFrame({{"email": ["{FULL}"]}})
"""
DRAW_NEV = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(2, 2)); ax.plot(nev['amount']); fig"
)
DRAW_FUL = (
    "import matplotlib.pyplot as plt\nfig2, ax2 = plt.subplots(figsize=(2, 2)); ax2.plot([1, 2, 3]); "
    "ax2.set_title(ful['email'][0][:3]); fig2"
)


def _project(project: Path) -> None:
    (project / "data").mkdir()
    (project / "data" / "secret.csv").write_text(f"email,amount\n{FILE[0]},{FILE[1]}\nplain@ex.com,2\n")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("sch.head()", id="c1")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{SCHEMA[0]} {SCHEMA[1]}\n")]
    # An output holding nothing the value index knows: only its cell's tag (it reads nev) withholds it.
    total = nbformat.v4.new_code_cell("print('NEVER' + 'CELL', len(nev))", id="c2")
    total.outputs = [nbformat.v4.new_output("stream", name="stdout", text="NEVERCELL 2\n")]
    plain = nbformat.v4.new_code_cell("print('PLAINCELL')", id="c3")
    plain.outputs = [nbformat.v4.new_output("stream", name="stdout", text="PLAINCELL\n")]
    nb.cells = [cell, total, plain]
    nbformat.write(nb, project / "old.ipynb")


def _script() -> list[dict[str, Any]]:
    """Turn 1: every route; turn 2: a prompt whose request carries all of turn 1 again."""
    steps: list[Any] = [
        [tool("python", code="print(nev); print(sch); print(sta); print(sam)")],
        [tool("python", code="print(ful)")],
        [tool("python", code="print(globals()['n' + 'ev'].to_string())")],
        [tool("read", path="data/secret.csv")],
        [tool("bash", command="cat data/secret.csv")],
        [tool("python", code=DRAW_NEV)],
        [tool("python", code=DRAW_FUL)],
        [tool("inspect_variables")],
        [tool("python", code="raise ValueError(sta['email'][0])")],
        [tool("notebook_read", path="old.ipynb")],
        [tool("task", description="look at data", prompt="cat the data")],
        # the subagent's two calls
        [tool("bash", command="cat data/secret.csv")],
        done(f"The subagent saw {FILE[0]}."),
        done(f"I saw {NEVER[0]} and {STATS[1]} earlier."),
        done("Second turn."),
    ]
    return [{"content": s} for s in steps]


def _sent(server: ScriptedHTTPServer) -> list[str]:
    return [json.dumps(r.body, ensure_ascii=False) for r in server.requests]


def _run(kind: str, project: Path, monkeypatch: pytest.MonkeyPatch, *, policies: bool) -> tuple[list[Any], Path]:
    _project(project)
    if policies:
        path = user_config_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"egress": {"policies": {"sch": "schema", "sam": "sample 2 mask email"}}}))
    with ScriptedHTTPServer(_script(), api_key=KEY) as server:
        model = wire_model(kind, server, KEY, monkeypatch)
        shell, magics = shell_with_magics(project, model)
        magics.capture = KernelCapture(shell)
        magics.capture.start()
        try:
            shell.run_cell(SETUP)
            if policies:
                larik(shell, "/egress nev never")
                larik(shell, "/egress sta stats")
                larik(shell, "/egress 'data/*.csv' never")
            # A cell whose error holds a value of nev in a form the index does not know (a whole
            # number): the notebook context carries the last error, tagged with what its cell read.
            shell.run_cell("raise ValueError(f'bad row {nev.amount[0]:.0f}')", store_history=True)
            larik(shell, "--with sch,nev,sam,ful look at everything")
            larik(shell, "--no-context and again")
        finally:
            magics.capture.stop()
            shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')")
        session = magics.kernel.require().session_path
        requests = server.requests
        assert server.remaining == 0, "the script ran to its end"
    return requests, session


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_no_restricted_canary_leaves_and_the_ledger_accounts_for_every_byte(
    kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests, session = _run(kind, project, monkeypatch, policies=True)
    bodies = [json.dumps(r.body, ensure_ascii=False) for r in requests]
    assert len(bodies) == 15
    everything = "\n".join(bodies)
    for canary in HIDDEN:
        assert canary not in everything, canary
    # sample 2: at most two of the six rows, the masked column never.
    assert sum(i in everything for i in SAMPLE_IDS) == 2
    # What the policy allows does go: the full frame, the schema of the others, the markers.
    assert FULL in everything and "PLAINCELL" in everything
    # The notebook context went, its last error's part as a marker (its cell read nev).
    context = bodies[0][bodies[0].index("<notebook-context>") : bodies[0].index("</notebook-context>")]
    assert "Last error, raised by cell" in context and "[withheld: nev — policy never" in context
    assert "[withheld: nev — policy never" in everything
    assert "[withheld: sch — policy schema; work with sch's schema or ask the user]" in everything
    assert "sch: DataFrame, shape 2 x 2" in everything
    assert "[withheld: data/secret.csv — policy never" in everything
    assert "[withheld: nev.email — policy never" in everything  # a value found in untagged text
    # The plot drawn from nev went as a marker; the one from ful as an image.
    images = everything.count('"image/png"') + everything.count("data:image/png;base64")
    assert images >= 1
    # The system prompt tells the model the rules.
    assert "- variable nev: never" in bodies[0] and "- files data/*.csv: never" in bodies[0]

    records = [r for r in ledger_lines(session) if r["type"] == "request"]
    assert len(records) == len(requests)
    for record, request in zip(records, requests, strict=True):
        assert record["bytes"] == request.size
        assert sum(p["bytes"] for p in record["parts"]) == record["bytes"]
        assert all(p["bytes"] >= 0 for p in record["parts"])
    withheld = {w["source"] for r in records for w in r["withheld"]}
    assert {"nev", "sch", "sta", "sam", "data/secret.csv", "nev.email"} <= withheld
    policies = [r for r in ledger_lines(session) if r["type"] == "policy"]
    assert [p["target"] for p in policies] == ["nev", "sta", "data/*.csv"]


def test_with_the_policy_off_the_canaries_do_leave(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    requests, session = _run("anthropic", project, monkeypatch, policies=False)
    everything = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in requests)
    for canary in [*NEVER, *SCHEMA, *STATS, *FILE, "NEVERCELL", "bad row 98765"]:
        assert canary in everything, canary
    assert sum(i in everything for i in SAMPLE_IDS) == 6
    assert "[withheld:" not in everything
    records = [r for r in ledger_lines(session) if r["type"] == "request"]
    assert [r["bytes"] for r in records] == [r.size for r in requests]
    assert not any(r["withheld"] for r in records)

