"""Jupyter's interrupt (SIGINT to a real kernel) ends a `%larik` turn in every phase, long
before what it stops would have ended, kills the shell command's process group and records the interruption as Stop does; code
the agent runs in the kernel (the python tool's, a cell notebook_run runs) is stopped by the
interrupt and by its timeout, after which the turn goes on."""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

from larik_jupyter import paths
from larik_jupyter.agent.tool_calls import INTERRUPTED_RESULT
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import done, personal, scripted, text, tool
from tests.process_helpers import processes_running, unique_sleeps, wait_until

TINY = Path(__file__).parent / "mcp_servers" / "tiny_server.py"
SLEEPS = unique_sleeps(61)


class Kernel:
    """A real ipykernel in `project` with `%load_ext larik_jupyter` done."""

    def __init__(self, km: KernelManager, kc: BlockingKernelClient) -> None:
        self.km, self.kc = km, kc
        self.published: list[str] = []

    def shown(self, words: str) -> Any:
        """A test of whether the kernel has published `words` (an output, a widget's state)."""

        def seen() -> bool:
            while True:
                try:
                    self.published.append(json.dumps(self.kc.get_iopub_msg(timeout=0)["content"]))
                except queue.Empty:
                    return any(words in content for content in self.published)

        return seen

    def execute(self, code: str) -> str:
        """Run `code`; returns its msg_id without waiting."""
        return str(self.kc.execute(code))

    def reply(self, msg_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_shell_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return dict(msg["content"])
        raise TimeoutError(f"no execute_reply after {timeout} s")

    def run(self, code: str) -> str:
        """Run `code` to its end; returns what it printed."""
        msg_id = self.execute(code)
        assert self.reply(msg_id)["status"] == "ok"
        printed = []
        while True:  # to the kernel's idle after `code`: its last output comes before
            msg = self.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return "".join(printed)

    def interrupt_during(self, cell: str, reached: Any, phase: str) -> float:
        """Start `cell`, wait until `reached()` shows it is in `phase`, interrupt; the seconds
        until the cell ended."""
        msg_id = self.execute(cell)
        wait_until(reached, f"the turn to reach the phase under test ({phase})")
        sent = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.reply(msg_id, timeout=120)
        took = time.monotonic() - sent
        assert reply["status"] == "ok", reply
        return took


@pytest.fixture
def kernel(project: Path) -> Iterator[Kernel]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(project), env=env)
    kernel = Kernel(km, kc)
    try:
        kernel.run("%load_ext larik_jupyter")
        yield kernel
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def session_messages(project: Path) -> list[Any]:
    sessions = [s for s in list_sessions(project)]
    assert len(sessions) == 1
    return [e.message for e in load_entries(sessions[0].path).entries if e.message is not None]


def left(path: Path) -> Any:
    """A test of whether code under test has left the file `path` (a sign it reached a point)."""
    return path.exists


def assert_interrupted_call(project: Path) -> None:
    """What Stop leaves: the call answered with the interrupted result, nothing after it."""
    last = session_messages(project)[-1]
    (result,) = last.tool_results()
    assert result.is_error and result.content == INTERRUPTED_RESULT


def assert_kernel_free(kernel: Kernel) -> None:
    out = kernel.run("import larik_jupyter\nprint('running', larik_jupyter.current().loop.running)")
    assert "running False" in out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cell", ["%larik --yes go", "x = 1\n%larik --yes go\ny = 2"])
def test_interrupt_kills_a_running_shell_command(kernel: Kernel, project: Path, tmp_path: Path, cell: str) -> None:
    sleep = next(SLEEPS)
    personal({"model": scripted(tmp_path, [tool("bash", command=sleep)], [text("never")])})
    took = kernel.interrupt_during(cell, lambda: bool(processes_running(sleep)), f"`{sleep}` runs")
    assert took < 30  # not the 60 s sleep's natural end
    assert processes_running(sleep) == []
    assert_interrupted_call(project)
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cell", ["%larik --yes go", "x = 1\n%larik --yes go\ny = 2"])
def test_interrupt_stops_python_running_in_the_kernel(
    kernel: Kernel, project: Path, tmp_path: Path, cell: str
) -> None:
    code = "open('python_started', 'w').close()\nimport time\nfor _ in range(600):\n    time.sleep(0.1)\nfinished = True"
    personal({"model": scripted(tmp_path, [tool("python", code=code)], [text("never")])})
    took = kernel.interrupt_during(cell, left(project / "python_started"), "the python tool's code runs")
    assert took < 30  # not the 60 s the code would run
    assert "finished" not in kernel.run("print(sorted(k for k in globals() if k == 'finished'))").strip("[]\n")
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_while_waiting_for_an_approval_cancels_the_card(
    kernel: Kernel, project: Path, tmp_path: Path
) -> None:
    personal({"model": scripted(tmp_path, [tool("write", path="a.txt", content="x")], [text("never")])})
    kernel.run("get_ipython().magics_manager.registry['LarikMagics'].interactive = True")
    took = kernel.interrupt_during("%larik go", kernel.shown("larik-approval"), "the approval card is shown")
    assert took < 30  # an unanswered card waits for ever
    assert not (project / "a.txt").exists()
    assert_interrupted_call(project)
    cards = kernel.run(
        "from ipywidgets.widgets.widget import _instances\n"
        "from larik_jupyter.frontends.notebook.widgets.approval import ApprovalWidget\n"
        "for w in list(_instances.values()):\n"
        "    if isinstance(w, ApprovalWidget):\n"
        "        print(w.cancelled, w.allow_button.disabled, w.always_button.disabled, w.deny_button.disabled)\n"
        "        w.allow_button.click()\n"
        "        print('answer', w.answer)"
    )
    assert cards.splitlines() == ["True True True True", "answer None"]
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_while_the_reply_streams_keeps_the_partial_reply(
    kernel: Kernel, project: Path, tmp_path: Path
) -> None:
    slow = {"content": [text("Zanzibar words " + "and more " * 20)], "delay": 6}  # 6 s after each word
    personal({"model": scripted(tmp_path, slow)})
    took = kernel.interrupt_during("%larik go", kernel.shown("Zanzibar"), "the reply's first word is shown")
    assert took < 3  # not waiting out the 6 s to the next word (nor the reply's end, minutes away)
    last = session_messages(project)[-1]
    assert last.role == "assistant" and last.interrupted and last.text().startswith("Zanzibar")
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_during_an_mcp_call(kernel: Kernel, project: Path, tmp_path: Path) -> None:
    personal(
        {
            "model": scripted(tmp_path, [tool("mcp__tiny__hang", seconds=120)], [text("never")]),
            "mcpServers": {"tiny": {"command": sys.executable, "args": [str(TINY)]}},
            "permissions": {"allow": ["mcp__tiny__*"]},
        }
    )
    log = paths.logs_dir() / "mcp-tiny.log"

    def hanging() -> bool:
        return log.exists() and "hanging for 120 s" in log.read_text()

    took = kernel.interrupt_during("%larik go", hanging, "the MCP server runs the hanging call")
    assert took < 30  # not the 120 s hang
    assert_interrupted_call(project)
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_during_a_subagent(kernel: Kernel, project: Path, tmp_path: Path) -> None:
    sleep = next(SLEEPS)
    replies = [
        [tool("task", description="slow", prompt="wait")],
        [tool("bash", command=sleep)],  # the subagent's call
        [text("never")],
    ]
    personal({"model": scripted(tmp_path, *replies), "permissions": {"allow": ["bash"]}})
    took = kernel.interrupt_during("%larik go", lambda: bool(processes_running(sleep)), f"the subagent's `{sleep}` runs")
    assert took < 30  # not the 60 s sleep's natural end
    assert processes_running(sleep) == []
    assert_interrupted_call(project)
    assert_kernel_free(kernel)




def work_notebook(kernel: Kernel, project: Path, source: str) -> Path:
    """`work.ipynb` in `project` with one code cell `loop` holding `source`; the kernel has
    read it once already, so timings measure the run (a cold `import nbformat` takes seconds)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, id="loop")]
    path = project / "work.ipynb"
    nbformat.write(nb, path)
    kernel.run("import nbformat\nnbformat.validate(nbformat.read('work.ipynb', 4))")
    return path


def results(project: Path) -> list[Any]:
    return [r for m in session_messages(project) for r in m.tool_results()]


def stream_text(path: Path) -> str:
    (cell,) = nbformat.read(path, 4).cells
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "source",
    [
        "print('started', flush=True)\nwhile True:\n    pass",
        "import time\nprint('started')\ntime.sleep(60)",
        "import asyncio\nprint('started')\nawait asyncio.sleep(60)",  # awaiting: cancelled
    ],
)
def test_a_notebook_run_timeout_stops_the_cell_and_the_turn_goes_on(
    kernel: Kernel, project: Path, tmp_path: Path, source: str
) -> None:
    path = work_notebook(kernel, project, source)
    replies = [
        [tool("notebook_run", path="work.ipynb", cell_id="loop", timeout=1)],
        [tool("python", code="after_the_timeout = 42")],
        done("The cell timed out."),
    ]
    personal({"model": scripted(tmp_path, *replies)})
    started = time.monotonic()
    reply = kernel.reply(kernel.execute("%%larik --yes\nrun the loop cell"), timeout=60)
    took = time.monotonic() - started
    assert reply["status"] == "ok", reply
    assert took < 30  # the cell stopped at its 1 s deadline, not after its 60 s (or never)
    ran, after = results(project)
    assert ran.is_error
    assert "timed out after 1 s" in ran.content and "started" in ran.content
    assert "<notebook-data nonce=" in ran.content
    assert not after.is_error
    assert stream_text(path).rstrip("\n").endswith("[stopped after 1 s (timeout)]")
    assert session_messages(project)[-1].text() == "The cell timed out."
    assert "42" in kernel.run("print(after_the_timeout)")
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_a_python_timeout_stops_a_busy_loop_and_the_turn_goes_on(
    kernel: Kernel, project: Path, tmp_path: Path
) -> None:
    code = "print('spinning')\nwhile True:\n    pass"
    replies = [[tool("python", code=code, timeout=1)], [tool("python", code="after = 1")], done()]
    personal({"model": scripted(tmp_path, *replies)})
    started = time.monotonic()
    reply = kernel.reply(kernel.execute("%%larik --yes\nspin"), timeout=60)
    assert reply["status"] == "ok", reply
    assert time.monotonic() - started < 30  # stopped at its 1 s timeout: the loop never ends
    spun, after = results(project)
    assert spun.is_error and "timed out after 1 s" in spun.content and "spinning" in spun.content
    assert "KeyboardInterrupt" in spun.content and "[stopped after 1 s (timeout)]" in spun.content
    assert not after.is_error
    assert_kernel_free(kernel)


#: Busy for 60 s, first leaving the file `busy_started` as a sign it runs.
STARTED = "open('busy_started', 'w').close()\n"
BUSY_60_S = STARTED + "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\nfinished = True"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("code", [BUSY_60_S, STARTED + "import asyncio\nawait asyncio.sleep(60)\nfinished = True"])
def test_interrupt_stops_a_cell_notebook_run_runs(
    kernel: Kernel, project: Path, tmp_path: Path, code: str
) -> None:
    path = work_notebook(kernel, project, "print('busy')\n" + code)
    personal({"model": scripted(tmp_path, [tool("notebook_run", path="work.ipynb", cell_id="loop")], [text("never")])})
    took = kernel.interrupt_during("%%larik --yes\nrun it", left(project / "busy_started"), "the cell runs")
    assert took < 30  # the cell stopped, its outputs written to the file: well before its 60 s
    assert_interrupted_call(project)
    assert stream_text(path) == "busy\n[stopped: interrupted]\n"
    assert "finished" not in kernel.run("print(sorted(k for k in globals() if k == 'finished'))").strip("[]\n")
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_stops_a_busy_loop_of_the_python_tool(kernel: Kernel, project: Path, tmp_path: Path) -> None:
    personal({"model": scripted(tmp_path, [tool("python", code=BUSY_60_S)], [text("never")])})
    took = kernel.interrupt_during("%%larik --yes\nspin", left(project / "busy_started"), "the busy loop runs")
    assert took < 30  # not the loop's 60 s
    (result,) = session_messages(project)[-1].tool_results()  # the turn ended with this call
    assert result.is_error and result.content.endswith("KeyboardInterrupt\n[stopped: interrupted]")
    assert 'File "<larik-python-' in result.content and "code_stop" not in result.content
    assert "finished" not in kernel.run("print(sorted(k for k in globals() if k == 'finished'))").strip("[]\n")
    assert_kernel_free(kernel)
