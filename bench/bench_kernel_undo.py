"""Cost of undo's kernel-variable snapshots (issue 19).

1. Snapshot of a 100 MB DataFrame against the floor `df.copy()` of the same frame, in the
   same run: the snapshot measures its size, then copies it (target: within 2x).
2. What snapshots add to a `python` call that touches only small values, in a namespace that
   also holds that untouched 100 MB frame and 200 other variables: the same call with and
   without snapshots, each call in a fresh turn so it copies every time (target: < 2 ms).
3. For the record: the turn-end manifest write that notes the variables' names (once per
   turn, not per call; fsync-bound).

Run:

    .venv/bin/python bench/bench_kernel_undo.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel.python import PythonTool
from larik_jupyter.tools.kernel.undo import KernelSnapshots, call_snapshots
from larik_jupyter.tools.kernel.variable_watch import VariableWatch

REPEAT = 9
CALLS = 200
SMALL_CODE = "data.append(1)\ncfg['k'] = len(data)\ntotal = sum(data[-5:])"


def timed(fn: Callable[[], object], repeat: int = REPEAT) -> list[float]:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def interleaved(floor: Callable[[], object], ours: Callable[[], object]) -> tuple[list[float], list[float]]:
    """Alternate the two, so a loaded machine slows both alike."""
    pairs = [(timed(floor, 1)[0], timed(ours, 1)[0]) for _ in range(REPEAT)]
    return [a for a, _ in pairs], [b for _, b in pairs]


def show(label: str, times: list[float], unit: float = 1e3, suffix: str = "ms") -> float:
    median = statistics.median(times)
    print(f"{label}: median {median * unit:.3f} {suffix} (range {min(times) * unit:.3f}–{max(times) * unit:.3f})")
    return median


def frame_100mb() -> pd.DataFrame:
    rows = (100 << 20) // (10 * 8)
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"c{i}": rng.random(rows) for i in range(10)})


def snapshot_once(ns: dict[str, Any], watch: VariableWatch) -> None:
    """The copy undo takes of `ns["df"]` (the watch's fingerprints, taken once outside the
    timing, are another bench's: `bench_fingerprint.py`)."""
    snapshots = KernelSnapshots()
    snapshots.open_turn(1)
    snapshots.before_run(ns, ["df"], watch)


def small_call_cost(df: pd.DataFrame, root: Path) -> tuple[list[float], list[float]]:
    ns: dict[str, Any] = {f"v{i}": list(range(10)) for i in range(200)}
    ns.update(df=df, data=[1, 2, 3], cfg={"k": 0}, total=0)
    tool = PythonTool()
    plain = Env(cwd=root, root=root, host=KernelHost(ns))
    snapshotting = Env(cwd=root, root=root, host=KernelHost(ns), keeps_variables=True)
    turn = iter(range(1, 10**9))

    def calls(env: Env) -> Callable[[], None]:
        def run() -> None:
            for _ in range(CALLS):
                if (snapshots := call_snapshots(env)) is not None:
                    snapshots.open_turn(next(turn))  # a fresh turn: every call copies
                tool.run(env, {"code": SMALL_CODE})
                del ns["data"][3:]
        return run

    return [t / CALLS for t in timed(calls(plain))], [t / CALLS for t in timed(calls(snapshotting))]


def manifest_cost(root: Path) -> list[float]:
    from larik_jupyter.checkpoint.store import CheckpointStore

    store = CheckpointStore("20260101-000000-b19b19", root)

    def note() -> None:
        store.begin_turn(1)
        store.note_variables([("data", True), ("cfg", True), ("total", True)])

    return timed(note)


def main() -> None:
    print(f"python {sys.version.split()[0]}, pandas {pd.__version__}, numpy {np.__version__}, cores {os.cpu_count()}")
    df = frame_100mb()
    print(f"frame: {df.memory_usage(deep=True).sum() / (1 << 20):.1f} MB")
    ns = {"df": df}
    watch = VariableWatch(ns, ["df"])
    floors, snapshots = interleaved(lambda: df.copy(), lambda: snapshot_once(ns, watch))
    floor = show("df.copy() (floor)", floors)
    ours = show("snapshot of df", snapshots)
    print(f"ratio snapshot / df.copy(): {ours / floor:.2f} (target <= 2)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("LARIK_DATA_DIR", str(Path(tmp) / "data"))
        plain, snapshotting = small_call_cost(df, Path(tmp))
        a = show("python call, no snapshots", plain)
        b = show("python call, with snapshots", snapshotting)
        print(f"added per call: {(b - a) * 1e3:.3f} ms (target < 2 ms)")
        show("turn-end manifest note of 3 names (once per turn)", manifest_cost(Path(tmp)))


if __name__ == "__main__":
    main()
