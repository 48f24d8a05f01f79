"""What a restricted value or file may show of itself under its policy: its schema, its
statistics (no row), or N rows with masked columns. Frames of every library through the frame
layer (`larik_jupyter/frames/`); a lazy frame gives its schema only, from metadata, and says
why (its rows would have to be computed); other values are duck-typed. Whatever fails to
summarise says only its type."""

from __future__ import annotations

import csv
import io
import itertools
import math

from larik_jupyter.egress.policy import Policy
from larik_jupyter.frames import duckdb_connection, frame_of
from larik_jupyter.frames.duckdb_tables import tables_label
from larik_jupyter.frames.reading import MASK, sample_lines, stats_lines
from larik_jupyter.frames.schema import NOT_COMPUTED, columns, shape

_MAX_COLUMNS = 200
LAZY_NOTE = "  (a lazy frame: its {what} would have to be computed, which larik never does; the schema is all it gives)"


def _shape(value: object) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return " x ".join(str(n) for n in shape)
    try:
        return f"{len(value)} items"  # type: ignore[arg-type]
    except Exception:
        return ""


def _schema(name: str, value: object) -> list[str]:
    frame = frame_of(value)
    if duckdb_connection(value):  # its tables' names and sizes, no row
        return [f"{name}: {type(value).__name__}, {tables_label(value)}"]
    if frame is None:
        size = _shape(value)
        lines = [f"{name}: {type(value).__name__}" + (f", shape {size}" if size else "")]
        dtype = getattr(value, "dtype", None)
        if dtype is not None and not callable(dtype):
            lines.append(f"  dtype: {dtype}")
        return lines
    found = shape(frame)
    size = NOT_COMPUTED.strip("()") if found is None else " x ".join(map(str, found))
    kind = f"LazyFrame ({frame.library})" if frame.lazy else type(value).__name__
    lines = [f"{name}: {kind}, shape {size}"]
    if frame.series:
        lines += [f"  dtype: {dtype}" for _, dtype in columns(frame)]
    else:
        lines += [f"  {column}: {dtype}" for column, dtype in columns(frame)[:_MAX_COLUMNS]]
    return lines


def _number(x: object) -> str:
    try:
        f = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "?"
    return "nan" if math.isnan(f) else f"{f:.4g}"


def _stats(value: object) -> list[str]:
    frame = frame_of(value)
    if frame is not None:
        return [LAZY_NOTE.format(what="statistics")] if frame.lazy else stats_lines(frame)
    if hasattr(value, "mean") and hasattr(value, "std"):
        return [f"  mean {_number(value.mean())}, std {_number(value.std())}"]
    return []


def _sample(value: object, policy: Policy) -> list[str]:
    frame = frame_of(value)
    if frame is not None:
        return [LAZY_NOTE.format(what="rows")] if frame.lazy else sample_lines(frame, policy.rows, policy.mask)
    try:
        items = list(itertools.islice(value, policy.rows))  # type: ignore[call-overload]
    except Exception:
        return []
    return [f"  first {len(items)} items: {items!r}"[:4000]]


def value_view(name: str, value: object, policy: Policy) -> str:
    """What `policy` lets out of variable `name` holding `value` ('' for never and full)."""
    if policy.kind in ("never", "full"):
        return ""
    try:
        lines = _schema(name, value)
        if policy.kind == "stats":
            lines += _stats(value)
        elif policy.kind == "sample":
            lines += _sample(value, policy)
    except Exception:
        return f"{name}: {type(value).__name__}"
    return "\n".join(lines)


def file_view(rel: str, text: str, policy: Policy) -> str:
    """What `policy` lets out of the file at `rel` with content `text`: for delimited text its
    header, row count and (sample) N rows with masked columns; else its size and lines."""
    if policy.kind in ("never", "full"):
        return ""
    lines = text.splitlines()
    delimiter = "\t" if rel.lower().endswith((".tsv", ".tab")) else ","
    if not rel.lower().endswith((".csv", ".tsv", ".tab")) or not lines:
        return f"{rel}: {len(text.encode())} bytes, {len(lines)} lines"
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = next(reader, [])
    out = [f"{rel}: {len(lines) - 1} rows, columns: {', '.join(header[:_MAX_COLUMNS])}"]
    if policy.kind == "sample":
        masked = {i for i, c in enumerate(header) if c in policy.mask}
        for _, row in zip(range(policy.rows), reader, strict=False):
            out.append(delimiter.join(MASK if i in masked else cell for i, cell in enumerate(row)))
    return "\n".join(out)
