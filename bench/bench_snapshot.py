"""Cost of the bash tool's stat snapshot on a generated 10,000-file project.

The floor is a bare recursive os.scandir walk that stats every file (no .gitignore, no
bounds), measured in the same run on the same tree. Run:

    .venv/bin/python bench/bench_snapshot.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from larik_jupyter.tools.snapshot import changes, take_snapshot

DIRS = 100
FILES_PER_DIR = 100
REPEAT = 7
GITIGNORE = "*.pyc\nbuild/\n*.log\n.env\ndist/\n*.egg-info/\n"


def make_tree(root: Path) -> None:
    """10,000 project files in 100 directories of 100, plus a .gitignore of common patterns."""
    (root / ".gitignore").write_text(GITIGNORE)
    for d in range(DIRS):
        sub = root / f"pkg{d // 10}" / f"mod{d}"
        sub.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            (sub / f"file{f}.py").write_text("x")


def floor_walk(root: Path) -> int:
    """The floor: every file under root stat'ed through os.scandir, nothing else."""
    count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def median_seconds(fn: Callable[[], object]) -> float:
    fn()  # warm the dentry cache so both sides measure the same thing
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root)
        snap = take_snapshot(root)
        assert snap.complete and len(snap.files) == DIRS * FILES_PER_DIR + 1
        floor = median_seconds(lambda: floor_walk(root))
        snapshot = median_seconds(lambda: take_snapshot(root))
        around = median_seconds(lambda: changes(take_snapshot(root), take_snapshot(root)))
    print(f"files: {len(snap.files)}, median of {REPEAT} runs")
    print(f"floor (os.scandir walk + stat):       {floor * 1000:8.1f} ms")
    print(f"take_snapshot (.gitignore, bounded):  {snapshot * 1000:8.1f} ms  ({snapshot / floor:.2f}x floor)")
    print(f"bash overhead (2 snapshots + diff):   {around * 1000:8.1f} ms  ({around / floor:.2f}x floor)")


if __name__ == "__main__":
    main()
