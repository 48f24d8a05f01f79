"""Each watched operation's receipt, from the arguments it was called with and what it returned:
which columns were the keys, how many rows went in and came out (`receipt_watch.py` calls these
after the operation ran; none of them computes anything the operation did not)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from larik_jupyter.frames.column_profile import dtypes_of
from larik_jupyter.frames.join_counts import JoinSides, join_receipt
from larik_jupyter.frames.receipt import Kind, Receipt

# An operand's variable name, found by identity in the kernel's namespace ("" for none).
Namer = Callable[[object], str]


def listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _pandas_keys(frame: Any, labels: list[Any], index: bool) -> list[Any]:
    if index:
        return [frame.index.get_level_values(i) for i in range(frame.index.nlevels)]
    return [frame[label] if isinstance(label, Hashable) and label in frame.columns else label for label in labels]


def key_names(left: list[Any], right: list[Any], left_index: bool, right_index: bool) -> list[str]:
    def name(label: Any, index: bool) -> str:
        return "index" if index else str(label) if isinstance(label, Hashable) else "an array"

    pairs = [(name(a, left_index), name(b, right_index)) for a, b in zip(left or [None], right or [None], strict=False)]
    return [a if a == b else f"{a} = {b}" for a, b in pairs]


def pandas_merge(named: Namer, result: Any, left: Any, right: Any, how: str = "inner", on: Any = None,
                 left_on: Any = None, right_on: Any = None, left_index: bool = False, right_index: bool = False,
                 **_: Any) -> Receipt:
    """`pd.merge(left, right, …)` and `left.merge(right, …)`."""
    import pandas as pd

    names = [named(left), named(right)]
    if isinstance(right, pd.Series):
        right = right.to_frame()
    if on is None and left_on is None and right_on is None and not left_index and not right_index:
        on = [c for c in left.columns if c in right.columns]
    lefts, rights = listed(left_on if left_on is not None else on), listed(right_on if right_on is not None else on)
    sides = JoinSides(
        "pandas", (left, right), (_pandas_keys(left, lefts, left_index), _pandas_keys(right, rights, right_index)),
        key_names(lefts, rights, left_index, right_index), str(how), True, names,
    )
    return join_receipt(sides, result, len(result), (len(left), len(right)))


def pandas_join(named: Namer, result: Any, left: Any, other: Any, on: Any = None, how: str = "left",
                **_: Any) -> Receipt | None:
    """`left.join(other, on=…)`: `on` of the left against the other's index."""
    import pandas as pd

    if isinstance(other, (list, tuple)):
        return None
    names = [named(left), named(other)]
    if isinstance(other, pd.Series):
        other = other.to_frame()
    lefts = listed(on)
    sides = JoinSides(
        "pandas", (left, other), (_pandas_keys(left, lefts, not lefts), _pandas_keys(other, [], True)),
        key_names(lefts, ["index"], not lefts, True), str(how), True, names,
    )
    return join_receipt(sides, result, len(result), (len(left), len(other)))


def polars_join(named: Namer, result: Any, left: Any, other: Any, on: Any = None, how: str = "inner", *,
                left_on: Any = None, right_on: Any = None, nulls_equal: bool = False, **_: Any) -> Receipt:
    """`left.join(other, on=…, how=…)` of polars (keys given as column names; expressions are
    not counted)."""
    lefts, rights = listed(left_on if left_on is not None else on), listed(right_on if right_on is not None else on)
    named_keys = all(isinstance(k, str) for k in lefts + rights)
    sides = JoinSides(
        "polars", (left, other),
        ([left.get_column(k) for k in lefts], [other.get_column(k) for k in rights]) if named_keys else ([], []),
        key_names(lefts, rights, False, False) if named_keys else [], str(how), bool(nulls_equal),
        [named(left), named(other)],
    )
    return join_receipt(sides, result, result.height, (left.height, other.height))


def rows_receipt(kind: Kind, library: str, named: Namer, frame: Any, rows_in: int, result: Any) -> Receipt | None:
    """A filter's, `dropna`'s or a de-duplication's receipt: rows in and out (an operation done
    in place returns None: its rows out are the frame's after it)."""
    kept = frame if result is None else result
    if not hasattr(kept, "shape") or len(kept.shape) != 2:
        return None
    return Receipt(kind=kind, library=library, inputs=[named(frame)], rows_in=[rows_in],
                   rows_out=kept.shape[0])


def is_mask(key: Any) -> bool:
    """Whether an indexing key selects rows by a boolean mask (a Series or array of booleans)."""
    dtype = getattr(key, "dtype", None)
    return getattr(key, "ndim", 0) == 1 and dtype is not None and str(dtype) in ("bool", "boolean")


def pandas_groupby(named: Namer, grouped: Any, result: Any, selected_from: Any = None) -> Receipt | None:
    """An aggregation of `frame.groupby(keys)` (or of a column of it, `selected_from` that
    frame): groups, and rows whose key was missing (left out unless `dropna=False`)."""
    frame = grouped.obj if selected_from is None else selected_from
    if not hasattr(result, "shape"):
        return None
    labels = listed(grouped.keys)
    named_columns = hasattr(frame, "columns")
    columns = [frame[k] if named_columns and isinstance(k, Hashable) and k in frame.columns else k for k in labels]
    missing = None  # a function or Grouper: its keys are not at hand
    if labels and all(hasattr(c, "isna") and len(c) == len(frame) for c in columns):
        nulls = columns[0].isna().to_numpy()
        for column in columns[1:]:
            nulls = nulls | column.isna().to_numpy()
        missing = int(nulls.sum())
    return Receipt(
        kind="groupby", library="pandas", inputs=[named(frame)], rows_in=[len(frame)], rows_out=len(result),
        keys=[_key_label(k) for k in labels], groups=len(result),
        missing_keys=missing, missing_dropped=bool(getattr(grouped, "dropna", True)) and bool(missing),
    )


def _key_label(key: Any) -> str:
    """A group key as a receipt names it: a column's label, a Series' name, a Grouper's column,
    a function's name, else `an array`."""
    import pandas as pd

    if isinstance(key, pd.Grouper):
        return key.key if isinstance(key.key, str) else "a Grouper"
    if callable(key):
        name = getattr(key, "__name__", "")
        return f"{name}()" if name.isidentifier() else "a function"
    if isinstance(key, Hashable):
        return str(key)
    name = getattr(key, "name", None)
    return str(name) if isinstance(name, str) else "an array"


def polars_groupby(named: Namer, grouped: Any, result: Any) -> Receipt | None:
    """An aggregation of `frame.group_by(keys)`: groups, and rows whose key was missing (one
    group of their own in polars)."""
    frame = grouped.df
    labels = [k for k in _flat(grouped.by)]
    missing = None
    if labels and all(isinstance(k, str) for k in labels) and not grouped.named_by:
        import polars as pl

        nulls = [frame.get_column(k).null_count() for k in labels]  # kept by polars: no work
        missing = nulls[0] if len(labels) == 1 or not any(nulls) else int(
            frame.select(pl.any_horizontal([pl.col(k).is_null() for k in labels])).to_series().sum()
        )
    return Receipt(
        kind="groupby", library="polars", inputs=[named(frame)], rows_in=[frame.height], rows_out=result.height,
        keys=[str(k) for k in labels], groups=result.height, missing_keys=missing,
    )


def _flat(by: Any) -> list[Any]:
    out: list[Any] = []
    for item in by:
        out.extend(item if isinstance(item, (list, tuple)) else [item])
    return out


def concat_receipt(library: str, named: Namer, items: Any, result: Any) -> Receipt | None:
    """A concat of frames along their rows: rows from each, the columns not in all of them, and
    those whose dtype in the result is not the one they had (`int64 → float64`; `int64 / str →
    object` where the inputs disagreed)."""
    frames = list(items.values()) if isinstance(items, dict) else list(items)
    # `shape` first: a lazy frame has none, and asking one for its `columns` resolves its plan.
    if not frames or not all(hasattr(f, "shape") and hasattr(f, "columns") for f in frames):
        return None
    if not hasattr(result, "shape") or result.shape[0] != sum(f.shape[0] for f in frames):
        return None  # not a concat along the rows
    # Each distinct schema once: a concat of many frames is mostly of frames alike.
    inputs = list({tuple(schema.items()): schema for schema in (dtypes_of(library, f) for f in frames)}.values())
    every = set(inputs[0]).intersection(*inputs[1:])
    seen = dict.fromkeys(c for schema in inputs for c in schema)
    return Receipt(
        kind="concat", library=library, inputs=[named(f) for f in frames], rows_in=[f.shape[0] for f in frames],
        rows_out=result.shape[0], unaligned=[str(c) for c in seen if c not in every],
        dtypes=_concat_dtypes(library, inputs, result),
    )


def _concat_dtypes(library: str, inputs: list[dict[Any, Any]], result: Any) -> dict[str, str]:
    """Columns of the result whose dtype is not the one every input had (`inputs`: each one's
    dtypes by column)."""
    found = {}
    for column, now in dtypes_of(library, result).items():
        was = list(dict.fromkeys(d[column] for d in inputs if column in d))
        if was and was != [now]:
            found[str(column)] = f"{' / '.join(map(str, was))} → {now}"
    return found
