"""Copies of frames for undo and protect mode, and the memory a copy takes.

pandas copies deeply (`copy(deep=True)`: the Python objects of an object column are shared);
polars clones (its buffers are shared and never written in place: `insert_column` and the like
change the frame's own list of columns, not the clone's); pyarrow objects are immutable, so the
object itself is its copy. A lazy frame is a plan: a polars LazyFrame is cloned, a Dask frame
copied shallowly (`ddf["x"] = …` rebinds the original's expression, not the copy's), Spark and
DuckDB relations are immutable. No copy computes anything."""

from __future__ import annotations

import sys

from larik_jupyter.frames.kinds import Frame


def copy_frame(frame: Frame) -> object:
    """An independent copy of `frame`'s native object."""
    native = frame.native
    if frame.library == "pandas":
        return native.copy(deep=True)
    if frame.library == "polars":
        return native.clone()
    if frame.library == "dask":
        return native.copy()
    # pyarrow, Spark and DuckDB objects never change in place.
    return native


def frame_size(frame: Frame) -> int:
    """Bytes a copy of `frame` takes: its buffers for pandas (shallow: a deep copy shares its
    strings) and polars, nothing for what the copy shares (Arrow, lazy plans)."""
    native = frame.native
    if frame.library == "pandas":
        used = native.memory_usage(deep=False)
        return int(used.sum() if isinstance(used, sys.modules["pandas"].Series) else used)
    if frame.library == "polars" and not frame.lazy:
        return int(native.estimated_size())
    return 0
