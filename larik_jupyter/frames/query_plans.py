"""The last operation of a DuckDB relation's or a Spark DataFrame's plan, as written and without
running it, for the receipt of a computation the agent's code ran (`lazy_receipts.py`).

DuckDB: the relation's query (`sql_query()`) parsed, not bound (`json_serialize_sql`, on a
connection of this module's own: the user's is asked nothing). Binding folds constant
expressions (`udf(1) + k` calls the UDF) and the optimiser folds more, so a plan read through
`EXPLAIN` would call the user's Python UDFs; the parse tree calls none. Its last operation is
what SQL evaluates last: a limit (no kind), `DISTINCT`, `QUALIFY` and `HAVING`, a grouping or
an aggregate function, `WHERE`, then the `FROM`: a join, or a subquery or common table
expression followed into (the relation API writes each step as one). Spark: the DataFrame's
logical plan as written (`queryExecution().logical()`, a field of the plan already built: no
job runs); one reading a common table expression by name is not followed and gets no kind.

Operations that keep every row (a projection, a sort, a window, an alias) are looked through,
as polars' `WITH_COLUMNS` is; any other (a limit, a sample, a scan, an `EXCEPT`) has no kind."""

from __future__ import annotations

import functools
import json
from typing import Any

from larik_jupyter.frames.receipt import Kind

_SPARK_NODES: dict[str, Kind] = {
    "Join": "join", "Filter": "filter", "Aggregate": "groupby", "Deduplicate": "drop_duplicates",
    "UnresolvedDeduplicate": "drop_duplicates", "Distinct": "drop_duplicates", "Union": "concat",
}
_SPARK_KEEP_ROWS = ("Project", "Sort", "SubqueryAlias", "Window", "Repartition", "RepartitionByExpression", "UnresolvedWith")


def duckdb_last(relation: Any) -> Kind | None:
    """The receipt kind of a DuckDB relation's last operation that changes rows, None for another."""
    if not type(relation).__module__.startswith("duckdb"):
        return None
    [[text]] = _parser().execute("select json_serialize_sql(?)", [relation.sql_query()]).fetchall()
    parsed = json.loads(text)
    statements = [] if parsed.get("error") else parsed["statements"]
    return _query_kind(statements[0]["node"], {}) if len(statements) == 1 else None


@functools.cache
def _parser() -> Any:
    import duckdb

    return duckdb.connect()


@functools.cache
def _aggregates() -> frozenset[str]:
    """The names of DuckDB's aggregate functions (the parse tree does not tell them apart)."""
    rows = _parser().execute("select function_name from duckdb_functions() where function_type = 'aggregate'").fetchall()
    return frozenset(name for (name,) in rows)


def _query_kind(node: dict[str, Any], ctes: dict[str, Any]) -> Kind | None:
    """The kind of a parsed query's last operation (`ctes`: the common table expressions in scope)."""
    ctes = {**ctes, **{item["key"].lower(): item["value"]["query_node"] for item in node.get("cte_map", {}).get("map", [])}}
    for modifier in reversed(node.get("modifiers", [])):  # as applied: DISTINCT, ORDER BY, LIMIT
        if modifier["type"] == "DISTINCT_MODIFIER":
            return "drop_duplicates"
        if modifier["type"] != "ORDER_MODIFIER":
            return None
    if node["type"] == "SET_OPERATION_NODE":
        union = node.get("setop_type") in ("UNION", "UNION_BY_NAME")
        return None if not union else "concat" if node.get("setop_all") else "drop_duplicates"
    if node["type"] != "SELECT_NODE":
        return None
    if node.get("qualify") or node.get("having"):
        return "filter"
    if node.get("group_expressions") or node.get("aggregate_handling") == "FORCE_AGGREGATES" or _aggregating(node["select_list"]):
        return "groupby"
    if node.get("where_clause"):
        return "filter"
    return None if node.get("sample") else _table_kind(node.get("from_table") or {}, ctes)


def _table_kind(ref: dict[str, Any], ctes: dict[str, Any]) -> Kind | None:
    if ref.get("type") == "JOIN":
        return "join"
    if ref.get("type") == "SUBQUERY":
        return _query_kind(ref["subquery"]["node"], ctes)
    name = str(ref.get("table_name", "")).lower()
    if ref.get("type") == "BASE_TABLE" and not ref.get("schema_name") and name in ctes:
        # Its own name inside it is the table it is named after: a scope without it ends the walk.
        return _query_kind(ctes[name], {k: v for k, v in ctes.items() if k != name})
    return None


def _aggregating(expression: Any) -> bool:
    """Whether an expression calls an aggregate function (not as a window's, nor in a subquery)."""
    if isinstance(expression, list):
        return any(_aggregating(e) for e in expression)
    if not isinstance(expression, dict) or expression.get("class") in ("WINDOW", "SUBQUERY"):
        return False
    if expression.get("class") == "FUNCTION" and str(expression.get("function_name")).lower() in _aggregates():
        return True
    return any(_aggregating(v) for v in expression.values() if isinstance(v, (dict, list)))


def spark_last(frame: Any) -> Kind | None:
    """The receipt kind of a Spark DataFrame's last operation that changes rows, None for another."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is None or not type(frame).__module__.startswith("pyspark"):
        return None
    plan = jdf.queryExecution().logical()
    while plan.nodeName() in _SPARK_KEEP_ROWS and plan.children().size() == 1:
        plan = plan.children().head()
    return _SPARK_NODES.get(plan.nodeName())
