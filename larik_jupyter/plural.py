"""A count and its noun, singular or plural as the count needs (`1 file`, `3 files`), so no
message says `file(s)`."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 cell`, `2 cells`, `1,200 rows`; `plural` where adding an s is wrong (`1 entry`, `2 entries`)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
