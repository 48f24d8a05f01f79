"""Cost of watching what a call does to the user's variables (issue 32).

1. The fingerprint of a 100 MB DataFrame against the floor `pandas.util.hash_pandas_object`
   of the same frame, alternating in the same run (target: within 1.5x), for a numeric frame
   and for one whose 100 MB include a string column.
2. What the watch adds to a `python` call that touches only small values, in a namespace that
   also holds an untouched 100 MB frame and 200 other variables: fingerprints of the names the
   code may change before the call and the comparison after (target: < 2 ms). For the record,
   the whole python call with the watch.

Run:

    .venv/bin/python bench/bench_fingerprint.py
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.paired import alternate, ratios, span, timed
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.fingerprint import fingerprint
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel import PythonTool
from larik_jupyter.tools.touched_names import names_it_may_change
from larik_jupyter.tools.variable_watch import VariableWatch

ROUNDS = 9
CALLS = 200
SMALL_CODE = "data.append(1)\ncfg['k'] = len(data)\ntotal = sum(data[-5:])"


def numeric_100mb() -> pd.DataFrame:
    rows = (100 << 20) // (10 * 8)
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"c{i}": rng.random(rows) for i in range(10)})


def mixed_100mb() -> pd.DataFrame:
    rows = (100 << 20) // (8 * 8 + 40)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{i}": rng.random(rows) for i in range(8)})
    frame["label"] = pd.Series(rng.integers(0, 1000, rows)).map(lambda n: f"label-{n}").astype(object)
    return frame


def case(fn: Callable[[], object]) -> Callable[[], float]:
    """`fn` as a case of `alternate`: it measures its own seconds."""
    return lambda: timed(fn)


def compare(label: str, frame: pd.DataFrame) -> None:
    size = frame.memory_usage(deep=True).sum() / (1 << 20)
    results = alternate(
        {
            "hash_pandas_object": case(lambda: pd.util.hash_pandas_object(frame)),
            "fingerprint": case(lambda: fingerprint(frame)),
        },
        ROUNDS,
    )
    print(f"{label} ({size:.0f} MB in memory):")
    print(f"  hash_pandas_object (floor): {span(results['hash_pandas_object'], 1e3, unit=' ms')}")
    print(f"  fingerprint:                {span(results['fingerprint'], 1e3, unit=' ms')}")
    print(f"  ratio fingerprint / floor:  {span(ratios(results, 'fingerprint', 'hash_pandas_object'), digits=2)} (target <= 1.5)")


def small_call(frame: pd.DataFrame, root: Path) -> None:
    ns: dict[str, Any] = {f"v{i}": list(range(10)) for i in range(200)}
    ns.update(df=frame, data=[1, 2, 3], cfg={"k": 0}, total=0)
    names = names_it_may_change(ast.parse(SMALL_CODE))
    env = Env(cwd=root, root=root, host=KernelHost(ns))
    tool = PythonTool()

    def watch_only() -> None:
        for _ in range(CALLS):
            VariableWatch(ns, names).changes(ns)

    def whole_call() -> None:
        for _ in range(CALLS):
            tool.run(env, {"code": SMALL_CODE})
            del ns["data"][3:]

    results = alternate({"call": case(whole_call), "watch": case(watch_only)}, ROUNDS)
    per_call = {name: [t / CALLS for t in values] for name, values in results.items()}
    print("small python call (namespace with a 100 MB frame and 200 other variables):")
    print(f"  whole call, watch included: {span(per_call['call'], 1e3, digits=3, unit=' ms')}")
    print(f"  added by the watch:         {span(per_call['watch'], 1e3, digits=3, unit=' ms')} (target < 2 ms)")


def main() -> None:
    print(f"python {sys.version.split()[0]}, pandas {pd.__version__}, numpy {np.__version__}, cores {os.cpu_count()}")
    compare("numeric frame, 10 float64 columns", numeric_100mb())
    compare("mixed frame, 8 float64 columns and a string column", mixed_100mb())
    with tempfile.TemporaryDirectory() as tmp:
        small_call(numeric_100mb(), Path(tmp))


if __name__ == "__main__":
    main()
