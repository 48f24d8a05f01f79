"""Receipts of lazy frames the agent's code computes (polars `collect` and `collect_all`, Dask's
`compute`): the rows of what was computed and the plan's last operation, the other counts said
to be left out; a lazy frame the code only builds gets no receipt and is never computed, and a
computed one is computed once, as without the watch."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest

from tests.test_tools_kernel import kernel_env, run_python

LAZY_CODE = """
def udf(s):
    calls.append(len(s))
    return s

lf = pl.LazyFrame({"k": [1, 2, 2, 3, None], "v": [1, 2, 3, 4, 5]}).with_columns(pl.col("v").map_batches(udf, return_dtype=pl.Int64))
other = pl.LazyFrame({"k": [2, 2, 3]})
"""


def _namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {"pl": pl, "pd": pd, "calls": []}
    exec(LAZY_CODE, ns)  # a user cell: builds the lazy frames, computes nothing
    return ns


def test_a_lazy_frame_the_code_only_builds_gets_no_receipt_and_is_not_computed(tmp_path: Path) -> None:
    ns = _namespace()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        result = run_python(kernel_env(tmp_path, ns), (
            "joined = lf.join(other, on='k')\nkept = lf.filter(pl.col('k') > 1)\nper_k = lf.group_by('k').len()\n"
            "both = pl.concat([lf, lf])"
        ))
    assert result.receipts == [] and ns["calls"] == []
    assert [str(w.message) for w in warned] == []  # not even a plan resolved (polars warns when one is)


def test_a_collect_says_its_rows_and_its_plans_last_operation_computing_nothing_more(tmp_path: Path) -> None:
    ns = _namespace()
    bare = lf_calls(ns, "lf.join(other, on='k').sort('k').collect()")
    result = run_python(kernel_env(tmp_path, ns), "joined = lf.join(other, on='k').sort('k').collect()")
    assert ns["calls"] == bare  # the receipt computed nothing the code did not
    [receipt] = result.receipts
    assert (receipt.kind, receipt.last_operation, receipt.library) == ("collect", "join", "polars")
    assert receipt.rows_out == ns["joined"].height == 5 and receipt.rows_in == [] and receipt.variable == "joined"
    assert receipt.not_counted == "rows in, keys duplicated, rows unmatched (counting them would compute the lazy inputs)"
    assert ("joined = a frame computed (lazy, its last step a join): 5 rows; not counted: rows in, keys duplicated, "
            "rows unmatched (counting them would compute the lazy inputs)") in result.content


def lf_calls(ns: dict[str, Any], code: str) -> list[int]:
    """The UDF's calls when `code` computes without any watch (then forgotten)."""
    eval(code, ns)
    done = list(ns["calls"])
    ns["calls"].clear()
    return done


def test_each_frame_of_collect_all_gets_its_receipt_and_other_last_steps_none(tmp_path: Path) -> None:
    ns = _namespace()
    result = run_python(kernel_env(tmp_path, ns), (
        "kept, per_k, both = pl.collect_all([lf.filter(pl.col('k') > 1), lf.group_by('k').len(), pl.concat([lf, other], how='diagonal')])\n"
        "picked = lf.select('k').collect()\nfirst = lf.head(2).collect()"
    ))
    assert [(r.variable, r.last_operation, r.rows_out) for r in result.receipts] == [
        ("kept", "filter", 3), ("per_k", "groupby", 4), ("both", "concat", 8),
    ]
    eager = run_python(kernel_env(tmp_path, ns), "e = picked.filter(pl.col('k') > 1)")
    assert [(r.kind, r.rows_in, r.rows_out) for r in eager.receipts] == [("filter", [5], 3)]  # not a collect


def test_a_dask_compute_gets_a_receipt_and_computes_once(tmp_path: Path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    calls: list[int] = []

    def counted(part: pd.DataFrame) -> pd.DataFrame:
        calls.append(len(part))
        return part

    frame = pd.DataFrame({"k": [1, 2, 2, 3], "v": [1.0, None, 3.0, 4.0]})
    ns: dict[str, Any] = {"dd": dd, "pd": pd, "calls": calls}
    ns["ddf"] = dd.from_pandas(frame, npartitions=2).map_partitions(counted, meta=frame.iloc[:0])
    bare = len(ns["ddf"][ns["ddf"].k > 1].compute())
    calls.clear()
    result = run_python(kernel_env(tmp_path, ns), "kept = ddf[ddf.k > 1]\nnothing = ddf.dropna()")
    assert calls == [] and result.receipts == []  # nor the pandas Dask runs on made-up rows to build them
    result = run_python(kernel_env(tmp_path, ns), "got = kept.compute()\nno_gaps, = dd.compute(nothing)")
    assert sum(calls) == 2 * len(frame)  # each computation read each partition once
    found = [(r.library, r.variable, r.last_operation, r.rows_out) for r in result.receipts]
    assert found == [("dask", "got", "filter", bare), ("dask", "no_gaps", "dropna", 3)]
