"""ribbon.lake.duckdb_relation: a DuckDB relation of a table's rows with the given keys,
scanning only the files the index (and the listing) says a read must open.

The relation is built from two parts, so that other table formats can reuse the second:
:func:`candidate_files` names the files (the advisory rule: unindexed and changed files too),
and :func:`_relation_over` makes ``read_parquet(files)`` semi-joined with the keys. An Iceberg
variant would take its files from the snapshot's scan plan instead (the tasks whose data file
the index names, plus those it does not know) and must also apply each task's delete files
before the semi join; a Parquet directory has none."""

from __future__ import annotations

import re
from typing import List, Optional, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from .._lakecore.index import plan_read, schema_files
from .._lakecore.schema import key_array, read_dataset
from .._lakecore.table import LakeError

# DuckDB reads every path it is given as a glob: a file whose name has one of these would
# read other files too (or none), so such names are refused rather than misread.
_DUCKDB_GLOB = re.compile(r"[*?\[\]{}]")


def _quoted(name: str) -> str:
    """A column name as a DuckDB identifier (any name: spaces, quotes, keywords)."""
    return '"' + name.replace('"', '""') + '"'


def _relation_over(con, paths: Sequence[str], column: str, keys: pa.Array,
                   columns: Optional[List[str]], hive: bool):
    """``read_parquet(paths, union_by_name=true)`` (a column a file lacks is null there,
    integer widths promote) semi-joined with ``keys`` on ``column``: DuckDB pushes the join's
    keys into the scan as a dynamic filter (row groups whose statistics exclude every key are
    skipped). The keys travel as an Arrow table, never as SQL text."""
    for path in paths:
        if _DUCKDB_GLOB.search(path):
            raise LakeError(f"{path}: DuckDB reads paths as globs, and this name has a glob "
                            "character (* ? [ ] { }); read it with ribbon.lake.read")
    rows = con.read_parquet(list(paths), union_by_name=True,
                            hive_partitioning=hive).set_alias("ribbon_rows")
    wanted = con.from_arrow(pa.table({"key": keys})).set_alias("ribbon_keys")
    matching = rows.join(wanted, f"ribbon_rows.{_quoted(column)} = ribbon_keys.key", how="semi")
    if columns is not None:
        matching = matching.project(", ".join(_quoted(c) for c in columns))
    return matching


def duckdb_relation(con, table, column: str, keys, index=None, columns: Optional[List[str]] = None,
                    *, partitioning: Optional[str] = None, verify_footers: bool = False,
                    filesystem: Optional[pafs.FileSystem] = None):
    """The rows of ``table`` whose ``column`` is one of ``keys``, as a DuckDB relation on
    ``con`` (a ``duckdb.DuckDBPyConnection``) over the files :func:`candidate_files` names:
    the same rows as ``read_parquet`` of every file (``union_by_name``) with ``column IN
    keys`` (in another order). ``columns``: the columns to keep (all by default).
    ``partitioning``: None or ``"hive"`` (``hive_partitioning``, as :func:`ribbon.lake.read`'s).
    With no candidate file, an empty relation of the table's columns. Paths are given to
    DuckDB as they are (a local table's absolute paths; a remote one's URIs need DuckDB's
    httpfs).

    ``table`` may be a PyIceberg table (``index`` then None: its index is the snapshot's
    statistics file): :func:`ribbon.lake.iceberg.duckdb_relation`."""
    if type(table).__module__.startswith("pyiceberg."):
        if index is not None:
            raise ValueError("an Iceberg table's index is its statistics file: index=None")
        from .iceberg import duckdb_relation as of_iceberg

        return of_iceberg(con, table, column, keys, columns=columns)
    if partitioning not in (None, "hive"):
        raise ValueError(f"partitioning must be None or 'hive', not {partitioning!r}")
    source, files, key_type = plan_read(table, column, keys, index,
                                        verify_footers=verify_footers, filesystem=filesystem)
    dataset = read_dataset(source, schema_files(source, files), column, key_type, partitioning)
    if not files:  # the unified columns and types, no rows (the first file may lack the column)
        empty = con.from_arrow(dataset.schema.empty_table())
        return empty.project(", ".join(_quoted(c) for c in columns)) if columns else empty
    # The key type unified over the files read: keys it cannot hold are left out (a miss).
    keys = key_array(keys, dataset.schema.field(column).type)
    return _relation_over(con, [source.uri(f) for f in files], column, keys, columns,
                          partitioning == "hive")
