"""Receipts of pyarrow Tables' joins, filters, null drops and group aggregations run as the
agent's code: every count checked against the true one, computed here from the keys in plain
Python (Arrow never matches a null key and matches NaN with NaN), each with a made-false twin;
every route to them (the compiled methods, aliases bound before the call, `pyarrow.compute`),
and none for pandas' own use of Arrow or for an array."""

from __future__ import annotations

import decimal
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import example, given, settings
from hypothesis import strategies as st

from larik_jupyter.frames.receipt import Receipt
from larik_jupyter.session.receipts import receipt_text
from tests.test_receipts import KEY, SIDES, cheap_problems, falsified, problems, truth, watched
from tests.test_tools_kernel import kernel_env, run_python

# Arrow's join types by the word the shared truth uses.
JOINS = {"left outer": "left", "inner": "inner", "full outer": "outer", "right outer": "right"}


def _arrow_keys(keys: list[Any]) -> list[Any]:
    """The keys as the shared truth must read them for Arrow: a NaN is a value matching NaN."""
    return ["nan" if isinstance(k, float) and math.isnan(k) else k for k in keys]


def _table(keys: list[Any], column: str, with_gaps: bool = False, key_type: str = "float64") -> pa.Table:
    data: dict[str, Any] = {"k": pa.array(keys, type=key_type, from_pandas=False),
                            column: pa.array(range(len(keys)), type=pa.int64())}
    if with_gaps:
        data["c"] = pa.array([None if i % 3 else 1.0 for i in range(len(keys))], type=pa.float64())
    return pa.table(data)


def _semi_truth(left: list[Any], right: list[Any]) -> tuple[int, int]:
    """Rows of the left with a key the right has, and rows of the right with one the left has."""
    lk, rk = _arrow_keys(left), _arrow_keys(right)
    return (sum(1 for k in lk if k is not None and k in rk), sum(1 for k in rk if k is not None and k in lk))


@settings(max_examples=150, deadline=None)
@given(SIDES, SIDES, st.sampled_from([*JOINS, "left semi", "left anti", "right semi", "right anti"]))
@example([1, 2, 3], [1, 2, 3], "left outer")  # unique on both sides
@example([1, 1, 2, 2], [1, 2, 3], "left outer")  # duplicated on the left
@example([1, 2, 3], [1, 1, 2, 2, 2], "left outer")  # duplicated on the right: fans out
@example([1, 1, 2], [1, 1, 2, 2], "inner")  # duplicated on both sides
@example([None, 1], [None, 1], "inner")  # null keys never match
@example([1.0, float("nan")], [float("nan"), float("nan")], "full outer")  # NaN keys match NaN
@example([1, 2, None], [2, 2, 5], "right semi")
def test_an_arrow_join_receipt_counts_what_truly_happened(left: list[Any], right: list[Any], join_type: str) -> None:
    ns: dict[str, Any] = {"orders": _table(left, "a"), "customers": _table(right, "b", with_gaps=True),
                          "join_type": join_type}
    [receipt] = watched(ns, "joined = orders.join(customers, 'k', join_type=join_type)")
    joined = ns["joined"]
    assert receipt.library == "pyarrow" and receipt.variable == "joined" and receipt.rows_out == joined.num_rows
    if join_type not in JOINS:  # semi and anti joins: rows kept and unmatched
        matched = _semi_truth(left, right)
        side = 0 if join_type.startswith("left") else 1
        rows = [len(left), len(right)]
        kept = matched[side] if join_type.endswith("semi") else rows[side] - matched[side]
        assert joined.num_rows == kept  # the truth agrees with Arrow itself
        assert receipt.inputs == (["orders", "customers"] if side == 0 else ["customers", "orders"])
        assert receipt.unmatched == [rows[side] - matched[side], rows[1 - side] - matched[1 - side]], receipt
        assert receipt.fan_out is None and receipt.gained_missing == {}
        assert msgspec.structs.replace(receipt, unmatched=[receipt.unmatched[0] + 1, receipt.unmatched[1]]).unmatched \
            != [rows[side] - matched[side], rows[1 - side] - matched[1 - side]]  # the made-false twin
        return
    true = truth(_arrow_keys(left), _arrow_keys(right), JOINS[join_type], nulls_match=False)
    assert joined.num_rows == true["rows_out"]  # the truth agrees with Arrow itself
    assert problems(receipt, true) == [], receipt
    filled = {"left outer": "bc", "right outer": "a", "full outer": "abc", "inner": ""}[join_type]
    sources = {c: ns["orders"] if c == "a" else ns["customers"] for c in filled}
    gained = {c: joined[c].null_count - f[c].null_count for c, f in sources.items()}
    assert receipt.gained_missing == {c: n for c, n in gained.items() if n > 0}
    assert receipt.inputs == ["orders", "customers"]
    for wrong in falsified(receipt):  # the made-false twins
        assert problems(wrong, true)


@settings(max_examples=200, deadline=None)
@given(SIDES, SIDES, st.sampled_from(list(JOINS)), st.booleans())
@example([1, 2, 3], [1, 1, 2, 2, 2], "left outer", True)  # fans out
@example([1, 2, 3], [1, 2, 5], "full outer", False)  # unique lookup: every count made
@example([1, 2], [None, None, 1], "inner", True)  # repeated null keys fan nothing out
def test_the_cheap_counts_of_large_arrow_tables_are_true_where_made(left: list[Any], right: list[Any],
                                                                    join_type: str, integers: bool) -> None:
    from larik_jupyter.frames.join_counts import JoinSides, base_side, cheap_counts

    if integers:  # integer keys are counted over their span (`arrow_counts.SPAN_PER_ROW`)
        left, right = ([None if k is None or math.isnan(k) else k for k in side] for side in (left, right))
    key_type = "int64" if integers else "float64"
    orders, customers = _table(left, "a", key_type=key_type), _table(right, "b", key_type=key_type)
    result = orders.join(customers, "k", join_type=join_type)
    how = {"full outer": "full"}.get(join_type, JOINS[join_type])
    rows = (orders.num_rows, customers.num_rows)
    base = base_side(how, rows)
    sides = JoinSides("pyarrow", (orders, customers), ([orders["k"]], [customers["k"]]), ["k"], how, False,
                      ["orders", "customers"])
    counted = cheap_counts(sides, result, result.num_rows, rows, base)
    true = truth(_arrow_keys(left), _arrow_keys(right), JOINS[join_type], nulls_match=False)
    assert cheap_problems(counted, true, how, base) == []  # its made-false twin: test_receipts.py


def test_integer_keys_over_a_wide_span_are_counted_by_hashing() -> None:
    from larik_jupyter.frames.arrow_counts import duplicated

    for keys in ([-(10**15), 10**15, 10**15, 7, 7, 7, None, None], [3, -2, 3, -2, 5, 3]):
        column = pa.chunked_array([keys[:3], keys[3:]], type=pa.int64())
        counts = Counter(k for k in keys if k is not None)
        repeated = {k: n for k, n in counts.items() if n > 1}
        found = duplicated([column])
        assert (found.count, found.rows, found.most) == (len(repeated), sum(repeated.values()), max(repeated.values()))
        assert found.examples[0] == str(max(repeated, key=lambda k: repeated[k]))


def test_large_arrow_tables_get_the_cheap_counts_and_say_which_were_left_out() -> None:
    n = 1_200_000
    ns: dict[str, Any] = {
        "orders": pa.table({"k": pa.array([i % 1000 for i in range(n)]), "a": pa.array([1.0] * n)}),
        "customers": pa.table({"k": [*range(990), 5, 6], "b": [2.0] * 992}),
    }
    [receipt] = watched(ns, "joined = orders.join(customers, 'k')")
    true = truth(ns["orders"]["k"].to_pylist(), ns["customers"]["k"].to_pylist(), "left", nulls_match=False)
    assert receipt.rows_out == true["rows_out"] and receipt.fan_out == true["fan_out"] == 2400
    assert receipt.unmatched == [true["unmatched"][0], None] and receipt.duplicated[0] is None
    assert receipt.duplicated[1] == msgspec.convert({"count": 2, "rows": 4, "most": 2, "examples": ["5", "6"]},
                                                    type(receipt.duplicated[1]))
    assert "some counts left out" in receipt_text(receipt)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(KEY, st.one_of(st.integers(0, 2), st.none())), max_size=30), st.integers(0, 5))
@example([(None, None), (None, 1)], 0)  # every key missing: a group of their own
@example([(1, 1), (2, 2)], 9)  # a filter that drops every row
def test_arrow_group_filter_and_null_drop_receipts_count_what_truly_happened(rows: list[tuple[Any, Any]],
                                                                            cut: int) -> None:
    keys, seconds = [r[0] for r in rows], [r[1] for r in rows]
    ns: dict[str, Any] = {"pc": pc, "cut": cut, "df": pa.table({
        "g": pa.array(keys, type=pa.float64(), from_pandas=False), "h": pa.array(seconds, type=pa.int64()),
        "v": pa.array(range(len(rows)), type=pa.int64()),
    })}
    got = {r.variable: r for r in watched(ns, (
        "sums = df.group_by('g').aggregate([('v', 'sum')])\n"
        "pairs = df.group_by(['g', 'h']).aggregate([('v', 'count')])\n"
        "kept = df.filter(pc.field('v') >= cut)\nmasked = df.filter(pc.greater_equal(df['v'], cut))\n"
        "clean = df.drop_null()"
    ))}
    ak = _arrow_keys(keys)
    kept = sum(1 for i in range(len(rows)) if i >= cut)
    true = {
        "sums": ([len(rows)], len(set(ak)), len(set(ak)), sum(1 for k in ak if k is None), False),
        "pairs": ([len(rows)], len(set(zip(ak, seconds, strict=True))), len(set(zip(ak, seconds, strict=True))),
                  sum(1 for k, s in zip(ak, seconds, strict=True) if k is None or s is None), False),
        "kept": ([len(rows)], kept, None, None, kept == 0 and len(rows) > 0),
        "masked": ([len(rows)], kept, None, None, kept == 0 and len(rows) > 0),
        "clean": ([len(rows)], sum(1 for k, s in zip(ak, seconds, strict=True) if k is not None and s is not None),
                  None, None, False),
    }

    def counts(r: Receipt) -> tuple[Any, ...]:
        return r.rows_in, r.rows_out, r.groups, r.missing_keys, r.drops_every_row and r.kind == "filter"

    assert set(got) == set(true)
    for name, expected in true.items():
        assert got[name].library == "pyarrow"
        assert counts(got[name]) == expected, (name, got[name])
        # The made-false twin: one row more out is told apart.
        assert counts(msgspec.structs.replace(got[name], rows_out=got[name].rows_out + 1)) != expected


# What a user cell ran before the agent's call (not watched: the user's own code).
USER_CELL = """
from pyarrow.compute import filter as pfilter, drop_null as pdrop
j = orders.join
f = orders.filter
g = orders.group_by('k')
d = orders.drop_null
"""


def test_every_route_to_an_arrow_operation_gets_its_receipt_in_the_real_python_tool(tmp_path: Path) -> None:
    # These pin that the installed pyarrow still hands each compiled method to the Python
    # function the watch wraps (`arrow_receipts.py`): a pyarrow that stops doing so fails here.
    ns: dict[str, Any] = {
        "pa": pa, "pc": pc,
        "orders": pa.table({"k": [1, 2, 3, 4, 9, None], "total": [5, 6, 7, 8, 9, 1]}),
        "customers": pa.table({"k": [1, 2, 2, 3, 4, 4], "name": list("abcdef")}),
    }
    exec(USER_CELL, ns)
    env = kernel_env(tmp_path, ns)
    result = run_python(env, (
        "j0 = orders.join(customers, 'k')\nj1 = j(customers, 'k')\n"
        "e0 = orders.filter(pc.field('total') > 6)\ne1 = f(pc.field('total') > 6)\n"
        "m0 = orders.filter(pc.greater(orders['total'], 6))\nm1 = pfilter(orders, pc.greater(orders['total'], 6))\n"
        "g0 = orders.group_by('k').aggregate([('total', 'sum')])\ng1 = g.aggregate([])\n"
        "d0 = orders.drop_null()\nd1 = d()\nd2 = pdrop(orders)"
    ))
    found = {r.variable: (r.kind, r.library, r.rows_in, r.rows_out) for r in result.receipts}
    assert found == {
        "j0": ("join", "pyarrow", [6, 6], 8), "j1": ("join", "pyarrow", [6, 6], 8),
        "e0": ("filter", "pyarrow", [6], 3), "e1": ("filter", "pyarrow", [6], 3),
        "m0": ("filter", "pyarrow", [6], 3), "m1": ("filter", "pyarrow", [6], 3),
        "g0": ("groupby", "pyarrow", [6], 6), "g1": ("groupby", "pyarrow", [6], 6),
        "d0": ("dropna", "pyarrow", [6], 5), "d1": ("dropna", "pyarrow", [6], 5), "d2": ("dropna", "pyarrow", [6], 5),
    }
    assert ("j0 = orders ⋈ customers on k: 6 → 8 rows (+2: 2 k values twice in customers, e.g. 2, 4); "
            "2 orders matched no customer; name gained 2 missing values") in result.content
    assert "g0 = orders grouped by k: 6 rows → 6 groups; 1 row with a missing k kept as a group of their own" \
        in result.content
    # An array filtered is not a frame filtered, totals of no key are not groups, a join by the
    # keys' places or of Datasets is not counted, and a concat of Tables has no Python route.
    assert run_python(env, (
        "import pyarrow.dataset as ds\na = pc.filter(orders['total'], pc.greater(orders['total'], 6))\n"
        "t = orders.group_by([]).aggregate([('total', 'sum')])\np = orders.join(customers, 0)\n"
        "s = ds.dataset(orders).join(ds.dataset(customers), 'k').to_table()\nboth = pa.concat_tables([orders, orders])"
    )).receipts == []
    assert (ns["t"].num_rows, ns["p"].num_rows, ns["s"].num_rows) == (1, 8, 8)
    assert ns["j"].__self__ is ns["orders"] and pc.filter.__code__.co_filename.endswith("compute.py")


def test_a_join_with_a_filter_expression_says_its_key_counts_are_left_out() -> None:
    ns: dict[str, Any] = {
        "pc": pc, "orders": pa.table({"k": [1, 2, 3], "total": [5, 6, 7]}),
        "customers": pa.table({"k": [1, 2, 2], "name": list("abc")}),
    }
    [receipt] = watched(ns, "big = orders.join(customers, 'k', join_type='inner', "
                            "filter_expression=pc.field('total') > 5)")
    assert (receipt.rows_in, receipt.rows_out, receipt.fan_out, receipt.unmatched) == ([3, 3], 2, None, [])
    assert receipt_text(receipt).endswith("some counts left out (keys duplicated, rows unmatched, fan-out: the "
                                          "join's filter_expression drops rows the keys match)")


def test_two_keys_named_apart_on_each_side_are_counted_together() -> None:
    left = [(1, "x"), (1, "y"), (2, "x"), (None, "x")]
    right = [(1, "x"), (1, "x"), (2, "y"), (None, "x")]
    ns: dict[str, Any] = {
        "orders": pa.table({"a": [k[0] for k in left], "b": [k[1] for k in left]}),
        "customers": pa.table({"x": [k[0] for k in right], "y": [k[1] for k in right], "n": range(4)}),
    }
    [receipt] = watched(ns, "joined = orders.join(customers, ['a', 'b'], right_keys=['x', 'y'])")
    pairs = [[None if None in k else k for k in side] for side in (left, right)]
    true = truth(pairs[0], pairs[1], "left", nulls_match=False)
    assert receipt.keys == ["a = x", "b = y"] and problems(receipt, true) == [], receipt
    assert receipt.rows_out == ns["joined"].num_rows == true["rows_out"]
    assert receipt.duplicated[1] is not None and receipt.duplicated[1].examples == ["(1, 'x')"]


def test_pandas_own_use_of_arrow_gives_no_arrow_receipt() -> None:
    # pandas groups a decimal column of Arrow by grouping a Table of its own (`Table.group_by`,
    # not nested in a watched call): pandas' work, not the code's.
    dec = pd.ArrowDtype(pa.decimal128(10, 2))
    ns: dict[str, Any] = {"df": pd.DataFrame({
        "g": [1, 1, 2, 3], "d": pd.array([decimal.Decimal("1.5"), decimal.Decimal(2), None, decimal.Decimal(4)], dtype=dec),
        "s": pd.array(["a", "b", None, "d"], dtype="str"),
    })}
    receipts = watched(ns, "sem = df.groupby('g')['d'].sem()\nkept = df[df.s.str.startswith('a', na=False)]\n"
                           "s = df.s.dropna()")
    assert [(r.variable, r.library) for r in receipts] == [("kept", "pandas")]


def test_pyarrow_modules_first_imported_by_the_code_are_watched_from_their_import(tmp_path: Path) -> None:
    code = (
        "import sys\nimport pyarrow as pa\nfrom larik_jupyter.frames.receipt_watch import ReceiptWatch\n"
        "assert 'pyarrow.acero' not in sys.modules and 'pyarrow.compute' not in sys.modules\n"
        "t = pa.table({'k': [1, 2, 2]})\nwith ReceiptWatch(lambda v: '') as watch:\n"
        "    t.join(t, 'k')\n"
        "print([r.kind for r in watch.receipts(lambda v: None)], 'pyarrow.acero' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split() == ["['join']", "True"], done.stderr
