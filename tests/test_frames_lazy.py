"""Lazy frames are never computed by larik (issue 52): a Dask frame, a polars LazyFrame and a
DuckDB relation, each counting its computations (a `map_partitions` function, a polars
`map_batches` function and a DuckDB Python function that each add one to a counter), under
every egress policy, across turns whose calls do not touch them: the counters stay at zero,
while their schema is shown, they are reported as `LazyFrame (not computed)`, and a change to
one is seen by its plan. A turn that does compute them moves the counters (the made-false
twin). Spark's counter (its status tracker) is in `test_frames_spark.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.widget_helpers import larik, shell_with_magics

pytest.importorskip("polars", reason="polars is a test extra: pip install -e '.[test]'")
pytest.importorskip("duckdb", reason="duckdb is a test extra: pip install -e '.[test]'")
pytest.importorskip("dask.dataframe", reason="dask[dataframe] is a test extra: pip install -e '.[test]'")

KEY = "sk-lazy-test"
CANARY = "lazy.canary.4471@ex.com"
POLICIES = ["never", "schema", "stats", "sample 2 mask email"]
LAZY = ["ddf", "lf", "rel"]
SETUP = f"""
import pandas as pd, polars as pl, duckdb, dask.dataframe as dd
_COUNT = {{"dask": 0, "polars": 0, "duckdb": 0}}
def _tick_dask(part):
    _COUNT["dask"] += 1
    return part
def _tick_polars(s):
    _COUNT["polars"] += 1
    return s
def _tick_duckdb(x: int) -> int:
    _COUNT["duckdb"] += 1
    return x
_data = pd.DataFrame({{"email": ["{CANARY}", "b@ex.com"], "n": [1, 2]}})
ddf = dd.from_pandas(_data, npartitions=1).map_partitions(_tick_dask, meta=_data.iloc[:0])
lf = pl.LazyFrame({{"email": ["{CANARY}", "b@ex.com"], "n": [1, 2]}}).with_columns(
    pl.col("n").map_batches(_tick_polars, return_dtype=pl.Int64))
con = duckdb.connect()
con.create_function("tick", _tick_duckdb)
rel = con.sql("select '{CANARY}' as email, tick(range::INTEGER) as n from range(2)")
"""
# A call of each turn that reads nothing lazy, one that inspects every variable, one that names
# the lazy frames (its output is withheld and their views sent); then a turn that changes each
# lazy frame by its plan (no computation either).
QUIET = [
    [tool("python", code="x = 1 + 1; print(x)")],
    [tool("inspect_variables")],
    [tool("python", code="print(type(ddf), type(lf), type(rel))")],  # names them, computes nothing
    done(),
]
CHANGE = [
    [tool("python", code="ddf['m'] = ddf['n'] + 1\nlf = lf.filter(pl.col('n') > 0)\nrel = rel.filter('n > 0')")],
    done(),
]
COMPUTE = [[tool("python", code="print(len(ddf.compute()), lf.collect().height, len(rel.fetchall()))")], done()]


def _sent(server: ScriptedHTTPServer, start: int) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests[start:])


def test_no_lazy_frame_is_computed_under_any_policy_and_computing_one_is_counted(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    steps: list[Any] = [*QUIET * len(POLICIES), *CHANGE, *COMPUTE]
    with ScriptedHTTPServer([{"content": s} for s in steps], api_key=KEY) as server:
        shell, _ = shell_with_magics(project, wire_model("anthropic", server, KEY, monkeypatch))
        assert shell.run_cell(SETUP).success
        count = shell.user_ns["_COUNT"]
        for policy in POLICIES:
            for name in LAZY:
                larik(shell, f"/egress {name} {policy}")
            start = len(server.requests)
            larik(shell, "look at the variables")
            sent = _sent(server, start)
            assert count == {"dask": 0, "polars": 0, "duckdb": 0}, policy
            assert CANARY not in sent
            assert "ddf: dask.DataFrame, LazyFrame (not computed), columns [email:" in sent or policy == "never"
            if policy == "stats":
                assert "ddf: LazyFrame (dask), shape not computed" in sent
                assert "its statistics would have to be computed, which larik never does" in sent
            if policy.startswith("sample"):
                assert "rel: LazyFrame (duckdb), shape not computed" in sent
                assert "its rows would have to be computed, which larik never does" in sent
        capsys.readouterr()
        larik(shell, "change them")
        changed = capsys.readouterr().out  # the turn as the magic shows it
        assert count == {"dask": 0, "polars": 0, "duckdb": 0}
        assert "ddf: LazyFrame (not computed), changed in place" in changed
        assert "lf: LazyFrame (not computed), rebound" in changed
        assert "rel: LazyFrame (not computed), rebound" in changed
        larik(shell, "now compute them")
        assert server.remaining == 0
    assert count["dask"] > 0 and count["polars"] > 0 and count["duckdb"] > 0
