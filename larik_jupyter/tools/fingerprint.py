"""Bounded fingerprints of kernel values: enough to tell whether a call changed one in place.

A fingerprint is the value's type, a short shape (`1000×5`, `len 3`) and, where the type
allows it within a byte budget, a content digest: pandas and numpy objects hash their data
(CRC-32 of numeric buffers, pandas' `hash_pandas_object` for other columns and the index),
builtin containers hash their scalar items (any other item by identity, so a change inside
it is not seen). Immutable scalars cannot change in place. Anything else has no digest:
whether it changed is unknown, and `why` says so. Nothing here imports pandas or numpy; a
value can only be one of theirs when its library is already loaded.
"""

from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass
from typing import Any

# Content bytes hashed per value; a larger value keeps its type and shape but no digest.
BUDGET_BYTES = 512 << 20
# Items of a builtin container (nested ones included) hashed per value.
MAX_ITEMS = 100_000
_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset)
_NUMERIC_KINDS = "biufcmM"
IMMUTABLE = -1  # the digest of a value that cannot change in place


@dataclass(frozen=True)
class Fingerprint:
    """`type` and `shape` as shown to the user; `digest` None when the content was not hashed
    (`why` says why), `IMMUTABLE` for a scalar."""

    type: str
    shape: str = ""
    digest: int | None = None
    why: str = ""

    @property
    def summary(self) -> str:
        """`DataFrame 1000×5`, `list len 3`, `int`."""
        return f"{self.type} {self.shape}".rstrip()


class _OverBudget(Exception):
    """The value is larger than a fingerprint may hash; the message says by what measure."""


def type_name(value: object) -> str:
    return type(value).__name__


def shape_of(value: object) -> str:
    """`1000×5` for anything with a tuple shape, `len 3` for sized builtins, else ""."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return "×".join(str(n) for n in shape) if shape else "scalar"
    if isinstance(value, (*_CONTAINERS, str, bytes)):
        return f"len {len(value)}"
    return ""


def fingerprint(value: object, budget: int = BUDGET_BYTES) -> Fingerprint:
    """The fingerprint of `value`; never raises (a failure is a fingerprint without digest)."""
    kind = type_name(value)
    try:
        shape = shape_of(value)
    except Exception:
        shape = ""
    try:
        digest, why = _digest(value, budget)
    except _OverBudget as exc:
        digest, why = None, str(exc) or f"over the {budget >> 20} MB fingerprint budget"
    except Exception as exc:
        digest, why = None, f"its content could not be hashed ({type(exc).__name__})"
    return Fingerprint(kind, shape, digest, why)


def _digest(value: object, budget: int) -> tuple[int | None, str]:
    if isinstance(value, _SCALARS):
        return IMMUTABLE, ""
    if isinstance(value, _CONTAINERS):
        return _container(value), ""
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(value, (pandas.DataFrame, pandas.Series, pandas.Index)):
        return _Hasher(budget).pandas(value, pandas), ""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return _Hasher(budget).array(value, numpy), ""
    return None, "no fingerprint for this type"


class _Hasher:
    """A running CRC-32 over at most `budget` bytes."""

    def __init__(self, budget: int) -> None:
        self.crc = 0
        self.left = budget

    def text(self, text: str) -> None:
        self.crc = zlib.crc32(text.encode("utf-8", "surrogatepass"), self.crc)

    def buffer(self, data: Any, nbytes: int) -> None:
        if nbytes > self.left:
            raise _OverBudget
        self.left -= nbytes
        self.crc = zlib.crc32(data, self.crc)

    def array(self, array: Any, numpy: Any) -> int:
        self.text(f"{array.dtype.str}{array.shape}")
        if array.dtype.kind in _NUMERIC_KINDS:
            if array.nbytes > self.left:
                raise _OverBudget
            data = numpy.ascontiguousarray(array)
            self.buffer(memoryview(data).cast("B"), data.nbytes)
        else:
            pandas = sys.modules.get("pandas")
            if pandas is None:
                raise TypeError("an object array needs pandas to hash")
            self._hashed(pandas.util.hash_array(array.ravel(order="K")), len(array.ravel(order="K")))
        return self.crc

    def _hashed(self, hashes: Any, items: int) -> None:
        """Per-item uint64 hashes (pandas'), counted as 8 bytes an item."""
        self.buffer(memoryview(hashes).cast("B"), items * 8)

    def pandas(self, value: Any, pandas: Any) -> int:
        numpy = sys.modules["numpy"]
        if isinstance(value, pandas.DataFrame):
            self.text(repr([(str(c), str(d)) for c, d in value.dtypes.items()]))
            columns = [col for _, col in value.items()]
            index = value.index
        elif isinstance(value, pandas.Series):
            self.text(f"{value.name!r}{value.dtype}")
            columns, index = [value], value.index
        else:
            columns, index = [], value
        self._index(index, pandas, numpy)
        for column in columns:
            values = column.to_numpy(copy=False) if column.dtype.kind in _NUMERIC_KINDS else None
            if isinstance(values, numpy.ndarray) and values.dtype.kind in _NUMERIC_KINDS:
                self.array(values, numpy)
            else:
                self._hashed(pandas.util.hash_pandas_object(column, index=False).to_numpy(), len(column))
        return self.crc

    def _index(self, index: Any, pandas: Any, numpy: Any) -> None:
        if isinstance(index, pandas.RangeIndex):
            self.text(f"range{index.start},{index.stop},{index.step}")
        else:
            self._hashed(pandas.util.hash_pandas_object(index).to_numpy(), len(index))


def _container(value: object) -> int:
    """CRC-32 of a builtin container's structure and scalar items, other items by identity."""
    crc = 0
    seen = 0
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        seen += 1
        if seen > MAX_ITEMS:
            raise _OverBudget(f"over the {MAX_ITEMS:,} items a fingerprint hashes")
        if isinstance(item, dict):
            crc = zlib.crc32(f"d{len(item)}".encode(), crc)
            for key, val in item.items():
                todo += (key, val)
        elif isinstance(item, _CONTAINERS):
            crc = zlib.crc32(f"{type(item).__name__[0]}{len(item)}".encode(), crc)
            todo.extend(item)
        elif isinstance(item, str):
            crc = zlib.crc32(item.encode("utf-8", "surrogatepass"), zlib.crc32(b"s", crc))
        elif isinstance(item, bytes):
            crc = zlib.crc32(item, zlib.crc32(b"b", crc))
        elif isinstance(item, _SCALARS):
            crc = zlib.crc32(repr(item).encode(), crc)
        else:
            crc = zlib.crc32(f"@{id(item)}".encode(), crc)
    return crc
