"""A join's receipt counted from its operands and its result, never by running the join again
(no `indicator=True`) and never by computing a lazy frame.

Where the larger side has at most `FULL_COUNT_ROWS` rows every count is exact: the keys of both
sides are numbered together (`Codes`) and counted with `numpy.bincount`. Above it only what is
cheap is counted: a left (right) join's fan-out is its rows out less its rows in, its unmatched
rows are the missing values of a column of the other side that had none, and the side looked up
is checked for duplicated keys only when the rows say it fanned out (or, for an inner or full
join, always, since it is the smaller side); the rest is None, said in `not_counted`.

pandas matches missing keys with each other; polars leaves them unmatched unless `nulls_equal`,
and pyarrow always (its own counts: `arrow_counts.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from larik_jupyter.frames import arrow_counts
from larik_jupyter.frames.column_profile import dtypes_of
from larik_jupyter.frames.nulls import count_cost, missing_count, missing_counts
from larik_jupyter.frames.receipt import EXAMPLES, FULL_COUNT_ROWS, Keys, Receipt


@dataclass
class JoinSides:
    """What a join was given: the two frames, their key columns (as arrays of the same length
    as their frame), the key names to show, `how` (`left`, `right`, `inner`, `outer`, `cross`,
    `semi`, `anti`), whether missing keys match each other, and the names of the operands."""

    library: str
    frames: tuple[Any, Any]
    key_columns: tuple[list[Any], list[Any]]
    keys: list[str]
    how: str
    nulls_match: bool
    inputs: list[str]
    # Per side, each result column's missing values in the result and in that side (`missing`).
    found: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)
    # Each frame's dtypes by column (`dtypes_of`), read once: 0 and 1 the sides, 2 the result.
    schemas: dict[int, dict[Any, Any]] = field(default_factory=dict)

    def schema(self, which: int, result: Any) -> dict[Any, Any]:
        """The dtypes of side `which` (0, 1) or of the result (2) by column."""
        found = self.schemas.get(which)
        if found is None:
            found = self.schemas[which] = dtypes_of(self.library, result if which == 2 else self.frames[which])
        return found


@dataclass
class Codes:
    """Each row's key as one integer shared by both sides (-1: a missing key that matches
    nothing), and each code's first row among both sides' (left rows first), where its key is
    read when it is shown: only the few shown are read."""

    left: np.ndarray
    right: np.ndarray
    first: np.ndarray
    sides: JoinSides

    def shown(self, code: int) -> str:
        """The key of `code` as text, from its first row."""
        row = int(self.first[code])
        left_rows = len(self.left)
        side, at = (0, row) if row < left_rows else (1, row - left_rows)
        values = [_value(column, at) for column in self.sides.key_columns[side]]
        return values[0] if len(values) == 1 else "(" + ", ".join(values) + ")"


def base_side(how: str, rows: tuple[int, int]) -> int:
    """The side a join is looked from: the left of a left join, the right of a right join,
    else the larger side (a lookup into the smaller one)."""
    if how == "right":
        return 1
    if how in ("left", "semi", "anti"):
        return 0
    return 0 if rows[0] >= rows[1] else 1


def join_receipt(sides: JoinSides, result: Any, rows_out: int, rows: tuple[int, int]) -> Receipt:
    """The receipt of one join; `rows` the two sides' rows and `rows_out` the result's."""
    base = base_side(sides.how, rows)
    common = dict(
        kind="join", library=sides.library, inputs=sides.inputs, rows_in=list(rows), rows_out=rows_out,
        how=sides.how, keys=sides.keys, base=base, dtypes=changed_dtypes(sides, result),
    )
    if sides.how == "cross" or not sides.keys:
        return Receipt(**common)  # type: ignore[arg-type]
    if max(rows) <= FULL_COUNT_ROWS:
        codes = numbered(sides)
        counted = exact_counts(codes, base)
        if sides.how in ("semi", "anti"):  # one row per left row at most
            counted.update(fan_out=None, fan_out_keys=None)
        gained = gained_missing(sides, result, base)
        return Receipt(**common, **counted, gained_missing=gained)  # type: ignore[arg-type]
    return Receipt(**common, **cheap_counts(sides, result, rows_out, rows, base))  # type: ignore[arg-type]


def numbered(sides: JoinSides) -> Codes:
    """Both sides' keys numbered together, one key column after another."""
    left_rows = len(sides.key_columns[0][0])
    total = np.zeros(left_rows + len(sides.key_columns[1][0]), dtype=np.int64)
    missing = np.zeros(len(total), dtype=bool)
    for number, (left, right) in enumerate(zip(*sides.key_columns, strict=True)):
        codes, nulls = _column_codes(sides.library, left, right)  # dense: 0 … distinct keys - 1
        # A second key column's codes combined with the first's, numbered densely again.
        total = codes if number == 0 else _renumber(total * (int(codes.max(initial=0)) + 1) + codes)
        missing |= nulls
    if not sides.nulls_match:
        total[missing] = -1
    return Codes(total[:left_rows], total[left_rows:], _first_rows(total), sides)


def _column_codes(library: str, left: Any, right: Any) -> tuple[np.ndarray, np.ndarray]:
    if library == "pyarrow":
        return arrow_counts.column_codes(left, right)
    if library == "polars":
        import polars as pl

        joint = pl.concat([left.to_frame("k"), right.to_frame("k")], how="vertical_relaxed").to_series()
        nulls = joint.is_null().to_numpy()
        # Dense ranks from 1, a missing key 0: one code per distinct key, all missing keys one.
        return joint.rank("dense").fill_null(0).to_numpy().astype(np.int64, copy=False), nulls
    import pandas as pd

    joint = pd.concat([pd.Series(left, copy=False).reset_index(drop=True),
                       pd.Series(right, copy=False).reset_index(drop=True)], ignore_index=True)
    codes, _ = pd.factorize(joint, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), joint.isna().to_numpy()


def _renumber(values: np.ndarray) -> np.ndarray:
    _, inverse = np.unique(values, return_inverse=True)
    return inverse.astype(np.int64, copy=False)


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Each code's first row (-1 for none: a missing key that matches nothing has no code)."""
    first = np.full(int(codes.max(initial=-1)) + 1, -1, dtype=np.int64)
    rows = np.arange(len(codes))[::-1]
    kept = codes[::-1] >= 0
    first[codes[::-1][kept]] = rows[kept]
    return first


def _value(column: Any, row: int) -> str:
    value = column[row] if not hasattr(column, "iloc") else column.iloc[row]
    value = value.as_py() if hasattr(value, "as_py") else value  # a pyarrow scalar
    return repr(value) if isinstance(value, str) else str(value)


def exact_counts(codes: Codes, base: int) -> dict[str, Any]:
    """Duplicated keys and unmatched rows of each side, and the fan-out looked from `base`."""
    size = int(max(codes.left.max(initial=-1), codes.right.max(initial=-1))) + 1
    counts = [np.bincount(side[side >= 0], minlength=size) for side in (codes.left, codes.right)]
    unmatched = [
        int((codes.left < 0).sum() + counts[0][counts[1] == 0].sum()),
        int((codes.right < 0).sum() + counts[1][counts[0] == 0].sum()),
    ]
    mine, other = counts[base], counts[1 - base]
    fanning = (mine > 0) & (other > 1)
    return dict(
        duplicated=[keys_of(count > 1, count, codes.shown) for count in counts],
        unmatched=unmatched,
        fan_out=int((mine[fanning] * (other[fanning] - 1)).sum()),
        fan_out_keys=keys_of(fanning, other, codes.shown) if fanning.any() else None,
    )


def keys_of(chosen: np.ndarray, count: np.ndarray, shown: Callable[[int], str]) -> Keys:
    """The keys `chosen` (a mask over codes) with their rows on one side and examples."""
    picked = np.flatnonzero(chosen)
    most = int(count[picked].max(initial=0))
    examples = [shown(i) for i in picked[np.argsort(-count[picked], kind="stable")][:EXAMPLES].tolist()]
    return Keys(count=len(picked), rows=int(count[picked].sum()), most=most, examples=examples)


def gained_missing(sides: JoinSides, result: Any, base: int) -> dict[str, int]:
    """Columns of the result with more missing values than where they came from: those of the
    side that was not looked from (the left's too in a full join)."""
    if sides.how in ("inner", "semi", "anti", "cross") or result is None:
        return {}
    sources = [1 - base] if sides.how in ("left", "right") else [0, 1]
    return {c: now - was for side in sources for c, (now, was) in missing(sides, result, side).items() if now > was}


def missing(sides: JoinSides, result: Any, side: int) -> dict[str, tuple[int, int]]:
    """Each result column from `side`: its missing values in the result and in `side`, each
    counted once. Every column that had none in `side` has the same number in the result (the
    rows of the other side that matched nothing, missing in all of them), so only one of them is
    counted in the result: the cheapest (`count_cost`), counted beside the side's own columns
    (`missing_counts`), and another only where it turns out to have had some."""
    found = sides.found.get(side)
    if found is not None:
        return found
    library, columns = sides.library, _columns_from(sides, result, side)
    if not columns:
        sides.found[side] = {}
        return {}
    costs = {column: count_cost(library, result, column) for column in columns}
    cheapest = min(columns, key=costs.__getitem__)
    counted = missing_counts(library, [(result, cheapest)] + [(sides.frames[side], s) for s in columns.values()])
    now, had = counted[0], dict(zip(columns, counted[1:], strict=True))
    clean = [column for column, was in had.items() if not was]
    filled = now  # what every column that had none holds in the result
    if had[cheapest] and clean:  # the one counted had some of its own: count a clean one
        filled = missing_count(library, result, min(clean, key=costs.__getitem__))
    found = sides.found[side] = {}
    for column, was in had.items():
        if not was:
            found[column] = (filled, was)
        else:
            found[column] = (now if column == cheapest else missing_count(library, result, column), was)
    return found


def changed_dtypes(sides: JoinSides, result: Any) -> dict[str, str]:
    """Result columns whose dtype is not the one they had in the side they came from (`int64 →
    float64`: a lookup's integers where rows matched nothing), read from the frames' schemas."""
    if result is None:
        return {}
    now = sides.schema(2, result)
    found = {}
    for side in (0, 1):
        was = sides.schema(side, result)
        for column in _columns_from(sides, result, side):
            if was[column] != now[column]:
                found[str(column)] = f"{was[column]} → {now[column]}"
    return found


def _columns_from(sides: JoinSides, result: Any, side: int) -> dict[Any, Any]:
    """Result column → the column of `side` it came from (the keys and clashes left out)."""
    other, out = sides.schema(1 - side, result), sides.schema(2, result)
    return {c: c for c in sides.schema(side, result) if c not in sides.keys and c not in other and c in out}


def cheap_counts(sides: JoinSides, result: Any, rows_out: int, rows: tuple[int, int], base: int) -> dict[str, Any]:
    """What large frames are counted by: see the module's docstring."""
    lookup = 1 - base
    out: dict[str, Any] = {"not_counted": f"frames over {FULL_COUNT_ROWS:,} rows: only cheap counts"}
    duplicated: list[Keys | None] = [None, None]
    unmatched: list[int | None] = [None, None]
    one_sided = sides.how in ("left", "right")
    fan_out = rows_out - rows[base] if one_sided else None
    repeated = _duplicated(sides, lookup) if fan_out or not one_sided else None
    duplicated[lookup] = repeated
    if not one_sided and repeated is not None and not repeated.count:
        fan_out = 0
    out["gained_missing"] = gained_missing(sides, result, base) if one_sided else {}
    if fan_out is not None and one_sided:
        unmatched[base] = _filled_column(sides, result, lookup)
    elif fan_out == 0 and sides.how == "inner":
        unmatched[base] = rows[base] - rows_out
    elif fan_out == 0 and sides.how in ("outer", "full"):
        unmatched[lookup] = rows_out - rows[base]
    out.update(duplicated=duplicated, unmatched=unmatched, fan_out=fan_out)
    return out


def _filled_column(sides: JoinSides, result: Any, side: int) -> int | None:
    """The missing values of a result column from `side` that had none there: exactly the rows
    of the other side that matched nothing."""
    return next((now for now, was in missing(sides, result, side).values() if was == 0), None)


def _duplicated(sides: JoinSides, side: int) -> Keys | None:
    """The duplicated keys of one side, counted on that side alone."""
    columns = sides.key_columns[side]
    if sides.library == "pyarrow":
        return arrow_counts.duplicated(columns)
    if sides.library == "polars":
        import polars as pl

        frame = pl.DataFrame([c.rename(f"k{i}") for i, c in enumerate(columns)])
        if not frame.is_duplicated().any():
            return Keys(count=0)
        counts = frame.group_by(frame.columns).len().filter(pl.col("len") > 1).sort("len", descending=True)
        shown = [str(row[0]) if len(row) == 2 else str(row[:-1]) for row in counts.head(EXAMPLES).iter_rows()]
        lengths = counts.get_column("len").to_list()
        return Keys(count=counts.height, rows=sum(lengths), most=max(lengths, default=0),
                    examples=shown)
    import pandas as pd

    keyed = pd.DataFrame({i: pd.Series(c, copy=False).to_numpy() for i, c in enumerate(columns)})
    if not keyed.duplicated().any():  # the usual answer, for a quarter of value_counts' time
        return Keys(count=0)
    counts = keyed.value_counts(dropna=False) if len(columns) > 1 else keyed[0].value_counts(dropna=False)
    counts = counts[counts > 1]
    shown = [str(k) for k in counts.index[:EXAMPLES]]
    return Keys(count=len(counts), rows=int(counts.sum()), most=int(counts.max()) if len(counts) else 0,
                examples=shown)
