"""Receipts for the operations the agent's own code runs: while a `ReceiptWatch` is entered,
the entry points of pandas, polars and pyarrow (`arrow_receipts.py`) that join, filter,
de-duplicate, group and concat, and those of polars, Dask, DuckDB and Spark that compute a lazy
frame (`lazy_receipts.py`), are wrapped (`_PATCHES`, of the libraries already loaded) and put
back as they were when it exits, so the user's own cells never run through them. Each function
itself is wrapped (`code_swap.py`), not the attribute it is reached by, so an alias bound before
the call (`from pandas import merge`, `m = pd.merge`, `f = df.merge`) runs through the wrapper too.

A wrapped call by the watched thread, not nested in another watched call (pandas' `join` calls
its `merge`; the receipts' own counting calls `concat`) nor made by a library's own code (Dask,
building a frame, runs pandas on made-up rows; pandas runs pyarrow on its Arrow-backed columns),
runs the operation untouched, then counts (`receipt_ops.py`); a count that fails is a receipt
missing, never the operation's error. Calls from other threads are not watched."""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import inspect
import sys
import threading
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.frames import arrow_receipts as arrow
from larik_jupyter.frames import code_swap
from larik_jupyter.frames import receipt_ops as ops
from larik_jupyter.frames.lazy_receipts import dask_last, lazy_receipts, polars_last
from larik_jupyter.frames.query_plans import duckdb_last, spark_last
from larik_jupyter.frames.receipt import Kind, Receipt

# The most receipts one call keeps: those bound to a variable, fanning out or dropping every row
# first, then the others in order; the rest are counted (`ReceiptWatch.left_out`).
MAX_RECEIPTS = 20
# The most receipts one call keeps until it ends: past them (a loop of filters) a receipt only
# adds to `ReceiptWatch.left_out` (one that fans out or drops every row is still kept), and no
# operand's name is looked for, so memory and naming stay bounded.
MAX_COUNTED = 500
# The reductions of a grouped frame, each an aggregation (pandas' live on its base class).
_PANDAS_REDUCTIONS = (
    "agg", "aggregate", "sum", "mean", "median", "min", "max", "count", "size", "nunique", "first", "last",
    "prod", "std", "var",
)
_POLARS_REDUCTIONS = ("agg", "all", "len", "first", "last", "max", "mean", "median", "min", "n_unique", "sum")

# What a wrapped call counts after it ran: its receipt, none, or (a call computing several
# frames) each receipt with the result it is of.
After = Callable[..., "Receipt | list[tuple[Receipt, Any]] | None"]

_active: ReceiptWatch | None = None
# The libraries watched: one the code imports while watched is wrapped once its import ends
# (pyarrow's modules of the `_PATCHES`: `Table.join` imports acero on its first call).
_LIBRARIES = ("pandas", "polars", "dask", "duckdb", "pyspark.sql.classic.dataframe", "pyarrow.acero", "pyarrow.compute")


class _Imported(importlib.abc.MetaPathFinder):
    """Calls `then` once pandas or polars, imported by the watched code, finished loading."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in _LIBRARIES:
            return None
        others = [f for f in sys.meta_path if f is not self]
        spec = next((s for f in others if (s := _spec(f, name, path, target)) is not None), None)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            self.then()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _spec(finder: object, name: str, path: Any, target: Any) -> importlib.machinery.ModuleSpec | None:
    find = getattr(finder, "find_spec", None)
    return find(name, path, target) if find is not None else None


def _operand(value: Any) -> Any:
    """The frame of `.loc` (its indexer's `obj`), else `value` (a frame's own attributes are not
    asked: pandas would look for a column of that name)."""
    return value.obj if type(value).__name__ == "_LocIndexer" else value


def _rows(frame: Any) -> int:
    """A pandas or polars frame's or an Arrow table's rows (no other's shape is asked: a DuckDB
    relation's runs a count of the query, a Dask frame's is not known without computing it)."""
    if not type(frame).__module__.startswith(("pandas", "polars", "pyarrow")):
        return 0
    shape = getattr(frame, "shape", None)
    return shape[0] if isinstance(shape, tuple) and shape and isinstance(shape[0], int) else 0


def _bound(original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by name (`self` as `left`), keyword catch-alls flattened."""
    arguments = dict(inspect.signature(original).bind(*args, **kwargs).arguments)
    if "self" in arguments:
        arguments["left"] = arguments.pop("self")
    arguments.update(arguments.pop("kwargs", None) or {})
    return arguments


def _join(handler: Callable[..., Receipt | None]) -> After:
    def after(watch: ReceiptWatch, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              rows: int, result: Any) -> Receipt | None:
        return handler(watch.name, result, **_bound(original, args, kwargs))

    return after


def _rows_op(kind: Kind, library: str, masked: bool = False) -> After:
    def after(watch: ReceiptWatch, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              rows: int, result: Any) -> Receipt | None:
        frame = args[0]
        if masked:  # `df[mask]`, `df.loc[mask]`, `df.loc[mask, cols]`
            key = args[1] if len(args) > 1 else None
            frame = _operand(frame)
            if not hasattr(frame, "columns") or not ops.is_mask(key[0] if isinstance(key, tuple) else key):
                return None
        return ops.rows_receipt(kind, library, watch.name, frame, rows, result)

    return after


def _grouped(handler: Callable[..., Receipt | None]) -> After:
    def after(watch: ReceiptWatch, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              rows: int, result: Any) -> Receipt | None:
        selected_from = watch.selected.get(args[0])
        return handler(watch.name, args[0], result, *([selected_from] if selected_from is not None else []))

    return after


def _selected(watch: ReceiptWatch, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              rows: int, result: Any) -> None:
    """`df.groupby(k)['a']` (or `.a`): the frame the grouped column was taken from, kept so the
    aggregation's receipt names `df` and counts its rows with a missing key."""
    frame = getattr(args[0], "obj", None)
    if frame is not None and hasattr(frame, "columns"):
        try:
            watch.selected[result] = frame
        except TypeError:  # not weakly referable: the receipt says "a frame"
            pass
    return None


def _concat(library: str) -> After:
    def after(watch: ReceiptWatch, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              rows: int, result: Any) -> Receipt | None:
        items = args[0] if args else kwargs.get("objs", kwargs.get("items"))
        if kwargs.get("axis") not in (None, 0, "index"):
            return None
        return ops.concat_receipt(library, watch.name, items, result)

    return after


def _computed(library: str, last: Callable[[Any], Kind | None],
              operands: Callable[[tuple[Any, ...], dict[str, Any]], Any] | None = None) -> After:
    """A lazy frame computed (`self`), or each of `operands` computed into the list or tuple
    the call returned."""
    def after(watch: ReceiptWatch, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              rows: int, result: Any) -> list[tuple[Receipt, Any]]:
        if operands is None:
            return lazy_receipts(library, watch.name, [(args[0], result)], last)
        frames = operands(args, kwargs)
        if not isinstance(frames, (list, tuple)) or not isinstance(result, (list, tuple)):
            return []  # an iterator the call used up, or a result not computed (`lazy=True`)
        return lazy_receipts(library, watch.name, zip(frames, result, strict=False), last)

    return after


# (module, class or "" for the module itself, attribute, what to count after the call)
_PATCHES: list[tuple[str, str, str, After]] = [
    ("pandas", "", "merge", _join(ops.pandas_merge)),
    ("pandas", "DataFrame", "merge", _join(ops.pandas_merge)),
    ("pandas", "DataFrame", "join", _join(ops.pandas_join)),
    ("pandas", "DataFrame", "__getitem__", _rows_op("filter", "pandas", masked=True)),
    ("pandas.core.indexing", "_LocIndexer", "__getitem__", _rows_op("filter", "pandas", masked=True)),
    ("pandas", "DataFrame", "query", _rows_op("filter", "pandas")),
    ("pandas", "DataFrame", "dropna", _rows_op("dropna", "pandas")),
    ("pandas", "DataFrame", "drop_duplicates", _rows_op("drop_duplicates", "pandas")),
    ("pandas", "", "concat", _concat("pandas")),
    ("pandas.core.groupby.generic", "DataFrameGroupBy", "__getitem__", _selected),
    *[("pandas.core.groupby.generic", owner, name, _grouped(ops.pandas_groupby))
      for owner in ("DataFrameGroupBy", "SeriesGroupBy") for name in _PANDAS_REDUCTIONS],
    ("polars", "DataFrame", "join", _join(ops.polars_join)),
    ("polars", "DataFrame", "filter", _rows_op("filter", "polars")),
    ("polars", "DataFrame", "unique", _rows_op("drop_duplicates", "polars")),
    ("polars", "DataFrame", "drop_nulls", _rows_op("dropna", "polars")),
    ("polars", "", "concat", _concat("polars")),
    *[("polars.dataframe.group_by", "GroupBy", name, _grouped(ops.polars_groupby)) for name in _POLARS_REDUCTIONS],
    ("polars", "LazyFrame", "collect", _computed("polars", polars_last)),
    ("polars", "", "collect_all", _computed("polars", polars_last, lambda a, k: a[0] if a else k.get("lazy_frames"))),
    ("dask.base", "DaskMethodsMixin", "compute", _computed("dask", dask_last)),
    ("dask.base", "", "compute", _computed("dask", dask_last, lambda a, k: a)),
    *[("duckdb", "DuckDBPyRelation", name, _computed("duckdb", duckdb_last))  # each a wrapper of its own
      for name in ("df", "fetchdf", "to_df", "pl", "to_arrow_table", "fetch_arrow_table", "fetchall", "fetchnumpy",
                   "to_dicts")],
    *[("pyspark.sql.classic.dataframe", "DataFrame", name, _computed("spark", spark_last))
      for name in ("collect", "toPandas", "toArrow")],
    # What pyarrow Tables' compiled methods call (`arrow_receipts.py`); `pa.concat_tables` calls none.
    ("pyarrow.acero", "", "_perform_join", _join(arrow.arrow_join)),
    ("pyarrow.acero", "", "_filter_table", _rows_op("filter", "pyarrow")),
    ("pyarrow.compute", "", "filter", _rows_op("filter", "pyarrow")),
    ("pyarrow.compute", "", "drop_null", _rows_op("dropna", "pyarrow")),
    ("pyarrow.acero", "", "_group_by", _join(arrow.arrow_group_by)),  # by its arguments' names, as a join
]


@dataclass
class _Seen:
    receipt: Receipt
    result: weakref.ref[Any] | None


@dataclass
class ReceiptWatch:
    """Receipts of the operations one call's code runs (`with ReceiptWatch(named): exec(…)`).

    `named`: an operand's variable name by identity ("" for none); `thread`: the one thread
    watched (None: whichever runs the code, for a cell the kernel runs itself)."""

    named: ops.Namer
    thread: int | None = None
    seen: list[_Seen] = field(default_factory=list)
    left_out: int = 0
    uncounted: int = 0
    # A grouped column → the frame it was taken from (`_selected`).
    selected: weakref.WeakKeyDictionary[Any, Any] = field(default_factory=weakref.WeakKeyDictionary)
    depth: int = 0
    _undo: list[code_swap.Swapped] = field(default_factory=list)
    _finder: _Imported | None = None

    def __enter__(self) -> ReceiptWatch:
        global _active
        if _active is not None:  # a call inside a watched call: the outer one counts
            return self
        _active = self
        self._patch()
        if not all(library in sys.modules for library in _LIBRARIES):  # the code may import one
            self._finder = _Imported(self._patch)
            sys.meta_path.insert(0, self._finder)
        return self

    def _patch(self) -> None:
        """Wrap the entry points of the libraries loaded now (each function once: pandas'
        grouped frames share theirs)."""
        done = {id(swapped.function) for swapped in self._undo}
        for module_name, owner_name, attribute, after in _PATCHES:
            module = sys.modules.get(module_name)
            owner = module if not owner_name else getattr(module, owner_name, None)
            original = getattr(owner, attribute, None) if owner is not None else None
            if original is None or id(original) in done:
                continue
            swapped = code_swap.swap(original, functools.partial(_wrapped, after=after))
            if swapped is not None:
                self._undo.append(swapped)
                done.add(id(original))

    def __exit__(self, *exc: object) -> None:
        global _active
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        for swapped in reversed(self._undo):
            code_swap.restore(swapped)
        self._undo.clear()
        if _active is self:
            _active = None

    @property
    def full(self) -> bool:
        """Whether the call counted `MAX_COUNTED` operations: the rest are only counted."""
        return len(self.seen) >= MAX_COUNTED

    def name(self, value: object) -> str:
        """An operand's variable name (none looked for once the call is `full`)."""
        return "" if self.full else self.named(value)

    def watching(self) -> bool:
        return self.depth == 0 and (self.thread is None or threading.get_ident() == self.thread)

    def add(self, receipt: Receipt, result: Any) -> None:
        try:
            ref = weakref.ref(result) if result is not None else None
        except TypeError:
            ref = None
        self.seen.append(_Seen(receipt, ref))

    def receipts(self, bound: Callable[[object], str | None]) -> list[Receipt]:
        """The call's receipts, each with the variable its result was bound to (`bound`, by
        identity), at most `MAX_RECEIPTS` of them (see there)."""
        named = []
        for seen in self.seen:
            result = seen.result() if seen.result is not None else None
            variable = bound(result) if result is not None else None
            named.append(seen.receipt if variable is None else _with_variable(seen.receipt, variable))
        first = [r for r in named if r.variable or r.fans_out or r.drops_every_row][:MAX_RECEIPTS]
        kept = {id(r) for r in first}
        rest = [r for r in named if id(r) not in kept][: MAX_RECEIPTS - len(first)]
        kept |= {id(r) for r in rest}
        self.left_out = len(named) - len(kept) + self.uncounted
        return [r for r in named if id(r) in kept]


def _with_variable(receipt: Receipt, variable: str) -> Receipt:
    import msgspec

    return msgspec.structs.replace(receipt, variable=variable)


# Modules whose calls are a library's own work, not the code's: Dask building a frame runs pandas
# on its empty or made-up rows to learn the result's columns; DuckDB's `len(relation)` fetches a
# count, Spark's `take` collects a limit.
_LIBRARY_CALLERS = ("dask.", "duckdb.", "pyspark.")
# And those whose calls of pyarrow are: pandas' (its str dtype is Arrow's: a groupby of it groups
# a Table), polars' and pyarrow's own.
_ARROW_CALLERS = (*_LIBRARY_CALLERS, "pandas.", "polars.", "pyarrow.")


def _library_call(called: str) -> bool:
    """Whether the wrapped call (of a function of the module `called`) was made by a library's
    own code (`_LIBRARY_CALLERS`, `_ARROW_CALLERS`)."""
    callers = _ARROW_CALLERS if called.startswith("pyarrow.") else _LIBRARY_CALLERS
    frame: types.FrameType | None = sys._getframe(2)  # past this function and the wrapper
    while frame is not None and frame.f_code.co_filename == code_swap.FILENAME:
        frame = frame.f_back
    return frame is not None and str(frame.f_globals.get("__name__", "")).startswith(callers)


def _wrapped(original: Any, after: After) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        watch = _active
        if watch is None or not watch.watching() or _library_call(original.__module__):
            return original(*args, **kwargs)
        rows = _rows(_operand(args[0])) if args else 0
        watch.depth += 1
        try:
            result = original(*args, **kwargs)
            try:
                found = after(watch, original, args, kwargs, rows, result)
            except Exception:  # a count that fails leaves this operation without a receipt
                found = None
        finally:
            watch.depth -= 1
        for receipt, of in found if isinstance(found, list) else [(found, result)] if found is not None else []:
            if watch.full and not (receipt.fans_out or receipt.drops_every_row):
                watch.uncounted += 1
            else:
                watch.add(receipt, of)
        return result

    return wrapper
