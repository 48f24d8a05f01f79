"""A frame's schema and shape, from its metadata only: a lazy frame is never computed here
(Dask's `_meta`, Spark's and DuckDB's schema, polars' resolved plan), so its row count is not
known and it is shown as `LazyFrame (not computed)`."""

from __future__ import annotations

from typing import Any

from larik_jupyter.frames.kinds import Frame

NOT_COMPUTED = "(not computed)"  # a lazy frame's shape: `LazyFrame (not computed)`
MAX_COLUMNS = 500


def columns(frame: Frame) -> list[tuple[str, str]]:
    """(name, dtype) of each column (at most `MAX_COLUMNS`); a series' own; [] where the
    metadata says nothing (a Spark column)."""
    native: Any = frame.native
    if frame.library == "dask":  # its empty pandas model: no partition is computed
        meta: Any = getattr(native, "_meta", None)
        if getattr(meta, "ndim", 0) == 2:
            return [(str(name), str(dtype)) for name, dtype in list(meta.dtypes.items())[:MAX_COLUMNS]]
        return [(str(getattr(meta, "name", "")), str(meta.dtype))] if hasattr(meta, "dtype") else []
    if frame.library == "pandas":  # as pandas names them (`int64`, `object`), as its user knows them
        if frame.series:  # a series or an index
            return [(str(native.name), str(native.dtype))]
        return [(str(name), str(dtype)) for name, dtype in list(native.dtypes.items())[:MAX_COLUMNS]]
    wrapped = frame.wrapped
    if wrapped is None:
        return []
    if frame.series:
        return [(str(wrapped.name), str(wrapped.dtype))]
    schema = wrapped.collect_schema()
    return [(str(name), str(dtype)) for name, dtype in list(schema.items())[:MAX_COLUMNS]]


def shape(frame: Frame) -> tuple[int, ...] | None:
    """Rows and columns of an eager frame, length of a series or index (the library's own,
    no narwhals needed); None for a lazy frame (its row count is a computation)."""
    if frame.lazy:
        return None
    if frame.series:
        return (len(frame.native),)
    rows, width = frame.native.shape
    return (int(rows), int(width))


def shape_text(frame: Frame) -> str:
    """`1000×5`, `3` for a series, `(not computed)` for a lazy frame."""
    found = shape(frame)
    if found is None:
        return NOT_COMPUTED
    return "×".join(str(n) for n in found)
