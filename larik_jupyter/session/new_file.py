"""Writing a new file next to the user's work without ever replacing one: exports and notebooks."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.errors import LarikError


class NewFileError(LarikError):
    """A new file could not be written where it was asked for (not because it exists)."""


def write_new(path: Path, text: str) -> None:
    """Create `path` (and its folders) holding `text`; FileExistsError when it exists, a
    `NewFileError` saying why when it cannot be written there."""
    for folder in (path.parent, *path.parent.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise NewFileError(f"{folder} is a file, not a folder, so {path.name} cannot be written in it; choose another path.")
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as f:  # "x": never replace an existing file
            f.write(text)
    except FileExistsError:
        raise
    except OSError as exc:
        raise NewFileError(
            f"{path} could not be written ({exc.strerror or exc}); choose a path in a folder you can write to."
        ) from None


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
