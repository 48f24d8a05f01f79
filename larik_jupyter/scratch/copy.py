"""A scratch copy of a project for code run to check or replay: the same folders; each file a
copy-on-write clone where the file system can make one, else a real copy up to 64 MB a file
and 512 MB in all, else a link to its original (so a 2 GB data file costs one link, not a
copy); each symlink of the project recreated (pointing into the copy where it pointed into the
project); and beside the copy a link to each thing beside the project (so `../data` reads as
it does there). The guard (`scratch.guard`) copies a linked file before Python code writes to
it, and refuses changes that resolve outside the copy. A library that opens files in C
(pyarrow's writers, h5py) is not seen by the guard: in a real copy it writes the copy; through
a link to a large original it is refused by the operating system where the kernel is confined
(`scratch.confine`: the original is outside the folders it may change), and would write the
original where it is not."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from larik_jupyter.errors import LarikError

# Files are copied (where they cannot be cloned) up to these sizes, each and in all; larger
# ones are links to the original, which the guard copies before Python code writes to them.
COPY_FILE_MAX = 64 * 1024 * 1024
COPY_TOTAL_MAX = 512 * 1024 * 1024
_FICLONE = 0x40049409  # linux/fs.h: share the source's blocks, copy on write
# Left out of the copy: version control, environments and caches no analysis reads.
NOT_COPIED = frozenset({".git", ".venv", "node_modules", "__pycache__", ".ipynb_checkpoints"})
_PREFIX = "larik-scratch-"
TMP_NAME = ".larik-tmp"


class ScratchCopyError(LarikError):
    """The scratch copy could not be made."""


@dataclass(frozen=True)
class ScratchFolder:
    """A temporary folder `base` of one run; `tmp` inside it is the run's TMPDIR, caches and
    the guard's log."""

    base: Path

    @property
    def tmp(self) -> Path:
        return self.base / TMP_NAME

    def remove(self) -> None:
        """Delete the folder: only one this module made under the temp dir, links unfollowed."""
        base = Path(os.path.realpath(self.base))
        if base.parent != Path(os.path.realpath(tempfile.gettempdir())) or not base.name.startswith(_PREFIX):
            raise ScratchCopyError(f"{self.base} is not a scratch folder; it was left in place.")
        shutil.rmtree(base, ignore_errors=True)


def scratch_folder() -> ScratchFolder:
    """A new, empty scratch folder (with its `tmp`)."""
    folder = ScratchFolder(Path(tempfile.mkdtemp(prefix=_PREFIX)))
    folder.tmp.mkdir()
    return folder


@dataclass(frozen=True)
class ScratchCopy:
    """`copy` mirrors `original` inside the scratch `folder`."""

    folder: ScratchFolder
    original: Path
    copy: Path

    def place(self, path: Path) -> Path:
        """Where `path` (inside the original) is in the copy."""
        return self.copy / Path(os.path.abspath(path)).relative_to(self.original)


def _clone(source: str, target: Path) -> bool:
    """Copy `source` as a copy-on-write clone (btrfs, XFS: instant, shares blocks); False
    where the file system cannot."""
    try:
        with open(source, "rb") as src, open(target, "xb") as dst:
            try:
                fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
                return True
            except OSError:
                pass
    except OSError:
        pass
    with contextlib.suppress(OSError):
        target.unlink()
    return False


class _Budget:
    """What a scratch copy may still do: clone files (until one clone fails: the file system
    cannot, so the rest are not tried one by one) and make `left` bytes of real copies."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.clones = True

    def take(self, size: int) -> bool:
        if size > COPY_FILE_MAX or size > self.left:
            return False
        self.left -= size
        return True


def _mirror(source: Path, target: Path, original: Path, copy: Path, budget: _Budget) -> None:
    target.mkdir()
    with os.scandir(source) as entries:
        for item in entries:
            if item.name in NOT_COPIED:
                continue
            there = target / item.name
            if item.is_symlink():
                link = os.readlink(item.path)
                resolved = os.path.normpath(os.path.join(source, link))
                if os.path.isabs(link) and (resolved == str(original) or resolved.startswith(f"{original}{os.sep}")):
                    link = str(copy / os.path.relpath(resolved, original))
                os.symlink(link, there)
            elif item.is_dir(follow_symlinks=False):
                _mirror(Path(item.path), there, original, copy, budget)
            elif item.is_file(follow_symlinks=False):
                if budget.clones:
                    if _clone(item.path, there):
                        continue
                    budget.clones = False
                if budget.take(item.stat(follow_symlinks=False).st_size):
                    try:
                        shutil.copy2(item.path, there, follow_symlinks=False)
                        continue
                    except OSError:  # unreadable here: the link says so when code reads it
                        with contextlib.suppress(OSError):
                            there.unlink()
                os.symlink(item.path, there)
            # FIFOs, sockets and devices are not part of an analysis: left out.


def _siblings(original: Path, base: Path) -> None:
    """Links beside the copy to what lies beside the original, so `../data/raw.csv` reads the
    same; the guard refuses writes through them (they resolve outside the copy)."""
    if original.parent == original:
        return
    with os.scandir(original.parent) as entries:
        for item in entries:
            if item.name not in (original.name, TMP_NAME):
                os.symlink(item.path, base / item.name)


def make_copy(root: Path) -> ScratchCopy:
    """A scratch copy of the folder `root` (see the module docstring)."""
    original = Path(os.path.realpath(root))
    if not original.is_dir():
        raise ScratchCopyError(f"{root} is not a folder, so no scratch copy of it can be made.")
    folder = scratch_folder()
    made = ScratchCopy(folder, original, folder.base / (original.name or "project"))
    try:
        _mirror(original, made.copy, original, made.copy, _Budget(COPY_TOTAL_MAX))
        _siblings(original, folder.base)
    except OSError as exc:
        folder.remove()
        raise ScratchCopyError(f"The scratch copy of {original} could not be made ({exc.strerror or exc}).") from None
    except BaseException:
        folder.remove()
        raise
    return made
