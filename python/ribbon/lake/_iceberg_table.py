"""The Iceberg table as ribbon.lake.iceberg sees it: a snapshot, the column's field id, the
snapshot's live data files, and each data file's keys found exactly as PyIceberg's reader
finds them (docs/lake.md, "Iceberg tables": "Which keys a data file holds")."""

from __future__ import annotations

import hashlib
import json
from typing import Dict, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import _ribbon
from .._lakecore.table import LakeError, key_kind_of_type
from ._build import _key_column

#: The blob type of a ribbon index in a Puffin file, and the format of its metadata JSON.
BLOB_TYPE = "ribbon-filter-set-v1"
INDEX_FORMAT = "ribbon.lake.iceberg/2"


def snapshot_or_none(table, snapshot_id: Optional[int]):
    """The snapshot (the current one by default); None for a table with no snapshot yet;
    LakeError for a snapshot id the table does not have."""
    if snapshot_id is None:
        return table.current_snapshot()
    snapshot = table.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise LakeError(f"table {table_name(table)} has no snapshot {snapshot_id}")
    return snapshot


def snapshot_of(table, snapshot_id: Optional[int]):
    snapshot = snapshot_or_none(table, snapshot_id)
    if snapshot is None:
        raise LakeError(f"table {table_name(table)} has no snapshot")
    return snapshot


def table_name(table) -> str:
    return ".".join(table.name()) if hasattr(table, "name") else str(table)


def key_field(table, column: str):
    """(field id, Arrow type, key kind) of ``column`` in the table's current schema (field
    ids outlive renames: a snapshot written under another name is read by the same id);
    LakeError for a missing, nested or non-key column."""
    schema = table.schema()
    try:
        found = schema.find_field(column)
    except ValueError:
        raise LakeError(f"table {table_name(table)} has no column {column!r}") from None
    if found.field_id not in {f.field_id for f in schema.fields}:
        raise LakeError(f"column {column!r} is nested: an index takes a top-level column")
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    arrow_type = schema_to_pyarrow(schema.select(column)).field(0).type
    return found.field_id, arrow_type, key_kind_of_type(arrow_type, column)


def live_files(table, snapshot) -> Dict[str, object]:
    """{path as the manifests record it: DataFile} of the snapshot's live data files."""
    tasks = table.scan(snapshot_id=snapshot.snapshot_id).plan_files()
    return {t.file.file_path: t.file for t in tasks}


def resolution(table, field_id: int) -> str:
    """What, besides a data file's own field ids, decides the keys PyIceberg reads from it: the
    names the table's name mapping gives the field (for files written without field ids: a
    file's column of one of these names is the field) and the field's ``initial_default``
    (for files written before the column was added). An index records a hash of this at its
    build; a file it read by anything but its own field ids is trusted only while it holds."""
    mapping = table.metadata.name_mapping()
    names = (sorted(n for mapped in mapping for n in mapped.names if mapped.field_id == field_id)
             if mapping is not None else None)
    field = table.schema().find_field(field_id)
    doc = {"names": names, "initial_default": repr(field.initial_default)}
    return hashlib.blake2b(json.dumps(doc, sort_keys=True).encode(), digest_size=16).hexdigest()


def footer_of(f, size: int):
    """(footer length, BLAKE2b-128 of the footer) of a Parquet file: with size, path and rows,
    its identity (as the Parquet-directory index records it)."""
    f.seek(size - 8)
    tail = f.read(8)
    if len(tail) != 8 or tail[4:] != b"PAR1":
        raise LakeError("not a Parquet file (no PAR1 at its end)")
    length = int.from_bytes(tail[:4], "little")
    f.seek(size - 8 - length)
    return length, hashlib.blake2b(f.read(length), digest_size=16).hexdigest()


def _found_by(schema: pa.Schema, name_mapping, field_id: int) -> str:
    """How PyIceberg finds the field in a file of this physical schema (its own
    ``pyarrow_to_schema``): "id" (the file's field ids), "mapping" (no field ids: the
    table's name mapping) or "missing" (not in the file: a partition value, the default or
    null)."""
    from pyiceberg.io.pyarrow import pyarrow_to_schema

    try:
        ids = pyarrow_to_schema(schema).field_ids
        by = "id"
    except ValueError:  # no field ids: PyIceberg applies the name mapping
        ids = pyarrow_to_schema(schema, name_mapping).field_ids if name_mapping else set()
        by = "mapping"
    return by if field_id in ids else "missing"


def file_facts(table, data_file, field_id: int) -> dict:
    """What the index records of a data file besides its nulls: the manifest's size and rows,
    the footer's length and hash, and how PyIceberg finds the field in it."""
    path = data_file.file_path
    try:
        with table.io.new_input(path).open() as f:
            footer_bytes, footer_hash = footer_of(f, int(data_file.file_size_in_bytes))
            f.seek(0)
            schema = pq.ParquetFile(f).schema_arrow
    except (OSError, pa.ArrowException) as e:
        raise LakeError(f"data file {path} cannot be read: {e}") from None
    except LakeError as e:
        raise LakeError(f"data file {path}: {e}") from None
    return {"size": int(data_file.file_size_in_bytes), "rows": int(data_file.record_count),
            "footer_bytes": footer_bytes, "footer_hash": footer_hash,
            "by": _found_by(schema, table.metadata.name_mapping(), field_id)}


def file_values(table, data_file, field_id: int):
    """The field's values in one data file (Arrow arrays, a batch at a time) as PyIceberg's
    reader (``ArrowScan``, the file alone, no delete file: every row it holds) returns them,
    so field ids, the name mapping, partition values and ``initial_default`` are PyIceberg's."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.schema import Schema
    from pyiceberg.table import FileScanTask

    field = table.schema().find_field(field_id)
    scan = ArrowScan(table.metadata, table.io, Schema(field), AlwaysTrue())
    for batch in scan.to_record_batches([FileScanTask(data_file)]):
        yield _key_column(batch.column(0), None)


def file_pair_hashes(table, data_file, field_id: int, kind: str, seed: int):
    """(pair hashes, nulls) of one data file's values of the field (:func:`file_values`)."""
    name, chunks, nulls = data_file.file_path.encode(), [], 0
    for keys in file_values(table, data_file, field_id):
        if key_kind_of_type(keys.type, str(field_id)) != kind:
            raise LakeError(f"field {field_id} is {keys.type} in {data_file.file_path}, not "
                            "of the table's key kind")
        if keys.null_count:
            nulls += keys.null_count
            keys = keys.drop_null()
        if len(keys):
            chunks.append(_ribbon.hash_pairs([name], keys, seed=seed, group_kind="bytes",
                                             key_kind=kind))
    hashes = np.concatenate(chunks) if chunks else np.empty(0, np.uint64)
    return hashes, nulls
