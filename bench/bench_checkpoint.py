"""Checkpoint capture and undo cost, as ratios to plain copies/writes of the same files in the same run.

Run: .venv/bin/python bench/bench_checkpoint.py [ROUNDS]

Floors (issue 3): capture against `shutil.copyfile` of the same files, undo against writing
the same bytes back naively (open, truncate, write). A checkpoint must be on disk before its
manifest commits, while neither floor waits for the disk; so each case is also reported
against the durable floor (the same floor followed by the one `syncfs` the store uses as its
barrier), which is the floor the targets are judged against (issue 21).

Every timed run starts from the same settled state: the previous run's output is removed
and a `syncfs` waits for that removal before the clock starts, so neither side copies into
a directory whose deletion is still being written back. Floor, durable floor and ours
alternate round by round; figures are medians of the rounds with their range.
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

from paired import alternate, banner, ratios, span


def settled_run(setup: Callable[[], None], run: Callable[[], None], settle: Path) -> float:
    """Seconds of `run()` after `setup()` and a syncfs of `settle`'s filesystem."""
    setup()
    sync_fs(settle)
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


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


def cases(work: Path) -> list[tuple[str, dict[str, Callable[[], float]], float]]:
    """(case, {"floor", "durable floor", "ours"} timers, target against the durable floor)."""
    from larik_jupyter.checkpoint.store import CheckpointStore

    root = work / "proj"
    out = []
    counter = iter(range(1_000_000))

    for label, count, size in [
        ("1,000 x 1 KB", 1000, 1024),
        ("100 x 1 MB", 100, 1 << 20),
        ("1 x 100 MB", 1, 100 << 20),
    ]:
        files = make_files(root / label.replace(" ", "").replace(",", ""), count, size)
        target: list[Path] = []

        def fresh_copies(target: list[Path] = target) -> None:
            # A new directory each run; the previous one is removed first and settled by
            # the syncfs in `settled_run`.
            for old in work.glob("copies-*"):
                shutil.rmtree(old)
            target[:] = [work / f"copies-{next(counter)}"]
            target[0].mkdir()

        def plain_copy(files: list[Path] = files, target: list[Path] = target) -> None:
            for f in files:
                shutil.copyfile(f, target[0] / f.name)

        def durable_copy(files: list[Path] = files, target: list[Path] = target) -> None:
            plain_copy(files, target)
            sync_fs(target[0])

        store: list[CheckpointStore] = []

        def new_store(store: list[CheckpointStore] = store) -> None:
            shutil.rmtree(work / "data", ignore_errors=True)
            store[:] = [CheckpointStore(f"bench-{next(counter)}", root)]
            store[0].begin_turn()

        def capture(files: list[Path] = files, store: list[CheckpointStore] = store) -> None:
            store[0].capture_paths(files)

        out.append((
            f"capture {label}",
            {
                "floor": lambda r=plain_copy, s=fresh_copies: settled_run(s, r, work),
                "durable floor": lambda r=durable_copy, s=fresh_copies: settled_run(s, r, work),
                "ours": lambda r=capture, s=new_store: settled_run(s, r, work),
            },
            1.5,
        ))

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
        undo_store[0].capture_paths(small)
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
            with open(f, "wb") as out_file:
                out_file.write(data)

    def durable_write() -> None:
        naive_write()
        sync_fs(root)

    floors: dict[str, Callable[[], float]] = {
        "floor": lambda: settled_run(edit, naive_write, root),
        "durable floor": lambda: settled_run(edit, durable_write, root),
    }
    out.append(("undo 1,000 x 1 KB", {**floors, "ours": lambda: settled_run(edit_turn, undo, root)}, 3.0))
    # The snapshot's removal runs after the undo returns; for scale, the undo waiting for it.
    out.append((
        "  + snapshot removal",
        {**floors, "ours": lambda: settled_run(edit_turn, undo_and_removal, root)},
        3.0,
    ))
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    banner()
    work = Path(tempfile.mkdtemp(prefix="bench-checkpoint-"))
    os.environ["LARIK_DATA_DIR"] = str(work / "data")
    print(f"rounds: {rounds}; seconds and ratios, median (min – max)")
    print("| case | ours s | floor s | ratio | durable floor s | ratio to durable | target |")
    print("|---|---|---|---|---|---|---|")
    try:
        for case, timers, target in cases(work):
            r = alternate(timers, rounds)
            durable = ratios(r, "ours", "durable floor")
            flag = "ok" if sorted(durable)[len(durable) // 2] <= target else "OVER"
            print(
                f"| {case} | {span(r['ours'], 1, 3)} | {span(r['floor'], 1, 3)} "
                f"| {span(ratios(r, 'ours', 'floor'), 1, 2, 'x')} | {span(r['durable floor'], 1, 3)} "
                f"| {span(durable, 1, 2, 'x')} | {target:.1f}x {flag} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
