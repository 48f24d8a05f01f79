"""How soon `/check` starts its first cell, in a folder with a 2 GB data file and without it,
against a plain kernel started in the same folder (no copy, no guard), round by round.

The check works in a scratch copy of the project (`scratch/copy.py`) whose files are links to
the originals, and installs its guard before the first cell; the subject is the time from
the copy being made (what `run_check` does first) to the first checked cell running (the cell
prints `time.time()`).
The floor is a plain `KernelManager` start in the real folder to its first cell. Target
(issue 37): a folder with a 2 GB data file starts its first checked cell within 2 s.

The confinement by the operating system (issue 50: the Landlock launcher before the kernel) is
timed against the same check without it (`LARIK_TEST_CONFINEMENT=unavailable`: the guard
alone) in the same rounds. Target: at most +50 ms to the first checked cell. As that
difference drowns in the kernel's own start on a loaded machine, the launcher is also timed
alone: confining and exec'ing `/bin/true` against exec'ing it straight, in wall time and in
the CPU time the child used (which the machine's load does not inflate).

Run (`--small`: the small folder only, no 2 GB file written):

    .venv/bin/python bench/bench_check.py [ROUNDS] [--small]
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook
from paired import alternate, banner, run_cell, span

FIRST = "import time\nprint('LARIK-FIRST', time.time())"
BIG = 2 * 1024**3


def _project(root: Path, big: bool) -> Path:
    project = root / ("big" if big else "small")
    (project / ".git").mkdir(parents=True)
    nb = new_notebook(cells=[new_code_cell(FIRST), new_code_cell("x = 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, project / "analysis.ipynb")
    if big:
        with open(project / "data.bin", "wb") as handle:  # written out, not sparse: a copy would read it all
            block = os.urandom(1 << 20)
            for _ in range(BIG >> 20):
                handle.write(block)
    return project


def _checked(project: Path, *, landlock: bool = True) -> float:
    """The steps `run_check` takes before its first cell: the copy, the confined and guarded
    kernel (without Landlock unless `landlock`), the cell."""
    from larik_jupyter.scratch.confine import TEST_SWITCH
    from larik_jupyter.scratch.copy import make_copy
    from larik_jupyter.scratch.kernel import Confinement, ScratchKernel

    if not landlock:
        os.environ[TEST_SWITCH] = "unavailable"
    started = time.time()
    copy = make_copy(project)
    try:
        with ScratchKernel(copy.place(project), Confinement.in_copy(copy, "checked in a copy")) as kernel:
            assert kernel.held.landlock == landlock, kernel.held
            outcome = kernel.run(FIRST, timeout=60)
    finally:
        copy.folder.remove()
        os.environ.pop(TEST_SWITCH, None)
    assert not outcome.error, outcome.error
    return float(outcome.stdout.split()[-1]) - started


def _exec(confined: bool, folder: Path, cpu: list[float]) -> float:
    """Wall seconds to run /bin/true (through the launcher when `confined`); its CPU seconds
    are appended to `cpu`."""
    from larik_jupyter.scratch.confine import launcher

    folders: list[os.PathLike[str]] = [folder]
    prefix = launcher(folders, network=False, error_file=folder / "error.txt") if confined else []
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*prefix, "/bin/true"], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
    return wall


def _plain(project: Path) -> float:
    from paired import kernel

    started = time.time()
    with kernel(cwd=project) as kc:
        printed = run_cell(kc, FIRST)
    return float(printed.split()[-1]) - started


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--small"]
    rounds = int(args[0]) if args else 5
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        small = _project(Path(tmp), False)
        cases = {
            "plain kernel, small folder": lambda: _plain(small),
            "check, small folder": lambda: _checked(small),
            "check without Landlock, small": lambda: _checked(small, landlock=False),
        }
        if "--small" not in sys.argv:
            big = _project(Path(tmp), True)
            cases["plain kernel, 2 GB folder"] = lambda: _plain(big)
            cases["check, 2 GB folder"] = lambda: _checked(big)
        results = alternate(cases, rounds)
        cpu: dict[str, list[float]] = {"exec": [], "launcher": []}  # the first of each: the warm-up
        alone = alternate({"exec": lambda: _exec(False, small, cpu["exec"]),
                           "launcher": lambda: _exec(True, small, cpu["launcher"])}, rounds * 5)
    for name, values in results.items():
        print(f"{name:<30} first cell after {span(values, 1000, 0, ' ms')}")
    confined = [c - u for c, u in zip(results["check, small folder"], results["check without Landlock, small"], strict=True)]
    print(f"Landlock over the guard alone, small folder: {span(confined, 1000, 0, ' ms')}; target: at most +50 ms")
    launched = [c - u for c, u in zip(alone["launcher"], alone["exec"], strict=True)]
    print(f"the launcher alone (confine, then exec /bin/true): +{span(launched, 1000, 1, ' ms')} wall, "
          f"{span(cpu['launcher'][1:], 1000, 1, ' ms')} CPU (exec alone {span(cpu['exec'][1:], 1000, 1, ' ms')})")
    if "check, 2 GB folder" in results:
        added = [c - p for c, p in zip(results["check, 2 GB folder"], results["plain kernel, 2 GB folder"], strict=True)]
        print(f"check over a plain kernel, 2 GB folder: +{span(added, 1000, 0, ' ms')}; target: first checked cell within 2 s")


if __name__ == "__main__":
    main()
