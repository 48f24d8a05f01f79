"""The egress policy holds for every eager and lazy frame library as it does for pandas (issue
52): `never`, `schema`, `stats` and `sample 2 mask email` on frames of each library, through
`%larik` against the wire fakes of both APIs: what is printed, a list derived from a frame in
one call and printed in the next, one the person's cell derived (the value index's net: an
eager frame's values are indexed whatever its library), a plot drawn from a derived frame. No canary in any request
byte; with the rules removed the canaries go (the made-false twin). Spark is in
`test_frames_spark.py`, on the one Spark session of that module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, tool, wire_model
from tests.frames_helpers import KEY, LIBRARIES, assert_leaked, assert_withheld, run
from tests.widget_helpers import larik, shell_with_magics

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


TABLE_CANARY = "tab.canary.8812@ex.com"
CONNECTION = f"""
import duckdb
con = duckdb.connect()
con.execute("create table people as select * from (values ('{TABLE_CANARY}', 1), ('b.x@ex.com', 2)) t(email, n)")
tvals = [r[0] for r in con.sql("select email from people").fetchall()]
"""


@pytest.mark.parametrize("rules", [True, False])
def test_a_restricted_duckdb_connections_tables_are_indexed(
    rules: bool, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list the person's cell made from a restricted connection's table, printed by the
    agent: withheld by the value index, which reads the connection's tables; the twin without
    the rule sees it go."""
    steps: list[Any] = [[tool("python", code="print(tvals)")], [tool("inspect_variables")], done()]
    with ScriptedHTTPServer([{"content": s} for s in steps], api_key=KEY) as server:
        shell, _ = shell_with_magics(project, wire_model("anthropic", server, KEY, monkeypatch))
        assert shell.run_cell(CONNECTION).success
        if rules:
            larik(shell, "/egress con schema")
        larik(shell, "print the list")
        sent = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests)
    assert "con: _duckdb.DuckDBPyConnection, table people 2 rows" in sent
    if rules:
        assert TABLE_CANARY not in sent and "[withheld: con.people.email — policy schema" in sent
    else:
        assert TABLE_CANARY in sent


def test_a_pandas_frame_with_a_repeated_column_name_is_still_indexed_and_viewed() -> None:
    """narwhals takes unique column names only; a repeated one is told apart by its position."""
    import pandas as pd

    from larik_jupyter.egress.policy import parse_policy
    from larik_jupyter.egress.value_forms import value_forms
    from larik_jupyter.egress.views import value_view

    df = pd.DataFrame([["dup.canary@ex.com", "ab12345"]], columns=["a", "a"])
    assert ("dup.canary@ex.com", "df.a (0)") in list(value_forms("df", df))
    view = value_view("df", df, parse_policy("sample 1"))
    assert "dup.canary@ex.com" in view and "ab12345" in view and "a (1)" in view
    masked = value_view("df", df, parse_policy("sample 1 mask a"))  # both columns named a
    assert "dup.canary@ex.com" not in masked and "ab12345" not in masked
