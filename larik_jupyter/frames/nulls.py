"""How many missing values one column of an eager pandas or polars frame or an Arrow table holds,
counted the cheapest way its type allows: what receipts (`join_counts.py`) and the column profile of a
changed frame (`column_profile.py`) both count."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

# A float column longer than this is counted in two halves on two threads (numpy lets go of the
# GIL while it compares): the count is memory-bound, and a second core reads the other half;
# shorter, the threads' hand-over costs more than the half it saves.
SPLIT_ROWS = 2_000_000
# Values compared at a time, into a buffer each thread keeps: the comparison's booleans stay in
# the cache, where one array as long as the column would be written out to memory and read back
# (a fifth of a 10,000,000-row count).
CHUNK = 1 << 18
_halves = ThreadPoolExecutor(max_workers=2, thread_name_prefix="larik-receipt")
_buffers = threading.local()


def _nans(values: np.ndarray) -> int:
    buffer = getattr(_buffers, "chunk", None)
    if buffer is None:
        buffer = _buffers.chunk = np.empty(CHUNK, dtype=bool)
    count = 0
    for start in range(0, len(values), CHUNK):
        part = values[start:start + CHUNK]
        nan = buffer[:len(part)]
        np.isnan(part, out=nan)
        count += int(np.count_nonzero(nan))
    return count


def _float_nans(values: np.ndarray) -> int:
    """How many NaNs a float array holds."""
    if len(values) <= SPLIT_ROWS:
        return _nans(values)
    return sum(half.result() for half in _in_halves(values))


def _in_halves(floats: np.ndarray) -> list[Future[int]]:
    """The NaNs of each half of a long float array, counted on the two threads."""
    middle = len(floats) // 2
    return [_halves.submit(_nans, floats[:middle]), _halves.submit(_nans, floats[middle:])]


def _long_floats(library: str, frame: Any, column: Any) -> np.ndarray | None:
    """A pandas column of numpy floats longer than `SPLIT_ROWS` (counted in halves), else None."""
    if library != "pandas":
        return None
    values = frame[column]
    if isinstance(values.dtype, np.dtype) and values.dtype.kind == "f" and len(values) > SPLIT_ROWS:
        return values.to_numpy(copy=False)
    return None


def missing_counts(library: str, columns: list[tuple[Any, Any]]) -> list[int]:
    """The missing values of several columns (each a frame and a column's label), the halves of
    the long float ones counted on the two threads while this one counts the rest (a lookup's
    short columns, held in the cache, beside a result's long one)."""
    counts = [0] * len(columns)
    halves: list[tuple[int, Future[int]]] = []
    rest = []
    for number, (frame, column) in enumerate(columns):
        floats = _long_floats(library, frame, column)
        if floats is None:
            rest.append(number)
        else:
            halves += [(number, half) for half in _in_halves(floats)]
    for number in rest:
        counts[number] = missing_count(library, *columns[number])
    for number, half in halves:
        counts[number] += half.result()
    return counts


def missing_count(library: str, frame: Any, column: Any) -> int:
    """The missing values of `frame`'s column `column` (`library`: `pandas`, `polars` or
    `pyarrow`; Arrow's are its nulls, a NaN is a value)."""
    if library == "polars":
        return int(frame.get_column(column).null_count())  # kept by polars: no work
    if library == "pyarrow":
        return int(frame.column(column).null_count)  # kept by Arrow, as polars does
    values = frame[column]
    kind = values.dtype.kind if isinstance(values.dtype, np.dtype) else ""  # pandas' own dtypes hold NA
    if kind == "f":  # numpy floats: a third of `isna`'s time
        return _float_nans(values.to_numpy(copy=False))
    if kind in ("i", "u", "b"):
        return 0  # numpy integers and booleans hold no missing value
    if _arrow_backed(values):  # pandas 3's strings: Arrow keeps the count of its nulls
        return int(values.array.__arrow_array__().null_count)
    return int(values.isna().sum())


def count_cost(library: str, frame: Any, column: Any) -> int:
    """About how many bytes a row `missing_count` reads for `column` (0: none, the count is
    kept or known), to count the cheapest of columns known to hold the same number."""
    if library in ("polars", "pyarrow"):  # both keep their null counts
        return 0
    values = frame[column]
    if isinstance(values.dtype, np.dtype):
        return values.dtype.itemsize if values.dtype.kind == "f" else 0 if values.dtype.kind in "iub" else 64
    return 0 if _arrow_backed(values) else 8


def _arrow_backed(values: Any) -> bool:
    import pandas as pd

    return isinstance(values.array, pd.arrays.ArrowExtensionArray)
