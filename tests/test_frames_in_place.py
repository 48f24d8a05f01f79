"""Changes in place to eager frames of every library and to a DuckDB connection's tables
(issue 52), through `Agent` with a `KernelHost`: each polars in-place method and item
assignment is reported with its route, rolled back by protect mode (headless) and put back by
`/undo`; a table changed by SQL is reported on the connection (`con: … table orders 1,000 →
990 rows`), rolled back and undone the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent, KernelHost, PermissionAnswer, PermissionRequest
from larik_jupyter.session.variable_changes import VariableChange
from tests.agent_helpers import done, results_of, scripted, tool

pl = pytest.importorskip("polars", reason="polars is a test extra: pip install -e '.[test]'")
duckdb = pytest.importorskip("duckdb", reason="duckdb is a test extra: pip install -e '.[test]'")

# Each polars route: the code (through an alias, a route the code does not name), the report.
POLARS = [
    ("d.insert_column(0, pl.Series('z', [0, 0]))", "df: DataFrame 2×2 → 2×3, changed in place through the alias d"),
    ("d.replace_column(0, pl.Series('a', [7, 7]))", "df: DataFrame 2×2, changed in place through the alias d"),
    ("d.extend(pl.DataFrame({'a': [9], 'b': [9]}))", "df: DataFrame 2×2 → 3×2, changed in place through the alias d"),
    ("d.vstack(pl.DataFrame({'a': [9], 'b': [9]}), in_place=True)",
     "df: DataFrame 2×2 → 3×2, changed in place through the alias d"),
    ("d[0, 'a'] = 5", "df: DataFrame 2×2, changed in place through the alias d"),
]
SERIES = ("t = s\nt[0] = 5", "s: Series 2, changed in place through the alias t")
SQL = "con.execute('delete from orders where id < 10')"
SQL_LINE = "con: DuckDBPyConnection table orders 1,000 → 990 rows, changed in place"


def _polars() -> dict[str, Any]:
    return {"pl": pl, "df": pl.DataFrame({"a": [1, 2], "b": [3, 4]}), "s": pl.Series("s", [1, 2])}


def _duckdb() -> dict[str, Any]:
    con = duckdb.connect()
    con.execute("create table orders as select range as id, 'c' || range as email from range(1000)")
    return {"con": con}


def _state(ns: dict[str, Any]) -> object:
    if "con" in ns:
        return ns["con"].execute("select count(*), sum(id) from orders").fetchall()
    return ns["df"].rows(), ns["s"].to_list()


def _lines(agent: Agent) -> list[str]:
    (result,) = results_of(agent)
    return [VariableChange.model_validate(v).text() for v in result.variables or []]


CASES = [(f"d = df\n{code}", _polars, line) for code, line in POLARS] + [(SERIES[0], _polars, SERIES[1])] + [(SQL, _duckdb, SQL_LINE)]


@pytest.mark.parametrize(("code", "make", "line"), CASES)
def test_an_in_place_change_is_reported_and_undo_puts_it_back(
    project: Path, tmp_path: Path, code: str, make: Any, line: str
) -> None:
    ns = make()
    before = _state(ns)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True, host=KernelHost(ns))
    agent.run("change it")
    assert line in _lines(agent)
    assert _state(ns) != before
    (undone,) = agent.undo()
    assert _state(ns) == before, undone.variables_text()
    agent.close()


@pytest.mark.parametrize(("code", "make", "line"), CASES)
def test_protect_headless_rolls_an_in_place_change_back(
    project: Path, tmp_path: Path, code: str, make: Any, line: str
) -> None:
    ns = make()
    before = _state(ns)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()),
                  yes=True, host=KernelHost(ns), protect=True)
    agent.run("change it")
    assert _state(ns) == before, code
    (result,) = results_of(agent)
    assert result.is_error and "the user's variables are protected" in result.text()
    assert f"{line}, rolled back" in _lines(agent)
    agent.close()


def test_a_connection_whose_tables_were_not_copied_is_said_plainly_not_restorable(
    project: Path, tmp_path: Path
) -> None:
    ns = _duckdb()
    # Through a function the code calls with the connection's cursor: nothing names `con`.
    ns["run"] = lambda sql: ns["con"].execute(sql)
    code = "run('delete from orders where id < 10')"
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True, host=KernelHost(ns))
    agent.run("change it")
    (undone,) = agent.undo()
    assert undone.variables_text().startswith("could not restore: con (changed in place through run(), ")
    assert _state(ns)[0][0] == 990
    agent.close()


def test_a_large_arrow_backed_string_column_is_compared_by_its_buffers(project: Path, tmp_path: Path) -> None:
    """pandas' `str` columns are Arrow arrays: past the items pandas would hash one by one they
    are still compared (by their Arrow buffers), so a call that only reads one reports nothing,
    not "not compared", and a change to one item is seen."""
    pd = pytest.importorskip("pandas")
    ns: dict[str, Any] = {"s": pd.Series([f"id{i}" for i in range(2_100_000)], dtype="string[pyarrow]")}
    model = scripted(tmp_path, [tool("python", code="print(len(s))")], [tool("python", code="t = s\nt[5] = 'x'")], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("look, then change one")
    read, changed = results_of(agent)
    assert not read.variables and "not compared" not in read.text()
    lines = [VariableChange.model_validate(v).text() for v in changed.variables or []]
    assert "s: Series 2100000, changed in place through the alias t" in lines
    agent.close()


@pytest.mark.parametrize("code", ["df.insert_column(0, pl.Series('z', [0, 0]))",
                                  "df.vstack(pl.DataFrame({'a': [9], 'b': [9]}), in_place=True)"])
def test_protect_denies_a_polars_in_place_method_it_reads_in_the_code(project: Path, tmp_path: Path, code: str) -> None:
    ns = _polars()
    before = _state(ns)
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()),
                  yes=True, host=KernelHost(ns), protect=True)
    agent.run("change it")
    (result,) = results_of(agent)
    assert result.is_error and result.text().startswith("Permission denied") and "this code changes df" in result.text()
    assert _state(ns) == before
    agent.close()


def test_protect_with_a_front_end_asks_about_a_table_changed_by_sql(project: Path, tmp_path: Path) -> None:
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("deny")

    ns = _duckdb()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=SQL)], done()),
                  yes=True, host=KernelHost(ns), approver=approver, protect=True)
    agent.run("change it")
    assert [(r.ask, r.summary) for r in asked] == [("keep", "the code changed con")]
    assert f"#   {SQL_LINE}" in asked[0].detail
    assert _state(ns)[0][0] == 1000  # rolled back, as the person chose
    agent.close()
