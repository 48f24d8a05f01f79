"""A branch as a notebook, replayed without the model, and compared with another branch: a
scripted three-prompt analysis (read a CSV, summarise it with a helper module the agent wrote
and edited, plot it) recorded through the real agent, then the real CLI and API on it."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from agent_helpers import done, personal, scripted, text, tool, wire_model
from nbclient import NotebookClient
from session_helpers import python_session, tree_state
from test_notebook_fallback import run_turns

from larik_jupyter import Agent, KernelHost
from larik_jupyter.analysis.as_notebook import write_notebook
from larik_jupyter.analysis.compare import text_diff
from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.catalog import latest
from larik_jupyter.session.store import Session
from larik_jupyter.testing import ScriptedHTTPServer
from tests.process_helpers import left_in_cwd, wait_until

CSV = "group,value\na,1.5\na,2.5\nb,10\nb,20\n"
LOAD = 'import pandas as pd\ndf = pd.read_csv("data.csv")\nprint(len(df), "rows")\ndf.shape'
HELPER = "def summary(df):\n    return df.groupby('group')['value'].mean()\n"
SUMMARY = "from groupstats import summary\nsummary(df)"
PLOT = (
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 3), dpi=100)\n"
    'summary(df).plot.bar(ax=ax)\nprint("total", df["value"].sum())'
)
OTHER = 'print("total", df["value"].sum() * 2)'


def _replies() -> list[Any]:
    return [
        [tool("python", code=LOAD)], done("Loaded 4 rows."),
        [tool("write", path="groupstats.py", content=HELPER)],
        [tool("edit", path="groupstats.py", old_string="mean()", new_string="mean().round(3)")],
        [tool("bash", command="rm data.csv")],
        [tool("python", code=SUMMARY)], done("Means per group above."),
        [text("Plotting."), tool("python", code=PLOT)], done("Plotted."),
    ]


@pytest.fixture
def analysis(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Agent:
    """The recorded analysis: prompts 1-3 on the agent's session; `rm` is denied by a rule."""
    (project / "data.csv").write_text(CSV)
    personal({"permissions": {"deny": ["bash(rm:*)"]}})
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))  # a kernel has its directory on sys.path
    monkeypatch.delitem(sys.modules, "groupstats", raising=False)
    agent = Agent(project, model=scripted(tmp_path, *_replies()), yes=True, host=KernelHost({}))
    for prompt in ("Load data.csv", "Summarise by group", "Plot it"):
        agent.run(prompt)
    (project / "groupstats.py").unlink()  # the notebook and the replay must recreate it
    agent.sync()
    return agent


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "larik_jupyter", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "MPLBACKEND": ""})


def _text(outputs: list[Any]) -> str:
    """Outputs in the python tool's layout: stdout, then results' text."""
    stdout = "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout")
    results = [o["data"]["text/plain"] for o in outputs if o["output_type"] == "execute_result"]
    return "\n".join([stdout.rstrip("\n"), *results] if stdout else results)


def test_the_notebook_reruns_the_analysis_and_recreates_its_files(analysis: Agent, tmp_path: Path) -> None:
    path = analysis.to_notebook("analysis.ipynb")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    kinds = [(c.cell_type, c.source.splitlines()[0] if c.source else "") for c in nb.cells]
    assert ("markdown", "### Prompt 1") in kinds and ("markdown", "### Prompt 3") in kinds
    assert ("markdown", "Means per group above.") in kinds
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    # The receipts of a call's groups, joins and filters, as recorded, above its code (issue 55).
    said = "# receipt: df grouped by group: 4 rows → 2 groups\n"
    assert sources == [LOAD, "%%writefile groupstats.py\n" + HELPER.replace("mean()", "mean().round(3)"),
                       said + SUMMARY, said + PLOT]
    denied = [(c.cell_type, c.source) for c in nb.cells if "rm data.csv" in c.source]
    assert denied == [("markdown", "*The shell command `rm data.csv` was denied.*")]
    for cell in nb.cells:
        assert cell.metadata["larik_branch"]["session"] == analysis.session_id
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.metadata["larik_branch"]["prompt"] for c in code] == [1, 2, 2, 3]
    assert all(c.metadata["larik_branch"]["tool_use_id"].startswith("toolu_") for c in code)
    recorded = [_text(c.outputs) for c in code]
    assert recorded[0] == "4 rows\n(4, 2)" and "15.0" in recorded[2]
    assert any(o["output_type"] == "display_data" and "image/png" in o["data"] for o in code[3].outputs)

    run = tmp_path / "elsewhere"
    run.mkdir()
    (run / "data.csv").write_text(CSV)
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(run)}}).execute()
    assert (run / "groupstats.py").read_text() == HELPER.replace("mean()", "mean().round(3)")
    for cell, before in zip(code, recorded, strict=True):
        assert not [o for o in cell.outputs if o["output_type"] == "error"]
        if not cell.source.startswith("%%writefile"):
            assert text_diff(before, _text(cell.outputs)) == [], cell.source
    assert any(o["output_type"] == "display_data" and "image/png" in o["data"] for o in code[3].outputs)


def test_notebook_cli_stops_at_prompt_n_and_never_overwrites(analysis: Agent, project: Path) -> None:
    done_ = _cli("notebook", analysis.session_id, "upto2.ipynb", "--at", "2", cwd=project)
    assert done_.returncode == 0, done_.stderr
    nb = nbformat.read(project / "upto2.ipynb", as_version=4)
    assert max(c.metadata["larik_branch"]["prompt"] for c in nb.cells) == 2
    assert PLOT not in [c.source for c in nb.cells]
    before = (project / "upto2.ipynb").read_bytes()
    again = _cli("notebook", analysis.session_id, "upto2.ipynb", cwd=project)
    assert again.returncode == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr
    assert (project / "upto2.ipynb").read_bytes() == before
    bad = _cli("notebook", analysis.session_id, "x.ipynb", "--at", "7", cwd=project)
    assert bad.returncode == 2 and "has 3 prompts" in bad.stderr
    first = _cli("notebook", analysis.session_id, cwd=project)
    second = _cli("notebook", analysis.session_id, cwd=project)
    assert Path(first.stdout.strip()) == project / f"{analysis.session_id}.ipynb"
    assert Path(second.stdout.strip()) == project / f"{analysis.session_id}-2.ipynb"


def test_replay_matches_then_reports_exactly_the_changed_numbers(analysis: Agent, project: Path) -> None:
    before = tree_state(project)
    same = _cli("replay", analysis.session_id, cwd=project)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "4 same, 0 changed, 0 failed, 1 skipped" in same.stdout
    assert tree_state(project) == before  # it ran in a scratch copy

    (project / "data.csv").write_text(CSV.replace("b,20", "b,29"))
    changed = _cli("replay", analysis.session_id, cwd=project)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    rows = [line.split() for line in changed.stdout.splitlines() if line[:3].strip().isdigit()]
    # Each call named by its one-line summary, as every view names it, never by its id.
    assert [(r[1], " ".join(r[2:4]), r[-1]) for r in rows] == [
        ("1", "python: import", "same"), ("2", "write: groupstats.py", "same"), ("2", "bash: rm", "skipped"),
        ("2", "python: from", "changed"), ("3", "python: import", "changed"),
    ]
    assert "toolu_" not in changed.stdout and "…" not in " ".join(r[2] for r in rows)
    assert "- b 15.0" in changed.stdout and "+ b 19.5" in changed.stdout
    assert "- total 34.0" in changed.stdout and "+ total 43.0" in changed.stdout
    assert "image 1: plot changed (" in changed.stdout  # the bars' heights, same size of figure


def test_replay_stops_on_a_failure_and_in_place_writes_the_project(analysis: Agent, project: Path) -> None:
    (project / "data.csv").unlink()
    failed = _cli("replay", analysis.session_id, "--stop-on-fail", cwd=project)
    assert failed.returncode == 2
    assert "FileNotFoundError" in failed.stdout and "--stop-on-fail stopped" in failed.stdout
    assert not (project / "groupstats.py").exists()
    (project / "data.csv").write_text(CSV)
    in_place = _cli("replay", analysis.session_id, "--in-place", "--at", "2", cwd=project)
    assert in_place.returncode == 0, in_place.stdout
    assert (project / "groupstats.py").read_text().endswith("mean().round(3)\n")


def test_replay_never_asks_the_model(analysis: Agent, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedHTTPServer([]) as server:  # any request would get an error and be recorded
        model = wire_model("anthropic", server, "sk-test", monkeypatch)
        analysis.close()
        agent = Agent(project, model=model, session=analysis.session_id)
        report = agent.replay()
        agent.close()
        assert server.requests == []
    assert report.exit_status == 0, report.table()
    assert [r.status for r in report.rows].count("same") == 4


def test_diff_shows_the_fork_point_and_the_outputs_that_differ(analysis: Agent, project: Path, tmp_path: Path) -> None:
    first = analysis.session_id
    analysis.rewind(3)
    analysis.switch_model(scripted(tmp_path, [tool("python", code=OTHER)], done("Doubled.")))
    analysis.run("Double the total")
    second = analysis.session_id
    shown = _cli("diff", first, second, cwd=project)
    assert shown.returncode == 1, shown.stderr
    assert "fork point: after prompt 2" in shown.stdout
    assert "1. Load data.csv" in shown.stdout and "3. Plot it" in shown.stdout and "3. Double the total" in shown.stdout
    pairs = [line for line in shown.stdout.splitlines() if "total 34.0" in line]
    assert len(pairs) == 1 and "total 68.0" in pairs[0], shown.stdout
    assert analysis.diff(first).differs


def _kernels_of(pid: int) -> list[int]:
    """The kernel processes the process `pid` started."""
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if "ipykernel" in line]


def test_a_call_past_its_timeout_is_interrupted_and_the_replay_goes_on(project: Path) -> None:
    path = python_session(project, [("import time\ntime.sleep(120)", "(no output)"), ("print('after')", "after")])
    started = time.monotonic()
    done_ = _cli("replay", path.stem, "--timeout", "2", cwd=project)
    assert done_.returncode == 2, done_.stdout + done_.stderr
    assert time.monotonic() - started < 60  # interrupted at 2 s: not the 120 s sleep's natural end
    assert "timed out after 2 s and was interrupted" in done_.stdout
    assert "1 same, 0 changed, 1 failed, 0 skipped" in done_.stdout


def test_ctrl_c_shuts_the_kernel_down_and_removes_the_scratch_copy(project: Path, tmp_path: Path) -> None:
    marker = "replayed_cell_started"
    path = python_session(project, [(f"open({marker!r}, 'w').close()\nimport time\ntime.sleep(120)", "(no output)")])
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "larik_jupyter", "replay", path.stem], cwd=project,
                            env={**os.environ, "TMPDIR": str(scratch_root)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        kernels = wait_until(lambda: _kernels_of(proc.pid), "the replay to start its kernel", timeout=90)
        wait_until(lambda: left_in_cwd(kernels, marker), "the replayed cell to start its sleep", timeout=90)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130  # stopped: not the 120 s sleep's natural end
    finally:
        proc.kill()
    wait_until(lambda: not [pid for pid in kernels if Path(f"/proc/{pid}").exists()], "the replay's kernel to exit")
    assert not [p for p in scratch_root.iterdir() if p.name.startswith("larik-scratch-")]


def test_replay_refuses_a_missing_directory_and_a_bad_prompt_in_one_line(project: Path) -> None:
    path = python_session(project, [("print(1)", "1")])
    for args, words in [(["--cwd", str(project / "nope")], "is not a directory"), (["--at", "4"], "has 1 prompt;")]:
        done_ = _cli("replay", path.stem, *args, cwd=project)
        assert done_.returncode == 2 and words in done_.stderr and "Traceback" not in done_.stderr


def test_an_edit_of_a_file_the_branch_never_wrote_starts_from_the_checkpoint(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "params.py").write_text("N = 3\nLABEL = 'x'\n")
    monkeypatch.chdir(project)
    model = scripted(tmp_path, [tool("edit", path="params.py", old_string="N = 3", new_string="N = 5")],
                     done(), [tool("python", code="print(2)")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    agent.run("raise N")
    agent.run("print two")
    (project / "params.py").write_text("N = 99\n")  # the user's later change is not what the turn left
    source = agent.session_id
    agent.rewind(2)  # a branch: its copied prompt 1 has its checkpoint in the source session
    expected = "%%writefile params.py\nN = 5\nLABEL = 'x'\n"
    for session in (source, agent.session_id):
        nb = nbformat.read(agent.to_notebook(f"{session}.ipynb", session=session), as_version=4)
        assert [c.source for c in nb.cells if c.cell_type == "code"][0] == expected
    agent.close()


def test_notebook_run_cells_come_from_the_stored_source_or_the_cell_that_carries_the_call(project: Path) -> None:
    cell = nbformat.v4.new_code_cell("y = 3\ny * 2", metadata={"larik": {"tool_use_id": "toolu_old"}})
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), project / "work.ipynb")
    with Session.create(project, "scripted", "demo") as session:
        session.append_message(user_text("run both"))
        calls = [ToolUseBlock(id=tid, name="notebook_run", input={"path": "work.ipynb", "cell_id": "c"})
                 for tid in ("toolu_new", "toolu_old", "toolu_gone")]
        session.append_message(Message(role="assistant", content=list(calls)))
        head = "Ran cell c of work.ipynb as In [1]; its outputs are in work.ipynb.\n"
        session.append_message(Message(role="user", content=[
            ToolResultBlock(tool_use_id="toolu_new", content=head + "hello", source="print('hello')"),
            ToolResultBlock(tool_use_id="toolu_old", content=head + "6"),
            ToolResultBlock(tool_use_id="toolu_gone", content=head + "7"),
        ]))
        path = session.path
    nb = nbformat.read(write_notebook(path, "out.ipynb", cwd=project), as_version=4)
    cells = [(c.cell_type, c.source, [o.get("text") for o in c.get("outputs", [])]) for c in nb.cells[1:]]
    assert cells[:2] == [("code", "print('hello')", ["hello\n"]), ("code", "y = 3\ny * 2", ["6\n"])]
    assert cells[2][0] == "markdown" and "no longer known" in cells[2][1]


def test_a_notebook_run_in_a_kernel_stores_the_source_it_ran(tmp_path: Path) -> None:
    work = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("y = 6 * 7\nprint('y is', y)", id="calc")])
    nbformat.write(work, tmp_path / "work.ipynb")
    script = {"responses": [
        {"content": [tool("notebook_run", path="work.ipynb", cell_id="calc")]},
        {"content": done()},
    ]}
    run_turns(tmp_path, script, "%larik --yes --model scripted:script.json run it")
    changed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("y = 0", id="calc")])
    nbformat.write(changed, tmp_path / "work.ipynb")  # the user's later edit, without the metadata
    newest = latest(tmp_path)
    assert newest is not None
    nb = nbformat.read(write_notebook(newest.path, "ran.ipynb", cwd=tmp_path), as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code"]
    assert cell.source == "y = 6 * 7\nprint('y is', y)" and cell.outputs[0]["text"] == "y is 42\n"


def _figure(heights: list[float], dpi: int = 100) -> bytes:
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3), dpi=dpi)
    ax.bar(["a", "b", "c"], heights)
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def test_plots_are_compared_by_their_pixels_not_only_their_size() -> None:
    from PIL import Image

    from larik_jupyter.analysis.compare import image_diff

    plot = _figure([2.0, 15.0, 7.0])
    again = _figure([2.0, 15.0, 7.0])
    scaled = _png(Image.open(io.BytesIO(_figure([2.0, 15.0, 7.0], dpi=200))).resize((400, 300)))
    assert image_diff([plot], [again]) == [] and image_diff([plot], [scaled]) == []
    for other in ([2.0, 19.5, 7.0], [7.0, 15.0, 2.0], [2.0, 15.0, 7.5]):
        (line,) = image_diff([plot], [_figure(other)])
        assert line.startswith("image 1: plot changed ("), (other, line)
    assert image_diff([plot], [_figure([2.0, 15.0, 7.0], dpi=150)]) == ["image 1: 400×300 recorded, 600×450 now"]


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_a_notebook_path_that_cannot_be_written_is_one_sentence(project: Path, tmp_path: Path) -> None:
    from IPython.core.error import UsageError
    from widget_helpers import larik, shell_with_magics

    path = python_session(project, [("print(1)", "1")])
    (project / "file.txt").write_text("a file\n")
    for target, words in [("/proc/x.ipynb", "/proc/x.ipynb could not be written ("),
                          ("file.txt/x.ipynb", "file.txt is a file, not a folder, so x.ipynb cannot be written in it")]:
        done_ = _cli("notebook", path.stem, target, cwd=project)
        assert done_.returncode == 2 and words in done_.stderr and "Traceback" not in done_.stderr, done_.stderr
        assert "already exists" not in done_.stderr
    shell, _ = shell_with_magics(project, scripted(tmp_path, [tool("python", code="print(1)")], done()))
    larik(shell, "make a session")
    with pytest.raises(UsageError, match="could not be written"):
        larik(shell, "/notebook /proc/x.ipynb")
    assert (project / "file.txt").read_text() == "a file\n"
