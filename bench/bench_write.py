"""What the race-safe tool write costs against a plain write of the same bytes, in the same run.

`tools/file_write.write_file` walks the path from the root with O_NOFOLLOW, checks the entry,
writes a temporary file beside it and renames it over the name; the floor is `open(path, "wb")`
+ `write`, what tools did before (neither fsyncs). Cases: 1,000 files of 1 KB in 10 folders
three deep, and one 20 MB file, each overwriting files that exist. Also what a turn's end now
adds: hashing every captured file to record what the turn left (`CheckpointStore.finish_turn`),
against reading the same files.

    .venv/bin/python bench/bench_write.py [ROUNDS]
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

from paired import alternate, banner, ratios, span, timed

from larik_jupyter.tools.files.write import write_file


def targets(root: Path, count: int, size: int) -> list[tuple[Path, bytes]]:
    out = []
    for i in range(count):
        path = root / f"d{i % 10}" / "a" / "b" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"0" * size)
        out.append((path, bytes([65 + i % 26]) * size))
    return out


def plain(files: list[tuple[Path, bytes]]) -> None:
    for path, data in files:
        with open(path, "wb") as f:
            f.write(data)


def ours(root: Path, files: list[tuple[Path, bytes]]) -> None:
    for path, data in files:
        write_file(root, path, data)


def read_all(files: list[tuple[Path, bytes]]) -> None:
    for path, _ in files:
        path.read_bytes()


def hash_all(files: list[tuple[Path, bytes]]) -> None:
    for path, _ in files:
        hashlib.sha256(path.read_bytes()).hexdigest()


def measure(label: str, base: Path, files: list[tuple[Path, bytes]], rounds: int) -> None:
    results = alternate({
        "plain": lambda: timed(lambda: plain(files)),
        "ours": lambda: timed(lambda: ours(base, files)),
        "read": lambda: timed(lambda: read_all(files)),
        "hash": lambda: timed(lambda: hash_all(files)),
    }, rounds)
    print(f"{label}: plain write {span(results['plain'], 1000, 1, ' ms')}, "
          f"write_file {span(results['ours'], 1000, 1, ' ms')}, "
          f"ratio {span(ratios(results, 'ours', 'plain'), 1, 2, 'x')}")
    print(f"{label}: turn-end hashing {span(results['hash'], 1000, 1, ' ms')} vs reading "
          f"{span(results['read'], 1000, 1, ' ms')}, ratio {span(ratios(results, 'hash', 'read'), 1, 2, 'x')}")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        for label, count, size in (("1,000 x 1 KB", 1000, 1024), ("1 x 20 MB", 1, 20 << 20)):
            base = root / label.replace(" ", "")
            measure(label, base, targets(base, count, size), rounds)


if __name__ == "__main__":
    main()
