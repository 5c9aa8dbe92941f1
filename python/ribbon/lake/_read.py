"""ribbon.lake.read: a table's rows with the given keys, opening only the files the index
(and the listing) says a read must."""

from __future__ import annotations

from typing import List, Optional

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from .._lakecore.index import plan_read, schema_files
from .._lakecore.schema import key_array, read_dataset


def read(table, column: str, keys, index=None, *, columns: Optional[List[str]] = None,
         partitioning=None, verify_footers: bool = False,
         filesystem: Optional[pafs.FileSystem] = None) -> pa.Table:
    """The rows of ``table`` whose ``column`` is one of ``keys``: an Arrow table, read through
    pyarrow.dataset from the files :func:`candidate_files` names (the index's candidates,
    unindexed and changed files), so the answer is a full scan's, in file order.

    The schema is the one pyarrow.dataset unifies over the files read (a column a file lacks
    is null there; integer widths and signedness promote), the key column under the
    index's type (unified over every file indexed): a key that type cannot hold is a miss.
    ``partitioning``: as pyarrow.dataset's (``"hive"``: ``day=1/`` directories give a
    ``day`` column), paths taken from the table root; None (the default): none."""
    source, files, key_type = plan_read(table, column, keys, index,
                                        verify_footers=verify_footers, filesystem=filesystem)
    dataset = read_dataset(source, schema_files(source, files), column, key_type, partitioning)
    if not files:
        empty = dataset.schema.empty_table()
        return empty.select(columns) if columns else empty
    wanted = key_array(keys, dataset.schema.field(column).type)
    return dataset.to_table(columns=columns, filter=ds.field(column).isin(wanted))
