"""Every test gets its own data and config roots; the real home directory is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.agent_helpers import MODEL_VARS

# The property tests draw the same examples on every run (a suite that is the gate must not
# pass or fail by chance); a bug they find is kept as an `@example` beside the test.
settings.register_profile("suite", derandomize=True, database=None, print_blob=True)
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def larik_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("larik-home")
    data = root / "data"
    config = root / "config"
    monkeypatch.setenv("LARIK_DATA_DIR", str(data))
    monkeypatch.setenv("LARIK_CONFIG_DIR", str(config))
    for var in MODEL_VARS:
        monkeypatch.delenv(var, raising=False)
    return {"data": data, "config": config}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory `proj` marked as a git checkout, under the test's tmp_path."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    return root
