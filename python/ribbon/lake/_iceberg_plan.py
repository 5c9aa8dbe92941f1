"""Finding an Iceberg column's index (the newest snapshot among the planned one and its
ancestors whose statistics file holds a ribbon blob of the field) and planning and reading
through it: PyIceberg's plan pruned, PyIceberg's reader over the pruned tasks, DuckDB over
the candidate files."""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import warnings
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import _ribbon
from .._lakecore.index import FilesForEach, LakeIndex
from .._lakecore.table import IndexUnusable, LakeError
from ..sets import FilterSet
from ._iceberg_commit import read_statistics
from ._iceberg_table import (BLOB_TYPE, INDEX_FORMAT, footer_of, key_field, resolution,
                             snapshot_of, snapshot_or_none, table_name)


class IcebergIndex(LakeIndex):
    """An index of one column of an Iceberg table: the base blob and its deltas, as
    :class:`ribbon.lake.LakeIndex` answers (``files_for``), files named by their paths."""

    def __init__(self, statistics_path: str, snapshot_id: int, parts, resolution: str = ""):
        super().__init__(parts)
        self.statistics_path, self.snapshot_id = statistics_path, snapshot_id
        self.field_id = self.parts[0][2]["field_id"]
        #: The table's resolution of the field now (_iceberg_table.resolution): a file read
        #: by the name mapping or without the column is trusted while it is its build's.
        self.resolution = resolution
        #: Files whose Parquet footer is not the recorded one (:meth:`verify_footers`).
        self.changed: set = set()

    def unusable_for(self, data_file) -> bool:
        """Whether the index cannot answer for this data file: unknown, recorded with another
        size or row count, read by a name mapping or default that changed since, or (after
        :meth:`verify_footers`) with another footer."""
        known = self.files.get(data_file.file_path)
        if known is None or data_file.file_path in self.changed:
            return True
        facts, part = known
        return (facts["size"] != data_file.file_size_in_bytes
                or facts["rows"] != data_file.record_count
                or (facts["by"] != "id" and self.parts[part][2]["resolution"] != self.resolution))

    def verify_footers(self, table, data_files) -> None:
        """Reads the Parquet footer of each data file the index would answer for (threads)
        and adds those whose length or hash differs from the record, or that cannot be read,
        to :attr:`changed`: the check the Parquet-directory index makes with
        ``verify_footers=True``."""
        trusted = [f for f in data_files if not self.unusable_for(f)]

        def differs(data_file):
            facts = self.files[data_file.file_path][0]
            try:
                with table.io.new_input(data_file.file_path).open() as f:
                    found = footer_of(f, int(data_file.file_size_in_bytes))
            except (OSError, LakeError):
                return True
            return found != (facts["footer_bytes"], facts["footer_hash"])

        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            flags = list(pool.map(differs, trusted))
        self.changed |= {f.file_path for f, changed in zip(trusted, flags) if changed}

    def files_for_each(self, keys, data_files) -> FilesForEach:
        """For each key, the data files (of ``data_files``, a snapshot's ``DataFile``s) a read
        of that key alone must open: a :class:`ribbon.lake.FilesForEach` (CSR arrays, no
        Python per key); files the index cannot answer for are there for every key."""
        always = {f.file_path: "unindexed" if f.file_path not in self.files else "changed"
                  for f in data_files if self.unusable_for(f)}
        return self._files_for_each(keys, sorted(f.file_path for f in data_files), always)

    def __repr__(self) -> str:
        return (f"<ribbon.lake.iceberg.IcebergIndex field {self.field_id} ({self.type}) of "
                f"snapshot {self.snapshot_id}: {len(self.files)} files, {len(self.parts)} "
                f"blob(s), {self.nbytes} bytes>")


# What a statistics file holds for a field, by (path, size, field id): the parts of its
# index, or why it has none. A statistics file is written once under a new name and never
# changed, so an answer stays true (a file that could not be read is asked again).
_LOADED: collections.OrderedDict = collections.OrderedDict()
_LOADED_MAX = 64


def _is_ribbon(blob, field_id: int) -> bool:
    return blob.type.startswith("ribbon-") and field_id in blob.fields


def _parts_of(table, statistics, field_id: int):
    """The index parts of the field in a statistics file, or the reason (a str) it has none
    this ribbon can use."""
    key = (statistics.statistics_path, statistics.file_size_in_bytes, field_id)
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]
    try:
        blobs = read_statistics(table, statistics, lambda b: _is_ribbon(b, field_id))
    except IndexUnusable as e:
        return str(e)  # perhaps a passing failure to read: not kept
    _LOADED[key] = found = _parts_from_blobs(table, statistics, blobs, field_id)
    while len(_LOADED) > _LOADED_MAX:
        _LOADED.popitem(last=False)
    return found


def _parts_from_blobs(table, statistics, blobs, field_id):
    path = statistics.statistics_path
    if not blobs:
        return f"{path} holds no {BLOB_TYPE} blob of field {field_id}"
    parts = []
    for blob in blobs:
        if blob.type != BLOB_TYPE:
            return (f"{path} holds a {blob.type} blob, a version this ribbon does not read "
                    f"(it reads {BLOB_TYPE})")
        try:
            index = FilterSet.from_bytes(blob.payload(path))
            meta = json.loads(index.metadata or b"")
        except (ValueError, LakeError, _ribbon.Error) as e:
            return f"the {BLOB_TYPE} blob of {path} is corrupt: {e}"
        if meta.get("table") != str(table.metadata.table_uuid):
            return f"the {BLOB_TYPE} blob of {path} is not an index of this table"
        if meta.get("format") != INDEX_FORMAT:
            return (f"the {BLOB_TYPE} blob of {path} is of format {meta.get('format')!r}, "
                    f"not {INDEX_FORMAT!r}: update_index rebuilds it")
        parts.append((path, index, meta))
    return sorted(parts, key=lambda p: p[2]["delta"])


def load_index(table, column: str, snapshot_id: Optional[int] = None) -> IcebergIndex:
    """The index of ``column`` that answers for the snapshot (the current one by default):
    the statistics file of the newest snapshot, among the snapshot and its ancestors, that
    holds a usable ribbon blob of the column's field id (a file that cannot be read, holds
    only other blobs or another version's is passed over). IndexUnusable (a LakeError)
    where there is none; its message says why."""
    snapshot = snapshot_of(table, snapshot_id)
    field_id, _, _ = key_field(table, column)
    by_snapshot = {s.snapshot_id: s for s in table.metadata.statistics}
    known = {s.snapshot_id for s in table.metadata.snapshots}
    passed, ancestor = [], snapshot
    while ancestor is not None:
        statistics = by_snapshot.get(ancestor.snapshot_id)
        if statistics is not None:
            parts = _parts_of(table, statistics, field_id)
            if not isinstance(parts, str):
                return IcebergIndex(statistics.statistics_path, statistics.snapshot_id, parts,
                                    resolution(table, field_id))
            passed.append(parts)
        parent = ancestor.parent_snapshot_id
        ancestor = table.snapshot_by_id(parent) if parent is not None else None
    why = (f"no statistics file of snapshot {snapshot.snapshot_id} or its ancestors holds a "
           f"usable {BLOB_TYPE} blob of column {column!r} (field {field_id})")
    why += "".join(f"; {p}" for p in passed if "holds no" not in p)
    expired = sorted(s for s in by_snapshot if s not in known)
    if expired:
        why += f"; statistics of expired snapshots {expired} are not used"
    raise IndexUnusable(why)


def _key_list(keys) -> list:
    if isinstance(keys, (pa.Array, pa.ChunkedArray)):
        return keys.to_pylist()
    if isinstance(keys, np.ndarray):
        return keys.tolist()
    if isinstance(keys, (str, bytes, int, np.integer)):
        return [keys]
    return list(keys)


def _scan(table, column, keys, snapshot_id, columns=None, *, row_filter=True):
    from pyiceberg.expressions import In

    options = {"snapshot_id": snapshot_id}
    if row_filter:
        options["row_filter"] = In(column, keys)
    if columns is not None:
        options["selected_fields"] = tuple(columns)
    return table.scan(**options)


# Whole-snapshot plans by (table UUID, snapshot id): a snapshot's data files and their
# delete files never change, so a plan made once answers every later read of it.
_PLANS: collections.OrderedDict = collections.OrderedDict()
_PLANS_MAX = 4


def snapshot_tasks(table, snapshot_id: Optional[int] = None) -> list:
    """PyIceberg's tasks of a scan over every data file of the snapshot (the current one by
    default; [] for a table with no snapshot), planned once a snapshot and kept: shared by
    reads, an upsert's candidates and the index update after it. Not to be modified."""
    snapshot = snapshot_or_none(table, snapshot_id)
    if snapshot is None:
        return []
    key = (str(table.metadata.table_uuid), snapshot.snapshot_id)
    if key not in _PLANS:
        _PLANS[key] = list(table.scan(snapshot_id=snapshot.snapshot_id).plan_files())
        while len(_PLANS) > _PLANS_MAX:
            _PLANS.popitem(last=False)
    _PLANS.move_to_end(key)
    return _PLANS[key]


def _index_or_warning(table, column, snapshot_id):
    """The index, or None with one warning; None without one for a table with no snapshot
    (PyIceberg plans nothing there: nothing to prune)."""
    if snapshot_or_none(table, snapshot_id) is None:
        key_field(table, column)  # a missing column is still an error
        return None
    try:
        return load_index(table, column, snapshot_id)
    except IndexUnusable as e:
        warnings.warn(f"ribbon.lake.iceberg: full plan of {table_name(table)}: {e}",
                      stacklevel=4)
        return None


def _candidates(index, keys, tasks):
    found = set(index.files_for(keys)) if keys else set()
    return [t for t in tasks if t.file.file_path in found or index.unusable_for(t.file)]


def plan_files(table, column: str, keys, snapshot_id: Optional[int] = None, *,
               verify_footers: bool = False) -> list:
    """PyIceberg's plan of ``table.scan(row_filter=In(column, keys))`` (its partition and
    min/max pruning first), less the data files the index proves hold none of the keys: a
    list of ``FileScanTask``, delete files attached as PyIceberg attached them. Data files
    the index cannot answer for are kept (``verify_footers``: also those whose Parquet footer
    is not the recorded one, each planned file's footer read); a missing or unusable index:
    the full plan and one warning."""
    keys = _key_list(keys)
    index = _index_or_warning(table, column, snapshot_id)
    tasks = list(_scan(table, column, keys, snapshot_id).plan_files())
    if index is None:
        return tasks
    if verify_footers:
        index.verify_footers(table, [t.file for t in tasks])
    return _candidates(index, keys, tasks)


def files_for_each(table, column: str, keys, snapshot_id: Optional[int] = None, *,
                   verify_footers: bool = False) -> FilesForEach:
    """For each of many keys at once (an upsert's batch: 10^5-10^6), the data files of the
    snapshot that may hold it (paths as the manifests record them): a
    :class:`ribbon.lake.FilesForEach`. The files the index cannot answer for are there for
    every key (``verify_footers`` as :func:`plan_files`); IndexUnusable where there is no
    usable index; for a table with no snapshot, no file for any key."""
    keys = _key_list(keys)
    if snapshot_or_none(table, snapshot_id) is None:  # as plan_files and read: nothing
        key_field(table, column)  # a missing column is still an error
        return FilesForEach([], np.zeros(len(keys) + 1, np.int64), np.empty(0, np.int64), {})
    index = load_index(table, column, snapshot_id)
    data_files = [t.file for t in snapshot_tasks(table, snapshot_id)]
    if verify_footers:
        index.verify_footers(table, data_files)
    return index.files_for_each(keys, data_files)


def read(table, column: str, keys, columns: Optional[Sequence[str]] = None,
         snapshot_id: Optional[int] = None, *, verify_footers: bool = False) -> pa.Table:
    """The rows of ``table.scan(row_filter=In(column, keys), selected_fields=columns,
    snapshot_id=snapshot_id).to_arrow()``, reading only the data files that may hold a key,
    each with only the keys it may hold, through PyIceberg's own reader
    (``pyiceberg.io.pyarrow.ArrowScan``), so deletes, schema evolution and projections are
    PyIceberg's. The snapshot's files come from PyIceberg's plan of the whole snapshot, made
    once per snapshot and kept (a snapshot never changes; its min/max pruning, which the
    index makes moot, is left out); with no usable index, PyIceberg's plan and one warning.
    ``verify_footers`` as :func:`plan_files`."""
    from pyiceberg.expressions import In
    from pyiceberg.io.pyarrow import ArrowScan

    keys = _key_list(keys)
    index = _index_or_warning(table, column, snapshot_id)
    scan = _scan(table, column, keys, snapshot_id, columns)
    if index is None:
        return scan.to_arrow()
    projection = scan.projection()
    tasks = {t.file.file_path: t for t in snapshot_tasks(table, snapshot_id)}
    if verify_footers:
        index.verify_footers(table, [t.file for t in tasks.values()])
    each = index.files_for_each(keys, [t.file for t in tasks.values()])
    offsets, positions = each.keys_of_files()

    def read_file(j):
        mine = positions[offsets[j]:offsets[j + 1]]
        subset = keys if len(mine) == len(keys) else [keys[i] for i in mine.tolist()]
        return ArrowScan(scan.table_metadata, scan.io, projection, In(column, subset),
                         scan.case_sensitive).to_table([tasks[each.files[j]]])

    if len(each.files) <= 1:
        parts = [read_file(j) for j in range(len(each.files))]
    else:
        with concurrent.futures.ThreadPoolExecutor(min(len(each.files),
                                                       os.cpu_count() or 1)) as pool:
            parts = list(pool.map(read_file, range(len(each.files))))
    if not parts:
        return ArrowScan(scan.table_metadata, scan.io, projection, scan.row_filter,
                         scan.case_sensitive).to_table([])
    # As ArrowScan.to_table concatenates its batches: files may give string or large_string.
    return pa.concat_tables(parts, promote_options="permissive")
