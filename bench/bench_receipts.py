"""What a receipt costs against the bare operation (issue 55: at most 2%), pandas, polars and
pyarrow, in one run: a left merge of ROWS × ROWS/10 frames (keys 5% unmatched, the right side
unique, as a lookup is; pandas' also with the lookup's keys out of order), a filter of ROWS rows
and a group-by aggregation of ROWS rows into ROWS/10 groups.

Each round runs the operation bare and then inside a `ReceiptWatch` (the agent's code as the
`python` tool runs it), alternately; the figure is the median of the per-round ratios, with the
receipt's counting alone (the same counts made on the same operands and result, timed apart)
as a share of the bare operation, which is less exposed to the machine's noise than the
difference of two runs, and the fastest counting against the fastest bare run (noise only adds
time: on a shared machine a 10M-row merge alone varies twofold within one run).

    .venv/bin/python bench/bench_receipts.py [ROWS] [ROUNDS] [CASE …]   (CASE: e.g. "pandas merge")
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
from paired import alternate, banner, ratios, span

from larik_jupyter.frames import arrow_receipts as arrow
from larik_jupyter.frames import receipt_ops as ops
from larik_jupyter.frames.receipt_watch import ReceiptWatch


def _frames(rows: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    lookup = rows // 10
    left = pd.DataFrame({
        "k": rng.integers(0, int(lookup * 1.05), rows), "a": rng.random(rows),
        "b": rng.integers(0, 100, rows), "c": rng.random(rows),
    })
    right = pd.DataFrame({"k": np.arange(lookup), "x": rng.random(lookup), "y": rng.integers(0, 9, lookup)})
    # The same lookup in another order: its keys are hashed, where sorted ones are looked up by
    # their place (pandas' fastest join, so the receipt's largest share).
    shuffled = right.sample(frac=1, random_state=0).reset_index(drop=True)
    return {"pd": pd, "pl": pl, "pa": pa, "left": left, "right": right, "shuffled": shuffled,
            "pleft": pl.from_pandas(left), "pright": pl.from_pandas(right),
            "aleft": pa.Table.from_pandas(left, preserve_index=False),
            "aright": pa.Table.from_pandas(right, preserve_index=False)}


CASES = {
    "pandas merge": ("left.merge(right, on='k', how='left')",
                     lambda ns, out: ops.pandas_merge(_no_name, out, ns["left"], ns["right"], on="k", how="left")),
    "pandas merge, hashed keys": (
        "left.merge(shuffled, on='k', how='left')",
        lambda ns, out: ops.pandas_merge(_no_name, out, ns["left"], ns["shuffled"], on="k", how="left")),
    "pandas filter": ("left[left['a'] > 0.5]",
                      lambda ns, out: ops.rows_receipt("filter", "pandas", _no_name, ns["left"], len(ns["left"]), out)),
    "pandas groupby": ("left.groupby('k').agg(total=('a', 'sum'))",
                       lambda ns, out: ops.pandas_groupby(_no_name, ns["left"].groupby("k"), out)),
    "polars join": ("pleft.join(pright, on='k', how='left')",
                    lambda ns, out: ops.polars_join(_no_name, out, ns["pleft"], ns["pright"], on="k", how="left")),
    "polars filter": ("pleft.filter(pl.col('a') > 0.5)",
                      lambda ns, out: ops.rows_receipt("filter", "polars", _no_name, ns["pleft"], ns["pleft"].height, out)),
    "polars group_by": ("pleft.group_by('k').agg(pl.col('a').sum())",
                        lambda ns, out: ops.polars_groupby(_no_name, ns["pleft"].group_by("k"), out)),
    "pyarrow join": ("aleft.join(aright, 'k', join_type='left outer')",
                     lambda ns, out: arrow.arrow_join(_no_name, out, "left outer", ns["aleft"], "k", ns["aright"], "k")),
    "pyarrow filter": ("aleft.filter(pa.compute.greater(aleft['a'], 0.5))",
                       lambda ns, out: ops.rows_receipt("filter", "pyarrow", _no_name, ns["aleft"],
                                                        ns["aleft"].num_rows, out)),
    "pyarrow group_by": ("aleft.group_by('k').aggregate([('a', 'sum')])",
                         lambda ns, out: arrow.arrow_group_by(_no_name, out, ns["aleft"], "k")),
}


def _no_name(value: object) -> str:
    return ""


def _run(ns: dict[str, Any], code: str, watched: bool) -> float:
    compiled = compile(code, "<bench>", "eval")
    started = time.perf_counter()
    if watched:
        with ReceiptWatch(_no_name) as watch:
            eval(compiled, ns)
        assert watch.seen, f"no receipt for {code}"
    else:
        eval(compiled, ns)
    return time.perf_counter() - started


def _counting(ns: dict[str, Any], code: str, count: Callable[[dict[str, Any], Any], object]) -> float:
    result = eval(code, ns)
    started = time.perf_counter()
    count(ns, result)
    return time.perf_counter() - started


def main(rows: int, rounds: int, only: list[str]) -> None:
    banner()
    ns = _frames(rows)
    print(f"frames: {rows:,} rows × 4 columns, lookup {rows // 10:,} × 3; {rounds} rounds")
    for name, (code, count) in CASES.items():
        if only and name not in only:
            continue
        results = alternate({
            "bare": lambda code=code: _run(ns, code, False),
            "receipt": lambda code=code: _run(ns, code, True),
            "counting": lambda code=code, count=count: _counting(ns, code, count),
        }, rounds)
        share = [c / b for c, b in zip(results["counting"], results["bare"], strict=True)]
        # The machine's noise only adds time: the fastest counting against the fastest bare run
        # is the receipt's own cost, the per-round median that cost as the noise left it.
        fastest = min(results["counting"]) / min(results["bare"])
        print(
            f"{name:25} bare {span(results['bare'], 1000, 1, ' ms')}; with receipt "
            f"{span(ratios(results, 'receipt', 'bare'), 1, 3, 'x')}; counting alone "
            f"{span(share, 100, 2, '%')} of the bare operation, fastest against fastest {fastest * 100:.2f}%"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5, sys.argv[3:])
