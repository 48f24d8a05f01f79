from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from larik_jupyter import paths
from larik_jupyter.checkpoint.manifest import NotebookRecord
from larik_jupyter.checkpoint.store import (
    CaptureError,
    CheckpointError,
    CheckpointStore,
    NothingToUndoError,
)

SID = "20250101-120000-abc123"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    return project


def write(store: CheckpointStore, path: Path, data: bytes) -> None:
    """What a file tool does: capture, then write in place."""
    store.capture(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_capture_once_per_turn_keeps_state_before_the_turn(root: Path) -> None:
    f = root / "a.txt"
    f.write_bytes(b"before")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, f, b"first edit")
    write(store, f, b"second edit")
    [turn] = store.turns()
    assert [i.path for i in turn.files] == ["a.txt"]
    assert store.original_bytes(turn.turn, f) == b"before"
    store.undo()
    assert f.read_bytes() == b"before"


def test_create_then_undo_deletes_the_file(root: Path) -> None:
    store = CheckpointStore(SID, root)
    store.begin_turn()
    new = root / "pkg" / "new.py"
    write(store, new, b"print(1)\n")
    result = store.undo()
    assert not new.exists()
    assert result.restored == ["pkg/new.py"] and result.ok


def test_modify_then_undo_restores_bytes_and_modes(root: Path) -> None:
    script, frozen = root / "run.sh", root / "frozen.txt"
    script.write_bytes(b"#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    frozen.write_bytes(b"do not touch\n")
    frozen.chmod(0o444)
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, script, b"rm -rf /\n")
    script.chmod(0o644)
    store.capture(frozen)
    frozen.chmod(0o644)
    frozen.write_bytes(b"touched")
    result = store.undo()
    assert result.ok and sorted(result.restored) == ["frozen.txt", "run.sh"]
    assert script.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert frozen.read_bytes() == b"do not touch\n"
    assert stat.S_IMODE(frozen.stat().st_mode) == 0o444


def test_undo_skips_empty_turns_and_pops_newest_first(root: Path) -> None:
    f = root / "a.txt"
    f.write_bytes(b"v1")
    store = CheckpointStore(SID, root)
    t1 = store.begin_turn()
    write(store, f, b"v2")
    t2 = store.begin_turn()
    write(store, f, b"v3")
    store.begin_turn()  # a turn that only talked
    store.begin_turn()
    assert [t.turn for t in store.turns()] == [t1, t2]
    assert store.undo().turn == t2
    assert f.read_bytes() == b"v2"
    assert store.undo().turn == t1
    assert f.read_bytes() == b"v1"
    with pytest.raises(NothingToUndoError, match=SID):
        store.undo()


def test_undo_works_across_a_process_restart(root: Path) -> None:
    f = root / "a.txt"
    f.write_bytes(b"original")
    program = (
        "import sys\nfrom pathlib import Path\n"
        "from larik_jupyter.checkpoint.store import CheckpointStore\n"
        f"s = CheckpointStore({SID!r}, Path({str(root)!r}))\n"
        "s.begin_turn(); s.begin_turn()\n"
        f"p = Path({str(f)!r}); s.capture(p); p.write_bytes(b'agent wrote this')\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, env=os.environ.copy())
    store = CheckpointStore(SID, root)
    assert [t.turn for t in store.turns()] == [2]
    assert store.begin_turn() == 3
    result = store.undo()
    assert result.turn == 2 and result.ok
    assert f.read_bytes() == b"original"


def test_undo_of_the_open_turn_lets_it_capture_again(root: Path) -> None:
    f = root / "a.txt"
    f.write_bytes(b"v1")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    write(store, f, b"v2")
    store.undo()
    write(store, f, b"v3")
    store.undo()
    assert f.read_bytes() == b"v1"


def test_disabled_store_captures_nothing(root: Path) -> None:
    store = CheckpointStore(SID, root, enabled=False)
    store.begin_turn()
    write(store, root / "a.txt", b"x")
    assert store.turns() == []
    assert not paths.checkpoints_dir(SID).exists()


def test_capture_paths_snapshots_a_command_s_files(root: Path) -> None:
    a, b = root / "a", root / "b"
    a.write_bytes(b"A")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture_paths([a, "b", a])
    a.write_bytes(b"AA")
    b.write_bytes(b"B")
    [turn] = store.turns()
    assert [(i.path, i.existed) for i in turn.files] == [("a", True), ("b", False)]
    assert store.undo().ok
    assert a.read_bytes() == b"A" and not b.exists()


def test_paths_outside_the_root_are_not_captured(root: Path) -> None:
    outside = root.parent / "proj-evil" / "x.txt"
    outside.parent.mkdir()
    outside.write_bytes(b"outside")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture(outside)
    assert store.turns() == []


def test_protected_and_dotdot_paths_are_refused_at_capture(root: Path) -> None:
    (root / ".git").mkdir()
    store = CheckpointStore(SID, root)
    store.begin_turn()
    for bad in (
        root / ".git" / "config",
        root / ".mcp.json",
        root / ".larik" / "settings.json",
        f"{root}/x/../y",
    ):
        with pytest.raises(CaptureError, match="cannot be checkpointed"):
            store.capture(bad)
    assert store.turns() == []


def test_original_bytes_of_a_created_file_is_none_and_unknown_path_is_an_error(root: Path) -> None:
    store = CheckpointStore(SID, root)
    turn = store.begin_turn()
    write(store, root / "new", b"x")
    assert store.original_bytes(turn, "new") is None
    with pytest.raises(CheckpointError, match="was not changed in turn"):
        store.original_bytes(turn, "other")


def test_manifest_is_json_with_documented_fields(root: Path) -> None:
    import json

    (root / "a").write_bytes(b"hello")
    store = CheckpointStore(SID, root)
    turn = store.begin_turn()
    write(store, root / "a", b"bye")
    write(store, root / "b", b"new")
    turn_dir = paths.checkpoints_dir(SID) / str(turn)
    manifest = json.loads((turn_dir / "manifest.json").read_text())
    assert manifest["turn"] == turn and manifest["session_id"] == SID and manifest["format"] == 1
    first, second = manifest["files"]
    assert first["path"] == "a" and first["existed"] is True and first["blob"] == "0.bin"
    assert first["size"] == 5 and len(first["sha256"]) == 64
    assert second == {"path": "b", "existed": False}
    assert (turn_dir / "0.bin").read_bytes() == b"hello"
    assert (turn_dir / "0.bin").stat().st_nlink == 1
    assert sorted(os.listdir(turn_dir)) == ["0.bin", "manifest.json"]


def test_large_files_round_trip_with_the_hash_of_their_bytes(root: Path) -> None:
    # Sizes around the kernel-copy threshold and its 8 MB chunks, with unaligned tails.
    originals = {
        root / "small.bin": os.urandom((1 << 20) - 1),
        root / "one.bin": os.urandom(1 << 20),
        root / "big.bin": os.urandom((17 << 20) + 12345),
    }
    for path, data in originals.items():
        path.write_bytes(data)
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture_paths(list(originals))
    for path in originals:
        path.write_bytes(b"edited")
    manifest = json.loads((paths.checkpoints_dir(SID) / "1" / "manifest.json").read_text())
    assert {r["path"]: r["sha256"] for r in manifest["files"]} == {
        p.name: hashlib.sha256(d).hexdigest() for p, d in originals.items()
    }
    assert store.original_bytes(1, root / "big.bin") == originals[root / "big.bin"]
    assert store.undo().ok
    for path, data in originals.items():
        assert path.read_bytes() == data


def test_undo_across_more_directories_than_one_walk_keeps_open(root: Path) -> None:
    files = [root / f"d{i:03d}" / "sub" / "f.txt" for i in range(150)]
    for f in files:
        f.parent.mkdir(parents=True)
        f.write_bytes(f.parent.parent.name.encode())
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture_paths(files + [root / "d000" / "new" / "created.txt"])
    for f in files:
        f.write_bytes(b"edited")
    (root / "d000" / "new").mkdir()
    (root / "d000" / "new" / "created.txt").write_bytes(b"agent made this")
    result = store.undo()
    assert result.ok and len(result.restored) == 151
    assert all(f.read_bytes() == f.parent.parent.name.encode() for f in files)
    assert not (root / "d000" / "new" / "created.txt").exists()


def test_cells_recorded_for_an_edit_that_did_not_land_are_forgotten_and_recorded_again_when_they_change(
    tmp_path: Path,
) -> None:
    notebook = tmp_path / "nb.ipynb"
    store = CheckpointStore(SID, tmp_path)
    store.begin_turn()
    copy = {"id": "b", "cell_type": "code", "source": "old copy", "metadata": {}, "outputs": [], "execution_count": None}
    fresh = {**copy, "source": "typed by the user"}
    assert store.capture_cells(notebook, ["a", "b"], [copy]) == ["b"]
    assert store.capture_cells(notebook, ["b", "a"], [fresh]) == []  # only a cell's first record counts
    store.forget_cells(notebook, ["b"])  # the browser refused the edit recorded from the copy
    assert store.capture_cells(notebook, ["b", "a"], [fresh], ["new"]) == ["new", "b"]
    store.finish_turn()
    seen = []

    def restore(root: Path, record: NotebookRecord) -> str:
        seen.append(record)
        return "the file"

    CheckpointStore(SID, tmp_path).undo(cells=restore)  # read back from the disk
    cells = {c.id: c for c in seen[0].cells}
    # The cell as it was when the edit landed, where it stood then.
    assert cells["b"].cell == fresh and (cells["b"].position, cells["b"].previous) == (0, None)
    assert not cells["new"].existed


def test_a_turn_whose_only_cell_edit_was_refused_leaves_nothing_to_undo(tmp_path: Path) -> None:
    store = CheckpointStore(SID, tmp_path)
    store.begin_turn()
    cell = {"id": "b", "cell_type": "markdown", "source": "hi", "metadata": {}}
    store.capture_cells(tmp_path / "nb.ipynb", ["b"], [cell])
    store.forget_cells(tmp_path / "nb.ipynb", ["b"])
    store.finish_turn()
    with pytest.raises(NothingToUndoError):
        CheckpointStore(SID, tmp_path).undo(cells=lambda root, record: "the file")
