"""A join's counts of pyarrow Tables, where `join_counts.py` branches by library: both sides'
keys numbered together and the keys one side repeats.

Arrow's joins never match a null key, and match NaN with NaN (Acero hashes every NaN as one
value): here too a NaN is a key like any other and only a null is missing."""

from __future__ import annotations

from typing import Any

import numpy as np

from larik_jupyter.frames.receipt import EXAMPLES, Keys

# An integer key column whose values span at most this many per row is counted over its span by
# `numpy.bincount` (5 ms for 1,000,000 keys), not hashed by a group (100 ms: a quarter of a
# 10,000,000 × 1,000,000 inner join, where a receipt may cost 2%).
SPAN_PER_ROW = 4


def column_codes(left: Any, right: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each row's key of two key columns (ChunkedArrays of one type: Arrow joins no others),
    left rows first, as dense codes from 0 (all nulls one code), and which rows are null."""
    import pyarrow as pa

    joint = pa.chunked_array([*left.chunks, *right.chunks], type=left.type).combine_chunks()
    codes = joint.dictionary_encode(null_encoding="encode").indices
    return codes.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), joint.is_null().to_numpy(
        zero_copy_only=False)


def duplicated(columns: list[Any]) -> Keys:
    """The keys one side's key columns repeat, rows with a null key left out (they match nothing,
    so they fan nothing out)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keyed = pa.table({f"k{i}": c for i, c in enumerate(columns)}).drop_null()
    if keyed.num_columns == 1 and pa.types.is_integer(keyed["k0"].type):
        found = _integer_repeats(keyed["k0"])
        if found is not None:
            return found
    counts = keyed.group_by(keyed.column_names).aggregate([([], "count_all")])
    repeated = counts.filter(pc.greater(counts["count_all"], 1)).sort_by([("count_all", "descending")])
    if not repeated.num_rows:
        return Keys(count=0)
    top = repeated.slice(0, EXAMPLES)
    rows = zip(*(top[name].to_pylist() for name in keyed.column_names), strict=True)
    shown = [str(row[0]) if len(row) == 1 else str(row) for row in rows]
    return Keys(count=repeated.num_rows, rows=pc.sum(repeated["count_all"]).as_py(),
                most=top["count_all"][0].as_py(), examples=shown)


def _integer_repeats(column: Any) -> Keys | None:
    """`duplicated` of one integer key column without nulls, counted over its values' span
    (None: a span over `SPAN_PER_ROW` values per row)."""
    import pyarrow.compute as pc

    if not len(column):
        return Keys(count=0)
    low, high = (s.as_py() for s in pc.min_max(column).values())
    if high - low > SPAN_PER_ROW * len(column):
        return None
    counts = np.bincount(column.to_numpy() - low)
    repeated = np.flatnonzero(counts > 1)
    if not len(repeated):
        return Keys(count=0)
    top = repeated[np.argsort(-counts[repeated], kind="stable")[:EXAMPLES]]
    return Keys(count=len(repeated), rows=int(counts[repeated].sum()), most=int(counts[top[0]]),
                examples=[str(int(value) + low) for value in top])
