"""ribbon.lake.read: a table's rows with the given keys, opening only the files the index
(and the listing) says a read must."""

from __future__ import annotations

from typing import List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from .._lakecore.index import candidate_files
from .._lakecore.table import LakeError, list_files


def _key_array(keys, arrow_type) -> pa.Array:
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "SU":
        keys = keys.tolist()
    if isinstance(keys, (str, bytes, int)):
        keys = [keys]
    if not isinstance(keys, pa.Array):
        keys = list(keys)
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            keys = [k.decode() if isinstance(k, bytes) else k for k in keys]
        elif pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
            keys = [k.encode() if isinstance(k, str) else k for k in keys]
        return pa.array(keys, type=arrow_type)
    return keys.cast(arrow_type)


def read(table, column: str, keys, index=None, *, columns: Optional[List[str]] = None,
         verify_footers: bool = False, filesystem: Optional[pafs.FileSystem] = None) -> pa.Table:
    """The rows of ``table`` whose ``column`` is one of ``keys``: an Arrow table, read through
    pyarrow.dataset from the files :func:`candidate_files` names (the index's candidates,
    unindexed and changed files), so the answer is a full scan's, in file order."""
    source, files = candidate_files(table, column, keys, index, verify_footers=verify_footers,
                                    filesystem=filesystem)
    if not files:
        everything = list_files(source)
        if not everything:
            raise LakeError(f"table {source.id} has no Parquet files")
        schema = ds.dataset(source.path(next(iter(everything))), filesystem=source.fs,
                            format="parquet").schema
        empty = schema.empty_table()
        return empty.select(columns) if columns else empty
    dataset = ds.dataset([source.path(r) for r in files], filesystem=source.fs, format="parquet")
    arrow_type = dataset.schema.field(column).type
    return dataset.to_table(columns=columns,
                            filter=ds.field(column).isin(_key_array(keys, arrow_type)))
