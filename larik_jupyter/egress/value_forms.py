"""Which values of a restricted source are distinctive, and the forms they are printed in.

A value is distinctive when text holding it most likely came from the source: a string of
five or more characters that holds a digit or an `@`, or comes from a column whose values
are mostly different (names, emails, ids); a number with four or more significant digits
(in the forms Python, pandas and people print it: `73456.78`, `73,456.78`, `73456.780000`,
`73456.8`; never rounded to a whole number); a date (`2024-03-15`). About `VALUES_PER_SOURCE`
values of each source are given (a frame's first rows, the budget shared among its columns,
at least `MIN_ROWS` of each), for the index `values.py` searches.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator

from larik_jupyter.egress.values import tokens
from larik_jupyter.frames import duckdb_connection, frame_of
from larik_jupyter.frames.duckdb_tables import table_heads
from larik_jupyter.frames.reading import column_heads
from larik_jupyter.frames.schema import columns

VALUES_PER_SOURCE = 20_000
MIN_ROWS = 200  # rows of each column indexed however wide the frame
MIN_LINE = 12  # characters of a `never` file's line indexed whole
_MIN_STRING = 5

def _significant(digits: str) -> int:
    return len(digits.lstrip("0").rstrip("0")) if "." not in digits else len(digits.replace(".", "").lstrip("0"))


def number_forms(value: float | int) -> list[str]:
    """The printed forms of a number with four or more significant digits ([] otherwise)."""
    if isinstance(value, bool) or not math.isfinite(value):
        return []
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        whole = int(value)
        text = str(abs(whole))
        if _significant(text) < 4:
            return []
        sign = "-" if whole < 0 else ""
        whole_forms = [f"{sign}{text}", f"{whole:,}"]
        if isinstance(value, float):
            whole_forms += [f"{value:.1f}", f"{value:.2f}", f"{value:.6f}"]
        return whole_forms
    text = repr(float(abs(value)))
    if "e" in text:
        mantissa = text.split("e")[0]
        if _significant(mantissa) < 4:
            return []
        return [repr(float(value)), f"{value:e}", f"{value:.6e}"]
    significant = _significant(text)
    if significant < 4:
        return []
    whole = len(text.split(".")[0].lstrip("0"))
    forms = {repr(float(value)), f"{value:,}", f"{value:.6f}", f"{value:,.2f}", f"{value:.2f}", f"{value:e}"}
    # Rounded as printed (pandas' and people's decimals), never to a whole number: `73457`
    # for 73456.78 would also be any of a thousand counts and ids.
    # Grouped with commas only in the two forms people write (`73,456.78`, as repr and 2 dp).
    for keep in range(max(4, whole + 1), min(significant, 12) + 1):
        decimals = keep - whole if whole else keep + len(text.split(".")[1]) - len(text.split(".")[1].lstrip("0"))
        forms.add(f"{value:.{max(decimals, 0)}f}")
    return sorted(f for f in forms if _significant(f.lstrip("-").replace(",", "").partition("e")[0]) >= 4)


def _string_is_distinctive(text: str, varied: bool) -> bool:
    return len(text) >= _MIN_STRING and (varied or "@" in text or any(c.isdigit() for c in text))


def _scalar_forms(value: object, varied: bool) -> list[str]:
    if isinstance(value, str):
        text = value.strip()
        return [text] if _string_is_distinctive(text, varied) else []
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return number_forms(value)
    kind = type(value).__name__
    if kind in ("Timestamp", "datetime", "date", "datetime64"):
        text = str(value)
        return [text[:10], text] if len(text) > 10 else [text]
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        try:
            return _scalar_forms(value.item(), varied)
        except Exception:
            return []
    return []


def value_forms(name: str, value: object) -> Iterator[tuple[str, str]]:
    """(text, label) for each distinctive value of variable `name`: an eager frame's of any
    library by column (`df.email`; the first rows only, through the frame layer), a DuckDB
    connection's by table and column (`con.orders.email`, the first `MIN_ROWS` rows), a series',
    an array's or a container's, a scalar's own. A lazy frame gives none: its rows are never
    computed here (what is made from it is restricted by lineage and tags)."""
    frame = frame_of(value)
    if frame is not None:
        if frame.lazy:
            return
        table = not frame.series
        # The source's budget shared by its columns: a wide frame indexes fewer rows.
        limit = max(MIN_ROWS, VALUES_PER_SOURCE // max(len(columns(frame)), 1)) if table else VALUES_PER_SOURCE
        for column, items, varied in column_heads(frame, limit):
            label = f"{name}.{column}" if table else name
            for item in items:
                for form in _scalar_forms(item, varied):
                    yield form, label
        return
    if duckdb_connection(value):  # its tables are data held in the kernel
        for column, items, varied in table_heads(value, MIN_ROWS):
            for item in items:
                for form in _scalar_forms(item, varied):
                    yield form, f"{name}.{column}"
        return
    if hasattr(value, "ravel") and hasattr(value, "dtype"):  # numpy arrays, and torch, jax…
        items = list(value.ravel()[:VALUES_PER_SOURCE])
        varied = True
    elif isinstance(value, dict):
        items = [*list(value.keys())[:VALUES_PER_SOURCE], *list(value.values())[:VALUES_PER_SOURCE]]
        varied = True
    elif isinstance(value, list | tuple | set | frozenset):
        items, varied = list(value)[:VALUES_PER_SOURCE], True
    else:
        items, varied = [value], True
    for item in items:
        if isinstance(item, list | tuple | dict) and item is not value:
            yield from value_forms(name, item)
            continue
        for form in _scalar_forms(item, varied):
            yield form, name


def _cell_forms(cell: str, varied: bool) -> list[str]:
    text = cell.strip()
    try:
        number: float = float(text.replace(",", "")) if text else math.nan
    except ValueError:
        return [text] if _string_is_distinctive(text, varied) else []
    if re.fullmatch(r"-?\d+", text):
        return number_forms(int(text))
    return [text, *number_forms(number)] if math.isfinite(number) else []


def file_forms(rel: str, text: str, lines: bool = False) -> Iterator[tuple[str, str]]:
    """(text, label) for each distinctive value of the file at `rel`: delimited files by
    column (`data/x.csv:email`), any other file by token; with `lines` (a `never` file, of
    which nothing may go) also each line of `MIN_LINE` or more characters, so its free text
    (names in notes, log lines) is found where it is printed as it stands."""
    if lines:
        for line in list(dict.fromkeys(text.splitlines()))[:VALUES_PER_SOURCE]:
            line = line.strip()
            if len(line) >= MIN_LINE and len(tokens(line)) >= 2:
                yield line, rel
    if rel.lower().endswith((".csv", ".tsv", ".tab")):
        delimiter = "\t" if rel.lower().endswith((".tsv", ".tab")) else ","
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))[: VALUES_PER_SOURCE + 1]
        if rows:
            header, body = rows[0], rows[1:]
            for index, column in enumerate(header):
                cells = [r[index] for r in body if index < len(r) and r[index].strip()]
                varied = len(set(cells)) * 2 >= max(len(cells), 1)
                for cell in dict.fromkeys(cells):
                    for form in _cell_forms(cell, varied):
                        yield form, f"{rel}:{column}"
            return
    for token in list(dict.fromkeys(tokens(text)))[:VALUES_PER_SOURCE]:
        for form in _cell_forms(token.decode("utf-8", "replace").strip(".-+"), False):
            yield form, rel
