"""DuckDB over an Iceberg table's candidate files: those DuckDB can read as PyIceberg does
through ``read_parquet``, the others through PyIceberg, handed to DuckDB as Arrow."""

from __future__ import annotations

from typing import Dict, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ._iceberg_plan import _candidates, _index_or_warning, _key_list, _scan, snapshot_tasks
from ._iceberg_table import key_field

def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_FILE_SCHEMAS: Dict[str, pa.Schema] = {}


def _parquet_matches(task, io, projection, indexed_field) -> bool:
    """Whether DuckDB can read this task's file by name as PyIceberg reads it: a local file,
    no delete files, every projected field there under its current name and field id."""
    path = task.file.file_path
    if task.delete_files or not path.startswith("file://") or any(c in path for c in "*?[]{}"):
        return False
    schema = _FILE_SCHEMAS.get(path)
    if schema is None:  # a data file never changes: its footer is read once
        with io.new_input(path).open() as f:
            schema = pq.ParquetFile(f).schema_arrow
        if len(_FILE_SCHEMAS) > 4096:
            _FILE_SCHEMAS.clear()
        _FILE_SCHEMAS[path] = schema
    for field in list(projection.fields) + [indexed_field]:
        index = schema.get_field_index(field.name)
        if index < 0 or (schema.field(index).metadata or {}).get(b"PARQUET:field_id") != str(
                field.field_id).encode():
            return False
    return True


def duckdb_relation(con, table, column: str, keys, columns: Optional[Sequence[str]] = None,
                    snapshot_id: Optional[int] = None):
    """The rows of :func:`read` as a DuckDB relation on ``con``: the candidate files of
    :func:`plan_files` whose Parquet columns are the table's (same names and field ids, local,
    no delete files) read by DuckDB's ``read_parquet``, semi-joined with the keys (which
    DuckDB pushes into the scan); the other tasks (delete files, files written before a
    rename or an added column, remote files) read by PyIceberg and handed to DuckDB as Arrow.
    The same rows as DuckDB's full scan of the snapshot, in another order."""
    from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow

    keys = _key_list(keys)
    scan = _scan(table, column, keys, snapshot_id, columns)
    projection = scan.projection()
    index = _index_or_warning(table, column, snapshot_id)
    if index is None:
        tasks = list(scan.plan_files())
    else:  # as read: the snapshot planned once, pruned by the index
        tasks = _candidates(index, keys, snapshot_tasks(table, snapshot_id))
    names = ", ".join(_quoted(f.name) for f in projection.fields)
    indexed_field = table.schema().find_field(column)
    direct = [t for t in tasks if _parquet_matches(t, scan.io, projection, indexed_field)]
    others = [t for t in tasks if t not in direct]
    arrow_schema = schema_to_pyarrow(projection, include_field_ids=False)
    relation = None
    if others or not direct:  # what DuckDB cannot read as PyIceberg does, through PyIceberg
        rows = (ArrowScan(scan.table_metadata, scan.io, projection, scan.row_filter,
                          scan.case_sensitive).to_table(others) if others
                else arrow_schema.empty_table())
        relation = con.from_arrow(rows.cast(arrow_schema)).project(names)
    if direct:
        _, arrow_type, _ = key_field(table, column)
        rows = con.read_parquet([t.file.file_path[len("file://"):] for t in direct])
        with_key = names if column in projection.column_names else f"{names}, {_quoted(column)}"
        rows = rows.project(with_key).set_alias("ribbon_rows")
        wanted = con.from_arrow(pa.table({"key": pa.array(keys, type=arrow_type)}))
        matching = rows.join(wanted.set_alias("ribbon_keys"),
                             f"ribbon_rows.{_quoted(column)} = ribbon_keys.key", how="semi")
        matching = matching.project(names)
        relation = matching if relation is None else matching.union(relation)
    return relation
