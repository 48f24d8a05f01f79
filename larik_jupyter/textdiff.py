"""Unified diffs of a file's change: in tool results, the undo panel and the sidebar, and the
one HTML rendering of a diff every front end shows (the cell view, the approval card, the undo
panel, the JupyterLab sidebar through the server). Imports no other layer, so `checkpoint` and
`tools` both diff through it."""

from __future__ import annotations

import difflib
import html
import re

_DIFF_START = re.compile(r"^(--- |\+\+\+ |@@ )", re.M)
_HUNK = re.compile(r"^@@ ", re.M)


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


def looks_like_diff(text: str) -> bool:
    """Whether `text` (a tool's result) reads as a unified diff."""
    return bool(_DIFF_START.search(text) and _HUNK.search(text))


_DIFF_STYLES = {
    "larik-diff-add": "color: var(--jp-success-color1, #2e7d32)",
    "larik-diff-del": "color: var(--jp-error-color1, #c62828)",
    "larik-diff-hunk": "color: var(--jp-info-color1, #0277bd)",
    "larik-diff-file": "font-weight: bold",
}
_DIFF_PRE = (
    "font-family: var(--jp-code-font-family, monospace); font-size: 0.9em; white-space: pre; "
    "overflow: auto; max-height: 20em; margin: 2px 0"
)


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "larik-diff-file"
    if line.startswith("+"):
        return "larik-diff-add"
    if line.startswith("-"):
        return "larik-diff-del"
    return "larik-diff-hunk" if line.startswith("@@") else ""


def diff_html(diff: str) -> str:
    """A unified diff as coloured, monospace HTML (one line per span)."""
    spans = []
    for line in diff.rstrip("\n").split("\n"):
        if line == "\\ No newline at end of file":
            continue  # difflib's note for a source without a final newline: noise to a reader
        cls = _diff_class(line)
        style = f' style="{_DIFF_STYLES[cls]}"' if cls else ""
        spans.append(f'<span class="{cls}"{style}>{html.escape(line)}</span>' if cls else html.escape(line))
    return f'<pre class="larik-diff" style="{_DIFF_PRE}">' + "\n".join(spans) + "</pre>"


def detail_html(detail: str) -> str:
    """What an approval card shows under its question: a diff as `diff_html`, other text as it
    is (scrolled past 20 lines), in the in-cell card and the page's card alike."""
    if detail.startswith("--- "):
        return diff_html(detail)
    return f"<pre style='max-height:20em;overflow:auto'>{html.escape(detail)}</pre>"
