"""notebook_run's output throughput: a cell printing 6.4 MB as 64,000 lines, run by notebook_run
against the same cell run plainly, in the same kernel, round by round.

One real ipykernel (jupyter_client) in a temporary project with `%load_ext larik_jupyter` and a
scripted model. Each round runs the cell plainly (execute request to its reply, its output
streamed over iopub and read by this client, as a front end would) and then through a `%%larik`
turn whose model calls notebook_run on it; the subject is that call's own duration as the session
records it (reading the notebook, running the cell with its outputs captured, writing them into
the file, the result for the model). Target: within 3x the plain cell.

Run:

    .venv/bin/python bench/bench_notebook_run.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import queue
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paired import banner, span

LINES = 64_000
CELL = f"for i in range({LINES}):\n    print('x' * 99)"  # 100 bytes a line: 6.4 MB


class Kernel:
    def __init__(self, project: Path, env: dict[str, str]) -> None:
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="python3", cwd=str(project), env=env)

    def run(self, code: str) -> float:
        """Seconds from the execute request to its reply, reading iopub meanwhile."""
        started = time.perf_counter()
        msg_id = self.kc.execute(code)
        while True:
            with_reply = False
            try:
                msg = self.kc.get_shell_msg(timeout=0.01)
                with_reply = msg["parent_header"].get("msg_id") == msg_id
            except queue.Empty:
                pass
            self._drain()
            if with_reply:
                assert msg["content"]["status"] == "ok", msg["content"]
                return time.perf_counter() - started

    def _drain(self) -> None:
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0)
            except queue.Empty:
                return

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def last_tool_result(data: Path) -> Any:
    (path,) = data.glob("sessions/*/*.jsonl")
    for line in reversed(path.read_text().splitlines()):
        for block in json.loads(line).get("message", {}).get("content", []):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return block
    raise AssertionError("no tool result in the session")


def scripted_kernel(tmp: str, call: dict[str, Any], rounds: int, setup: Callable[[Path], None] = lambda _: None) -> tuple[Path, Path, Kernel]:
    """A project in `tmp` (`setup` adds its files) whose personal config's scripted model makes
    `call` then says "Done.", `rounds` times; a kernel in it with larik_jupyter loaded from this
    checkout, data and config dirs of its own: the project, the data dir and the kernel."""
    project, data, config = Path(tmp, "proj"), Path(tmp, "data"), Path(tmp, "config")
    (project / ".git").mkdir(parents=True)
    config.mkdir()
    setup(project)
    replies = [{"content": [call]}, {"content": [{"type": "text", "text": "Done."}]}] * rounds
    (project / "script.json").write_text(json.dumps({"responses": replies}))
    (config / "config.json").write_text(json.dumps({"model": f"scripted:{project / 'script.json'}"}))
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "LARIK_DATA_DIR": str(data), "LARIK_CONFIG_DIR": str(config),
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    kernel = Kernel(project, env)
    kernel.run("%load_ext larik_jupyter")
    return project, data, kernel


def main() -> None:
    import nbformat

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    banner()
    def notebook(project: Path) -> None:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(CELL, id="lines")]
        nbformat.write(nb, project / "work.ipynb")

    with tempfile.TemporaryDirectory() as tmp:
        call = {"type": "tool_use", "name": "notebook_run", "input": {"path": "work.ipynb", "cell_id": "lines"}}
        project, data, kernel = scripted_kernel(tmp, call, rounds + 1, notebook)
        try:
            plain: list[float] = []
            tool: list[float] = []
            for round_no in range(rounds + 1):  # the first round warms up (imports, first turn)
                seconds = kernel.run(CELL)
                kernel.run("%%larik --yes\nrun the cell")
                result = last_tool_result(data)
                assert not result.get("is_error"), result
                if round_no:
                    plain.append(seconds)
                    tool.append(result["duration"])
        finally:
            kernel.close()
        written = nbformat.read(project / "work.ipynb", 4).cells[0].outputs[0].text
        assert len(written) == LINES * 100, len(written)
    ratios = [t / p for t, p in zip(tool, plain, strict=True)]
    print(f"cell printing {LINES:,} lines ({LINES * 100 / 1e6:.1f} MB), {rounds} rounds")
    print(f"  plain cell (execute to reply):   {span(plain, 1000, 0, ' ms')}")
    print(f"  notebook_run (the call's duration): {span(tool, 1000, 0, ' ms')}")
    print(f"  ratio notebook_run / plain:       {span(ratios, 1, 2, 'x')}  (target ≤ 3x)")


if __name__ == "__main__":
    main()
