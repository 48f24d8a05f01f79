"""Bounded fingerprints of kernel values: enough to tell whether a call changed one in place.

A fingerprint is the value's type, a short shape (`1000×5`, `len 3`, `LazyFrame (not
computed)`) and, where the type allows it within a byte budget, a content digest (xxh3):
frames of every library through the frame layer (`larik_jupyter/frames/digest.py`: pandas'
buffers, polars' row hashes, Arrow buffers (within one process by their immutable buffers'
addresses, `arrow_buffers.py`), a lazy frame's plan, never its data), a DuckDB connection's
tables by their rows (`frames/duckdb_tables.py`), numpy arrays their data (object items either
by identity, their addresses, for a comparison within one process, or by content through
pandas' hashes within `MAX_OBJECT_ITEMS`), builtin containers their scalar items (any other
item by identity, so a change inside it is not seen), random generators and iterators their
state (`rng_state.py`). Immutable scalars cannot change in place. Anything else has no digest:
whether it changed is unknown, and `why` says so. Nothing here imports a frame library or
numpy; a value can only be one of theirs when its library is already loaded.
"""

from __future__ import annotations

import ctypes
import sys
import zlib
from typing import Any

import xxhash

from larik_jupyter.frames import duckdb_connection, frame_of, numpy_array
from larik_jupyter.frames.digest import MAX_OBJECT_ITEMS, OverBudget
from larik_jupyter.frames.digest import digest as frame_digest
from larik_jupyter.frames.duckdb_tables import contents, tables_label
from larik_jupyter.frames.schema import shape_text
from larik_jupyter.tools.fingerprint_cache import IMMUTABLE, Fingerprint, FingerprintCache
from larik_jupyter.tools.kernel.arrow_buffers import layout
from larik_jupyter.tools.kernel.rng_state import state_digest

# Content bytes hashed per value; a larger value keeps its type and shape but no digest. xxh3
# hashes 4 GB in about the time CRC-32 took for the 512 MB this was before (issue 52).
BUDGET_BYTES = 4 << 30

# Items of a builtin container (nested ones included) hashed per value.
MAX_ITEMS = 100_000
# Items of an object column, compared by identity, whose own content is hashed when mutable.
SAMPLE_ITEMS = 1_000
_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset)
_NUMERIC_KINDS = "biufcmM"


_OverBudget = OverBudget


def type_name(value: object) -> str:
    """The class's name; `LazyFrame` for any lazy frame (Dask, Spark, DuckDB, polars)."""
    frame = frame_of(value)
    return "LazyFrame" if frame is not None and frame.lazy else type(value).__name__


def shape_of(value: object) -> str:
    """`1000×5` for frames and anything with a tuple shape, `(not computed)` for a lazy frame,
    the tables of a DuckDB connection, `len 3` for sized builtins, else "". A frame's own
    attributes are not asked (a Dask frame's shape is lazy)."""
    frame = frame_of(value)
    if frame is not None:
        return shape_text(frame)
    if duckdb_connection(value):
        return tables_label(value)
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return "×".join(str(n) for n in shape) if shape else "scalar"
    if isinstance(value, (*_CONTAINERS, str, bytes)):
        return f"len {len(value)}"
    return ""


def fingerprint(value: object, budget: int = BUDGET_BYTES, *, identity: bool = False) -> Fingerprint:
    """The fingerprint of `value`, hashing at most `budget` bytes; never raises (a failure is a
    fingerprint without digest). `identity`: items of object columns and arrays by identity
    (their addresses, 8 bytes an item), valid only to compare with a fingerprint taken in the
    same process while the value lives; without it by content, within `MAX_OBJECT_ITEMS`."""
    kind = type_name(value)
    try:
        shape = shape_of(value)
    except Exception:
        shape = ""
    hasher = _Hasher(budget, identity)
    try:
        digest, why = _digest(value, hasher)
    except _OverBudget as exc:
        digest, why = None, str(exc) or f"over the {budget >> 20} MB fingerprint budget"
    except Exception as exc:
        digest, why = None, f"its content could not be hashed ({type(exc).__name__})"
    return Fingerprint(kind, shape, digest, why, budget - hasher.left, tuple(hasher.held) if digest is not None else ())


def content_key(cache: FingerprintCache, name: str, value: object) -> int | None:
    """What variable `name` holds now, as a digest to compare within this process; None where
    it cannot be told. Taken through the turn's `cache`, so the variable watch of the next call
    and the egress door share one fingerprint of it."""
    found = cache.get(name, value)
    if found is None:
        found = fingerprint(value, identity=True)
        cache.prints[name] = (value, found)
    return found.digest


def _digest(value: object, hasher: _Hasher) -> tuple[int | None, str]:
    # `type()`, not `isinstance`: an object whose `__class__` raises is still fingerprinted.
    cls = type(value)
    if issubclass(cls, _SCALARS):
        return IMMUTABLE, ""
    if issubclass(cls, _CONTAINERS):
        return _container(value), ""
    frame = frame_of(value)
    if frame is not None:
        frame_digest(frame, hasher)
        return hasher.crc, ""
    if numpy_array(value):
        return hasher.array(value, sys.modules["numpy"]), ""
    if duckdb_connection(value):
        tables, size = contents(value, hasher.left)
        hasher.buffer(tables.encode(), size)
        return hasher.crc, ""
    state = state_digest(value)  # a random generator's state, an iterator's position
    if state is not None:
        return state, ""
    return None, "no fingerprint for this type"


class _Hasher:
    """A running xxh3 (64 bits) over at most `budget` bytes (`identity`: see `fingerprint`):
    near memory bandwidth (~7 GB/s here, CRC-32 ~0.9 GB/s, bench/bench_call_cost.py)."""

    def __init__(self, budget: int, identity: bool) -> None:
        self.hash = xxhash.xxh3_64()
        self.left = budget
        self.identity = identity
        self.held: list[object] = []  # Arrow buffers whose addresses the digest holds

    @property
    def crc(self) -> int:
        """The digest so far (non-negative, so never `IMMUTABLE`)."""
        return self.hash.intdigest() >> 1

    def text(self, text: str) -> None:
        self.hash.update(text.encode("utf-8", "surrogatepass"))

    def buffer(self, data: Any, nbytes: int) -> None:
        if nbytes > self.left:
            raise _OverBudget
        self.left -= nbytes
        self.hash.update(data)

    def arrow(self, chunked: Any) -> None:
        """An Arrow-backed column by its immutable buffers' addresses, the buffers held alive
        until the fingerprint is compared (`arrow_buffers.py`)."""
        kind, numbers = layout(chunked, self.held)
        self.text(kind)
        self.hash.update(numbers)

    def array(self, array: Any, numpy: Any, strings: bool = False) -> int:
        """`strings`: an object array that holds only strings (a pandas string array's)."""
        self.text(f"{array.dtype.str}{array.shape}")
        if array.nbytes > self.left:
            raise _OverBudget
        if array.dtype.kind in _NUMERIC_KINDS:
            # As bytes: datetime and timedelta arrays export no buffer of their own.
            data = numpy.ascontiguousarray(array).reshape(-1).view(numpy.uint8)
            self.buffer(data, data.nbytes)
        elif array.dtype.kind == "O" and self.identity:
            self._addresses(numpy.ascontiguousarray(array).ravel(), strings)
        else:
            self._objects(array.ravel(order="K"))
        return self.crc

    def _addresses(self, array: Any, strings: bool) -> None:
        """An object array's item addresses, and the content of the mutable items among up to
        `SAMPLE_ITEMS` of them spread over it (the immutable ones, strings and numbers, cannot
        change behind their address; `strings`: the array holds nothing else)."""
        # The pointer buffer itself: numpy exports no buffer for object arrays.
        pointers = (ctypes.c_char * array.nbytes).from_address(array.__array_interface__["data"][0])
        self.buffer(pointers, array.nbytes)
        if strings:
            return
        sample = array[:: max(1, len(array) // SAMPLE_ITEMS)]
        if not any(issubclass(kind, _CONTAINERS) for kind in set(map(type, sample))):
            return  # no container among them, the common case: no item to look into
        for item in sample:
            if issubclass(type(item), _CONTAINERS):
                self.text(str(_container(item)))

    def _objects(self, array: Any) -> None:
        """Object items by content, through pandas' per-item hashes (8 bytes an item)."""
        if len(array) > MAX_OBJECT_ITEMS:
            raise _OverBudget(f"over the {MAX_OBJECT_ITEMS:,} object items a fingerprint compares by content")
        pandas = sys.modules.get("pandas")
        if pandas is None:
            raise TypeError("an object array needs pandas to hash")
        hashes = pandas.util.hash_array(array)
        self.buffer(memoryview(hashes).cast("B"), len(array) * 8)


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
