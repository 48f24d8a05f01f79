"""What a join or concat did to the result's columns (dtypes that changed where the rows did not
line up), and an aggregation of one grouped column named by its frame: each fact checked
against the frames themselves, and made false (the same operation where nothing changed, or
the frame named by nothing) to see the receipt change."""

from __future__ import annotations

from typing import Any

import pandas as pd
import polars as pl
import pytest

from larik_jupyter.session.receipts import receipt_text
from tests.test_receipts import watched


def _true_dtypes(result: Any, sources: list[Any], str_of: Any) -> dict[str, str]:
    """Columns of `result` whose dtype is not the one an input had, found here apart."""
    found = {}
    for column in result.columns:
        was = [str_of(s, column) for s in sources if column in s.columns]
        if any(w != str_of(result, column) for w in was):
            found[column] = str_of(result, column)
    return found


def _pandas_dtype(frame: Any, column: str) -> str:
    return str(frame[column].dtype)


def _polars_dtype(frame: Any, column: str) -> str:
    return str(frame.schema[column])


@pytest.mark.parametrize(("keys", "changes"), [([1, 2, 9], True), ([1, 2, 2], False)])
def test_a_joins_receipt_says_which_columns_changed_dtype(keys: list[int], changes: bool) -> None:
    # A left join whose rows all match keeps the lookup's integers; one with a row unmatched
    # turns them into floats (NaN), and only then does the receipt say so.
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"customer_id": keys, "total": [1.5, 2.5, 3.5]}),
        "customers": pd.DataFrame({"customer_id": [1, 2], "age": [30, 40], "name": ["a", "b"]}),
    }
    [receipt] = watched(ns, "joined = orders.merge(customers, on='customer_id', how='left')")
    true = _true_dtypes(ns["joined"], [ns["orders"], ns["customers"]], _pandas_dtype)
    assert bool(true) is changes
    assert {c: change.split(" → ")[1] for c, change in receipt.dtypes.items()} == true
    if changes:
        assert receipt.dtypes == {"age": "int64 → float64"}
        assert receipt_text(receipt).endswith("name gained 1 missing value; age int64 → float64")
    else:
        assert "int64 →" not in receipt_text(receipt)


def test_a_polars_join_keeps_its_dtypes_and_says_none_changed() -> None:
    ns: dict[str, Any] = {"o": pl.DataFrame({"k": [1, 2, 9]}), "c": pl.DataFrame({"k": [1, 2], "age": [30, 40]})}
    [receipt] = watched(ns, "j = o.join(c, on='k', how='left')")
    assert _true_dtypes(ns["j"], [ns["o"], ns["c"]], _polars_dtype) == {} == receipt.dtypes
    assert receipt.gained_missing == {"age": 1}


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_concats_receipt_says_which_columns_changed_dtype(library: str) -> None:
    if library == "pandas":
        ns: dict[str, Any] = {"pd": pd, "a": pd.DataFrame({"x": [1, 2], "y": [1, 2]}), "b": pd.DataFrame({"x": [3]})}
        code, str_of = "both = pd.concat([a, b])\nsame = pd.concat([a, a])", _pandas_dtype
    else:
        ns = {"pl": pl, "a": pl.DataFrame({"x": [1, 2], "y": [1, 2]}), "b": pl.DataFrame({"x": [3.5]})}
        code, str_of = "both = pl.concat([a, b], how='diagonal_relaxed')\nsame = pl.concat([a, a])", _polars_dtype
    receipts = {r.variable: r for r in watched(ns, code)}
    for name in ("both", "same"):
        true = _true_dtypes(ns[name], [ns["a"], ns["b"]] if name == "both" else [ns["a"]], str_of)
        assert {c: change.split(" → ")[1] for c, change in receipts[name].dtypes.items()} == true
    assert receipts["both"].dtypes and not receipts["same"].dtypes
    said = {"pandas": "y int64 → float64", "polars": "x Int64 / Float64 → Float64"}[library]
    assert receipt_text(receipts["both"]).endswith(f"; {said}"), receipt_text(receipts["both"])


def test_an_aggregated_column_is_named_by_its_frame_and_counts_its_missing_keys() -> None:
    ns: dict[str, Any] = {"sales": pd.DataFrame({"region": ["n", None, "n", "s"], "amount": [1, 2, 3, 4]})}
    code = "a = sales.groupby('region')['amount'].sum()\nb = sales.groupby('region').amount.mean()\n" \
           "c = sales['amount'].groupby(sales['region']).sum()"
    receipts = {r.variable: r for r in watched(ns, code)}
    true_missing = int(ns["sales"]["region"].isna().sum())
    for name in ("a", "b"):
        assert receipt_text(receipts[name]) == (
            f"{name} = sales grouped by region: 4 rows → 2 groups; {true_missing} row with a missing region left out"
        )
    # A column grouped by another column taken apart: no frame to name, its key still counted.
    assert receipt_text(receipts["c"]) == "c = a frame grouped by region: 4 rows → 2 groups; 1 row with a missing region left out"


def test_a_large_lookups_unmatched_rows_are_counted_on_its_cheapest_column_and_true() -> None:
    # Over 100,000 rows one lookup column that had no missing value is counted in the result
    # (an Arrow-backed string column: its null count is kept); the rest are checked here apart.
    import numpy as np

    rng = np.random.default_rng(3)
    keys = rng.integers(0, 1200, 150_000)
    score = rng.random(1000)
    score[:7] = np.nan  # missing in the lookup already: counted on its own
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"k": keys}),
        "customers": pd.DataFrame({"k": np.arange(1000), "score": score, "name": [f"c{i}" for i in range(1000)],
                                   "age": np.arange(1000) % 90}),
    }
    assert str(ns["customers"]["name"].dtype) == "str"
    [receipt] = watched(ns, "joined = orders.merge(customers, on='k', how='left')")
    joined = ns["joined"]
    unmatched = int((keys >= 1000).sum())
    assert receipt.unmatched[0] == unmatched > 0
    assert receipt.gained_missing == {
        c: int(joined[c].isna().sum()) - int(ns["customers"][c].isna().sum()) for c in ("score", "name", "age")
    } == {"score": int(np.isnan(score[keys[keys < 1000]]).sum() + unmatched) - 7, "name": unmatched, "age": unmatched}


@pytest.mark.parametrize("library", ["polars", "pyarrow"])
def test_a_changed_polars_or_arrow_frame_says_which_columns_gained_missing_values_and_changed_dtype(
    tmp_path: Any, library: str,
) -> None:
    # The same facts pandas frames get: a column rebound with a null in it, and one cast.
    from tests.test_tools_kernel import kernel_env, run_python

    if library == "polars":
        ns: dict[str, Any] = {"pl": pl, "t": pl.DataFrame({"k": [1, 2, 3], "x": [1, 2, 3]})}
        blank = "t = t.with_columns(pl.when(pl.col('x') > 1).then(pl.col('x')).alias('x'))"
        cast = "t = t.with_columns(pl.col('k').cast(pl.Float64))"
        same = "t = t.with_columns(pl.col('k') + 0)"
        ints, floats = "Int64", "Float64"
    else:
        import pyarrow as pa
        import pyarrow.compute as pc

        ns = {"pa": pa, "pc": pc, "t": pa.table({"k": [1, 2, 3], "x": [1, 2, 3]})}
        blank = "t = t.set_column(1, 'x', pc.if_else(pc.greater(t['x'], 1), t['x'], None))"
        cast = "t = t.set_column(0, 'k', t['k'].cast('double'))"
        same = "t = t.set_column(0, 'k', pc.add(t['k'], 0))"
        ints, floats = "int64", "double"
    env = kernel_env(tmp_path, ns)
    [change] = run_python(env, blank).variables
    assert change.gained_missing == {"x": 1} and not change.dtypes, change
    [change] = run_python(env, cast).variables
    assert change.dtypes == {"k": f"{ints} → {floats}"} and not change.gained_missing, change
    # Made false: a rebinding that changes no column's dtype nor missing values says neither.
    [change] = run_python(env, same).variables
    assert not change.dtypes and not change.gained_missing, change
