"""Hostile changes made between capture and undo; nothing outside the root may ever change."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore

SID = "20250101-120000-bad000"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "proj", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"outside bytes")
    return root, outside


def modified_turn(root: Path, rel: str) -> CheckpointStore:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"original")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture(target)
    target.write_bytes(b"agent edit")
    return store


def assert_outside_untouched(outside: Path) -> None:
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_bytes() == b"outside bytes"


def test_restored_path_replaced_by_symlink_to_outside(world: tuple[Path, Path]) -> None:
    root, outside = world
    store = modified_turn(root, "a.txt")
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(outside / "secret")
    result = store.undo()
    assert result.refused == [("a.txt", "is a symbolic link")] and not result.ok
    assert_outside_untouched(outside)
    assert store.turns(), "a failed restore keeps the snapshot for a retry"
    (root / "a.txt").unlink()
    assert store.undo().ok
    assert (root / "a.txt").read_bytes() == b"original"


def test_parent_directory_replaced_by_symlink(world: tuple[Path, Path]) -> None:
    root, outside = world
    store = modified_turn(root, "sub/a.txt")
    (root / "sub" / "a.txt").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    (outside / "a.txt").write_bytes(b"outside a")
    result = store.undo()
    assert result.refused == [("sub/a.txt", "its directory sub is a symbolic link")]
    assert (outside / "a.txt").read_bytes() == b"outside a"
    (outside / "a.txt").unlink()
    assert_outside_untouched(outside)


def test_racing_thread_swapping_directory_and_symlink(world: tuple[Path, Path]) -> None:
    root, outside = world
    names = [f"d/f{i}" for i in range(40)]
    for rel in names:
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_bytes(b"original")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture_paths([root / rel for rel in names])
    for rel in names:
        (root / rel).write_bytes(b"agent edit")
    for rel in names:  # decoys: what a followed symlink would overwrite
        (outside / Path(rel).name).write_bytes(b"outside decoy")
    stop = threading.Event()
    swaps = 0
    d, real = root / "d", root / "d.real"

    def swap() -> None:
        nonlocal swaps
        while not stop.is_set():
            try:
                os.rename(d, real)
                os.symlink(outside, d)
                os.unlink(d)
                os.rename(real, d)
                swaps += 1
            except OSError:
                # the restore recreated a missing `d`; put the real one back and go on
                while real.exists():
                    try:
                        if d.is_symlink():
                            d.unlink()
                        elif d.is_dir():
                            shutil.rmtree(d, ignore_errors=True)
                        os.rename(real, d)
                    except OSError:
                        continue

    racer = threading.Thread(target=swap)
    racer.start()
    try:
        results = [store.undo() for _ in range(5) if store.turns()]
    finally:
        stop.set()
        racer.join()
    assert swaps > 0 and results
    for rel in names:
        assert (outside / Path(rel).name).read_bytes() == b"outside decoy"
    assert (outside / "secret").read_bytes() == b"outside bytes"
    assert len(os.listdir(outside)) == len(names) + 1
    for result in results:
        assert len(result.restored) + len(result.refused) == len(names)


def tamper(store: CheckpointStore, path: str) -> None:
    """Rewrite the newest manifest's first record path, as an attacker with data-dir access could."""
    [turn] = store.turns()
    manifest_path = paths.checkpoints_dir(SID) / str(turn.turn) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][0]["path"] = path
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside/secret", "contains '..'"),
        ("sub/../../outside/secret", "contains '..'"),
        ("ABS", "is outside the project root"),
        ("EVIL", "is outside the project root"),
        (".git/config", "is inside .git, which is protected"),
        (".larik/settings.json", "is a protected project file"),
        (".mcp.json", "is a protected project file"),
    ],
)
def test_manifest_paths_escaping_or_protected_are_refused(
    world: tuple[Path, Path], path: str, reason: str
) -> None:
    root, outside = world
    evil = root.parent / "proj-evil"
    evil.mkdir()
    (evil / "secret").write_bytes(b"evil sibling")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_bytes(b"[core]")
    path = path.replace("ABS", str(outside / "secret")).replace("EVIL", str(evil / "secret"))
    store = modified_turn(root, "a.txt")
    tamper(store, path)
    result = store.undo()
    assert len(result.refused) == 1 and reason in result.refused[0][1]
    assert_outside_untouched(outside)
    assert (evil / "secret").read_bytes() == b"evil sibling"
    assert (root / ".git" / "config").read_bytes() == b"[core]"


def test_hard_link_to_outside_file_is_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    store = modified_turn(root, "a.txt")
    (root / "a.txt").unlink()
    os.link(outside / "secret", root / "a.txt")
    result = store.undo()
    assert result.refused == [
        ("a.txt", "has 2 hard links, so changing it would change another path too")
    ]
    assert_outside_untouched(outside)


def test_hard_linked_file_is_refused_at_capture(world: tuple[Path, Path]) -> None:
    from larik_jupyter.checkpoint.store import CaptureError

    root, outside = world
    os.link(outside / "secret", root / "linked")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    with pytest.raises(CaptureError, match="hard links"):
        store.capture(root / "linked")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_fifo_or_directory_where_a_file_was(world: tuple[Path, Path], kind: str) -> None:
    root, outside = world
    store = modified_turn(root, "a.txt")
    (root / "a.txt").unlink()
    if kind == "fifo":
        os.mkfifo(root / "a.txt")
        expected = "is not a regular file (a FIFO, socket or device)"
    else:
        (root / "a.txt").mkdir()
        expected = "is a directory"
    result = store.undo()
    assert result.refused == [("a.txt", expected)]
    assert_outside_untouched(outside)


def test_created_file_replaced_by_symlink_is_refused_not_followed(world: tuple[Path, Path]) -> None:
    root, outside = world
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture(root / "new.txt")
    (root / "new.txt").symlink_to(outside / "secret")
    result = store.undo()
    assert result.refused == [("new.txt", "is a symbolic link")]
    assert_outside_untouched(outside)


def test_symlinked_path_is_refused_at_capture(world: tuple[Path, Path]) -> None:
    from larik_jupyter.checkpoint.store import CaptureError

    root, outside = world
    (root / "link").symlink_to(outside)
    store = CheckpointStore(SID, root)
    store.begin_turn()
    with pytest.raises(CaptureError, match="its directory link is a symbolic link"):
        store.capture(root / "link" / "secret")
    (root / "file-link").symlink_to(outside / "secret")
    with pytest.raises(CaptureError, match="is a symbolic link"):
        store.capture(root / "file-link")
