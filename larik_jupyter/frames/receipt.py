"""A receipt: what one join, filter, de-duplication, group or concat did to the rows, as counted
while the agent's own code ran (`receipt_watch.py`). Stored with the call's `tool_result`
(`receipts`) and said in words by `session/receipts.py`.

A count that is None was not counted: its frames were over the size where it could be counted
for at most 2% of the operation's own time (`not_counted` says so), or the operation does not
have it."""

from __future__ import annotations

from typing import Literal

import msgspec

Kind = Literal["join", "filter", "dropna", "drop_duplicates", "groupby", "concat", "collect"]
# Rows beyond which a count that needs hashing the larger side is left out of a receipt.
FULL_COUNT_ROWS = 100_000
# Example keys kept of each side's duplicated keys and of the keys that fanned out.
EXAMPLES = 3


class Keys(msgspec.Struct, frozen=True, omit_defaults=True):
    """Keys of one side that appear more than once (`count` distinct values over `rows` rows;
    `most` the largest number of rows one of them has), with up to three `examples`."""

    count: int
    rows: int = 0
    most: int = 0
    examples: list[str] = []


class Receipt(msgspec.Struct, frozen=True, omit_defaults=True):
    """One operation's receipt.

    `inputs`: each operand's variable name ("" where it had none); `rows_in` each one's rows;
    `rows_out` the result's; `variable` the name the result was bound to by the end of the call.
    Joins: `how`, `keys` (as the left side names them), `duplicated` (per side, None when not
    counted), `unmatched` (rows of each side that matched nothing, None when not counted),
    `fan_out` (rows beyond one per row of the side looked from, `base`: 0 the left, 1 the
    right) and `fan_out_keys` (the keys of the other side responsible).
    Groups: `groups`, `missing_keys` (rows whose key was missing) and `missing_dropped`
    (whether they were left out, as pandas does by default).
    Concat: `unaligned` (columns not in every input, filled with missing values).
    Collect (a lazy frame the code computed, `lazy_receipts.py`): `last_operation` (the kind of
    its plan's last operation), `rows_in` empty: only the rows out are counted.
    Any kind: `gained_missing` (columns of the result with more missing values than the inputs
    had: column → how many more), `dtypes` (columns of a join's or concat's result whose dtype is
    not the one they had in the inputs: column → `int64 → float64`), `not_counted` (why a count
    was left out)."""

    kind: Kind
    library: str
    inputs: list[str]
    rows_in: list[int]
    rows_out: int
    variable: str | None = None
    how: str | None = None
    keys: list[str] = []
    duplicated: list[Keys | None] = []
    unmatched: list[int | None] = []
    base: int = 0
    fan_out: int | None = None
    fan_out_keys: Keys | None = None
    groups: int | None = None
    missing_keys: int | None = None
    missing_dropped: bool = False
    unaligned: list[str] = []
    last_operation: Kind | None = None
    gained_missing: dict[str, int] = {}
    dtypes: dict[str, str] = {}
    not_counted: str | None = None

    @property
    def fans_out(self) -> bool:
        """Whether a join gave rows beyond one per row of the side it was looked from."""
        return bool(self.fan_out)

    @property
    def drops_every_row(self) -> bool:
        """Whether a filter (or de-duplication, dropna) kept none of its rows."""
        return self.kind in ("filter", "dropna") and self.rows_out == 0 and any(self.rows_in)


def to_builtins(receipts: list[Receipt]) -> list[dict[str, object]]:
    """The receipts as stored (JSON objects, empty fields left out)."""
    return [msgspec.to_builtins(r) for r in receipts]


def receipts_of(stored: list[dict[str, object]] | None) -> list[Receipt]:
    """The receipts a `tool_result` holds (a malformed one, from a damaged file, is skipped)."""
    out = []
    for item in stored or []:
        try:
            out.append(msgspec.convert(item, Receipt))
        except msgspec.ValidationError:
            continue
    return out
