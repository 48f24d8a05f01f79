"""Undo removes the directories a turn created for new files, only when empty, never via a symlink."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore
from tests.process_helpers import wait_until

SID = "20250101-120000-d1r000"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "proj", tmp_path / "outside"
    root.mkdir()
    (outside / "empty").mkdir(parents=True)
    (outside / "c.txt").write_bytes(b"outside bytes")
    return root, outside


def write(store: CheckpointStore, path: Path, data: bytes) -> None:
    """What the write tool does: capture, create missing parents, write."""
    store.capture(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def manifest_path(turn: int = 1) -> Path:
    return paths.checkpoints_dir(SID) / str(turn) / "manifest.json"


def assert_outside_untouched(outside: Path) -> None:
    assert sorted(os.listdir(outside)) == ["c.txt", "empty"]
    assert (outside / "c.txt").read_bytes() == b"outside bytes"
    assert (outside / "empty").is_dir() and not os.listdir(outside / "empty")


def test_undo_of_a_file_in_new_directories_leaves_no_directory(world: tuple[Path, Path]) -> None:
    root, _ = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "b" / "c.txt", b"new")
    write(store, root / "a" / "b" / "d.txt", b"also new")
    records = json.loads(manifest_path().read_text())["files"]
    assert records[0] == {"path": "a/b/c.txt", "existed": False, "created_dirs": ["a", "a/b"]}
    assert records[1] == {"path": "a/b/d.txt", "existed": False}
    result = store.undo()
    assert result.ok and result.removed_dirs == ["a/b", "a"] and result.kept_dirs == []
    assert os.listdir(root) == []


def test_a_directory_that_existed_before_stays_even_when_empty(world: tuple[Path, Path]) -> None:
    root, _ = world
    (root / "a").mkdir()
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "b" / "c.txt", b"new")
    assert json.loads(manifest_path().read_text())["files"][0]["created_dirs"] == ["a/b"]
    result = store.undo()
    assert result.ok and result.removed_dirs == ["a/b"]
    assert os.listdir(root) == ["a"] and os.listdir(root / "a") == []


def test_a_directory_the_user_filled_meanwhile_stays_and_is_reported(
    world: tuple[Path, Path],
) -> None:
    root, _ = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "b" / "c.txt", b"new")
    (root / "a" / "notes.txt").write_bytes(b"the user's")
    result = store.undo()
    assert result.ok and result.restored == ["a/b/c.txt"]
    assert result.removed_dirs == ["a/b"] and result.kept_dirs == [("a", "is not empty")]
    assert os.listdir(root / "a") == ["notes.txt"]
    assert store.turns() == [], "a kept directory does not keep the snapshot"


def test_directories_are_undone_turn_by_turn(world: tuple[Path, Path]) -> None:
    root, _ = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "x.txt", b"turn 1")
    store.begin_turn()
    write(store, root / "a" / "b" / "y.txt", b"turn 2")
    second = store.undo()
    assert second.removed_dirs == ["a/b"] and second.kept_dirs == []
    assert os.listdir(root / "a") == ["x.txt"]
    first = store.undo()
    assert first.removed_dirs == ["a"] and os.listdir(root) == []


def test_a_manifest_without_created_dirs_still_undoes(world: tuple[Path, Path]) -> None:
    root, _ = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "b" / "c.txt", b"new")
    manifest = json.loads(manifest_path().read_text())
    del manifest["files"][0]["created_dirs"]
    manifest_path().write_text(json.dumps(manifest))
    result = store.undo()
    assert result.ok and result.removed_dirs == [] and result.kept_dirs == []
    assert not (root / "a" / "b" / "c.txt").exists() and (root / "a" / "b").is_dir()


def test_a_symlink_swapped_in_for_a_created_directory_is_not_followed(
    world: tuple[Path, Path],
) -> None:
    root, outside = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "b" / "c.txt", b"new")
    (root / "a" / "b" / "c.txt").unlink()
    (root / "a" / "b").rmdir()
    (root / "a" / "b").symlink_to(outside)
    result = store.undo()
    assert result.refused == [("a/b/c.txt", "its directory a/b is a symbolic link")]
    assert result.kept_dirs == [("a/b", "is a symbolic link now"), ("a", "is not empty")]
    assert_outside_untouched(outside)
    (root / "a" / "b").unlink()
    (root / "a" / "b").symlink_to(outside / "empty")
    retry = store.undo()
    assert retry.refused == [("a/b/c.txt", "its directory a/b is a symbolic link")]
    assert retry.kept_dirs == [("a/b", "is a symbolic link now"), ("a", "is not empty")]
    assert (root / "a" / "b").is_symlink()
    assert_outside_untouched(outside)


def test_a_symlink_swapped_in_above_a_created_directory_is_not_followed(
    world: tuple[Path, Path],
) -> None:
    root, outside = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "a" / "empty" / "c.txt", b"new")
    (root / "a" / "empty" / "c.txt").unlink()
    (root / "a" / "empty").rmdir()
    (root / "a").rmdir()
    (root / "a").symlink_to(outside)
    result = store.undo()
    assert result.kept_dirs == [
        ("a/empty", "its directory a is a symbolic link"),
        ("a", "is a symbolic link now"),
    ]
    assert_outside_untouched(outside)


def test_created_dirs_naming_places_outside_the_root_are_refused(
    world: tuple[Path, Path],
) -> None:
    root, outside = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, root / "new.txt", b"new")
    manifest = json.loads(manifest_path().read_text())
    manifest["files"][0]["created_dirs"] = ["../outside/empty", str(outside / "empty"), ".git"]
    manifest_path().write_text(json.dumps(manifest))
    result = store.undo()
    assert result.ok and result.removed_dirs == []
    assert sorted(result.kept_dirs) == sorted(
        [
            (".git", "is inside .git, which is protected"),
            ("../outside/empty", "contains '..'"),
            (str(outside / "empty"), f"is outside the project root {root}"),
        ]
    )
    assert_outside_untouched(outside)


def test_racing_symlink_swaps_never_remove_a_directory_outside(world: tuple[Path, Path]) -> None:
    root, outside = world
    b, real = root / "a" / "b", root / "a" / "b.real"
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        while not stop.is_set():
            try:
                os.rename(b, real)
                # alternately a place where a followed unlink or a followed rmdir would land
                os.symlink(outside / "empty" if swaps % 2 else outside, b)
                os.unlink(b)
                os.rename(real, b)
                swaps += 1
            except OSError:
                continue  # undo removed or refused something mid-swap; keep going

    store = CheckpointStore(SID, root)
    for _ in range(20):
        store.begin_turn()
        write(store, b / "c.txt", b"new")
        racer = threading.Thread(target=swap)
        started = swaps
        racer.start()
        wait_until(lambda started=started: swaps != started, "the racer to start swapping", every=0.001)
        try:
            store.undo()
        finally:
            stop.set()
            racer.join()
            stop.clear()
        assert_outside_untouched(outside)
        for leftover in (b, real):
            if leftover.is_symlink():
                leftover.unlink()
            elif leftover.is_dir():
                for entry in leftover.iterdir():
                    entry.unlink()
                leftover.rmdir()
        while store.turns():
            assert store.undo().ok
        if (root / "a").exists():  # kept because the racer's b.real was in it at the time
            (root / "a").rmdir()
    assert swaps > 0
