"""Which frame a value is, without importing any frame library the kernel has not loaded.

A value is a frame when its class is (a subclass of) one of a loaded library's frame classes
(`_CLASSES`, looked up in `sys.modules` only: a library not loaded has no frames), or comes
from a module of a library narwhals takes that is not listed there (modin, cuDF, ibis,
sqlframe). Only the value's type is looked at, never its attributes, so a hostile object's
`__getattr__` never runs here, and the answer is kept by type. The narwhals wrapper
(`Frame.wrapped`: `narwhals.from_native`, which itself imports nothing) is made only when the
schema or rows are read: pandas, polars and pyarrow come back eager, polars' LazyFrame and
DuckDB relations lazy. What narwhals does not take is handled natively: a pyarrow RecordBatch
(as a one-batch Table, no copy), a pandas Index, Dask collections (narwhals' Dask support is
moving to the `narwhals-dask` package), Spark columns, DuckDB connections
(`duckdb_tables.py`) and numpy arrays."""

from __future__ import annotations

import sys
import weakref
from functools import cached_property
from typing import Any

# (module, class, library, lazy, series): the frame classes this layer knows by name.
_CLASSES = (
    ("pandas", "DataFrame", "pandas", False, False),
    ("pandas", "Series", "pandas", False, True),
    ("pandas", "Index", "pandas", False, True),
    ("polars", "DataFrame", "polars", False, False),
    ("polars", "Series", "polars", False, True),
    ("polars", "LazyFrame", "polars", True, False),
    ("pyarrow", "Table", "pyarrow", False, False),
    ("pyarrow", "RecordBatch", "pyarrow", False, False),
    ("pyarrow", "ChunkedArray", "pyarrow", False, True),
    ("duckdb", "DuckDBPyRelation", "duckdb", True, False),
    ("dask.dataframe", "DataFrame", "dask", True, False),
    ("dask.dataframe", "Series", "dask", True, True),
    ("pyspark.sql", "DataFrame", "pyspark", True, False),
    ("pyspark.sql", "Column", "pyspark", True, True),
)
# Root modules of other libraries narwhals takes, tried through it.
_THROUGH_NARWHALS = frozenset({"modin", "cudf", "ibis", "sqlframe"})
# Python's own value types, never frames: answered at once.
_PLAIN = frozenset({int, float, complex, bool, str, bytes, type(None), list, tuple, dict, set, frozenset})
_Kind = tuple[str, bool, bool]  # library, lazy, series
_KNOWN: weakref.WeakKeyDictionary[type, tuple[_Kind | None, int]] = weakref.WeakKeyDictionary()


class Frame:
    """A frame of some library: `native` the user's object, `library` its library (`polars`),
    `lazy` whether its data is only a plan (never computed here), `series` whether it is one
    column (a series, an index, a chunked array)."""

    def __init__(self, native: Any, library: str, lazy: bool, series: bool = False) -> None:
        self.native, self.library, self.lazy, self.series = native, library, lazy, series

    @property
    def kind(self) -> str:
        """`LazyFrame`, `DataFrame`, `Series` or `Index`, whatever the library calls it."""
        if self.lazy:
            return "LazyFrame"
        if self._index():
            return "Index"
        return "Series" if self.series else "DataFrame"

    def _index(self) -> bool:
        pandas = sys.modules.get("pandas")
        return self.library == "pandas" and pandas is not None and isinstance(self.native, pandas.Index)

    @cached_property
    def wrapped(self) -> Any:
        """Its narwhals DataFrame, LazyFrame or Series; None for what narwhals does not take (a
        pandas Index, Dask collections, a Spark column)."""
        if self._index() or self.library == "dask" or self.library == "pyspark" and self.series:
            return None
        import narwhals as nw

        native = self.native
        if self.library == "pyarrow" and type(native).__name__ == "RecordBatch":
            native = sys.modules["pyarrow"].Table.from_batches([native])  # no copy
        elif self.library == "pandas" and not self.series and not native.columns.is_unique:
            # narwhals takes unique names only: a repeated one is told apart by its position.
            seen = native.columns.duplicated(keep=False)
            native = native.set_axis([f"{c} ({i})" if d else c for i, (c, d) in enumerate(zip(native.columns, seen, strict=True))], axis=1)
        wrapped = nw.from_native(native, pass_through=True, allow_series=True)
        return None if wrapped is native else wrapped


def _classes() -> list[tuple[type, _Kind]]:
    """The known frame classes of the libraries loaded now."""
    found = []
    for module, name, library, lazy, series in _CLASSES:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type):
            found.append((cls, (library, lazy, series)))
    return found


def _kind_of(cls: type) -> _Kind | None:
    """The frame kind of instances of `cls`, kept by class with how many modules were loaded
    then: a class found no frame is looked at again once another module is loaded."""
    if cls in _PLAIN:
        return None
    try:
        known = _KNOWN.get(cls)
    except TypeError:  # a class that cannot be a key (its metaclass' hash raises)
        known = None
    if known is not None and known[0] is not None:
        return known[0]
    loaded = len(sys.modules)  # no module loaded since (nor one dropped and another loaded)
    if known is not None and known[1] == loaded:
        return None
    kind = next((k for c, k in _classes() if issubclass(cls, c)), None)
    if kind is None:
        module = cls.__module__
        root = module.partition(".")[0] if isinstance(module, str) else ""
        kind = (root, False, False) if root in _THROUGH_NARWHALS else None
    try:
        _KNOWN[cls] = (kind, loaded)
    except TypeError:
        pass
    return kind


def frame_of(value: object) -> Frame | None:
    """`value` as a `Frame`, None when it is none."""
    try:
        kind = _kind_of(type(value))
    except Exception:
        return None
    if kind is None:
        return None
    library, lazy, series = kind
    if library in _THROUGH_NARWHALS:
        return _through_narwhals(value, library)
    return Frame(value, library, lazy, series)


def _through_narwhals(value: object, library: str) -> Frame | None:
    try:
        import narwhals as nw

        wrapped = nw.from_native(value, pass_through=True, allow_series=True)
    except Exception:
        return None
    if wrapped is value:
        return None
    frame = Frame(value, library, isinstance(wrapped, nw.LazyFrame), isinstance(wrapped, nw.Series))
    frame.__dict__["wrapped"] = wrapped
    return frame


def numpy_array(value: object) -> bool:
    """Whether `value` is a numpy array (numpy is loaded where one exists)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and issubclass(type(value), numpy.ndarray)


def duckdb_connection(value: object) -> bool:
    """Whether `value` is a DuckDB connection, whose tables are kernel state."""
    duckdb = sys.modules.get("duckdb")
    cls = getattr(duckdb, "DuckDBPyConnection", None)
    return isinstance(cls, type) and issubclass(type(value), cls)
