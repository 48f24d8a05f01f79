"""A change worked out before its call runs (what the approval showed), carried to the run so
the change approved is the change made: worked out again only when what it was worked out from
(a file's text, a notebook's cell) changed in between, and then the result says so when the
change came out different."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

Change = TypeVar("Change")


@dataclass(frozen=True)
class Planned(Generic[Change]):
    """`preview`: what an approval shows of the change; `basis`: what it was worked out from,
    compared (`==`) when the call runs; `change`: the tool's own change, ready to make."""

    preview: str
    basis: object
    change: Change


def still_planned(planned: Planned[Change] | None, basis: object) -> Planned[Change] | None:
    """`planned` when what it was worked out from is still `basis`; else None (plan again)."""
    return planned if planned is not None and planned.basis == basis else None


def replanned_note(planned: Planned[Change] | None, fresh: Planned[Change], what: str) -> str:
    """The sentence a result opens with when the change approved was worked out again because
    `what` (`the cell`, `a.py`) changed after the approval, and came out different; else ""."""
    if planned is None or planned.preview == fresh.preview:
        return ""
    return f"Worked out again since {what} changed after the approval: this change differs from the one approved.\n"
