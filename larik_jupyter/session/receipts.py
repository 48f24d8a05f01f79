"""A receipt in words, one line each, the same under the call in every view and in the tool
result the model reads: `orders ⋈ customers on customer_id: 10,000 → 10,312 rows (+312: 41
customer_id values twice in customers); 88 orders matched no customer`. What a receipt holds is
`frames/receipt.py`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec

from larik_jupyter.frames.receipt import Keys, Receipt, receipts_of
from larik_jupyter.llm.messages import Message
from larik_jupyter.plural import counted

__all__ = [
    "RECEIPTS_HEAD", "Receipt", "cell_receipts", "without_receipts", "receipt_changes", "receipt_text", "receipts_lines", "receipts_of", "session_receipts", "warning_of",
]


# The line that opens a call result's receipts (each then on a line of its own, indented).
RECEIPTS_HEAD = "[receipts: what each operation did to the rows]"


def without_receipts(text: str) -> str:
    """A call result's text without its receipts (what the code itself printed, for replay)."""
    kept, inside = [], False
    for line in text.split("\n"):
        inside = line == RECEIPTS_HEAD or inside and line.startswith("  ")
        if not inside:
            kept.append(line)
    return "\n".join(kept)


def _name(name: str) -> str:
    return name or "a frame"


def _rows_of(count: int, name: str) -> str:
    """`88 orders` (a plural name counts its own rows), `1 row of df`, `3 rows of df`."""
    if name.endswith("s") and len(name) > 1:
        return counted(count, name[:-1], name)
    return counted(count, f"row of {_name(name)}", f"rows of {_name(name)}")


def _one_of(name: str) -> str:
    """`customer` (one row of `customers`), `row of df`."""
    return name[:-1] if name.endswith("s") and len(name) > 1 else f"row of {_name(name)}"


def _keys_words(keys: Keys, key: str, where: str) -> str:
    times = "twice" if keys.most == 2 else f"up to {keys.most:,} times"
    examples = f", e.g. {', '.join(keys.examples)}" if keys.examples else ""
    return f"{counted(keys.count, f'{key} value')} {times} in {where}{examples}"


def receipt_text(receipt: Receipt, *, bound: bool = True) -> str:
    """The receipt's line (see the module's docstring); `joined = ` before it when its result
    was bound to a variable (unless `bound` is False: a table naming the variable apart)."""
    bound_to = f"{receipt.variable} = " if receipt.variable and bound else ""
    return bound_to + {
        "join": _join, "groupby": _group, "concat": _concat, "collect": _collect,
    }.get(receipt.kind, _rows)(receipt)


def _join(r: Receipt) -> str:
    left, right = r.inputs if len(r.inputs) == 2 else ("", "")
    key = ", ".join(r.keys) or "no key"
    how = "" if r.how in ("left", None) else f" ({r.how} join)"
    base, other = r.base, 1 - r.base
    names = (left, right)
    head = f"{_name(left)} ⋈ {_name(right)} on {key}{how}: {r.rows_in[base]:,} → {counted(r.rows_out, 'row')}"
    responsible = r.fan_out_keys or (r.duplicated[other] if len(r.duplicated) == 2 else None)
    if r.fan_out and responsible is not None:
        head += f" (+{r.fan_out:,}: {_keys_words(responsible, key, _name(names[other]))})"
    elif r.fan_out:
        head += f" (+{r.fan_out:,} from keys repeated in {_name(names[other])})"
    parts = [head]
    for side in (base, other):
        missed = r.unmatched[side] if len(r.unmatched) == 2 else None
        if missed:
            parts.append(f"{_rows_of(missed, names[side])} matched no {_one_of(names[1 - side])}")
    parts += [f"{column} gained {counted(n, 'missing value')}" for column, n in r.gained_missing.items()]
    parts += _dtype_words(r)
    if r.not_counted:
        parts.append(f"some counts left out ({r.not_counted})")
    return "; ".join(parts)


def _rows(r: Receipt) -> str:
    name = r.inputs[0]
    what = f"{_name(name)} filtered" if r.kind == "filter" else f"{name}.{r.kind}()" if name else f"{r.kind}() of a frame"
    dropped = r.rows_in[0] - r.rows_out
    how = "every row dropped" if r.drops_every_row else f"{dropped:,} dropped"
    return f"{what}: {r.rows_in[0]:,} → {counted(r.rows_out, 'row')} ({how})"


def _group(r: Receipt) -> str:
    key = ", ".join(r.keys) or "a key"
    text = f"{_name(r.inputs[0])} grouped by {key}: {counted(r.rows_in[0], 'row')} → {counted(r.groups or 0, 'group')}"
    if r.missing_keys:
        fate = "left out" if r.missing_dropped else "kept as a group of their own"
        text += f"; {counted(r.missing_keys, 'row')} with a missing {key} {fate}"
    return text


def _concat(r: Receipt) -> str:
    names = ", ".join(_name(n) for n in r.inputs)
    text = f"concat of {names}: {' + '.join(f'{n:,}' for n in r.rows_in)} → {counted(r.rows_out, 'row')}"
    if r.unaligned:
        text += f"; not in every input, so missing in the rest: {', '.join(r.unaligned)}"
    return "; ".join([text, *_dtype_words(r)])


def _dtype_words(r: Receipt) -> list[str]:
    """`y int64 → float64`, as the variable report says a changed column."""
    return [f"{column} {change}" for column, change in r.dtypes.items()]


# A lazy plan's last operation, as its receipt says it.
_STEPS = {"join": "a join", "filter": "a filter", "groupby": "a group aggregation", "concat": "a concat",
          "drop_duplicates": "a de-duplication", "dropna": "a dropna"}


def _collect(r: Receipt) -> str:
    step = _STEPS.get(r.last_operation or "", "")
    text = f"{_name(r.inputs[0])} computed (lazy, its last step {step}): {counted(r.rows_out, 'row')}"
    return text + (f"; not counted: {r.not_counted}" if r.not_counted else "")


def receipts_lines(stored: list[dict[str, Any]] | None) -> list[str]:
    """The lines of the receipts a `tool_result` holds."""
    return [receipt_text(r) for r in receipts_of(stored)]


def warning_of(receipt: Receipt) -> str | None:
    """What protect mode warns of: a join that fanned out, a filter that dropped every row."""
    if receipt.fans_out:
        return f"this join fanned out: {receipt_text(receipt)}"
    if receipt.drops_every_row:
        return f"this filter dropped every row: {receipt_text(receipt)}"
    return None


def session_receipts(messages: Iterable[Message]) -> Iterator[tuple[int, Receipt]]:
    """Every receipt of the session's calls with its prompt number (1-based), oldest first."""
    number = 0
    for message in messages:
        if message.is_prompt():
            number += 1
            continue
        for block in message.tool_results():
            for receipt in receipts_of(block.receipts):
                yield number, receipt


def _counts(r: Receipt) -> list[tuple[str, int | None, str]]:
    """A receipt's counts a replay compares: (what, count, how it is said)."""
    names = [_name(n) for n in r.inputs]
    found: list[tuple[str, int | None, str]] = [("rows out", r.rows_out, f"{r.rows_out:,}")]
    if r.kind == "join":
        found.append(("fan-out", r.fan_out, f"+{r.fan_out or 0:,}"))
        for side, missed in enumerate(r.unmatched):
            found.append((f"unmatched rows of {names[side]}", missed, f"{missed or 0:,}"))
    if r.kind == "groupby":
        found += [("groups", r.groups, f"{r.groups or 0:,}"),
                  ("rows with a missing key", r.missing_keys, f"{r.missing_keys or 0:,}")]
    return found


def receipt_changes(recorded: list[Receipt], now: list[Receipt]) -> list[str]:
    """How a replayed call's receipts differ from the recorded ones, one line each
    (`orders ⋈ customers on customer_id: fan-out was +312, now +1,906`); empty when the same.
    A count not counted on either side is not compared."""
    if [r.kind for r in recorded] != [r.kind for r in now]:
        return [f"receipts were {', '.join(r.kind for r in recorded) or 'none'}, now {', '.join(r.kind for r in now) or 'none'}"]
    lines = []
    for was, then in zip(recorded, now, strict=True):
        head = receipt_text(msgspec.structs.replace(was, variable=None)).split(":", 1)[0]
        changed = [
            f"{what} was {said}, now {said_now}"
            for (what, count, said), (_, count_now, said_now) in zip(_counts(was), _counts(then), strict=True)
            if count is not None and count_now is not None and count != count_now
        ]
        if changed:
            lines.append(f"{head}: {'; '.join(changed)}")
    return lines


def cell_receipts(
    messages: Iterable[Message], cell_run: Callable[[str, Mapping[str, Any]], str | None], undone: Iterable[int] = (),
) -> dict[str, list[Receipt]]:
    """The receipts of each notebook cell the session's calls ran (`cell_run`: the cell a call
    runs, as its tool says), by the cell's id (its last run; prompts an undo put back left out):
    what `/check` compares."""
    skipped, number = set(undone), 0
    ran: dict[str, str] = {}
    out: dict[str, list[Receipt]] = {}
    for message in messages:
        if message.is_prompt():
            number += 1
            continue
        if number in skipped:
            continue
        ran |= {call.id: cell for call in message.tool_uses() if (cell := cell_run(call.name, call.input)) is not None}
        for block in message.tool_results():
            if block.tool_use_id in ran and not block.is_error:
                out[ran[block.tool_use_id]] = receipts_of(block.receipts)
    return out
