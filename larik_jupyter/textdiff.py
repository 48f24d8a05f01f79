"""Unified diffs of a file's change: in tool results, the undo panel and the sidebar. Imports
no other layer, so `checkpoint` and `tools` both diff through it."""

from __future__ import annotations

import difflib


def printable(text: str) -> str:
    """Text from `read_text` with undecodable bytes shown as U+FFFD, safe to serialise."""
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def unified_diff(rel: str, old: str | None, new: str | None) -> str:
    """A unified diff from `old` to `new` (None: the file did not exist / was deleted)."""
    before = "/dev/null" if old is None else f"a/{rel}"
    after = "/dev/null" if new is None else f"b/{rel}"
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=before,
        tofile=after,
    )
    # A last line without a newline would glue onto the next diff line; git marks it instead.
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return printable(text)


def _text(data: bytes | None) -> str | None:
    """`data` as text (None stays None); raises ValueError for binary content."""
    if data is None:
        return None
    if b"\0" in data:
        raise ValueError("binary")
    return data.decode("utf-8")


def snapshot_diff(rel: str, before: bytes | None, after: bytes | None, *, limit: int) -> str:
    """The diff between two versions of a file read as bytes (None: absent), for showing a
    checkpoint: a binary or non-UTF-8 file is one line, and a diff over `limit` characters is
    cut with a marker."""
    try:
        diff = unified_diff(rel, _text(before), _text(after))
    except ValueError:
        return "" if before == after else f"Binary file {rel} changed.\n"
    if len(diff) > limit:
        return diff[:limit] + "\n… (diff cut; open the file to see the rest)\n"
    return diff
