"""One schema over a directory that drifted, as pyarrow.dataset unifies it
(``promote_options="permissive"``): a column a file lacks is null there, integer widths and
signedness promote to one type. The schema of the files a read opens, the key column's type
promoted with the index's (which has seen every file), and the keys as that type."""

from __future__ import annotations

import concurrent.futures
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .table import LakeError, Table, key_kind_of_type

_UNIFY_ERRORS = (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError)


def _unify(schemas: Sequence[pa.Schema]) -> pa.Schema:
    return pa.unify_schemas(list(schemas), promote_options="permissive")


def unify_file_schemas(table: Table, named: Sequence[Tuple[str, pa.Schema]]) -> pa.Schema:
    """The schemas of files (``(relative, schema)`` pairs) unified; a LakeError naming a
    column and the two files whose types of it cannot be unified (string and int64)."""
    try:
        return _unify([s for _, s in named])
    except _UNIFY_ERRORS:
        pass
    first = {}  # column -> (relative, type): the file that brought it in
    for relative, schema in named:
        for field in schema:
            if field.name not in first:
                first[field.name] = (relative, field.type)
                continue
            earlier, earlier_type = first[field.name]
            try:
                _unify([pa.schema([pa.field(field.name, earlier_type)]), pa.schema([field])])
            except _UNIFY_ERRORS:
                raise LakeError(f"column {field.name!r} is {field.type} in {table.uri(relative)} "
                                f"but {earlier_type} in {table.uri(earlier)}: types that "
                                "cannot be unified") from None
    return _unify([s for _, s in named])  # a conflict no pair shows: pyarrow's own error


def unify_key_types(table: Table, column: str, typed: Sequence[Tuple[str, pa.DataType]]):
    """(type, key kind) of ``column`` over files (``(relative, type)``, typed columns only):
    one kind (integers, or strings and binary), its types unified; a LakeError naming both
    files for two kinds."""
    distinct = {}
    for relative, arrow_type in typed:
        distinct.setdefault(arrow_type, relative)
    (first_type, first_name), = list(distinct.items())[:1]
    kind = key_kind_of_type(first_type, column)
    for arrow_type, relative in distinct.items():
        if key_kind_of_type(arrow_type, column) != kind:
            raise LakeError(f"column {column!r} is {arrow_type} in {table.uri(relative)} but "
                            f"{first_type} in {table.uri(first_name)}")
    named = [(r, pa.schema([pa.field(column, t)])) for t, r in distinct.items()]
    return unify_file_schemas(table, named).field(column).type, kind


def unify_types(types: Sequence[pa.DataType]) -> pa.DataType:
    """Types of one column unified (ArrowTypeError where they cannot be)."""
    return _unify([pa.schema([pa.field("c", t)]) for t in types]).field(0).type


def file_schemas(table: Table, relatives: Sequence[str], threads: int = 8) -> List[pa.Schema]:
    """Each file's Arrow schema, from its footer (``threads`` files at once)."""
    def one(relative):
        return pq.read_schema(table.path(relative), filesystem=table.fs)

    with concurrent.futures.ThreadPoolExecutor(max(1, min(threads, len(relatives)))) as pool:
        return list(pool.map(one, relatives))


def _partitioning(partitioning):
    if partitioning == "hive":
        return ds.partitioning(flavor="hive")
    if isinstance(partitioning, (list, tuple)):
        return ds.partitioning(field_names=list(partitioning))
    return partitioning


def read_dataset(table: Table, relatives: Sequence[str], column: str,
                 key_type: Optional[pa.DataType] = None, partitioning=None) -> ds.Dataset:
    """A pyarrow dataset of these files (at least one) under their unified schema, the
    partition fields (``partitioning``: as pyarrow.dataset's, paths taken from the table
    root) after it; ``column`` promoted with ``key_type`` (added if none of these files has
    it). LakeError for a column whose types cannot be unified, or a key column nowhere."""
    relatives = list(relatives)
    schema = unify_file_schemas(table, list(zip(relatives, file_schemas(table, relatives))))
    at = schema.get_field_index(column)
    if key_type is not None:
        key = pa.field(column, key_type)
        if at < 0:
            schema = schema.append(key)
        else:
            wider = _unify([pa.schema([key]), pa.schema([schema.field(at)])]).field(0)
            schema = schema.set(at, schema.field(at).with_type(wider.type))
    elif at < 0:
        raise LakeError(f"column {column!r} is in no file of {table.id} read (the files' "
                        f"columns: {', '.join(schema.names)})")
    paths = [table.path(r) for r in relatives]
    found = _partitioning(partitioning)
    if found is not None:  # its fields' types discovered from the paths, as pyarrow.dataset's
        found = ds.dataset(paths, filesystem=table.fs, format="parquet", partitioning=found,
                           partition_base_dir=table.root).partitioning
        schema = _unify([schema, found.schema])
    return ds.dataset(paths, schema=schema, filesystem=table.fs, format="parquet",
                      partitioning=found, partition_base_dir=table.root)


def _integer_bounds(arrow_type: pa.DataType) -> Tuple[int, int]:
    info = np.iinfo(arrow_type.to_pandas_dtype())
    return int(info.min), int(info.max)


def _integers_that_fit(keys: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """The integer keys ``arrow_type`` can hold, as it: a key it cannot hold matches no row
    of such a column (a miss, not an error)."""
    lo, hi = _integer_bounds(arrow_type)
    own_lo, own_hi = _integer_bounds(keys.type)
    lo, hi = max(lo, own_lo), min(hi, own_hi)  # the bounds in the keys' own type
    if lo > hi:
        return pa.array([], type=arrow_type)
    fits = pc.and_(pc.greater_equal(keys, pa.scalar(lo, keys.type)),
                           pc.less_equal(keys, pa.scalar(hi, keys.type)))
    return keys.filter(fits).cast(arrow_type)


def _integer_array(keys) -> pa.Array:
    try:
        return pa.array(keys)
    except OverflowError:  # beyond int64: unsigned
        return pa.array(keys, type=pa.uint64())


def key_array(keys, arrow_type: pa.DataType) -> pa.Array:
    """The keys (a list, numpy or Arrow array, one key) as an Arrow array of the column's
    type; integer keys the type cannot hold left out."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "SU":
        keys = keys.tolist()
    if isinstance(keys, (str, bytes, int, np.integer)):
        keys = [keys]
    if pa.types.is_integer(arrow_type):
        if not isinstance(keys, pa.Array):
            keys = _integer_array(keys if isinstance(keys, np.ndarray) else list(keys))
        if pa.types.is_integer(keys.type):
            return _integers_that_fit(keys, arrow_type)
        return keys.cast(arrow_type)
    if not isinstance(keys, pa.Array):
        keys = list(keys)
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            keys = [k.decode() if isinstance(k, bytes) else k for k in keys]
        elif pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
            keys = [k.encode() if isinstance(k, str) else k for k in keys]
        return pa.array(keys, type=arrow_type)
    return keys.cast(arrow_type)
