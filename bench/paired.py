"""What every bench shares: floor and subjects alternate round by round, results are medians
with their range, and each run prints the command and the commit that produced it."""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def timed(fn: Callable[[], object]) -> float:
    """Seconds `fn()` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(
    cases: dict[str, Callable[[], float]], rounds: int, *, warmup: int = 1
) -> dict[str, list[float]]:
    """Run every case once per round, in the order given (floor first), for `rounds` recorded
    rounds after `warmup` unrecorded ones. Each case returns the seconds it measured itself,
    so its own setup (fresh directories, fresh processes) stays outside the figure."""
    results: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(warmup + rounds):
        for name, case in cases.items():
            seconds = case()
            if round_no >= warmup:
                results[name].append(seconds)
    return results


def ratios(results: dict[str, list[float]], subject: str, floor: str) -> list[float]:
    """The per-round ratios of `subject` to `floor` (same round, so the same machine load)."""
    return [s / f for s, f in zip(results[subject], results[floor], strict=True)]


def span(values: list[float], scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    """`median (min – max)` of `values` times `scale`."""
    med, low, high = (v * scale for v in (statistics.median(values), min(values), max(values)))
    return f"{med:.{digits}f}{unit} ({low:.{digits}f} – {high:.{digits}f})"


def compile_like_install(root: Path) -> None:
    """Write larik_jupyter's .pyc files, as `pip install` does for an installed package.

    A source checkout run with PYTHONDONTWRITEBYTECODE (as on the project's machines) would
    otherwise compile every module from source in every fresh process: about 0.5 s for the
    whole package, a cost no installed copy (nor the peers' installed packages) pays.
    """
    compileall.compile_dir(str(root / "larik_jupyter"), quiet=1)


def banner() -> None:
    """The command, the commit and the machine's load, for RESULTS.md; compiles our bytecode
    first (see `compile_like_install`)."""
    root = Path(__file__).resolve().parent.parent
    compile_like_install(root)
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", ""
    script = os.path.relpath(sys.argv[0], root)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"command: python {' '.join([script, *sys.argv[1:]])}")
    print(f"commit: {commit}{' (with uncommitted changes)' if dirty else ''}; load average {load}")
    print("bytecode: larik_jupyter's .pyc files written first, as an install does")


@contextmanager
def kernel(env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Any]:
    """A fresh python3 kernel (with `env` added to this process's environment, in `cwd`): its
    client, the kernel shut down at the end."""
    from jupyter_client.manager import start_new_kernel

    where: dict[str, Any] = {"cwd": str(cwd)} if cwd is not None else {}
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ, **(env or {})}, **where)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run_cell(kc: Any, code: str, timeout: float = 120) -> str:
    """Run `code` in the kernel of client `kc`; what it printed (asserting it ran without error)."""
    out: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            out.append(str(content.get("text", "")))
        elif msg["msg_type"] == "error":
            out.append("ERROR " + str(content.get("evalue", "")))

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    assert reply["content"]["status"] == "ok", "".join(out)
    return "".join(out)
