"""`%larik /check` and the notebook_check tool: a scratch kernel runs the notebook top to bottom;
failing cells, hidden state, out-of-order runs, larik-skip cells and differing values are
reported, and the scratch kernel never outlives the check (also when interrupted)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from larik_jupyter.tools.check.tool import run_check
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, make_env, scripted, tool
from tests.process_helpers import left_in_cwd, wait_until
from tests.test_notebook_kernel_undo import client, run_cells


def write_notebook(path: Path, cells: list[tuple[str, int | None, list[str]]]) -> None:
    nb = new_notebook(cells=[new_markdown_cell("# analysis")])
    for source, count, tags in cells:
        cell = new_code_cell(source, execution_count=count)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


ANALYSIS = [
    ("%load_ext larik_jupyter", 1, []),
    ("x = 10", 2, []),
    ("total = x + helper", 6, []),  # helper came from a cell since deleted
    ("raise ValueError('boom')", 4, []),
    ("z = open('missing.csv').read()", None, ["larik-skip"]),
    ("count = 3\nprint(count)", 5, []),
    ("%larik explain this notebook", 7, []),
]


def ids(path: Path) -> list[str]:
    return [c.id for c in nbformat.read(path, as_version=4).cells]


def test_the_check_reports_each_problem_and_changes_nothing(project: Path) -> None:
    notebook = project / "analysis.ipynb"
    write_notebook(notebook, ANALYSIS)
    before = notebook.read_bytes()
    cell = ids(notebook)
    live: dict[str, Any] = {"x": 10, "helper": 5, "total": 15, "count": 4}
    report = run_check(make_env(project, host=KernelHost(live)), "analysis.ipynb", timeout=120)
    text = report.text()
    assert report.ran == 5 and not report.stopped
    assert [(f.cell.id, f.error) for f in report.failures] == [
        (cell[3], "NameError: name 'helper' is not defined"), (cell[4], "ValueError: boom")
    ]
    assert [(h.name, [c.id for c in h.cells]) for h in report.hidden] == [("helper", [cell[3]])]
    assert [(o.cell.id, o.count, o.above.id, o.above_count) for o in report.out_of_order] == [
        (cell[4], 4, cell[3], 6), (cell[6], 5, cell[3], 6)
    ]
    assert [(d.name, d.kernel, d.scratch) for d in report.differing] == [("count", "int 4", "int 3")]
    assert [(s.cell.id, s.why) for s in report.skipped] == [
        (cell[5], "tagged larik-skip"), (cell[7], "holds a %larik prompt")
    ]
    assert f"cell 4 ({cell[3]}): NameError: name 'helper' is not defined" in text
    assert "helper: used by cell 4" in text and "count: live int 4, scratch int 3" in text
    assert notebook.read_bytes() == before and live == {"x": 10, "helper": 5, "total": 15, "count": 4}
    assert not (project / "missing.csv").exists()


def test_a_clean_notebook_and_a_timeout(project: Path) -> None:
    write_notebook(project / "ok.ipynb", [("a = 1", 1, []), ("b = a + 1", 2, [])])
    env = make_env(project, host=KernelHost({"a": 1, "b": 2}))
    report = run_check(env, "ok.ipynb", timeout=120)
    assert report.problems == 0 and "No problems found" in report.text()
    write_notebook(project / "slow.ipynb", [("import time\nwhile True: time.sleep(0.05)", 1, []), ("after = 1", 2, [])])
    started = time.monotonic()
    report = run_check(env, "slow.ipynb", timeout=8)
    assert time.monotonic() - started < 60  # the 8 s total timeout, not the 300 s cell timeout
    assert report.stopped == "total timeout" and len(report.not_run) == 1
    assert "The run ended early (total timeout; 1 cell after it not run)" in report.text()


def children(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


#: A cell that never ends, and first leaves a sign (a file in its scratch copy) that it runs.
SLOW = "open('slow_cell_started', 'w').close()\nimport time\nwhile True: time.sleep(0.05)"


def slow_cell_running(kernels: list[psutil.Process]) -> bool:
    """Whether one of these scratch kernels runs the `SLOW` cell (it works in its copy's folder)."""
    return left_in_cwd([k.pid for k in kernels], "slow_cell_started")


@pytest.mark.timeout(240)
def test_check_in_a_kernel_widget_text_and_an_interrupt_leaves_no_scratch_kernel(project: Path) -> None:
    write_notebook(project / "analysis.ipynb", ANALYSIS)
    write_notebook(project / "slow.ipynb", [(SLOW, 1, [])])
    nbc = client(project, [
        "%load_ext larik_jupyter",
        "x, helper, total, count = 10, 5, 15, 4",
        "%larik /check analysis.ipynb",
        "%larik /check slow.ipynb",
        "print('still here', x)",
    ])
    with nbc.setup_kernel():
        texts = run_cells(nbc, 0, 3)
        assert nbc.km is not None
        kernel_pid = nbc.km.provisioner.process.pid  # type: ignore[union-attr]
        # What Jupyter's interrupt button sends (the kernel's interrupt mode is "signal").
        threading.Thread(target=lambda: (
            wait_until(lambda: slow_cell_running(children(kernel_pid)), "the checked slow cell to run", timeout=120),
            os.kill(kernel_pid, signal.SIGINT),
        ), daemon=True).start()
        started = time.monotonic()
        texts = run_cells(nbc, 3)
        took = time.monotonic() - started
        assert children(kernel_pid) == []
    html = "".join(o.get("data", {}).get("text/html", "") for o in nbc.nb.cells[2].outputs)
    assert "NameError: name &#x27;helper&#x27; is not defined" in html
    assert "Hidden state" in html and "count: live int 4, scratch int 3" in html
    assert "The run ended early (stopped" in texts[3] and took < 150  # not the 300 s cell timeout
    assert "still here 10" in texts[4]


def test_the_agent_can_call_notebook_check(project: Path, tmp_path: Path) -> None:
    from larik_jupyter import Agent, KernelHost

    write_notebook(project / "ok.ipynb", [("a = 1", 1, []), ("b = a + 1", 2, [])])
    model = scripted(tmp_path, [tool("notebook_check", path="ok.ipynb", timeout=120)], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost({"a": 1, "b": 3}))
    agent.run("check the notebook")
    result = agent.loop.session.state.all[-2].tool_results()[0]
    agent.close()
    assert "b: live int 3, scratch int 2" in result.text()
    assert "notebook_check" in agent.loop._system() and "verify your notebook edits" in agent.loop._system()


def test_the_check_widget_links_problems_to_cells(project: Path, tmp_path: Path) -> None:
    from larik_jupyter.frontends.notebook.widgets.check import CheckWidget
    from larik_jupyter.frontends.notebook.widgets.session_widget import shown_widgets
    from tests.widget_helpers import click, larik, shell_with_magics

    write_notebook(project / "bad.ipynb", [("a = 1", 1, []), ("b = a + missing", 2, [])])
    shell, magics = shell_with_magics(project, scripted(tmp_path, done()))
    larik(shell, "/check bad.ipynb --timeout 120")
    (widget,) = [w for w in shown_widgets() if isinstance(w, CheckWidget)]
    cell = ids(project / "bad.ipynb")[2]
    failing = widget.sections[0]
    assert failing["heading"] == "Cells that fail in the scratch kernel"
    assert failing["items"] == [{"text": f"cell 3 ({cell}): NameError: name 'missing' is not defined", "cell_id": cell}]
    assert "NameError: name 'missing' is not defined" in widget.static_text()
    click(widget, type="focus", cell_id=cell)
    assert widget.status == "This is not an open notebook, so there is no cell to go to."
    with pytest.raises(Exception, match="timeout must be between 1 and 7200"):
        larik(shell, "/check bad.ipynb --timeout 0")


def scratch_kernels() -> list[psutil.Process]:
    """This process's kernel children that are alive (one that just exited, a zombie until it is
    reaped, has no command line to read and is not counted)."""

    def kernel(process: psutil.Process) -> bool:
        try:
            return "ipykernel" in " ".join(process.cmdline())
        except psutil.Error:
            return False

    return [p for p in psutil.Process().children(recursive=True) if kernel(p)]


def test_stop_ends_the_agents_check_and_its_scratch_kernel(project: Path, tmp_path: Path) -> None:
    from larik_jupyter import Agent, KernelHost

    write_notebook(project / "slow.ipynb", [(SLOW, 1, [])])
    model = scripted(tmp_path, [tool("notebook_check", path="slow.ipynb", timeout=300)], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    seen: list[int] = []

    def stop_once_running() -> None:
        wait_until(lambda: slow_cell_running(scratch_kernels()), "the checked slow cell to run", timeout=120)
        seen.append(len(scratch_kernels()))
        agent.stop()

    threading.Thread(target=stop_once_running, daemon=True).start()
    started = time.monotonic()
    outcome = agent.run("check it")
    agent.close()
    # Stopped: not the 300 s the check's timeout would have let the cell run.
    assert outcome.status == "interrupted" and time.monotonic() - started < 150 and seen == [1]
    wait_until(lambda: not scratch_kernels(), "the check's scratch kernel to end")
