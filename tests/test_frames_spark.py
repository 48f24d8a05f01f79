"""Spark frames under the egress policy and never computed by larik (issue 52), on one local
SparkSession (`conftest.spark`: it takes seconds to start): the egress scenario of
`frames_helpers` through both wire fakes and its made-false twin, and Spark's status tracker
counting no job across turns under every policy that do not compute the frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.frames_helpers import LIBRARIES, assert_leaked, assert_withheld, run
from tests.widget_helpers import larik, shell_with_magics

pytest.importorskip("pyspark", reason="pyspark is a test extra: pip install -e '.[test]'")
KEY = "sk-spark-test"


def _jobs(spark: Any) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_no_canary_of_a_spark_frame_leaves(
    spark: Any, kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = LIBRARIES["spark"]
    assert_withheld(lib, run(lib, kind, project, monkeypatch, rules=True, names={"spark": spark}))


def test_without_the_rules_the_spark_canaries_do_leave(spark: Any, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = LIBRARIES["spark"]
    assert_leaked(lib, run(lib, "anthropic", project, monkeypatch, rules=False, names={"spark": spark}))


def test_no_spark_job_runs_under_any_policy_until_a_call_computes(
    spark: Any, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policies = ["never", "schema", "stats", "sample 2 mask email"]
    quiet: list[Any] = [
        [tool("python", code="x = 1 + 1")], [tool("inspect_variables")],
        [tool("python", code="print(type(sdf))")], done(),
    ]
    steps = [*quiet * len(policies), [tool("python", code="sdf = sdf.filter('n > 0')")], done(),
             [tool("python", code="print(sdf.count())")], done()]
    with ScriptedHTTPServer([{"content": s} for s in steps], api_key=KEY) as server:
        shell, _ = shell_with_magics(project, wire_model("anthropic", server, KEY, monkeypatch))
        shell.user_ns["spark"] = spark
        assert shell.run_cell("sdf = spark.createDataFrame([('a@ex.com', 1), ('b@ex.com', 2)], ['email', 'n'])").success
        jobs = _jobs(spark)
        for policy in policies:
            larik(shell, f"/egress sdf {policy}")
            larik(shell, "look")
            assert _jobs(spark) == jobs, policy
        capsys.readouterr()
        larik(shell, "filter it")
        assert "sdf: LazyFrame (not computed), rebound" in capsys.readouterr().out
        assert _jobs(spark) == jobs
        larik(shell, "count it")
        assert server.remaining == 0
    assert _jobs(spark) > jobs
