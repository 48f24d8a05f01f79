"""A DuckDB connection's tables as kernel state (narwhals does not reach them): what they hold,
a copy for undo, and putting the copy back.

Each base table of the connection's databases is summarised by its row count and a digest of
its rows (`sum(hash(row))`, computed by DuckDB, in no particular order), through a cursor of its
own (a second handle on the same database, so the user's connection and its pending results are
not touched); the egress value index reads the first rows of each (`table_heads`). Tables are copied as Arrow tables where pyarrow is loaded, else as rows; putting
a copy back replaces each table with its rows as they were (constraints and indexes are not
kept) and drops the tables made since."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.frames.digest import OverBudget

MAX_TABLES = 50  # tables of a connection looked at
SHOWN_TABLES = 3  # tables its shape names
_TABLES = (
    "select database_name, schema_name, table_name, estimated_size, column_count "
    "from duckdb_tables() where not internal and not temporary order by 1, 2, 3"
)


def _quoted(*parts: str) -> str:
    return ".".join('"' + part.replace('"', '""') + '"' for part in parts)


def tables(connection: Any) -> list[tuple[str, str, str, int, int]]:
    """(database, schema, table, estimated rows, columns) of the connection's base tables."""
    cursor = connection.cursor()
    try:
        return [tuple(row) for row in cursor.execute(_TABLES).fetchall()[:MAX_TABLES]]
    finally:
        cursor.close()


def _label(found: list[tuple[str, str, str, int]]) -> str:
    """`table orders 1,000 rows`, the first `SHOWN_TABLES` of them, then how many more."""
    shown = [f"table {name} {rows:,} rows" for _, _, name, rows in found[:SHOWN_TABLES]]
    more = len(found) - SHOWN_TABLES
    return ", ".join(shown) + (f", {more} more tables" if more > 0 else "") if shown else "no tables"


def tables_label(connection: Any) -> str:
    """The connection's shape as shown: `table orders 1,000 rows`."""
    cursor = connection.cursor()
    try:
        return _label([
            (d, s, n, int(cursor.execute(f"select count(*) from {_quoted(d, s, n)}").fetchone()[0]))
            for d, s, n, _, _ in tables(connection)
        ])
    finally:
        cursor.close()


def contents(connection: Any, budget: int) -> tuple[str, int]:
    """A text that changes with any of the connection's tables' rows, and about how many bytes
    DuckDB read to make it; raises `OverBudget` before reading more than `budget` bytes."""
    size = size_of(connection)
    if size > budget:
        raise OverBudget(f"its tables are over the {budget >> 20} MB fingerprint budget")
    cursor = connection.cursor()
    try:
        digests = []
        for database, schema, name, _, _ in tables(connection):
            rows, total = cursor.execute(f"select count(*), sum(hash(t)::hugeint) from {_quoted(database, schema, name)} t").fetchone()
            digests.append(f"{database}.{schema}.{name}:{rows}:{total}")
        return "|".join(digests), size
    finally:
        cursor.close()


def table_heads(connection: Any, limit: int) -> Iterator[tuple[str, list[object], bool]]:
    """(`table.column`, distinct values of its first `limit` rows, whether they are mostly
    different) for each column of each table (of at most `SHOWN_TABLES` × 10 tables): what the
    egress value index reads of a restricted connection."""
    cursor = connection.cursor()
    try:
        for database, schema, name, _, _ in tables(connection)[: SHOWN_TABLES * 10]:
            relation = cursor.table(_quoted(database, schema, name)).limit(limit)
            rows = relation.fetchall()
            for index, column in enumerate(relation.columns):
                present = [row[index] for row in rows if row[index] is not None]
                items = list(dict.fromkeys(present))
                yield f"{name}.{column}", items, len(items) * 2 >= max(len(present), 1)
    finally:
        cursor.close()


@dataclass
class TablesCopy:
    """The tables of `connection` as they were: by qualified name, an Arrow table or (columns
    with their types, rows)."""

    connection: Any
    saved: dict[tuple[str, str, str], Any] = field(default_factory=dict)


def copy_tables(connection: Any) -> TablesCopy:
    """A copy of every base table of `connection`."""
    copied = TablesCopy(connection)
    cursor = connection.cursor()
    arrow = "pyarrow" in sys.modules
    try:
        for database, schema, name, _, _ in tables(connection):
            relation = cursor.table(_quoted(database, schema, name))
            if arrow:
                copied.saved[(database, schema, name)] = relation.to_arrow_table()
            else:
                columns = list(zip(relation.columns, map(str, relation.types), strict=True))
                copied.saved[(database, schema, name)] = (columns, relation.fetchall())
        return copied
    finally:
        cursor.close()


def put_back(copy: TablesCopy) -> Any:
    """Put the tables of `copy` back into its connection (dropping tables made since); returns
    the connection."""
    cursor = copy.connection.cursor()
    try:
        for database, schema, name, _, _ in tables(copy.connection):
            if (database, schema, name) not in copy.saved:
                cursor.execute(f"drop table {_quoted(database, schema, name)}")
        for key, saved in copy.saved.items():
            target = _quoted(*key)
            if isinstance(saved, tuple):
                columns, rows = saved
                cursor.execute(f"create or replace table {target} ({', '.join(f'{_quoted(c)} {t}' for c, t in columns)})")
                if rows:
                    cursor.executemany(f"insert into {target} values ({', '.join('?' for _ in columns)})", rows)
            else:
                cursor.register("larik_undo_copy", saved)
                try:
                    cursor.execute(f"create or replace table {target} as select * from larik_undo_copy")
                finally:
                    cursor.unregister("larik_undo_copy")
        return copy.connection
    finally:
        cursor.close()


def size_of(connection: Any) -> int:
    """About the bytes a copy of the connection's tables takes (eight a cell)."""
    return sum(int(rows) * max(int(width), 1) * 8 for _, _, _, rows, width in tables(connection))
