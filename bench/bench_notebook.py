"""Cost of the notebook layer: kernel-truth capture per executed cell, and notebook_read.

1. Capture: the same IPython shell runs a cell printing 1 KB with and without the capture,
   in alternating blocks of the same run (CPU time; median per cell, range over blocks; the
   extra is the median of the paired block differences); then the same
   through a real ipykernel started with jupyter_client (one kernel with `%load_ext
   larik_jupyter`, one without, interleaved), per execute round trip (wall time). Memory held
   in a worst case is reported against the 20 MiB cap.
2. notebook_read of a 1,000-cell notebook (sources and stream outputs, all cells in one
   page), against `nbformat.read` of the same file in the same run.

Run:

    .venv/bin/python bench/bench_notebook.py
"""

from __future__ import annotations

import base64
import contextlib
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CELL = "print('x' * 1023)"
BLOCKS = 7
SHELL_BLOCKS = 15
CELLS_PER_BLOCK = 200
KERNEL_CELLS = 150


def _per_cell(run: Callable[[], None], n: int) -> float:
    """CPU seconds per call: the machine is shared, and CPU time of this process is what the
    capture adds to a cell."""
    start = time.process_time()
    for _ in range(n):
        run()
    return (time.process_time() - start) / n


def bench_capture_in_process() -> tuple[list[float], list[float], int, int]:
    from IPython.core.interactiveshell import InteractiveShell

    from larik_jupyter.frontends.notebook.capture import KernelCapture

    shell = InteractiveShell.instance()
    capture = KernelCapture(shell)

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            shell.run_cell(CELL, store_history=True)

    _per_cell(run, 100)  # warm up
    plain, captured = [], []
    for _ in range(SHELL_BLOCKS):
        plain.append(_per_cell(run, CELLS_PER_BLOCK))
        capture.start()
        captured.append(_per_cell(run, CELLS_PER_BLOCK))
        capture.stop()
    # Memory held, worst case: every cell 100 KB of source displaying a 4 MB image.
    capture.start()
    shell.user_ns["big_image"] = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 3_000_000).decode()
    show = "from IPython.display import display\ndisplay({'image/png': big_image}, raw=True)\n#"
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(200):
            shell.run_cell(show + "y" * 100_000, store_history=False)
    held, cells = capture.bytes, len(capture.cells)
    capture.stop()
    return plain, captured, held, cells


def bench_hooks_alone() -> float:
    """CPU seconds per cell of the capture's own callbacks (pre_run_cell + post_run_cell)."""
    from types import SimpleNamespace

    from IPython.core.interactiveshell import InteractiveShell

    from larik_jupyter.frontends.notebook.capture import KernelCapture

    capture = KernelCapture(InteractiveShell.instance())
    info = SimpleNamespace(raw_cell=CELL, cell_id="abc")
    result = SimpleNamespace(execution_count=1, error_in_exec=None, error_before_exec=None)

    def one() -> None:
        capture._pre(info)
        capture._post(result)

    _per_cell(one, 1000)
    return statistics.median(_per_cell(one, 10_000) for _ in range(5))


def bench_capture_kernel() -> tuple[list[float], list[float]]:
    from jupyter_client.manager import start_new_kernel

    kernels = {}
    for name in ("plain", "captured"):
        km, kc = start_new_kernel(kernel_name="python3")
        kernels[name] = (km, kc)
        if name == "captured":
            kc.execute_interactive("%load_ext larik_jupyter", timeout=60, output_hook=lambda m: None)
    times: dict[str, list[float]] = {"plain": [], "captured": []}
    try:
        for _ in range(BLOCKS):
            for name, (_km, kc) in kernels.items():
                start = time.perf_counter()
                for _ in range(KERNEL_CELLS // BLOCKS):
                    kc.execute_interactive(CELL, timeout=60, output_hook=lambda m: None)
                times[name].append((time.perf_counter() - start) / (KERNEL_CELLS // BLOCKS))
    finally:
        for km, kc in kernels.values():
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return times["plain"], times["captured"]


def bench_read() -> tuple[list[float], list[float]]:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from larik_jupyter.tools.env import Env
    from larik_jupyter.tools.notebook.cells import NotebookReadTool

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cells = []
        for i in range(1000):
            if i % 5 == 0:
                cells.append(new_markdown_cell(f"## Section {i}\nSome words about it."))
            else:
                cell = new_code_cell(f"value_{i} = compute({i})\nprint(value_{i})", execution_count=i)
                cell.outputs = [new_output("stream", name="stdout", text=f"{i * 3.14159}\n" * 3)]
                cells.append(cell)
        path = root / "big.ipynb"
        nbformat.write(new_notebook(cells=cells), str(path))
        env = Env(cwd=root, root=root)
        tool = NotebookReadTool()
        args = {"path": "big.ipynb", "limit": 1000}
        assert "1000 cells" in tool.run(env, args).content
        floor, ours = [], []
        for _ in range(BLOCKS):
            start = time.perf_counter()
            nbformat.read(str(path), as_version=4)
            floor.append(time.perf_counter() - start)
            start = time.perf_counter()
            tool.run(env, args)
            ours.append(time.perf_counter() - start)
    return floor, ours


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.3f} ms ({min(values) * 1000:.3f}–{max(values) * 1000:.3f})"


def main() -> None:
    plain, captured, held, cells = bench_capture_in_process()
    extra = [c - p for p, c in zip(plain, captured, strict=True)]
    print("capture, in-process shell, cell printing 1 KB:")
    print(f"  without capture  {_ms(plain)}")
    print(f"  with capture     {_ms(captured)}")
    print(f"  extra per cell   {_ms(extra)}")
    print(f"  the capture's callbacks alone: {bench_hooks_alone() * 1e6:.1f} us per cell")
    print(f"  held after 200 cells of 100 KB source + a 4 MB image each: {held / 2**20:.1f} MiB "
          f"in {cells} cells (caps: 20 MiB, 50 cells, images of the newest 3)")
    kplain, kcaptured = bench_capture_kernel()
    kextra = [c - p for p, c in zip(kplain, kcaptured, strict=True)]
    print("capture, real ipykernel, execute round trip of a cell printing 1 KB:")
    print(f"  without extension {_ms(kplain)}")
    print(f"  with extension    {_ms(kcaptured)}")
    print(f"  extra per cell    {_ms(kextra)}")
    floor, ours = bench_read()
    ratios = [o / f for f, o in zip(floor, ours, strict=True)]
    print("notebook_read of 1,000 cells:")
    print(f"  nbformat.read    {_ms(floor)}")
    print(f"  notebook_read    {_ms(ours)}")
    print(f"  ratio            {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})")


if __name__ == "__main__":
    main()
