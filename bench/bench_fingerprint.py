"""Cost of watching what a call does to the user's variables (issues 32 and 37).

1. The fingerprint of a 100 MB DataFrame against the floor `pandas.util.hash_pandas_object`
   of the same frame, alternating in the same run (target: within 1.5x), for a numeric frame
   and for one whose 100 MB include a string column (by content, as a notebook check compares
   them; by identity, as a kernel call compares them before and after).
2. Issue 37's case: a `python` call that only runs `df.head()` with a 6,000,000-row frame (a
   float, an int and a string column) in the namespace, against the same code run plainly
   (`eval` in the namespace) in the same rounds (target: adds at most 0.3 s): the call as the
   first of its turn (every variable fingerprinted before and after, the frame copied for
   undo only when the code visibly changes it) and as a later call of the turn (the
   fingerprints after the previous call stand for before); for the record, the first call of
   a turn in protect mode, which copies every variable so any change can be rolled back.
3. A `python` call touching only small values in a namespace that also holds an untouched
   100 MB frame and 200 other variables, against the plain run (every variable is compared
   now, so the frame is fingerprinted too).

Run:

    PYTHONPATH=. .venv/bin/python bench/bench_fingerprint.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.paired import alternate, banner, ratios, span, timed
from bench.python_calls import python_call_times, report
from larik_jupyter.tools.kernel.fingerprint import fingerprint

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


def rows_6m() -> pd.DataFrame:
    rows = 6_000_000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.random(rows), "k": rng.integers(0, 100, rows)})
    frame["s"] = pd.Series(rng.integers(0, 1000, rows)).map(lambda n: f"label-{n}")
    return frame


def compare(label: str, frame: pd.DataFrame) -> None:
    size = frame.memory_usage(deep=True).sum() / (1 << 20)
    results = alternate(
        {
            "hash_pandas_object": case(lambda: pd.util.hash_pandas_object(frame)),
            "fingerprint": case(lambda: fingerprint(frame)),
            "by identity": case(lambda: fingerprint(frame, identity=True)),
        },
        ROUNDS,
    )
    print(f"{label} ({size:.0f} MB in memory):")
    print(f"  hash_pandas_object (floor): {span(results['hash_pandas_object'], 1e3, unit=' ms')}")
    print(f"  fingerprint by content:     {span(results['fingerprint'], 1e3, unit=' ms')}  "
          f"ratio {span(ratios(results, 'fingerprint', 'hash_pandas_object'), digits=2)} (target <= 1.5)")
    print(f"  fingerprint by identity:    {span(results['by identity'], 1e3, unit=' ms')}  "
          f"ratio {span(ratios(results, 'by identity', 'hash_pandas_object'), digits=2)}")


def main() -> None:
    banner()
    print(f"python {sys.version.split()[0]}, pandas {pd.__version__}, numpy {np.__version__}, cores {os.cpu_count()}")
    compare("numeric frame, 10 float64 columns", numeric_100mb())
    compare("mixed frame, 8 float64 columns and a string column", mixed_100mb())
    with tempfile.TemporaryDirectory() as tmp:
        report(
            "df.head() with a 6,000,000-row frame (float, int and string columns):",
            python_call_times({"df": rows_6m()}, "df.head()", Path(tmp), calls=1, rounds=ROUNDS, protect=True),
            "target <= 300 ms",
        )
        small: dict[str, Any] = {f"v{i}": list(range(10)) for i in range(200)}
        small.update(df=numeric_100mb(), data=[1, 2, 3], cfg={"k": 0}, total=0)
        report(
            "small python call (namespace with an untouched 100 MB frame and 200 other variables):",
            python_call_times(small, SMALL_CODE.replace("data.append(1)", "data[0] = 1"), Path(tmp),
                              calls=20, rounds=ROUNDS, protect=True),
            "for the record",
        )


if __name__ == "__main__":
    main()
