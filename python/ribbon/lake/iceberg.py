"""ribbon.lake for Apache Iceberg tables (PyIceberg): the data-skipping index stored the way
Iceberg stores statistics, a blob in a Puffin file registered for a snapshot, and PyIceberg's
own scan plan pruned by it (docs/lake.md, "Iceberg tables").

>>> from ribbon.lake import iceberg
>>> iceberg.build_index(table, "user_id")               # the current snapshot's data files
>>> iceberg.plan_files(table, "user_id", [42])          # PyIceberg's plan, less what cannot match
>>> iceberg.read(table, "user_id", [42])        # = table.scan(In("user_id", [42])).to_arrow()
>>> iceberg.update_index(table, "user_id")              # after appends: only the new files

The index is advisory, as for Parquet directories: a data file the index cannot answer for
(added after the indexed snapshot, changed, or read through a name mapping or default that
changed) is planned; a missing, foreign or corrupt index means PyIceberg's full plan with one
warning. The modules behind this facade: _iceberg_table (the table, its files, each file's
keys as PyIceberg reads them), _iceberg_build (build and update), _iceberg_commit (the
statistics commit), _iceberg_plan (finding the index, planning and reading), _iceberg_duckdb.
"""

from __future__ import annotations

try:
    import pyiceberg  # noqa: F401
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError("ribbon.lake.iceberg needs PyIceberg: pip install "
                      "'ribbon-filter[iceberg]'") from e

from ._iceberg_build import build_index, update_index
from ._iceberg_commit import commit_statistics
from ._iceberg_duckdb import duckdb_relation
from ._iceberg_plan import IcebergIndex, files_for_each, load_index, plan_files, read
from ._iceberg_table import BLOB_TYPE, INDEX_FORMAT
from ._iceberg_table import key_field as _field

from ._iceberg_rewrite import orphan_files
from ._iceberg_upsert import delete, upsert

__all__ = ["BLOB_TYPE", "INDEX_FORMAT", "IcebergIndex", "build_index", "commit_statistics",
           "delete", "duckdb_relation", "files_for_each", "load_index", "orphan_files",
           "plan_files", "read", "update_index", "upsert"]
