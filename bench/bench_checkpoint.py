"""Checkpoint capture and undo cost, as ratios to plain copies/writes of the same files in the same run.

Run: .venv/bin/python bench/bench_checkpoint.py [rounds]

Floors (issue 3): capture against `shutil.copyfile` of the same files, undo against writing
the same bytes back naively (open, truncate, write). A checkpoint must be on disk before its
manifest commits, while neither floor waits for the disk; so each case is also reported
against a durable floor (the same floor followed by one `syncfs`, the barrier the store uses).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
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


def sync_fs(folder: Path) -> None:
    """One syncfs of the filesystem holding `folder` (the store's durability barrier)."""
    from larik_jupyter.checkpoint.durable import Barrier, open_dir

    with open_dir(folder) as fd, Barrier() as barrier:
        barrier.add(fd)
        barrier.commit()


def run_once(work: Path) -> list[tuple[str, float, float, float, float]]:
    """(case, ours, floor, durable floor, target) for every case."""
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

        def durable_copy(files: list[Path] = files) -> None:
            plain_copy(files)
            sync_fs(copies)

        store: list[CheckpointStore] = []

        def new_store(store: list[CheckpointStore] = store) -> None:
            shutil.rmtree(work / "data", ignore_errors=True)
            store[:] = [CheckpointStore(f"bench-{next(counter)}", root)]
            store[0].begin_turn()

        def capture(files: list[Path] = files, store: list[CheckpointStore] = store) -> None:
            store[0].capture_paths(files)

        floor = best_of(reset_copies, plain_copy)
        durable = best_of(reset_copies, durable_copy)
        ours = best_of(new_store, capture)
        rows.append((f"capture {label}", ours, floor, durable, 1.5))

    small = make_files(root / "undo", 1000, 1024)
    originals = {f: f.read_bytes() for f in small}
    edited = os.urandom(1024)
    undo_store: list[CheckpointStore] = []

    def edit() -> None:
        for f in small:
            f.write_bytes(edited)

    def edit_turn() -> None:
        shutil.rmtree(work / "data", ignore_errors=True)
        undo_store[:] = [CheckpointStore(f"bench-{next(counter)}", root)]
        undo_store[0].begin_turn()
        undo_store[0].capture_paths(small)  # ends with a syncfs
        edit()

    def edit_synced() -> None:
        # The floor starts from the state undo starts from: synced, then edited.
        sync_fs(root)
        edit()

    def undo() -> None:
        assert undo_store[0].undo().ok

    def undo_and_removal() -> None:
        undo()
        for worker in threading.enumerate():
            if worker.name == "larik-drop":
                worker.join()

    def naive_write() -> None:
        for f, data in originals.items():
            with open(f, "wb") as out:
                out.write(data)

    def durable_write() -> None:
        naive_write()
        sync_fs(root)

    floor = best_of(edit_synced, naive_write)
    durable = best_of(edit_synced, durable_write)
    ours = best_of(edit_turn, undo)
    rows.append(("undo 1,000 x 1 KB", ours, floor, durable, 3.0))
    # The snapshot's removal runs after the undo returns; for scale, the undo waiting for it.
    ours = best_of(edit_turn, undo_and_removal)
    rows.append(("  + snapshot removal", ours, floor, durable, 3.0))
    return rows


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    work = Path(tempfile.mkdtemp(prefix="bench-checkpoint-"))
    os.environ["LARIK_DATA_DIR"] = str(work / "data")
    try:
        results = [run_once(work) for _ in range(rounds)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{'case':<22} {'ours (s)':>13} {'floor (s)':>13} {'ratio':>13} "
        f"{'durable (s)':>13} {'ratio':>13}  target"
    )

    def span(values: list[float], fmt: str) -> str:
        low, high = min(values), max(values)
        return format(low, fmt) if len(values) == 1 else f"{low:{fmt}}-{high:{fmt}}"

    for i, (case, *_, target) in enumerate(results[0]):
        ours = [r[i][1] for r in results]
        floor = [r[i][2] for r in results]
        durable = [r[i][3] for r in results]
        ratio = [r[i][1] / r[i][2] for r in results]
        durable_ratio = [r[i][1] / r[i][3] for r in results]
        flag = "ok" if max(ratio) <= target else "OVER"
        print(
            f"{case:<22} {span(ours, '.3f'):>13} {span(floor, '.3f'):>13} "
            f"{span(ratio, '.2f') + 'x':>13} {span(durable, '.3f'):>13} "
            f"{span(durable_ratio, '.2f') + 'x':>13}  {target:.1f}x {flag}"
        )


if __name__ == "__main__":
    main()
