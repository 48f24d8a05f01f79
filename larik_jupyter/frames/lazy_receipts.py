"""Receipts of lazy frames the agent's own code computes (polars `LazyFrame.collect` and
`collect_all`, Dask's `compute`, a DuckDB relation's `df`, `pl`, `fetchall`, …, a Spark
DataFrame's `collect`, `toPandas` and `toArrow`), from what that computation itself gives: the
rows of the frame (or list of rows) it returned, and the plan's last operation, read from the
plan as written without running or optimising it (polars' unoptimised `explain`, the class of
Dask's expression, `query_plans.py` for DuckDB and Spark). A
lazy frame the code builds but never computes gets nothing, and nothing here computes one:
the rows that went in, keys duplicated or unmatched and missing values gained would each need
the inputs computed, so they are left out and `not_counted` says so.

A plan whose last operation is none of the receipts' kinds (a select, a slice) gets no receipt:
its rows out alone say nothing about a join, filter, group, de-duplication or concat."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from larik_jupyter.frames.receipt import Kind, Receipt
from larik_jupyter.frames.receipt_ops import Namer

# The first word of a node in polars' unoptimised plan, by receipt kind (a join's node is
# `LEFT JOIN:`, `INNER JOIN:`, …: its second word).
_POLARS_NODES: dict[str, Kind] = {
    "FILTER": "filter", "JOIN:": "join", "AGGREGATE": "groupby", "UNIQUE": "drop_duplicates", "UNION": "concat",
}
# Nodes of polars' plan that keep every row of the node under them (a `WITH_COLUMNS:` node's
# expressions follow on a line of their own, in brackets), looked through.
_POLARS_KEEP_ROWS = ("SORT", "WITH_COLUMNS:", "[")
# Classes of Dask's expressions (or a base of them), by receipt kind.
_DASK_NODES: dict[str, Kind] = {
    "Filter": "filter", "Query": "filter", "Merge": "join", "GroupbyAggregationBase": "groupby",
    "SingleAggregation": "groupby", "DropDuplicates": "drop_duplicates", "DropnaFrame": "dropna",
    "DropnaSeries": "dropna", "Concat": "concat",
}
# What a lazy receipt leaves out, by the plan's last operation.
_LEFT_OUT: dict[Kind, str] = {
    "join": "rows in, keys duplicated, rows unmatched",
    "groupby": "rows in, rows with a missing key",
    "concat": "rows of each input, columns not in every input",
}


def polars_last(lazy: Any) -> Kind | None:
    """The receipt kind of a polars plan's last operation that changes rows, None for another."""
    for line in lazy.explain(optimized=False).splitlines():
        words = line.replace("[", " [").split()  # `UNIQUE[maintain_order: false]`
        if not words or words[0].startswith(_POLARS_KEEP_ROWS):
            continue
        return _POLARS_NODES.get(words[0]) or _POLARS_NODES.get(words[1] if len(words) > 1 else "")
    return None


def dask_last(collection: Any) -> Kind | None:
    """The receipt kind of a Dask frame's last operation, None for another (or not a frame)."""
    if not type(collection).__module__.startswith("dask.dataframe"):
        return None
    names = [cls.__name__ for cls in type(getattr(collection, "expr", None)).__mro__]
    return next((_DASK_NODES[n] for n in names if n in _DASK_NODES), None)


def lazy_receipts(library: str, named: Namer, pairs: Iterable[tuple[Any, Any]],
                  last: Callable[[Any], Kind | None]) -> list[tuple[Receipt, Any]]:
    """The receipt of each lazy frame computed, with its result (`pairs`: the frame and what
    computing it returned; `last`: the library's plan reader), for a result that is a frame
    and a plan whose last operation is of a receipt's kind."""
    found = []
    for lazy, result in pairs:
        rows = _rows_out(result)
        kind = last(lazy) if rows is not None else None
        if rows is not None and kind is not None:
            left_out = _LEFT_OUT.get(kind, "rows in")
            found.append((Receipt(
                kind="collect", library=library, inputs=[named(lazy)], rows_in=[], rows_out=rows,
                last_operation=kind, not_counted=f"{left_out} (counting them would compute the lazy inputs)",
            ), result))
    return found


def _rows_out(result: Any) -> int | None:
    """The rows of a computed frame, a list of rows (`fetchall`, Spark's `collect`) or a dict of
    columns (`fetchnumpy`); None for anything else (a stream, a lazy frame: rows not known)."""
    shape = getattr(result, "shape", None)
    if isinstance(shape, tuple) and shape:
        return int(shape[0])
    if isinstance(result, list):
        return len(result)
    if isinstance(result, dict):
        return len(next(iter(result.values()), ()))
    return None
