"""A data-skipping index for Parquet tables: which data files may hold a key, before any is
opened (docs/lake.md).

An index is one filter set file (format version 7) whose groups are the table's data files,
named by their paths relative to the table root, every file listed (those without keys too),
and whose metadata section is a JSON document naming the table, the column, its type and, per
file, what detects change (size, modification time, the Parquet footer's length and a hash of
it, rows and nulls).

>>> ribbon.lake.build_index("lake/events/", "user_id", "events.user_id.ribbon")
>>> ribbon.lake.load_index("events.user_id.ribbon").files_for([42, 43])
>>> ribbon.lake.read("lake/events/", "user_id", [42], index="events.user_id.ribbon")

The first rule: the index is advisory. :func:`read` (and :func:`candidate_files`, and
``ribbon.spark.read_indexed``) lists the table when asked and reads every file the index does
not know or whose size or modification time changed; a missing, unreadable, corrupt or foreign
index means a full scan with one warning naming the reason. The answer is always a full
scan's.

``python -m ribbon.lake build TABLE --column C -o INDEX``, ``query INDEX KEY...``,
``update TABLE --column C -i INDEX``, ``info INDEX``.
"""

from ._build import IndexStats, build_index, update_index
from ._cli import main
from ._duckdb import duckdb_relation
from .._lakecore.index import FilesForEach, LakeIndex, candidate_files, load_index
from ._read import read
from .._lakecore.table import (INDEX_FORMAT, MAX_DELTAS, REBUILD_SHARE, IndexUnusable, LakeError, Table,
                     key_kind_of_type, key_kind_of_type_or_none, list_files, normalise,
                     open_table, relative_of_uri, spark_path)

# The modules, by concern: ribbon._lakecore's table (tables, their files, the facts an index
# records of each) and index (LakeIndex, load_index, candidate_files, files_for_each), below
# this package so that ribbon.spark's read_indexed imports them without importing
# ribbon.lake; _build (the local and Spark engines, build_index, update_index), _read (read),
# _duckdb (duckdb_relation), _cli (python -m ribbon.lake); iceberg (Iceberg tables, imported
# on its own: it needs PyIceberg). The private names start with "_" so that none shadows the
# function it defines (ribbon.lake.read is the function).
__all__ = [
    "INDEX_FORMAT", "MAX_DELTAS", "REBUILD_SHARE", "FilesForEach", "IndexStats", "IndexUnusable",
    "LakeError", "LakeIndex", "Table", "build_index", "candidate_files", "duckdb_relation",
    "key_kind_of_type", "key_kind_of_type_or_none", "list_files", "load_index", "main",
    "normalise", "open_table", "read", "relative_of_uri", "spark_path", "update_index",
]
