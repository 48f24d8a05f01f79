"""Jupyter's interrupt (SIGINT to a real kernel) ends a `%larik` turn within a second in every
phase, kills the shell command's process group and records the interruption as Stop does."""

from __future__ import annotations

import os
import queue
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

from larik_jupyter.agent.loop import INTERRUPTED_RESULT
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import personal, scripted, text, tool
from tests.process_helpers import processes_running, unique_sleeps

TINY = Path(__file__).parent / "mcp_servers" / "tiny_server.py"
SLEEPS = unique_sleeps(41)


class Kernel:
    """A real ipykernel in `project` with `%load_ext larik_jupyter` done."""

    def __init__(self, km: KernelManager, kc: BlockingKernelClient) -> None:
        self.km, self.kc = km, kc

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
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                break
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
        return "".join(printed)

    def interrupt_during(self, cell: str, reached: Any) -> float:
        """Start `cell`, wait until `reached()`, interrupt; the seconds until the cell ended."""
        msg_id = self.execute(cell)
        deadline = time.monotonic() + 30
        while not reached():
            assert time.monotonic() < deadline, "the turn never reached the phase under test"
            time.sleep(0.05)
        time.sleep(0.5)  # well inside the phase
        sent = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.reply(msg_id, timeout=40)
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


def on_disk(project: Path, needle: str) -> Any:
    def reached() -> bool:
        return any(needle in p.read_text() for p in Path(os.environ["LARIK_DATA_DIR"]).rglob("*.jsonl"))

    return reached


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
    took = kernel.interrupt_during(cell, lambda: bool(processes_running(sleep)))
    assert took < 1.0
    assert processes_running(sleep) == []
    assert_interrupted_call(project)
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cell", ["%larik --yes go", "x = 1\n%larik --yes go\ny = 2"])
def test_interrupt_stops_python_running_in_the_kernel(
    kernel: Kernel, project: Path, tmp_path: Path, cell: str
) -> None:
    code = "import time\nfor _ in range(300):\n    time.sleep(0.1)\nfinished = True"
    personal({"model": scripted(tmp_path, [tool("python", code=code)], [text("never")])})
    took = kernel.interrupt_during(cell, on_disk(project, "range(300)"))
    assert took < 1.0
    assert "finished" not in kernel.run("print(sorted(k for k in globals() if k == 'finished'))").strip("[]\n")
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_while_waiting_for_an_approval_cancels_the_card(
    kernel: Kernel, project: Path, tmp_path: Path
) -> None:
    personal({"model": scripted(tmp_path, [tool("write", path="a.txt", content="x")], [text("never")])})
    kernel.run("get_ipython().magics_manager.registry['LarikMagics'].interactive = True")
    took = kernel.interrupt_during("%larik go", on_disk(project, '"a.txt"'))
    assert took < 1.0
    assert not (project / "a.txt").exists()
    assert_interrupted_call(project)
    cards = kernel.run(
        "from ipywidgets.widgets.widget import _instances\n"
        "from larik_jupyter.notebook.widgets.approval import ApprovalWidget\n"
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
    slow = {"content": [text("first words " + "and more " * 20)], "delay": 3}
    personal({"model": scripted(tmp_path, slow)})
    started = time.monotonic()
    took = kernel.interrupt_during("%larik go", lambda: time.monotonic() - started > 1.5)
    assert took < 1.0
    last = session_messages(project)[-1]
    assert last.role == "assistant" and last.interrupted
    assert_kernel_free(kernel)


@pytest.mark.timeout(120)
def test_interrupt_during_an_mcp_call(kernel: Kernel, project: Path, tmp_path: Path) -> None:
    personal(
        {
            "model": scripted(tmp_path, [tool("mcp__tiny__hang", seconds=30)], [text("never")]),
            "mcpServers": {"tiny": {"command": sys.executable, "args": [str(TINY)]}},
            "permissions": {"allow": ["mcp__tiny__*"]},
        }
    )
    took = kernel.interrupt_during("%larik go", on_disk(project, "mcp__tiny__hang"))
    assert took < 1.0
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
    took = kernel.interrupt_during("%larik go", lambda: bool(processes_running(sleep)))
    assert took < 1.0
    assert processes_running(sleep) == []
    assert_interrupted_call(project)
    assert_kernel_free(kernel)


