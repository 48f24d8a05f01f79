"""Which frame a value is, without importing any frame library the kernel has not loaded.

A value is looked at only when its class comes from a frame library (`LIBRARIES`, by the
class's module, read from its type: no attribute of the value is asked, so a hostile object's
`__getattr__` never runs); such a value's library is loaded, since the value exists. It is then
wrapped by narwhals (`narwhals.from_native`, which itself imports nothing): pandas, polars and
pyarrow come back eager, polars' LazyFrame, DuckDB relations, Dask and PySpark frames lazy.
What narwhals does not take is handled natively here: a pyarrow RecordBatch (as a one-batch
Table, no copy), a pandas Index, Dask collections (narwhals' Dask support is moving to the
`narwhals-dask` package), DuckDB connections (`duckdb_tables.py`) and numpy arrays."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

# The root modules of the classes of the frames this layer knows.
LIBRARIES = frozenset({
    "pandas", "polars", "pyarrow", "duckdb", "_duckdb", "dask", "dask_expr", "pyspark",
    "modin", "cudf", "ibis", "sqlframe",
})
# How the libraries are named to the user (a class's root module is not always its name).
_NAMES = {"_duckdb": "duckdb", "dask_expr": "dask"}
# Libraries whose every object is a plan: nothing of theirs is computed here.
_LAZY_LIBRARIES = frozenset({"dask", "pyspark", "ibis", "sqlframe"})


@dataclass(frozen=True)
class Frame:
    """A frame of some library: `native` the user's object, `wrapped` its narwhals DataFrame,
    LazyFrame or Series (None for what narwhals does not take: a pandas Index, a Dask Series),
    `library` its
    library (`polars`), `lazy` whether its data is only a plan (never computed here)."""

    native: Any
    wrapped: Any
    library: str
    lazy: bool
    series: bool = False

    @property
    def table(self) -> bool:
        """Whether it has columns (a frame, lazy or not), not one column (a series, an index)."""
        return not self.series and self.kind != "Index"

    @property
    def kind(self) -> str:
        """`LazyFrame`, `DataFrame`, `Series` or `Index`, whatever the library calls it."""
        if self.lazy:
            return "LazyFrame"
        if self.wrapped is None and not self.series:
            return "Index"
        return "Series" if self.series else "DataFrame"


def library_of(value: object) -> str | None:
    """The frame library `value`'s class comes from (`polars`), None for any other class."""
    try:
        module = type(value).__module__
    except Exception:
        return None
    root = module.partition(".")[0] if isinstance(module, str) else ""
    return _NAMES.get(root, root) if root in LIBRARIES else None


def frame_of(value: object) -> Frame | None:
    """`value` as a `Frame`, None when it is none (or narwhals cannot take it)."""
    library = library_of(value)
    if library is None:
        return None
    try:
        return _wrapped(value, library)
    except Exception:
        return None


def _wrapped(value: object, library: str) -> Frame | None:
    import narwhals as nw

    native: Any = value
    if library == "dask":
        # Natively: narwhals' Dask support is moving to a package of its own (it warns on
        # every call); Dask's own metadata (`_meta`) gives the schema.
        return Frame(value, None, "dask", lazy=True, series=type(value).__name__ in ("Series", "Index"))
    if library == "pyarrow" and type(value).__name__ == "RecordBatch":
        native = sys.modules["pyarrow"].Table.from_batches([value])  # no copy
    elif library == "pandas" and isinstance(value, sys.modules["pandas"].Index):
        return Frame(value, None, "pandas", lazy=False)
    wrapped = nw.from_native(native, pass_through=True, allow_series=True)
    if wrapped is native:
        # A Dask or Spark object narwhals does not take (a Series, a Column) is a plan as well.
        return Frame(value, None, library, lazy=True, series=True) if library in _LAZY_LIBRARIES else None
    if isinstance(wrapped, nw.LazyFrame):
        return Frame(value, wrapped, library, lazy=True)
    return Frame(value, wrapped, library, lazy=False, series=isinstance(wrapped, nw.Series))


def numpy_array(value: object) -> bool:
    """Whether `value` is a numpy array (numpy is loaded where one exists)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and issubclass(type(value), numpy.ndarray)


def duckdb_connection(value: object) -> bool:
    """Whether `value` is a DuckDB connection, whose tables are kernel state."""
    return library_of(value) == "duckdb" and type(value).__name__ == "DuckDBPyConnection"
