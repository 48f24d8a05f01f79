"""What the egress policy reads of an eager frame, the same for every library (through
narwhals): the first rows' values by column (for the value index), per-column statistics that
hold no row, and N rows with masked columns. A lazy frame is never read: every function here
takes an eager `Frame` (the caller says why a lazy one gives its schema only)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from larik_jupyter.frames.kinds import Frame
from larik_jupyter.frames.schema import MAX_COLUMNS

MASK = "***"
MAX_CELL = 60  # characters of one cell a sample shows


def _columns(frame: Frame) -> list[tuple[str, Any]]:
    """(name, narwhals Series) of each column (a series: itself, under its name)."""
    wrapped = frame.wrapped
    if frame.series:
        return [(str(wrapped.name), wrapped)]
    return [(str(name), wrapped.get_column(name)) for name in list(wrapped.columns)[:MAX_COLUMNS]]


def column_heads(frame: Frame, limit: int) -> Iterator[tuple[str, list[object], bool]]:
    """(column, distinct values of its first `limit` rows, whether they are mostly different)
    for each column; a pandas Index gives its own values under ''. The head only: a large frame
    is not copied."""
    if frame.wrapped is None:
        items = list(frame.native[:limit].dropna().unique())
        yield "", items, True
        return
    head = frame.wrapped.head(limit)
    if frame.series:
        parts = [(str(head.name), head)]
    else:
        parts = [(str(name), head.get_column(name)) for name in list(head.columns)[:MAX_COLUMNS]]
    for name, column in parts:
        try:
            present = column.drop_nulls()
            items = present.unique(maintain_order=True).to_list()
        except Exception:
            continue
        yield name, items, len(items) * 2 >= max(len(present), 1)


def _number(x: object) -> str:
    try:
        f = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "?"
    return "nan" if math.isnan(f) else f"{f:.4g}"


def _column_stats(column: Any) -> str:
    nulls = int(column.null_count())
    parts = [f"count {len(column) - nulls}", f"missing {nulls}"]
    try:
        parts.append(f"distinct {int(column.drop_nulls().n_unique())}")
    except Exception:
        pass
    dtype = column.dtype
    if dtype.is_numeric():
        # Mean and spread carry no row; min, max and quantiles are rows' values.
        parts += [f"mean {_number(column.mean())}", f"std {_number(column.std())}"]
    elif str(dtype) == "String":
        try:
            parts.append(f"mean length {_number(column.str.len_chars().mean())}")
        except Exception:
            pass
    return ", ".join(parts)


def stats_lines(frame: Frame) -> list[str]:
    """`  email: count 3, missing 0, distinct 3, mean length 14` for each column."""
    if frame.wrapped is None:
        return []
    if frame.series:
        return [f"  {_column_stats(frame.wrapped)}"]
    return [f"  {name}: {_column_stats(column)}" for name, column in _columns(frame)]


def _cell(value: object) -> str:
    text = "null" if value is None else str(value)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def sample_lines(frame: Frame, rows: int, mask: tuple[str, ...] | list[str]) -> list[str]:
    """The first `rows` rows as an aligned table, the columns named in `mask` as `***`."""
    if frame.wrapped is None:
        return [f"  first items: {list(frame.native[:rows])!r}"[:4000]]
    head = frame.wrapped.head(rows)
    if frame.series:
        head = head.to_frame()
    names = [str(n) for n in list(head.columns)[:MAX_COLUMNS]]
    # A mask names a column as its library does (pandas' repeated names are told apart here).
    own = [str(n) for n in frame.native.columns] if frame.library == "pandas" and not frame.series else names
    table = [names]
    for row in head.rows():
        table.append([MASK if name in mask else _cell(v) for name, v in zip(own, row, strict=False)])
    widths = [max(len(r[i]) for r in table) for i in range(len(names))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip() for r in table]
    return [f"  first {len(table) - 1} rows:", *("  " + line for line in lines)]
