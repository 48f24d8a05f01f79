"""Receipts of joins, filters, groups and concats run as the agent's code: every count checked
against the true one, computed here from the keys in plain Python; each check has a made-false
twin (the same check given a receipt with one count wrong must fail), so a counter that breaks
cannot pass."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as st

from larik_jupyter.frames.receipt import Receipt
from larik_jupyter.frames.receipt_watch import ReceiptWatch
from larik_jupyter.session.receipts import receipt_text
from tests.test_tools_kernel import kernel_env, run_python

MISSING = "<missing>"


def _key(value: Any) -> Any:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else value


def truth(left: list[Any], right: list[Any], how: str, nulls_match: bool) -> dict[str, Any]:
    """The counts a receipt must give, from the keys alone."""
    lk, rk = [_key(v) for v in left], [_key(v) for v in right]
    usable = [[k for k in side if nulls_match or k != MISSING] for side in (lk, rk)]
    counts = [Counter(side) for side in usable]
    unmatched = [sum(1 for k in keys if k == MISSING and not nulls_match or counts[1 - s][k] == 0)
                 for s, keys in enumerate((lk, rk))]
    base = 1 if how == "right" else 0 if how == "left" or len(left) >= len(right) else 1
    other = counts[1 - base]
    fan_out = sum(other[k] - 1 for k in usable[base] if other[k] > 1)
    rows = {
        "left": sum(max(1, counts[1][k]) if k in counts[1] else 1 for k in lk),
        "inner": sum(counts[1][k] for k in usable[0]),
    }
    rows["right"] = sum(max(1, counts[0][k]) if k in counts[0] else 1 for k in rk)
    rows["outer"] = rows["inner"] + unmatched[0] + unmatched[1]
    return {
        "rows_out": rows[how], "unmatched": unmatched, "fan_out": fan_out,
        "duplicated": [sum(1 for n in c.values() if n > 1) for c in counts],
    }


def problems(receipt: Receipt, true: dict[str, Any]) -> list[str]:
    """Where a receipt differs from the truth (empty: it tells the truth)."""
    found = []
    if receipt.rows_out != true["rows_out"]:
        found.append(f"rows out {receipt.rows_out} != {true['rows_out']}")
    if receipt.unmatched != true["unmatched"]:
        found.append(f"unmatched {receipt.unmatched} != {true['unmatched']}")
    if receipt.fan_out != true["fan_out"] or receipt.fans_out != (true["fan_out"] > 0):
        found.append(f"fan-out {receipt.fan_out} != {true['fan_out']}")
    if [d.count if d else None for d in receipt.duplicated] != true["duplicated"]:
        found.append(f"duplicated {receipt.duplicated} != {true['duplicated']}")
    return found


def falsified(receipt: Receipt) -> list[Receipt]:
    """The receipt with each count made false in turn, as a broken counter would give it."""
    return [
        msgspec.structs.replace(receipt, rows_out=receipt.rows_out + 1),
        msgspec.structs.replace(receipt, unmatched=[receipt.unmatched[0] + 1, receipt.unmatched[1]]),
        msgspec.structs.replace(receipt, unmatched=[receipt.unmatched[0], receipt.unmatched[1] + 1]),
        msgspec.structs.replace(receipt, fan_out=0 if receipt.fan_out else 1),
        msgspec.structs.replace(receipt, duplicated=[None, receipt.duplicated[1]]),
    ]


def watched(namespace: dict[str, Any], code: str) -> list[Receipt]:
    """`code` run in `namespace` as the agent's code, and the receipts it left."""
    with ReceiptWatch(lambda v: next((n for n, x in namespace.items() if x is v), "")) as watch:
        exec(code, namespace)
    return watch.receipts(lambda v: next((n for n, x in namespace.items() if x is v), None))


KEY = st.one_of(st.integers(0, 6), st.just(float("nan")), st.none())
SIDES = st.lists(KEY, max_size=25)
HOWS = st.sampled_from(["left", "inner", "outer", "right"])


@settings(max_examples=150, deadline=None)
@given(SIDES, SIDES, HOWS)
@example([1, 2, 3], [1, 2, 3], "left")  # unique on both sides
@example([1, 1, 2, 2], [1, 2, 3], "left")  # duplicated on the left
@example([1, 2, 3], [1, 1, 2, 2, 2], "left")  # duplicated on the right: fans out
@example([1, 1, 2], [1, 1, 2, 2], "inner")  # duplicated on both sides
@example([1, None, 3], [1, 3, None], "left")  # missing keys (None)
@example([1.0, float("nan")], [float("nan"), float("nan")], "outer")  # NaN keys, matched by pandas
def test_a_pandas_merge_receipt_counts_what_truly_happened(left: list[Any], right: list[Any], how: str) -> None:
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"k": pd.Series(left, dtype="float64"), "a": range(len(left))}),
        "customers": pd.DataFrame({"k": pd.Series(right, dtype="float64"), "b": range(len(right)),
                                   "c": [None if i % 3 else 1.0 for i in range(len(right))]}),
        "how": how,
    }
    [receipt] = watched(ns, "joined = orders.merge(customers, on='k', how=how)")
    true = truth(left, right, how, nulls_match=True)
    joined = ns["joined"]
    assert len(joined) == true["rows_out"]  # the truth agrees with pandas itself
    assert problems(receipt, true) == [], receipt
    # The columns of the side a join fills in where a row of the other side matched nothing.
    filled = {"left": "bc", "right": "a", "outer": "abc", "inner": ""}[how]
    sources = {c: ns["orders"] if c == "a" else ns["customers"] for c in filled}
    gained = {c: int(joined[c].isna().sum() - f[c].isna().sum()) for c, f in sources.items()}
    assert receipt.gained_missing == {c: n for c, n in gained.items() if n > 0}
    assert receipt.inputs == ["orders", "customers"] and receipt.variable == "joined"
    for wrong in falsified(receipt):  # the made-false twins
        assert problems(wrong, true)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 6), st.none()), max_size=25),
       st.lists(st.one_of(st.integers(0, 6), st.none()), max_size=25), st.sampled_from(["left", "inner", "full", "right"]))
@example([1, 2, 3], [1, 1, 2], "left")
@example([None, 1], [None, 1], "inner")  # polars never matches missing keys
def test_a_polars_join_receipt_counts_what_truly_happened(left: list[Any], right: list[Any], how: str) -> None:
    ns: dict[str, Any] = {
        "orders": pl.DataFrame({"k": left, "a": range(len(left))}, schema={"k": pl.Int64, "a": pl.Int64}),
        "customers": pl.DataFrame({"k": right, "b": range(len(right))}, schema={"k": pl.Int64, "b": pl.Int64}),
        "how": how,
    }
    [receipt] = watched(ns, "joined = orders.join(customers, on='k', how=how)")
    true = truth(left, right, "outer" if how == "full" else how, nulls_match=False)
    assert ns["joined"].height == true["rows_out"]
    assert problems(receipt, true) == [], receipt
    for wrong in falsified(receipt):
        assert problems(wrong, true)


def test_a_join_that_fans_out_says_so_in_the_issues_words() -> None:
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"customer_id": [1, 2, 3, 4, 9], "total": [5, 6, 7, 8, 9]}),
        "customers": pd.DataFrame({"customer_id": [1, 2, 2, 3, 4, 4], "name": list("abcdef")}),
    }
    [receipt] = watched(ns, "joined = orders.merge(customers, on='customer_id', how='left')")
    assert receipt_text(receipt) == (
        "joined = orders ⋈ customers on customer_id: 5 → 7 rows (+2: 2 customer_id values twice in customers, "
        "e.g. 2, 4); 1 order matched no customer; name gained 1 missing value"
    )
    assert receipt.fans_out and not msgspec.structs.replace(receipt, fan_out=0).fans_out


def test_large_frames_get_the_cheap_counts_and_say_which_were_left_out() -> None:
    n = 1_200_000
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"k": [i % 1000 for i in range(n)], "a": 1.0}),
        "customers": pd.DataFrame({"k": [*range(990), 5, 6], "b": 2.0}),
    }
    [receipt] = watched(ns, "joined = orders.merge(customers, on='k', how='left')")
    true = truth(list(ns["orders"].k), list(ns["customers"].k), "left", nulls_match=True)
    assert receipt.rows_out == true["rows_out"] and receipt.fan_out == true["fan_out"] == 2400
    assert receipt.unmatched == [true["unmatched"][0], None] and receipt.duplicated[0] is None
    assert receipt.duplicated[1] == msgspec.convert({"count": 2, "rows": 4, "most": 2, "examples": ["5", "6"]},
                                                    type(receipt.duplicated[1]))
    assert "some counts left out" in receipt_text(receipt)


def test_a_long_lookup_join_counts_its_unmatched_rows_in_two_halves() -> None:
    # Over SPLIT_ROWS rows the missing values of the looked-up column are counted on two threads,
    # half each; the count is the true number of orders whose key no customer has.
    import numpy as np

    from larik_jupyter.frames.nulls import SPLIT_ROWS

    rng = np.random.default_rng(7)
    keys = rng.integers(0, 1100, SPLIT_ROWS + 500_001)
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"k": keys}),
        "customers": pd.DataFrame({"k": np.arange(1000), "b": 2.0}),
    }
    [receipt] = watched(ns, "joined = orders.merge(customers, on='k', how='left')")
    assert receipt.unmatched[0] == int((keys >= 1000).sum()) > 0
    assert receipt.rows_out == len(keys) and receipt.fan_out == 0


def test_filters_groups_dedup_and_concat_count_their_rows() -> None:
    ns: dict[str, Any] = {"df": pd.DataFrame({"g": [1, 1, 2, None, None], "v": [1, 2, 2, 4, 4]})}
    code = (
        "kept = df[df.v > 1]\nnone = df.loc[df.v > 99]\nq = df.query('v == 4')\nclean = df.dropna()\n"
        "dedup = df.drop_duplicates()\nsums = df.groupby('g').agg(total=('v', 'sum'))\nboth = pd.concat([df, kept.rename(columns={'v': 'w'})])"
    )
    ns["pd"] = pd
    receipts = {r.variable: r for r in watched(ns, code)}
    assert {k: (r.rows_in, r.rows_out) for k, r in receipts.items()} == {
        "kept": ([5], 4), "none": ([5], 0), "q": ([5], 2), "clean": ([5], 3), "dedup": ([5], 4),
        "sums": ([5], 2), "both": ([5, 4], 9),
    }
    assert receipts["none"].drops_every_row and not receipts["kept"].drops_every_row
    assert receipts["sums"].missing_keys == 2 and receipts["sums"].missing_dropped
    assert receipt_text(receipts["sums"]) == "sums = df grouped by g: 5 rows → 2 groups; 2 rows with a missing g left out"
    assert receipts["both"].unaligned == ["v", "w"]


def test_polars_filters_groups_and_dedup_count_their_rows() -> None:
    ns: dict[str, Any] = {"pl": pl, "df": pl.DataFrame({"g": [1, 1, 2, None], "v": [1, 2, 2, 2]})}
    receipts = {r.variable: r for r in watched(
        ns, "f = df.filter(pl.col('v') > 1)\nu = df.unique()\nn = df.drop_nulls()\ns = df.group_by('g').agg(pl.len())"
    )}
    assert {k: (r.kind, r.rows_out) for k, r in receipts.items()} == {
        "f": ("filter", 3), "u": ("drop_duplicates", 4), "n": ("dropna", 3), "s": ("groupby", 3),
    }
    assert receipts["s"].missing_keys == 1 and not receipts["s"].missing_dropped


def test_the_patches_hold_only_while_the_agents_code_runs(tmp_path: Path) -> None:
    merge = pd.DataFrame.merge
    ns: dict[str, Any] = {"pd": pd, "a": pd.DataFrame({"k": [1, 2]}), "b": pd.DataFrame({"k": [1, 1]})}
    result = run_python(kernel_env(tmp_path, ns), "c = a.merge(b, on='k')")
    assert "c = a ⋈ b on k (inner join): 2 → 2 rows (+1: 1 k value twice in b, e.g. 1)" in result.content
    assert [r.variable for r in result.receipts] == ["c"]
    assert pd.DataFrame.merge is merge and "merge" not in vars(pd.core.groupby.generic.DataFrameGroupBy)
    with ReceiptWatch(lambda v: "") as watch:
        pass
    ns["a"].merge(ns["b"], on="k")  # the user's own code, after: not watched
    assert watch.receipts(lambda v: None) == []


def test_a_changed_frame_says_which_columns_gained_missing_values_and_changed_dtype(tmp_path: Path) -> None:
    ns: dict[str, Any] = {
        "df": pd.DataFrame({"k": [1, 2, 3], "x": [1, 2, 3]}),
        "names": pd.DataFrame({"k": [1, 2], "name": ["a", "b"]}),
    }
    env = kernel_env(tmp_path, ns)
    result = run_python(env, "df['x'] = df['x'].where(df['x'] > 1)")
    [change] = result.variables
    assert change.gained_missing == {"x": 1} and change.dtypes == {"x": "int64 → float64"}
    assert change.text() == "df: DataFrame 3×2, changed in place, x gained 1 missing value, x int64 → float64"
    [change] = run_python(env, "df = df.merge(names, on='k', how='left')").variables
    assert change.gained_missing is None  # `name` is a new column: the join's receipt says what it gained
    [change] = run_python(env, "names = names.assign(k=names.k.astype(float))").variables
    assert change.dtypes == {"k": "int64 → float64"} and change.gained_missing is None


def test_missing_values_of_pandas_own_dtypes_are_counted() -> None:
    ns: dict[str, Any] = {
        "a": pd.DataFrame({"k": [1, 2, 3]}),
        "b": pd.DataFrame({"k": [1], "n": pd.array([5], dtype="Int64"), "s": pd.array(["x"], dtype="string")}),
    }
    [receipt] = watched(ns, "c = a.merge(b, on='k', how='left')")
    assert receipt.gained_missing == {"n": 2, "s": 2}


def test_a_library_the_code_imports_is_watched_from_its_import_and_put_back_after(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom larik_jupyter.frames.receipt_watch import ReceiptWatch\nassert 'polars' not in sys.modules\n"
        "ns = {}\nwith ReceiptWatch(lambda v: '') as watch:\n"
        "    exec(\"import polars as pl\\nd = pl.DataFrame({'a': [1, 2]}).filter(pl.col('a') > 1)\", ns)\n"
        "import polars\nprint(len(watch.seen), polars.DataFrame.filter.__code__.co_filename.endswith('receipt_watch.py'),"
        " any('Imported' in type(f).__name__ for f in sys.meta_path))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split() == ["1", "False", "False"], done.stderr


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 4), st.none()), max_size=30), st.booleans(), st.integers(0, 5))
@example([None, None], True, 0)  # every key missing: every row left out
@example([1, 2, 3], False, 9)  # a filter that drops every row
def test_group_filter_and_concat_receipts_count_what_truly_happened(keys: list[Any], dropna: bool, cut: int) -> None:
    ns: dict[str, Any] = {"pd": pd, "pl": pl, "df": pd.DataFrame({"g": pd.Series(keys, dtype="float64"),
                                                                 "v": range(len(keys))}), "dropna": dropna, "cut": cut}
    ns["pdf"] = pl.from_pandas(ns["df"])
    got = {r.variable: r for r in watched(ns, (
        "sums = df.groupby('g', dropna=dropna).agg(n=('v', 'count'))\nkept = df[df.v >= cut]\n"
        "both = pd.concat([df, kept])\npsums = pdf.group_by('g').agg(pl.len())\npkept = pdf.filter(pl.col('v') >= cut)"
    ))}
    missing = sum(1 for k in keys if k is None)
    groups = len({k for k in keys if k is not None})
    kept = sum(1 for i in range(len(keys)) if i >= cut)
    true = {
        "sums": ([len(keys)], groups + (missing > 0 and not dropna), groups + (missing > 0 and not dropna), missing,
                 dropna and missing > 0, False),
        "psums": ([len(keys)], groups + (missing > 0), groups + (missing > 0), missing, False, False),
        "kept": ([len(keys)], kept, None, None, False, kept == 0 and len(keys) > 0),
        "pkept": ([len(keys)], kept, None, None, False, kept == 0 and len(keys) > 0),
        "both": ([len(keys), kept], len(keys) + kept, None, None, False, False),
    }

    def counts(r: Receipt) -> tuple[Any, ...]:
        return r.rows_in, r.rows_out, r.groups, r.missing_keys, r.missing_dropped, r.drops_every_row

    for name, expected in true.items():
        assert counts(got[name]) == expected, (name, got[name])
        # The made-false twin: one row more out is told apart.
        assert counts(msgspec.structs.replace(got[name], rows_out=got[name].rows_out + 1)) != expected


def test_a_loop_of_operations_is_counted_up_to_a_bound_and_the_rest_said() -> None:
    from larik_jupyter.frames.receipt_watch import MAX_COUNTED, MAX_RECEIPTS

    ns: dict[str, Any] = {"df": pd.DataFrame({"a": range(10)})}
    receipts = watched(ns, f"for i in range({MAX_COUNTED + 5}):\n    df[df.a > i % 5]\nempty = df[df.a > 99]")
    assert len(receipts) == MAX_RECEIPTS and all(r.kind == "filter" for r in receipts)
    assert [r.variable for r in receipts if r.drops_every_row] == ["empty"]  # past the bound, still kept
    with ReceiptWatch(lambda v: "") as watch:
        exec(f"for i in range({MAX_COUNTED + 5}):\n    df[df.a > 1]", ns)
    assert len(watch.receipts(lambda v: None)) == MAX_RECEIPTS and watch.left_out == MAX_COUNTED + 5 - MAX_RECEIPTS


@settings(max_examples=150, deadline=None)
@given(SIDES, SIDES, HOWS)
@example([1, 2, 3], [1, 1, 2, 2, 2], "left")  # fans out
@example([1, 2, 3], [1, 2, 5], "outer")  # unique lookup: every count made
def test_the_cheap_counts_of_large_frames_are_true_where_made(left: list[Any], right: list[Any], how: str) -> None:
    from larik_jupyter.frames.join_counts import JoinSides, base_side, cheap_counts

    orders = pd.DataFrame({"k": pd.Series(left, dtype="float64"), "a": range(len(left))})
    customers = pd.DataFrame({"k": pd.Series(right, dtype="float64"), "b": range(len(right))})
    result = orders.merge(customers, on="k", how=how)
    rows = (len(orders), len(customers))
    base = base_side(how, rows)
    sides = JoinSides("pandas", (orders, customers), ([orders["k"]], [customers["k"]]), ["k"], how, True,
                      ["orders", "customers"])
    counted = cheap_counts(sides, result, len(result), rows, base)
    assert cheap_problems(counted, truth(left, right, how, nulls_match=True), how, base) == []


def cheap_problems(counted: dict[str, Any], true: dict[str, Any], how: str, base: int) -> list[str]:
    """Where cheap counts differ from the truth (a count not made is not compared, but a
    one-sided join's fan-out and unmatched rows of its base side are always made)."""
    found = [f"unmatched of side {side}: {missed} != {true['unmatched'][side]}"
             for side, missed in enumerate(counted["unmatched"])
             if missed is not None and missed != true["unmatched"][side]]
    if counted["fan_out"] is not None and counted["fan_out"] != true["fan_out"]:
        found.append(f"fan-out {counted['fan_out']} != {true['fan_out']}")
    if how in ("left", "right") and None in (counted["fan_out"], counted["unmatched"][base]):
        found.append("a one-sided join's fan-out or unmatched rows not counted")
    found += [f"duplicated of side {side}: {keys.count} != {true['duplicated'][side]}"
              for side, keys in enumerate(counted["duplicated"])
              if keys is not None and keys.count != true["duplicated"][side]]
    return found


def test_a_cheap_count_made_false_is_told_apart() -> None:
    true = {"unmatched": [1, 0], "fan_out": 2, "duplicated": [0, 1]}
    from larik_jupyter.frames.receipt import Keys

    right = {"unmatched": [1, None], "fan_out": 2, "duplicated": [None, Keys(count=1)]}
    assert cheap_problems(right, true, "left", 0) == []
    for wrong in ({"unmatched": [2, None]}, {"fan_out": 3}, {"duplicated": [None, Keys(count=2)]}, {"fan_out": None}):
        assert cheap_problems({**right, **wrong}, true, "left", 0), wrong
