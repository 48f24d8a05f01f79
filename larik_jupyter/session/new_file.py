"""Writing a new file next to the user's work without ever replacing one: exports and notebooks."""

from __future__ import annotations

from pathlib import Path


def write_new(path: Path, text: str) -> None:
    """Create `path` (and its folders) holding `text`; FileExistsError when it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as f:  # "x": never replace an existing file
        f.write(text)


def write_numbered(folder: Path, stem: str, suffix: str, text: str) -> Path:
    """Write `text` to `folder/<stem><suffix>`, or `<stem>-2<suffix>`, `-3`, … when taken;
    returns the file written."""
    n = 1
    while True:
        target = folder / (f"{stem}{suffix}" if n == 1 else f"{stem}-{n}{suffix}")
        try:
            write_new(target, text)
            return target
        except FileExistsError:
            n += 1
