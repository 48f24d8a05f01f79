"""Checkpoint capture and undo cost, as ratios to plain copies/writes of the same files in the same run.

Run: .venv/bin/python bench/bench_checkpoint.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPEATS = 3


def best_of(setup: Callable[[], None], run: Callable[[], None]) -> float:
    """Fastest of REPEATS timed runs, each after a fresh `setup`."""
    times = []
    for _ in range(REPEATS):
        setup()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def make_files(folder: Path, count: int, size: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"f{i:04d}.dat" for i in range(count)]
    for f in files:
        f.write_bytes(os.urandom(size))
    return files


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-checkpoint-"))
    os.environ["LARIK_DATA_DIR"] = str(work / "data")
    from larik_jupyter.checkpoint.store import CheckpointStore

    root = work / "proj"
    copies = work / "copies"
    rows = []
    counter = iter(range(1_000_000))

    for label, count, size in [
        ("1,000 x 1 KB", 1000, 1024),
        ("100 x 1 MB", 100, 1 << 20),
        ("1 x 100 MB", 1, 100 << 20),
    ]:
        files = make_files(root / label.replace(" ", "").replace(",", ""), count, size)

        def reset_copies() -> None:
            shutil.rmtree(copies, ignore_errors=True)
            copies.mkdir()

        def plain_copy(files: list[Path] = files) -> None:
            for f in files:
                shutil.copyfile(f, copies / f.name)

        store: list[CheckpointStore] = []

        def new_store(store: list[CheckpointStore] = store) -> None:
            shutil.rmtree(work / "data", ignore_errors=True)
            store[:] = [CheckpointStore(f"bench-{next(counter)}", root)]
            store[0].begin_turn()

        def capture(files: list[Path] = files, store: list[CheckpointStore] = store) -> None:
            store[0].capture_paths(files)

        floor = best_of(reset_copies, plain_copy)
        ours = best_of(new_store, capture)
        rows.append((f"capture {label}", ours, floor, "shutil.copyfile", 1.5))

    small = make_files(root / "undo", 1000, 1024)
    originals = {f: f.read_bytes() for f in small}
    edited = os.urandom(1024)
    undo_store: list[CheckpointStore] = []

    def edit_turn() -> None:
        shutil.rmtree(work / "data", ignore_errors=True)
        undo_store[:] = [CheckpointStore(f"bench-{next(counter)}", root)]
        undo_store[0].begin_turn()
        undo_store[0].capture_paths(small)
        for f in small:
            f.write_bytes(edited)

    def undo() -> None:
        assert undo_store[0].undo().ok

    def naive_write() -> None:
        for f, data in originals.items():
            with open(f, "wb") as out:
                out.write(data)

    floor = best_of(lambda: None, naive_write)
    ours = best_of(edit_turn, undo)
    rows.append(("undo 1,000 x 1 KB", ours, floor, "naive open/write", 3.0))

    print(f"{'case':<22} {'ours':>9} {'floor':>9} {'ratio':>6} {'target':>7}  floor is")
    for case, mine, base, what, target in rows:
        ratio = mine / base
        flag = "ok" if ratio <= target else "OVER"
        print(f"{case:<22} {mine:8.3f}s {base:8.3f}s {ratio:5.2f}x {target:5.1f}x {flag:<4} {what}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
