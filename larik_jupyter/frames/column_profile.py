"""Each column's dtype and missing values of an eager pandas, polars or Arrow frame, before and
after a call, so a receipt can say which columns gained missing values and whose dtype changed. A lazy
frame is never computed; a frame over `PROFILE_CELLS` cells is not profiled (its missing values
would cost more to count than the call is worth waiting for)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.frames.kinds import frame_of
from larik_jupyter.frames.nulls import missing_counts

PROFILE_CELLS = 200_000_000


@dataclass(frozen=True)
class Profile:
    """`dtypes` and `missing` per column (by the column's name as text)."""

    dtypes: dict[str, str]
    missing: dict[str, int]


@dataclass(frozen=True)
class ColumnChanges:
    """What a call did to a frame's columns: `gained_missing` (column → how many more missing
    values) and `dtypes` (column → `int64 → float64`)."""

    gained_missing: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)


def profile(value: Any) -> Profile | None:
    """The frame's columns, or None for anything but an eager pandas or polars DataFrame or an
    Arrow Table within
    `PROFILE_CELLS`, and for a frame that cannot say them (a subclass whose `shape`, `columns`
    or `isna` raises or answers oddly is read as hostile, never trusted)."""
    frame = frame_of(value)
    if frame is None or frame.lazy or frame.series or frame.library not in ("pandas", "polars", "pyarrow"):
        return None
    try:
        return _profile(value, frame.library)
    except Exception:
        return None


def _profile(value: Any, library: str) -> Profile | None:
    rows, columns = value.shape
    if rows * columns > PROFILE_CELLS:
        return None
    dtypes = dtypes_of(library, value)
    if len(dtypes) < columns:  # columns that share a label: which is which cannot be told
        return None
    counted = missing_counts(library, [(value, c) for c in dtypes])
    return Profile({str(c): str(t) for c, t in dtypes.items()},
                   {str(c): n for c, n in zip(dtypes, counted, strict=True)})


def dtypes_of(library: str, frame: Any) -> dict[Any, Any]:
    """Each column's dtype by its label, of an eager pandas, polars or Arrow frame (columns that
    share a label are left out: which is which cannot be told)."""
    if library == "polars":
        return dict(frame.schema)  # polars' names are unique
    labels, types = (frame.column_names, frame.schema.types) if library == "pyarrow" else (
        frame.columns.tolist(), frame.dtypes.tolist())
    dtypes = dict(zip(labels, types, strict=True))
    return dtypes if len(dtypes) == len(labels) else {c: t for c, t in dtypes.items() if labels.count(c) == 1}


def column_changes(before: Profile, after: Profile) -> ColumnChanges:
    """The columns both profiles have that gained missing values or changed dtype."""
    gained = {c: after.missing[c] - n for c, n in before.missing.items() if after.missing.get(c, n) > n}
    dtypes = {c: f"{t} → {after.dtypes[c]}" for c, t in before.dtypes.items() if after.dtypes.get(c, t) != t}
    return ColumnChanges(gained, dtypes)
