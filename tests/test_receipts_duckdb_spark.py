"""Receipts of DuckDB relations and Spark DataFrames the agent's code computes, through the
`python` tool: each way of computing one gives a `collect` receipt with the rows it truly
returned and its plan's last operation (a projection or sort looked through, a limit none); a
relation only built gets none and nothing of it runs (a counting Python UDF, Spark's job
count), a computed one runs as often as without the watch; the user's own cells are not watched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from larik_jupyter.frames.receipt_watch import ReceiptWatch
from tests.test_tools_kernel import kernel_env, run_python

USER_CELL = """
con = duckdb.connect()
con.create_function("udf", udf, ["BIGINT"], "BIGINT")
con.execute("create table orders as select * from (values (1), (2), (2), (3), (null)) t(k)")
con.execute("create table customers as select * from (values (2, 'x'), (2, 'y'), (3, 'z')) t(k, name)")
orders, customers = con.table("orders"), con.table("customers")
rel = con.sql("select o.k, udf(o.k) + udf(1) as u, name from orders o join customers c on o.k = c.k where udf(o.k) > 0")
"""
# Each route of computing a relation, as the agent's code writes it.
ROUTES = ("df", "fetchdf", "to_df", "pl", "to_arrow_table", "fetchall", "fetchnumpy", "to_dicts")
SETTINGS = "select current_setting('enable_optimizer'), current_setting('explain_output')"


def _user_namespace() -> dict[str, Any]:
    calls: list[int] = []

    def udf(x: int) -> int:
        calls.append(x)
        return x

    ns: dict[str, Any] = {"duckdb": duckdb, "udf": udf, "calls": calls}
    exec(USER_CELL, ns)  # the user's own cell: builds, computes nothing
    return ns


def _found(result: Any) -> list[tuple[str | None, str, str | None, int]]:
    return [(r.variable, r.library, r.last_operation, r.rows_out) for r in result.receipts]


def test_each_way_of_computing_a_relation_says_its_rows_and_computes_nothing_more(tmp_path: Path) -> None:
    ns = _user_namespace()
    for _ in range(2):  # one run of the query without the watch (the first also binds it again)
        ns["calls"].clear()
        ns["rel"].df()
    bare = len(ns["calls"])
    ns["calls"].clear()
    env = kernel_env(tmp_path, ns)
    result = run_python(env, "\n".join(f"r_{route} = rel.{route}()" for route in ROUTES))
    assert len(ns["calls"]) == len(ROUTES) * bare  # each ran the query once; reading the plan ran no UDF
    rows = 5  # order 2 matches customers twice, twice over; order 3 once
    assert all(len(ns[f"r_{route}"]) == rows for route in ROUTES if route != "fetchnumpy")
    assert len(ns["r_fetchnumpy"]["k"]) == rows
    # A list or dict of rows cannot be named by identity: its receipt names the relation only.
    named = [f"r_{route}" if route not in ("fetchall", "fetchnumpy", "to_dicts") else None for route in ROUTES]
    assert _found(result) == [(name, "duckdb", "filter", rows) for name in named]  # `WHERE` after the join
    assert ("r_df = rel computed (lazy, its last step a filter): 5 rows; not counted: rows in "
            "(counting them would compute the lazy inputs)") in result.content
    assert ns["con"].sql(SETTINGS).fetchall() == [(True, "PHYSICAL_ONLY")]  # the connection as it was
    # Computing without returning rows (a count, a stream) or the library's own fetches: none.
    assert run_python(env, "n = len(rel)\nreader = rel.arrow()\nsize = rel.shape").receipts == []


def test_a_relation_only_built_gets_no_receipt_and_runs_nothing(tmp_path: Path) -> None:
    ns = _user_namespace()
    ns["calls"].clear()  # what binding `rel` folded (`udf(1)`)
    result = run_python(kernel_env(tmp_path, ns), (
        "j = orders.join(customers, 'k')\nkept = orders.filter('udf(k) > 1')\n"
        "per_k = orders.aggregate('k, sum(udf(k))', 'k')\ns = con.sql('select udf(k) from orders where udf(k) > 1')"
    ))
    assert result.receipts == [] and ns["calls"] == []


@pytest.mark.parametrize(("code", "last", "rows"), [
    ("con.sql('select * from orders left join customers using (k) order by k')", "join", 7),
    ("orders.join(customers, 'k').project('name')", "join", 5),  # a projection over a join: the join
    ("orders.project('k + 1 as j').filter('j > 2')", "filter", 3),  # the steps read as named subqueries
    ("con.sql('with j as (select * from orders join customers using (k)) select * from j where name <> \\'x\\'')",
     "filter", 3),
    ("con.sql('with j as (select * from orders join customers using (k)) select * from j')", "join", 5),
    ("con.sql('select k, count(*) n from orders group by k')", "groupby", 4),
    ("con.sql('select k, count(*) n from orders group by k having count(*) > 1')", "filter", 1),
    ("orders.distinct()", "drop_duplicates", 4),
    ("orders.union(customers.project('k'))", "concat", 8),
    ("con.sql('select k from orders union select k from customers')", "drop_duplicates", 4),
    ("con.sql('select * from orders join customers using (k) limit 2')", None, 2),  # a limit: no receipt
    ("con.sql('select k from orders except select k from customers')", None, 2),
    ("con.sql('select k, row_number() over () from orders')", None, 5),
])
def test_a_relations_last_operation_is_read_from_its_plan(tmp_path: Path, code: str, last: str | None,
                                                          rows: int) -> None:
    ns = _user_namespace()
    result = run_python(kernel_env(tmp_path, ns), f"got = ({code}).df()")
    assert len(ns["got"]) == rows
    assert _found(result) == ([("got", "duckdb", last, rows)] if last else [])


def test_the_users_own_cells_are_not_watched_and_find_the_methods_as_they_were(tmp_path: Path) -> None:
    ns = _user_namespace()
    codes = {name: vars(duckdb.DuckDBPyRelation)[name].__code__ for name in ROUTES}
    assert run_python(kernel_env(tmp_path, ns), "got = rel.df()").receipts != []
    assert {name: vars(duckdb.DuckDBPyRelation)[name].__code__ for name in ROUTES} == codes
    with ReceiptWatch(lambda v: "") as watch:
        pass
    exec("mine = rel.df()", ns)  # the user's own cell, after the call: not watched
    assert watch.receipts(lambda v: None) == []


def _jobs(spark: Any) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


def test_spark_collect_to_pandas_and_to_arrow_say_their_rows_and_run_no_job_of_their_own(
    spark: Any, tmp_path: Path
) -> None:
    from pyspark.sql.classic.dataframe import DataFrame

    orders = spark.createDataFrame([(1,), (2,), (2,), (3,), (None,)], "k int")
    customers = spark.createDataFrame([(2, "x"), (2, "y"), (3, "z")], "k int, name string")
    ns: dict[str, Any] = {"orders": orders, "customers": customers}
    env = kernel_env(tmp_path, ns)
    jobs = _jobs(spark)
    built = run_python(env, (
        "j = orders.join(customers, 'k')\nkept = orders.filter('k > 1')\nper_k = orders.groupBy('k').count()\n"
        "names = j.select('name')\nboth = orders.union(customers.select('k'))\nfew = j.limit(2)"
    ))
    assert built.receipts == [] and _jobs(spark) == jobs
    code = "rows = j.collect()\nkept_pd = kept.toPandas()\nper_k_t = per_k.toArrow()\nn = names.collect()\nb = both.toPandas()\nf = few.collect()"
    for _ in range(2):  # the same computations without the watch, the second once Spark is warm
        jobs = _jobs(spark)
        exec(code, dict(ns))
    bare = _jobs(spark) - jobs
    jobs = _jobs(spark)
    result = run_python(env, code)
    assert _jobs(spark) - jobs == bare
    assert (len(ns["rows"]), len(ns["kept_pd"]), ns["per_k_t"].num_rows, len(ns["n"]), len(ns["f"])) == (5, 3, 4, 5, 2)
    assert _found(result) == [
        (None, "spark", "join", 5), ("kept_pd", "spark", "filter", 3), ("per_k_t", "spark", "groupby", 4),
        (None, "spark", "join", 5), ("b", "spark", "concat", 8),  # the select over the join is the join's; the limit none
    ]
    assert not hasattr(DataFrame.collect, "__wrapped__") and DataFrame.collect.__code__.co_filename.endswith("dataframe.py")
