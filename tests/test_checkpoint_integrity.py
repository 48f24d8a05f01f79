"""Damaged snapshots, crash leftovers, failing captures, and kill -9 at random points."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CaptureError, CheckpointStore, NothingToUndoError

SID = "20250101-120000-f00d00"


def one_turn(root: Path) -> tuple[CheckpointStore, Path]:
    f = root / "a.txt"
    f.write_bytes(b"original bytes")
    store = CheckpointStore(SID, root)
    turn = store.begin_turn()
    store.capture(f)
    f.write_bytes(b"agent edit")
    return store, paths.checkpoints_dir(SID) / str(turn)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("missing", "its snapshot blob 0.bin is missing"),
        ("truncated", "its snapshot is 3 bytes instead of 14 (truncated or replaced)"),
        ("altered", "its snapshot no longer matches its SHA-256 (altered on disk)"),
    ],
)
def test_damaged_blob_is_refused_not_restored(tmp_path: Path, damage: str, reason: str) -> None:
    store, turn_dir = one_turn(tmp_path)
    blob = turn_dir / "0.bin"
    if damage == "missing":
        blob.unlink()
    elif damage == "truncated":
        blob.write_bytes(b"ori")
    else:
        blob.write_bytes(b"ORIGINAL BYTES")
    result = store.undo()
    assert result.refused == [("a.txt", f"was not restored because {reason}")]
    assert (tmp_path / "a.txt").read_bytes() == b"agent edit"
    assert sorted(os.listdir(tmp_path)) == ["a.txt"], "no temporary file is left behind"
    assert store.turns(), "the snapshot is kept"


def test_stray_temp_files_are_ignored_and_cleaned(tmp_path: Path) -> None:
    store, turn_dir = one_turn(tmp_path)
    (turn_dir / ".tmp-deadbeef0000").write_bytes(b"half a manifest {")
    (turn_dir / "7.bin").write_bytes(b"orphan blob from a crashed capture")
    (turn_dir.parent / "99").mkdir()  # a turn whose manifest never got committed
    (turn_dir.parent / "99" / "0.bin").write_bytes(b"x")
    reopened = CheckpointStore(SID, tmp_path)
    assert [t.turn for t in reopened.turns()] == [1]
    assert sorted(os.listdir(turn_dir)) == ["0.bin", "manifest.json"]
    assert sorted(os.listdir(turn_dir.parent)) == ["1"]
    assert reopened.undo().ok
    assert (tmp_path / "a.txt").read_bytes() == b"original bytes"
    del store


def test_a_crashed_captures_blob_under_the_next_name_is_replaced_not_restored(
    tmp_path: Path,
) -> None:
    store, turn_dir = one_turn(tmp_path)
    # Blobs are written under their final name; a capture killed mid-copy leaves one that
    # no manifest names. The next capture of the turn takes that name over.
    (turn_dir / "1.bin").write_bytes(b"torn bytes of a killed capture")
    b = tmp_path / "b.txt"
    b.write_bytes(b"b before")
    store.capture(b)
    b.write_bytes(b"b after")
    assert (turn_dir / "1.bin").read_bytes() == b"b before"
    assert store.undo().ok
    assert b.read_bytes() == b"b before"
    assert (tmp_path / "a.txt").read_bytes() == b"original bytes"


def test_a_dropped_snapshot_whose_removal_was_cut_short_is_ignored_and_cleaned(
    tmp_path: Path,
) -> None:
    store, turn_dir = one_turn(tmp_path)
    # What an undo leaves when its process dies after the drop commit (the rename) but
    # before the background removal finished.
    turn_dir.rename(turn_dir.parent / ".tmp-0123456789ab")
    assert store.turns() == []
    with pytest.raises(NothingToUndoError):
        store.undo()
    assert os.listdir(turn_dir.parent) == []


def test_unreadable_manifest_is_reported_by_undo(tmp_path: Path) -> None:
    store, turn_dir = one_turn(tmp_path)
    (turn_dir / "manifest.json").write_text("{not json")
    from larik_jupyter.checkpoint.store import CheckpointError

    with pytest.raises(
        CheckpointError, match=r"Cannot undo turn 1: .*manifest.json is not a valid manifest"
    ):
        store.undo()


def _make_unwritable(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # root ignores permission bits; the immutable flag stops it too
        subprocess.run(["chattr", "+i", str(directory)], check=True)
    else:
        directory.chmod(0o555)


def _make_writable(directory: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(directory)], check=True)
    directory.chmod(0o755)


def test_capture_into_read_only_checkpoint_dir_refuses_and_leaves_target(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    f = root / "a.txt"
    f.write_bytes(b"keep me")
    session_dir = paths.checkpoints_dir(SID)
    _make_unwritable(session_dir)
    try:
        store = CheckpointStore(SID, root)
        store.begin_turn()
        with pytest.raises(
            CaptureError, match=rf"Could not save a checkpoint of {f} in {session_dir}"
        ):
            store.capture(f)
    finally:
        _make_writable(session_dir)
    assert f.read_bytes() == b"keep me"
    assert store.turns() == []


def test_capture_failing_for_lack_of_space_refuses_the_write(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the blob write fail mid-copy, as a full disk would."""
    root = tmp_path / "proj"
    root.mkdir()
    f = root / "big.bin"
    f.write_bytes(os.urandom(64 * 1024))
    program = f"""
import resource, signal, sys
from pathlib import Path
from larik_jupyter.checkpoint.store import CaptureError, CheckpointStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
store = CheckpointStore({SID!r}, Path({str(root)!r}))
store.begin_turn()
target = Path({str(f)!r})
try:
    store.capture(target)
except CaptureError as exc:
    print(exc)
    sys.exit(0)
target.write_bytes(b"overwritten")
sys.exit(1)
"""
    before = f.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=os.environ.copy()
    )
    assert done.returncode == 0, done.stderr
    assert "Could not save a checkpoint" in done.stdout and "File too large" in done.stdout
    assert f.read_bytes() == before
    assert CheckpointStore(SID, root).turns() == []
    assert os.listdir(paths.checkpoints_dir(SID)) == []


_WORKER = """
import os, sys
from pathlib import Path
from larik_jupyter.checkpoint.store import CheckpointStore, NothingToUndoError
root = Path(sys.argv[1])
store = CheckpointStore(sys.argv[2], root)
print("ready", flush=True)
for round_ in range(1000):
    store.begin_turn()
    names = [root / f"f{i}.txt" for i in range(8)] + [root / f"new{round_ % 3}.txt"]
    for path in names:
        store.capture(path)
        path.write_bytes(os.urandom(2048) + str(round_).encode())
    if round_ % 2:
        try:
            store.undo()
        except NothingToUndoError:
            pass
"""


def test_kill_9_mid_capture_or_restore_never_corrupts(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    for i in range(8):
        (root / f"f{i}.txt").write_bytes(b"seed %d" % i)
    rng = random.Random(1234)
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(root), SID],
            stdout=subprocess.PIPE,
            env=os.environ.copy(),
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        for turn_dir in sorted(paths.checkpoints_dir(SID).glob("[0-9]*")):
            manifest = turn_dir / "manifest.json"
            if manifest.exists():
                data = json.loads(manifest.read_bytes())
                assert all((turn_dir / r["blob"]).is_file() for r in data["files"] if r.get("blob"))
        store = CheckpointStore(SID, root)
        if store.turns():
            result = store.undo()
            assert result.ok, result.refused
        assert not [n for n in os.listdir(root) if n.startswith(".larik-undo-")]
