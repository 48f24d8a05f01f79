"""Receipts of the joins and group aggregations of pyarrow Tables, from the arguments of the
Python functions pyarrow hands them to (a filter's and `drop_null`'s are `receipt_ops.rows_receipt`).

`Table.join`, `Table.filter` and `TableGroupBy.aggregate` are compiled methods, whose code
cannot be swapped (`code_swap.py`), but each calls a Python function of pyarrow that can be:
`pyarrow.acero._perform_join` (`Table.join`), `_filter_table` (`Table.filter` given an
expression) and `_group_by` (`TableGroupBy.aggregate`), and the generated `pyarrow.compute.filter`
(`Table.filter` given a mask) and `drop_null` (`Table.drop_null`); `receipt_watch._PATCHES`
wraps those. The acero ones are pyarrow's private names: one a later pyarrow lacks is not
wrapped, and tests/test_receipts_arrow.py pins that the installed pyarrow gives a receipt by
each route. `pa.concat_tables` is compiled and calls no Python function, so a concat of Tables
gets no receipt.

Only frames get receipts (a filter of an array is not a frame's), and only of the code's own
calls: pandas (its str dtype is Arrow's) and polars call these on their own tables
(`receipt_watch._library_call`). Arrow keeps rows with a null key as a group of their own."""

from __future__ import annotations

import functools
from typing import Any

from larik_jupyter.frames.join_counts import JoinSides, base_side, join_receipt
from larik_jupyter.frames.receipt import Receipt
from larik_jupyter.frames.receipt_ops import Namer, key_names, listed

# Arrow's join types in the receipts' words (`join_counts.JoinSides.how`).
_HOWS = {"left outer": "left", "right outer": "right", "inner": "inner", "full outer": "full", "left semi": "semi",
         "left anti": "anti"}
# A right semi (anti) join keeps the right rows that (do not) match: the left one, sides swapped.
_SWAPPED = {"right semi": "semi", "right anti": "anti"}


def arrow_join(named: Namer, result: Any, join_type: str, left_operand: Any, left_keys: Any, right_operand: Any,
               right_keys: Any, filter_expression: Any = None, **_: Any) -> Receipt | None:
    """`left.join(right, keys, right_keys, join_type)` of two Tables (a Dataset's join: none)."""
    import pyarrow as pa

    if not isinstance(left_operand, pa.Table) or not isinstance(right_operand, pa.Table):
        return None
    operands, keys = (left_operand, right_operand), (listed(left_keys), listed(right_keys))
    how = _HOWS.get(join_type)
    if join_type in _SWAPPED:
        how, operands, keys = _SWAPPED[join_type], operands[::-1], keys[::-1]
    if how is None or not all(isinstance(k, str) for k in keys[0] + keys[1]):
        return None  # keys given by their columns' places: not counted
    left, right = operands
    rows = (left.num_rows, right.num_rows)
    names = key_names(keys[0], keys[1], False, False)
    inputs = [named(left), named(right)]
    if filter_expression is not None:  # matched keys the filter then dropped: the keys alone miscount
        return Receipt(kind="join", library="pyarrow", inputs=inputs, rows_in=list(rows), rows_out=result.num_rows,
                       how=how, keys=names, base=base_side(how, rows),
                       not_counted="keys duplicated, rows unmatched, fan-out: the join's filter_expression "
                                   "drops rows the keys match")
    sides = JoinSides("pyarrow", operands, ([left.column(k) for k in keys[0]], [right.column(k) for k in keys[1]]),
                      names, how, False, inputs)
    return join_receipt(sides, result, result.num_rows, rows)


def arrow_group_by(named: Namer, result: Any, table: Any, keys: Any, **_: Any) -> Receipt | None:
    """`table.group_by(keys).aggregate(…)`: groups, and rows whose key was null (a group of
    their own); none without keys (one row of totals, not groups)."""
    import pyarrow.compute as pc

    labels = listed(keys)
    if not labels:
        return None
    columns = [table.column(k) for k in labels]
    nulls = [c.null_count for c in columns]  # kept by Arrow: no pass
    # One key column with nulls: they are the rows; more: a row may have several.
    missing = sum(nulls) if sum(map(bool, nulls)) < 2 else int(
        pc.sum(functools.reduce(pc.or_, [c.is_null() for c in columns])).as_py())
    return Receipt(
        kind="groupby", library="pyarrow", inputs=[named(table)], rows_in=[table.num_rows], rows_out=result.num_rows,
        keys=[str(k) for k in labels], groups=result.num_rows, missing_keys=missing,
    )
