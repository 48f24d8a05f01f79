from __future__ import annotations

import os
import time
from pathlib import Path

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore, prune


def saved_turn(root: Path, sid: str, age_days: float) -> Path:
    f = root / f"{sid}.txt"
    f.write_bytes(b"x")
    store = CheckpointStore(sid, root)
    turn = store.begin_turn()
    store.capture(f)
    manifest = paths.checkpoints_dir(sid) / str(turn) / "manifest.json"
    then = time.time() - age_days * 86400
    os.utime(manifest, (then, then))
    return manifest.parent


def test_prune_deletes_old_turns_across_sessions_and_empty_dirs(tmp_path: Path) -> None:
    old = saved_turn(tmp_path, "20250101-000000-000001", age_days=10)
    fresh = saved_turn(tmp_path, "20250101-000000-000002", age_days=1)
    empty_slug = paths.sessions_root() / "home-ana-gone-12345678"
    empty_slug.mkdir(parents=True)
    long_ago = time.time() - 3600
    os.utime(empty_slug, (long_ago, long_ago))
    just_made = paths.sessions_root() / "home-ana-new-11111111"
    just_made.mkdir()  # a session is about to be created here: left alone
    kept_slug = paths.sessions_root() / "home-ana-proj-87654321"
    kept_slug.mkdir()
    (kept_slug / "20250101-000000-000002.jsonl").write_text("{}\n")
    report = prune(7)
    assert report.turns == [("20250101-000000-000001", 1)]
    assert report.bytes_freed > 0
    assert not old.exists() and not old.parent.exists()
    assert fresh.exists()
    assert not empty_slug.exists() and kept_slug.exists() and just_made.exists()
    assert old.parent in report.directories and empty_slug in report.directories


def test_prune_with_zero_days_deletes_every_turn(tmp_path: Path) -> None:
    a = saved_turn(tmp_path, "20250101-000000-00000a", age_days=0)
    report = prune(0)
    assert report.turns == [("20250101-000000-00000a", 1)]
    assert not a.parent.exists()


def test_prune_with_negative_days_keeps_everything(tmp_path: Path) -> None:
    a = saved_turn(tmp_path, "20250101-000000-00000b", age_days=10_000)
    report = prune(-1)
    assert report.turns == [] and report.directories == []
    assert a.exists()


def test_prune_without_any_data_is_a_no_op() -> None:
    assert prune(7).turns == []
