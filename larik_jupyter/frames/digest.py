"""The content digest of a frame, fed to the fingerprint's hasher (`tools/kernel/fingerprint.py`).

pandas objects hash the buffers behind each column and the index (numeric, datetime,
categorical codes, masks, Arrow-backed columns such as pandas' `str` by their Arrow buffers
(compared within one process, `identity`, by the buffers' addresses: Arrow buffers are
immutable);
object and string items as the hasher says: by identity or through pandas' hashes within
`MAX_OBJECT_ITEMS`); polars frames and series their rows' 64-bit hashes
(`hash_rows`, `hash`), counted against the budget by their estimated size; pyarrow tables,
batches and chunked arrays the Arrow buffers of each chunk. A lazy frame is never computed: its
digest is its plan (polars' unoptimised plan, DuckDB's SQL, Spark's semantic hash of the logical
plan, Dask's expression name), so a rebuilt query is a change and new data under the same plan
is not (the plan is what the variable holds)."""

from __future__ import annotations

import sys
from typing import Any, Protocol

from larik_jupyter.frames.kinds import Frame

# Items of a column whose values pandas hashes one by one (~0.1 s of pandas' hashing).
MAX_OBJECT_ITEMS = 2_000_000


class OverBudget(Exception):
    """The frame is larger than a fingerprint may hash; the message says by what measure."""


class Hasher(Protocol):
    """The fingerprint's running hash (`fingerprint._Hasher`); `identity`: comparing within
    this process, so Arrow buffers, immutable, may be told by their addresses (`arrow`)."""

    identity: bool

    def arrow(self, chunked: Any) -> None: ...

    def text(self, text: str) -> None: ...

    def buffer(self, data: Any, nbytes: int) -> None: ...

    def array(self, array: Any, numpy: Any, strings: bool = False) -> int: ...


def digest(frame: Frame, hasher: Hasher) -> None:
    """Feed `frame`'s content (or, lazy, its plan) to `hasher`; raises `OverBudget` past the
    budget and any error of the library (the caller turns it into "not compared")."""
    hasher.text(f"{frame.library}:{frame.kind}")
    if frame.lazy:
        hasher.text(_plan(frame))
    elif frame.library == "pandas":
        _pandas(frame.native, hasher, sys.modules["pandas"])
    elif frame.library == "polars":
        _polars(frame.native, hasher)
    elif frame.library == "pyarrow":
        _arrow(frame.native, hasher)
    else:
        raise TypeError(f"no digest for {frame.library} frames")


def _plan(frame: Frame) -> str:
    native = frame.native
    if frame.library == "polars":
        return str(native.explain(optimized=False))
    if frame.library == "duckdb":
        return str(native.sql_query())
    if frame.library == "pyspark":
        return f"spark:{native.semanticHash()}"
    if frame.library == "dask" and isinstance(name := native._name, str):
        return f"dask:{name}"
    raise TypeError(f"the plan of a {frame.library} object cannot be read")


def _polars(value: Any, hasher: Hasher) -> None:
    size = int(value.estimated_size())
    if type(value).__name__ == "Series":
        hasher.text(f"{value.name!r}{value.dtype}{len(value)}")
        hashes = value.hash(seed=0)
    else:
        hasher.text(repr(list(value.schema.items())) + str(value.height))
        if not value.width:
            return
        hashes = value.hash_rows(seed=0)
    data = hashes.to_numpy()
    hasher.buffer(memoryview(data).cast("B"), max(size, data.nbytes))


def _arrow(value: Any, hasher: Hasher) -> None:
    if type(value).__name__ == "ChunkedArray":
        columns = [value]
        hasher.text(str(value.type))
    else:
        columns = list(value.columns)
        hasher.text(str(value.schema))
    for column in columns:
        if hasher.identity and hasattr(column, "chunks"):  # within this process: addresses
            hasher.arrow(column)
            continue
        chunks = column.chunks if hasattr(column, "chunks") else [column]
        for chunk in chunks:
            hasher.text(f"{chunk.offset},{len(chunk)},{chunk.null_count}")
            for buffer in chunk.buffers():
                if buffer is not None:
                    hasher.buffer(buffer, buffer.size)


def _pandas(value: Any, hasher: Hasher, pandas: Any) -> None:
    if isinstance(value, pandas.DataFrame):
        columns = [col for _, col in value.items()]
        hasher.text(repr([(str(name), str(col.dtype)) for name, col in zip(value.columns, columns, strict=True)]))
        index = value.index
    elif isinstance(value, pandas.Series):
        hasher.text(f"{value.name!r}{value.dtype}")
        columns, index = [value], value.index
    else:
        columns, index = [], value
    if isinstance(index, pandas.RangeIndex):
        hasher.text(f"range{index.start},{index.stop},{index.step}")
    elif isinstance(index, pandas.MultiIndex):
        for level, codes in zip(index.levels, index.codes, strict=True):
            _pandas_values(level.array, hasher, pandas)
            hasher.array(codes, sys.modules["numpy"])
    else:
        _pandas_values(index.array, hasher, pandas)
    for column in columns:
        _pandas_values(column.array, hasher, pandas)


def _pandas_values(array: Any, hasher: Hasher, pandas: Any) -> None:
    """One column's (or index's) values by their storage: numpy-backed arrays (object, string,
    datetime, categorical codes) by their buffer, masked ones by data and mask, anything else
    through `hash_pandas_object` within `MAX_OBJECT_ITEMS`."""
    numpy = sys.modules["numpy"]
    hasher.text(type(array).__name__)
    if isinstance(array, pandas.Categorical):
        hasher.text(f"ordered={array.ordered}")
        _pandas_values(array.categories.array, hasher, pandas)
    backing = [getattr(array, "_ndarray", None)]
    if backing[0] is None:
        backing = [getattr(array, "_data", None), getattr(array, "_mask", None)]
    if all(isinstance(part, numpy.ndarray) for part in backing):
        strings = isinstance(getattr(array, "dtype", None), pandas.StringDtype)
        for part in backing:
            hasher.array(part, numpy, strings)
        return
    chunked = getattr(array, "_pa_array", None)
    if type(chunked).__name__ == "ChunkedArray":  # Arrow-backed (pandas' `str`): its buffers
        _arrow(chunked, hasher)  # (their addresses when compared within this process)
        return
    if len(array) > MAX_OBJECT_ITEMS:
        raise OverBudget(f"over the {MAX_OBJECT_ITEMS:,} items of a {type(array).__name__} a fingerprint hashes")
    hashes = pandas.util.hash_pandas_object(pandas.Series(array, copy=False), index=False).to_numpy()
    hasher.buffer(memoryview(hashes).cast("B"), len(array) * 8)
