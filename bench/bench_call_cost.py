"""Issue 52, point 5: what a `python` call adds with ~4 GB of frames held in the kernel.

1. A `python` call that only runs `df.head()` (and `pl_df.head()`) with ~4 GB of frames in the
   namespace — a pandas frame of float64 columns and an Arrow string column (~2 GB) and a
   polars frame of the same (~2 GB) — against the same code run plainly (`exec` in the same
   namespace), alternating in the same rounds (target: adds at most 30 ms): as the first call
   of a turn (nothing cached) and as a later call of the turn. For the record, a call that
   changes one float of `df` (what must still be hashed to see it).
2. The fingerprint's cost per GB for each kind of value: numpy, pandas float64, pandas Arrow
   strings, polars, pyarrow, a DuckDB connection's table (a value without a digest on this
   branch says so).

Run it once or twice, never in the test suite (it holds ~4 GB, ~6 GB while building):

    PYTHONPATH=. .venv/bin/python bench/bench_call_cost.py

Against main's code: `PYTHONPATH=/work/main:. .venv/bin/python bench/bench_call_cost.py`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

from bench.paired import banner, span, timed
from bench.python_calls import python_call_times, report
from larik_jupyter.tools.kernel.fingerprint import fingerprint

ROUNDS = 5
CALLS = 5
GB = 1 << 30
FLOATS = 6  # float64 columns of each frame, ~1 GB together
ROWS = GB // (FLOATS * 8)


def strings(rows: int) -> pa.ChunkedArray:
    """~1 GB of strings (`123456789-…`, four numbers), made in Arrow without Python objects."""
    rng = np.random.default_rng(1)
    parts = [pa.array(rng.integers(10**8, 10**9, rows)).cast(pa.string()) for _ in range(4)]
    return pa.chunked_array([pa.compute.binary_join_element_wise(*parts, "-")])


def frames() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    floats = {f"x{i}": rng.random(ROWS) for i in range(FLOATS)}
    labels = strings(ROWS)
    df = pd.DataFrame(floats, copy=False)
    df["s"] = pd.array(labels, dtype=pd.StringDtype("pyarrow"))
    pl_df = pl.from_arrow(pa.table({**floats, "s": labels}))
    assert isinstance(pl_df, pl.DataFrame)
    return {"df": df, "pl_df": pl_df}


def held(ns: dict[str, Any]) -> str:
    pandas_bytes = int(ns["df"].memory_usage(deep=False).sum())
    polars_bytes = int(ns["pl_df"].estimated_size())
    return f"pandas {pandas_bytes / GB:.2f} GB + polars {polars_bytes / GB:.2f} GB"


def per_gb(label: str, value: object, size: int) -> None:
    """The fingerprint of `value` (by identity, as a call takes it), in ms per GB held."""
    found = fingerprint(value, budget=8 * GB, identity=True)
    if found.digest is None:
        print(f"  {label}: no digest ({found.why})")
        return
    seconds = [timed(lambda: fingerprint(value, budget=8 * GB, identity=True)) for _ in range(3)]
    print(f"  {label} ({size / GB:.2f} GB): {span([s / (size / GB) for s in seconds], 1e3, unit=' ms per GB')}")


def main() -> None:
    banner()
    import larik_jupyter

    print(f"larik_jupyter from {Path(larik_jupyter.__file__).parent}")
    print(f"python {sys.version.split()[0]}, pandas {pd.__version__}, polars {pl.__version__}, "
          f"pyarrow {pa.__version__}, numpy {np.__version__}, cores {os.cpu_count()}")
    ns = frames()
    print(f"held: {held(ns)}")
    with tempfile.TemporaryDirectory() as tmp:
        report("df.head(); pl_df.head():", python_call_times(ns, "df.head()\npl_df.head()", Path(tmp), calls=CALLS, rounds=ROUNDS),
               "target <= 30 ms")
        report("df.loc[0, 'x0'] = 0.5 (the frame must be hashed to see it; for the record):",
               python_call_times(ns, "df.loc[0, 'x0'] = 0.5", Path(tmp), calls=CALLS, rounds=ROUNDS), "for the record")
    print("fingerprint cost per GB (by identity, as a call takes it; median of 3):")
    df, pl_df = ns["df"], ns["pl_df"]
    floats = df[[c for c in df.columns if c != "s"]]
    per_gb("numpy float64 array", df["x0"].to_numpy(), df["x0"].to_numpy().nbytes)
    per_gb("pandas, float64 columns", floats, int(floats.memory_usage(deep=False).sum()))
    labels = df["s"]
    per_gb("pandas, Arrow string column", labels, int(labels.memory_usage(deep=False)))
    per_gb("polars, float64 and string columns", pl_df, int(pl_df.estimated_size()))
    table = pl_df.to_arrow()
    per_gb("pyarrow Table", table, int(table.nbytes))
    numbers = table.drop_columns(["s"])
    con = duckdb.connect()
    con.register("numbers", numbers)
    con.execute("create table t as select * from numbers")
    con.unregister("numbers")
    per_gb("DuckDB connection, a table of float64 columns", con, int(numbers.nbytes))


if __name__ == "__main__":
    main()
