"""Each column's dtype and missing values of an eager pandas, polars or Arrow frame, before and
after a call, so a receipt can say which columns gained missing values and whose dtype changed. A lazy
frame is never computed; a frame over `PROFILE_CELLS` cells is not profiled (its missing values
would cost more to count than the call is worth waiting for)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.frames.kinds import frame_of
from larik_jupyter.frames.nulls import missing_count, missing_counts

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
    if library in ("polars", "pyarrow"):  # both keep each column's null count
        names = list(value.schema.names) if library == "pyarrow" else list(value.columns)
        if len(set(names)) < len(names):
            return None
        return Profile({str(c): str(t) for c, t in zip(names, value.schema.types if library == "pyarrow"
                                                         else value.schema.dtypes(), strict=True)},
                       {str(c): missing_count(library, value, c) for c in names})
    if not value.columns.is_unique:
        return None
    labels = value.columns.tolist()
    counted = missing_counts(library, [(value, c) for c in labels])
    return Profile({str(c): str(t) for c, t in zip(labels, value.dtypes.tolist(), strict=True)},
                   {str(c): n for c, n in zip(labels, counted, strict=True)})


def column_changes(before: Profile, after: Profile) -> ColumnChanges:
    """The columns both profiles have that gained missing values or changed dtype."""
    gained = {c: after.missing[c] - n for c, n in before.missing.items() if after.missing.get(c, n) > n}
    dtypes = {c: f"{t} → {after.dtypes[c]}" for c, t in before.dtypes.items() if after.dtypes.get(c, t) != t}
    return ColumnChanges(gained, dtypes)
