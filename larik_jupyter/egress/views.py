"""What a restricted value or file may show of itself under its policy: its schema, its
statistics (no row), or N rows with masked columns. Duck-typed (pandas and numpy are never
imported here); whatever fails to summarise says only its type."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from larik_jupyter.egress.policy import Policy

MASK = "***"
_MAX_COLUMNS = 200


def _is_frame(value: object) -> bool:
    return hasattr(value, "columns") and hasattr(value, "dtypes") and hasattr(value, "iloc")


def _is_series(value: object) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "iloc") and not hasattr(value, "columns")


def _shape(value: object) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return " x ".join(str(n) for n in shape)
    try:
        return f"{len(value)} items"  # type: ignore[arg-type]
    except Exception:
        return ""


def _schema(name: str, value: object) -> list[str]:
    kind = type(value).__name__
    shape = _shape(value)
    lines = [f"{name}: {kind}" + (f", shape {shape}" if shape else "")]
    if _is_frame(value):
        dtypes = value.dtypes  # type: ignore[attr-defined]
        for column in list(value.columns)[:_MAX_COLUMNS]:  # type: ignore[attr-defined]
            lines.append(f"  {column}: {dtypes[column]}")
    elif hasattr(value, "dtype"):
        lines.append(f"  dtype: {value.dtype}")
    return lines


def _number(x: Any) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return "?"
    return "nan" if math.isnan(f) else f"{f:.4g}"


def _column_stats(column: Any) -> str:
    count = int(column.count())
    nulls = int(len(column) - count)
    parts = [f"count {count}", f"missing {nulls}"]
    try:
        parts.append(f"distinct {int(column.nunique())}")
    except Exception:
        pass
    kind = str(getattr(column, "dtype", ""))
    if kind.startswith(("int", "uint", "float", "Int", "UInt", "Float")):
        # Mean and spread carry no row; min, max and quantiles are rows' values.
        parts += [f"mean {_number(column.mean())}", f"std {_number(column.std())}"]
    elif kind in ("object", "string", "str"):
        try:
            parts.append(f"mean length {_number(column.dropna().astype(str).str.len().mean())}")
        except Exception:
            pass
    return ", ".join(parts)


def _stats(value: object) -> list[str]:
    if _is_frame(value):
        return [
            f"  {c}: {_column_stats(value[c])}"  # type: ignore[index]
            for c in list(value.columns)[:_MAX_COLUMNS]  # type: ignore[attr-defined]
        ]
    if _is_series(value):
        return [f"  {_column_stats(value)}"]
    if hasattr(value, "mean") and hasattr(value, "std"):
        return [f"  mean {_number(value.mean())}, std {_number(value.std())}"]
    return []


def _sample(value: object, policy: Policy) -> list[str]:
    rows = policy.rows
    if _is_frame(value):
        head = value.head(rows).copy()  # type: ignore[attr-defined]
        for column in policy.mask:
            if column in head.columns:
                head[column] = MASK
        return [f"  first {min(rows, len(head))} rows:", *("  " + line for line in head.to_string().splitlines())]
    if _is_series(value):
        return ["  first rows:", *("  " + line for line in value.head(rows).to_string().splitlines())]  # type: ignore[attr-defined]
    try:
        items = list(value)[:rows]  # type: ignore[call-overload]
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
