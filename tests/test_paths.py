from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from larik_jupyter import paths


def test_data_and_config_dirs_follow_overrides(larik_dirs: dict[str, Path]) -> None:
    assert paths.data_dir() == larik_dirs["data"]
    assert paths.config_dir() == larik_dirs["config"]


def test_xdg_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LARIK_DATA_DIR")
    monkeypatch.delenv("LARIK_CONFIG_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert paths.data_dir() == tmp_path / "d" / "larik"
    assert paths.config_dir() == tmp_path / "c" / "larik"


def test_home_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("LARIK_DATA_DIR", "LARIK_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.data_dir() == tmp_path / ".local/share/larik"
    assert paths.config_dir() == tmp_path / ".config/larik"


def test_cwd_slug_is_safe_stable_and_distinct() -> None:
    a = paths.cwd_slug("/home/u/a-b")
    b = paths.cwd_slug("/home/u/a/b")
    assert a != b
    assert a == paths.cwd_slug("/home/u/a-b")
    weird = paths.cwd_slug("/tmp/spaces and ünïcode/x:y")
    assert all(c.isalnum() or c in "._-" for c in weird)
    long1 = paths.cwd_slug("/x/" + "a" * 300 + "/one")
    long2 = paths.cwd_slug("/y/" + "a" * 300 + "/one")
    assert long1 != long2 and len(long1) < 80


def test_session_id_shape() -> None:
    sid = paths.new_session_id()
    assert paths.is_session_id(sid)
    assert not paths.is_session_id("../etc/passwd")


def test_project_root_is_git_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert paths.project_root(sub) == tmp_path
    digest = hashlib.sha256(os.path.realpath(tmp_path).encode()).hexdigest()[:12]
    assert paths.project_id(tmp_path) == f"{tmp_path.name}-{digest}"
    (tmp_path / "link").symlink_to(tmp_path)
    assert paths.project_id(tmp_path / "link") == paths.project_id(tmp_path)  # the real path counts
