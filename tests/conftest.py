"""Every test gets its own data and config roots; the real home directory is never touched."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


JAVA = Path("/usr/lib/jvm/java-17-openjdk-amd64")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession for every Spark test of the run (it takes seconds to start)."""
    pytest.importorskip("pyspark", reason="pyspark is a test extra: pip install -e '.[test]'")
    if "JAVA_HOME" not in os.environ and JAVA.is_dir():
        os.environ["JAVA_HOME"] = str(JAVA)
    from pyspark.sql import SparkSession

    try:
        session = (
            SparkSession.builder.master("local[1]").appName("larik-frames")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
            .getOrCreate()
        )
    except Exception as exc:  # no Java runtime: Spark cannot run here
        pytest.skip(f"a local Spark session cannot start: {exc}")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
