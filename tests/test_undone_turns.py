"""An undone turn stays undone in the record (issue 53, point 1): the session records it, the
views say so, `/notebook` leaves it out (or keeps it marked and not run), `replay` skips it
and says so, and `diff` compares what each branch kept. Each fact has a twin where the turn
was not undone, and the report changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import orjson
import pytest
from agent_helpers import done, scripted, tool
from nbclient import NotebookClient

from larik_jupyter import Agent, KernelHost
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.render import parts_from_entries, render_parts
from larik_jupyter.frontends.notebook.widgets.tree import tree_data
from larik_jupyter.frontends.notebook.widgets.tree_model import PromptItem
from larik_jupyter.frontends.notebook.widgets.undo import undo_data
from larik_jupyter.frontends.server.turn_diffs import checkpoints
from larik_jupyter.session.export import export_markdown

CSV = "value\n" + "\n".join(str(n) for n in range(1, 21)) + "\n"
LOAD = 'import pandas as pd\ndf = pd.read_csv("data.csv")\nprint(df.shape)'
DROP = "df = df[df.value > 5]\nprint(df.shape)"
# DROP's cell in a branch notebook: its filter's receipt, as recorded, above its code (issue 55).
DROP_CELL = "# receipt: df = df filtered: 20 → 15 rows (5 dropped)\n" + DROP
TOTAL = 'print("total", df["value"].sum())'


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "larik_jupyter", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "MPLBACKEND": ""})


def _session(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, undo: bool) -> Agent:
    """Prompt 1 loads 20 rows, prompt 2 drops 5 of them, then (with `undo`) `/undo` puts `df`
    back, and prompt 3 prints the total."""
    (project / "data.csv").write_text(CSV)
    monkeypatch.chdir(project)
    model = scripted(tmp_path, [tool("python", code=LOAD)], done("Loaded."), [tool("python", code=DROP)],
                     done("Dropped."), [tool("python", code=TOTAL)], done("Total above."))
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    agent.run("Load data.csv")
    agent.run("Drop the small values")
    if undo:
        report = agent.undo()
        assert [r.prompt for r in report] == [2] and report.ok
    agent.run("Print the total")
    agent.sync()
    return agent


@pytest.mark.parametrize("undo", [True, False])
def test_the_session_records_the_undone_prompt_and_every_view_says_so(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo: bool
) -> None:
    agent = _session(project, tmp_path, monkeypatch, undo=undo)
    lines = [orjson.loads(line) for line in agent.session_path.read_bytes().splitlines()]
    assert [e["undone"] for e in lines if "undone" in e] == ([[2]] if undo else [])
    history = render_parts(parts_from_entries(agent.history.entries))
    assert ("Prompt 2 was undone" in history) is undo
    exported = export_markdown(agent.session_path, "out.md", cwd=project, redactor=redactor_for(project)).read_text()
    assert ("## 2. User (undone)" in exported and "*Prompt 2 was undone" in exported) is undo
    (root,) = tree_data(project, agent.session_id).roots
    assert [item.undone for item in root.items if isinstance(item, PromptItem)] == [False, undo, False]
    sidebar = checkpoints(agent.session_id, project, str(project), agent.session_path)
    assert sidebar.undone == ([2] if undo else [])
    panel = undo_data(agent)
    assert panel.undone == ([2] if undo else []) and ("Undone: prompt 2" in panel.undone_text) is undo
    agent.close()


@pytest.mark.parametrize("undo", [True, False])
def test_a_branch_before_the_undo_keeps_the_undone_prompt_undone(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo: bool
) -> None:
    agent = _session(project, tmp_path, monkeypatch, undo=False)
    if undo:  # after prompt 3, which changed nothing: the undo puts prompt 2 back
        assert [r.prompt for r in agent.undo()] == [2]
    agent.rewind(3)  # the branch copies prompts 1 and 2; the undo's entry came after prompt 3
    assert undo_data(agent).undone == ([2] if undo else [])
    code = [c.source for c in nbformat.read(agent.to_notebook("b.ipynb"), as_version=4).cells if c.cell_type == "code"]
    assert code == ([LOAD] if undo else [LOAD, DROP_CELL])
    agent.close()


@pytest.mark.parametrize("undo", [True, False])
def test_the_branch_notebook_leaves_the_undone_prompt_out_and_runs_to_the_kept_result(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo: bool
) -> None:
    agent = _session(project, tmp_path, monkeypatch, undo=undo)
    nb = nbformat.read(agent.to_notebook("out.ipynb"), as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code == ([LOAD, TOTAL] if undo else [LOAD, DROP_CELL, TOTAL])
    notes = [c.source for c in nb.cells if c.cell_type == "markdown" and "was undone" in c.source]
    assert len(notes) == (1 if undo else 0)
    if undo:
        assert "Prompt 2 (“Drop the small values”)" in notes[0] and "--include-undone" in notes[0]
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(project)}}).execute()
    (total,) = [c for c in nb.cells if c.cell_type == "code" and c.source == TOTAL]
    # Run All ends where the session ended: with all 20 rows when prompt 2 was undone.
    assert total.outputs[0]["text"] == ("total 210\n" if undo else "total 195\n")

    kept = nbformat.read(agent.to_notebook("kept.ipynb", include_undone=True), as_version=4)
    marked = [c for c in kept.cells if c.metadata["larik_branch"].get("undone")]
    assert bool(marked) is undo
    if undo:
        assert all(c.cell_type == "markdown" for c in marked)  # kept, never run
        assert any(DROP in c.source and "Undone (not run)" in c.source for c in marked)
        assert [c.source for c in kept.cells if c.cell_type == "code"] == [LOAD, TOTAL]
    agent.close()


@pytest.mark.parametrize("undo", [True, False])
def test_replay_skips_the_undone_prompt_and_says_so(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo: bool
) -> None:
    agent = _session(project, tmp_path, monkeypatch, undo=undo)
    agent.close()
    ran = _cli("replay", agent.session_id, cwd=project)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    rows = [line for line in ran.stdout.splitlines() if line[:3].strip().isdigit()]
    assert any("prompt 2: undone" in row and row.endswith("skipped") for row in rows) is undo
    assert ("was undone in the session" in ran.stdout) is undo
    assert ("python: df = df[df.value > 5]" in ran.stdout) is not undo
    assert "python: print(\"total\", df[\"value\"].sum())" in ran.stdout  # named by its summary, not its id
    assert "toolu_" not in ran.stdout


@pytest.mark.parametrize("undo", [True, False])
def test_diff_compares_what_each_branch_kept(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undo: bool
) -> None:
    agent = _session(project, tmp_path, monkeypatch, undo=undo)
    first = agent.session_id
    agent.rewind(2)  # a branch that never dropped the rows, then prints the same total
    agent.switch_model(scripted(tmp_path, [tool("python", code=TOTAL)], done("Total above.")))
    agent.run("Print the total")
    agent.close()
    shown = _cli("diff", first, agent.session_id, cwd=project)
    assert shown.returncode == (0 if undo else 1), shown.stdout + shown.stderr
    assert ("(15, 1)" in shown.stdout) is not undo
    assert ("A's undone prompt 2: left out" in shown.stdout) is undo
