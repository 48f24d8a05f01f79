"""The egress policy holds for every eager and lazy frame library as it does for pandas (issue
52): `never`, `schema`, `stats` and `sample 2 mask email` on frames of each library, through
`%larik` against the wire fakes of both APIs: what is printed, a list derived from a frame in
one call and printed in the next, one the person's cell derived (the value index's net: an
eager frame's values are indexed whatever its library), a plot drawn from a derived frame. No canary in any request
byte; with the rules removed the canaries go (the made-false twin). Spark is in
`test_frames_spark.py`, on the one Spark session of that module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.frames_helpers import LIBRARIES, assert_leaked, assert_withheld, run

pytest.importorskip("polars", reason="polars is a test extra: pip install -e '.[test]'")
pytest.importorskip("duckdb", reason="duckdb is a test extra: pip install -e '.[test]'")
pytest.importorskip("dask.dataframe", reason="dask[dataframe] is a test extra: pip install -e '.[test]'")

NAMES = ["pandas", "polars", "pyarrow", "duckdb", "dask"]


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("name", NAMES)
def test_no_canary_of_any_library_leaves_by_any_route(
    name: str, kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = LIBRARIES[name]
    assert_withheld(lib, run(lib, kind, project, monkeypatch, rules=True))


@pytest.mark.parametrize("name", NAMES)
def test_without_the_rules_the_canaries_of_every_library_do_leave(
    name: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = LIBRARIES[name]
    assert_leaked(lib, run(lib, "anthropic", project, monkeypatch, rules=False))
