"""One frame layer for every data-frame library, over narwhals: which frame a value is
(`kinds`), its schema and shape from metadata (`schema`), what the egress policy reads of an
eager one (`reading`), its fingerprint's digest (`digest`), its copy for undo (`copies`), and a
DuckDB connection's tables, which narwhals does not reach (`duckdb_tables`).

pandas, polars (DataFrame, LazyFrame, Series), pyarrow (Table, RecordBatch, ChunkedArray),
DuckDB relations, Dask and PySpark frames (and modin, cuDF where narwhals takes them) go
through one interface. No frame library is imported here: a value can only be one of theirs
when its library is already loaded. A lazy frame is never computed: its schema comes from
metadata, its digest from its plan, and what would need its rows says so."""

from larik_jupyter.frames.kinds import Frame, duckdb_connection, frame_of, numpy_array

__all__ = ["Frame", "duckdb_connection", "frame_of", "numpy_array"]
