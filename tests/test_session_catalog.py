"""Listing, resolving and deleting sessions."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from session_helpers import make_session

from larik_jupyter import paths
from larik_jupyter.session.branch import fork
from larik_jupyter.session.catalog import (
    UnknownSessionError,
    delete,
    latest,
    list_sessions,
    resolve,
)
from larik_jupyter.session.store import Session, SessionLockedError


def _session_at(cwd: Path, stamp: str) -> Path:
    """A session whose id carries the given creation time."""
    made = make_session(cwd, 1)
    renamed = made.with_name(f"{paths.new_session_id(datetime.strptime(stamp, '%Y%m%d-%H%M%S'))}.jsonl")
    made.rename(renamed)
    return renamed


def test_list_sessions_newest_first_with_details(tmp_path: Path) -> None:
    old = _session_at(tmp_path, "20250101-090000")
    new = _session_at(tmp_path, "20260101-090000")
    branch = fork(old, 0)
    items = list_sessions(tmp_path)
    assert [i.id for i in items][-2:] == [new.stem, old.stem]
    assert items[0].id == branch.stem
    first = next(i for i in items if i.id == old.stem)
    assert first.first_prompt == "prompt 1"
    assert first.message_count == 4 and first.size == old.stat().st_size
    assert first.usage.input_tokens == 100 and first.cost is not None and first.time == "2025-01-01T09:00:00"
    assert items[0].fork_of == old.stem and items[0].fork_at == 0
    assert list_sessions(tmp_path / "elsewhere") == []


def test_latest_is_the_newest_session(tmp_path: Path) -> None:
    assert latest(tmp_path) is None
    _session_at(tmp_path, "20250101-090000")
    new = _session_at(tmp_path, "20260101-090000")
    found = latest(tmp_path)
    assert found is not None and found.id == new.stem


def test_resolve_ids_here_first_then_anywhere_and_paths(tmp_path: Path) -> None:
    here = make_session(tmp_path / "a", 1)
    there = make_session(tmp_path / "b", 1)
    assert resolve(here.stem, tmp_path / "a") == here
    assert resolve(there.stem, tmp_path / "a") == there
    assert resolve(str(there)) == there
    with pytest.raises(UnknownSessionError, match=r"No session with id 20200101-000000-abcdef; .*larik-jupyter ls"):
        resolve("20200101-000000-abcdef", tmp_path)
    with pytest.raises(UnknownSessionError, match="neither a session id"):
        resolve("nonsense")


def test_delete_removes_transcript_agents_trace_and_checkpoints(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    sid = path.stem
    (path.parent / f"{sid}-agents").mkdir()
    (path.parent / f"{sid}-agents" / "x.jsonl").write_text("{}\n")
    (path.parent / f"{sid}.trace" / "http").mkdir(parents=True)
    paths.checkpoints_dir(sid).mkdir(parents=True)
    keep = make_session(tmp_path, 1)
    delete(sid, tmp_path)
    leftovers = [p.name for p in path.parent.iterdir()]
    assert all(not name.startswith(sid) for name in leftovers)
    assert not paths.checkpoints_dir(sid).exists()
    assert keep.exists()


def test_delete_refuses_an_open_session(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    with Session.open(path):
        with pytest.raises(SessionLockedError):
            delete(path)
    assert path.exists()
