"""Unified diffs of a file's change, as stored in tool results."""

from __future__ import annotations

import difflib

from larik_jupyter.tools.textfile import printable


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
