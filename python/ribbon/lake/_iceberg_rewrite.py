"""Copy-on-write changes to an Iceberg table's data files for ribbon.lake.iceberg's upsert and
delete (docs/lake.md, "Upserts and deletes"): the candidate files of a batch of keys from the
index, each file read through PyIceberg's reader (its delete files applied), files rewritten
as PyIceberg writes them, all of it one overwrite snapshot in one transaction, re-planned
and retried on a conflict, the index brought to the new snapshot after the commit.

PyIceberg has no public call that writes data files for a transaction, so this module uses
``pyiceberg.io.pyarrow._dataframe_to_data_files`` (the function behind ``Transaction.append``
and ``Transaction.delete``) and ``_check_pyarrow_schema_compatible`` (behind
``Transaction.upsert``): pinned to PyIceberg 0.12 by :func:`check_pyiceberg`."""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import time
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._lakecore.table import IndexUnusable, LakeError
from ._iceberg_build import update_index
from ._iceberg_commit import listed_blobs
from ._iceberg_plan import load_index, snapshot_tasks
from ._iceberg_table import BLOB_TYPE

#: The PyIceberg minor version whose private write functions this module calls.
PYICEBERG_MINOR = "0.12"


def check_pyiceberg():
    import pyiceberg

    if not pyiceberg.__version__.startswith(PYICEBERG_MINOR + "."):
        raise LakeError(f"ribbon.lake.iceberg upsert/delete need PyIceberg {PYICEBERG_MINOR}.x "
                        f"(they call its data file writer), not {pyiceberg.__version__}")


# ---------------------------------------------------------------------------------------
# Candidates: which data files may hold which keys.


@dataclass
class Candidate:
    """A data file's scan task and the positions (in the batch's unique keys) of the keys the
    index says it may hold."""
    task: object
    keys: np.ndarray


def candidates(table, attempt: "Attempt", column: str, unique_keys: pa.Array) -> List[Candidate]:
    """The attempt's data files (its one plan of the snapshot) that may hold one of
    ``unique_keys`` (of ``column``), each with its keys: from the index of ``column``, or,
    without a usable one, every file with every key and one warning."""
    tasks = {t.file.file_path: t for t in attempt.tasks}
    if not tasks or len(unique_keys) == 0:
        return []
    try:
        index = load_index(table, column, attempt.snapshot.snapshot_id)
    except IndexUnusable as e:
        warnings.warn(f"ribbon.lake.iceberg: every data file read: {e}", stacklevel=4)
        every = np.arange(len(unique_keys), dtype=np.int64)
        return [Candidate(t, every) for _, t in sorted(tasks.items())]
    each = index.files_for_each(unique_keys, [t.file for t in attempt.tasks])
    offsets, positions = each.keys_of_files()
    return [Candidate(tasks[path], positions[offsets[j]:offsets[j + 1]])
            for j, path in enumerate(each.files)]


def indexed_column(table, join_cols: Sequence[str]) -> Optional[str]:
    """The first join column with a usable index (the one that prunes), or None."""
    for column in join_cols:
        try:
            load_index(table, column)
            return column
        except LakeError:
            continue
    return None


def indexed_columns(table, also: Optional[str]) -> List[str]:
    """``also`` (if not None) and the columns with a ribbon blob in the statistics file of the
    newest snapshot (the current one or an ancestor) that has one: the indexes a write
    refreshes. Only the footers' blob lists are read; statistics files that hold no ribbon blob
    (another engine's) or cannot be read are passed over, as load_index passes them over."""
    columns = [also] if also is not None else []
    by_snapshot = {s.snapshot_id: s for s in table.metadata.statistics}
    fields: List[int] = []
    snapshot = table.current_snapshot()
    while snapshot is not None and not fields:
        if snapshot.snapshot_id in by_snapshot:
            try:
                listed = listed_blobs(table, by_snapshot[snapshot.snapshot_id])
                fields = [b.fields[0] for b in listed
                          if b.type == BLOB_TYPE and len(b.fields) == 1]
            except LakeError:  # unreadable: load_index says why, later
                pass
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None
    schema = table.schema()
    for field_id in fields:
        name = schema.find_column_name(field_id)
        if name is not None and name not in columns:
            columns.append(name)
    return columns


# ---------------------------------------------------------------------------------------
# Reading and writing data files as PyIceberg does.


def read_task(metadata, io, task, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """A task's live rows (its delete files applied), in the current schema or its
    ``columns``, through PyIceberg's reader."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    schema = metadata.schema()
    projected = schema.select(*columns) if columns is not None else schema
    return ArrowScan(metadata, io, projected, AlwaysTrue()).to_table([task])


def write_rows(metadata, io, rows: pa.Table, write_uuid, counter) -> list:
    """``rows`` written as PyIceberg writes an append's data files (its file names, Parquet
    settings, field ids, partitions by the current spec, metrics): a list of DataFile."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    if rows.num_rows == 0:
        return []
    return list(_dataframe_to_data_files(table_metadata=metadata, df=rows, io=io,
                                         write_uuid=write_uuid, counter=counter))


@dataclass
class Changes:
    """What one attempt wrote: data files to remove and add, the files written (deleted
    again if the attempt does not land), and the caller's result."""
    removed: list = field(default_factory=list)
    added: list = field(default_factory=list)
    result: object = None
    #: The attempt that committed them (its snapshot and plan): the index update's base.
    attempt: Optional["Attempt"] = None


class Attempt:
    """One attempt's transaction, its snapshot and that snapshot's one plan (every data
    file's task), the write uuid and counter its files are named by, and the files it has
    written so far (thread-safe appends)."""

    def __init__(self, table, threads: int):
        self.table, self.threads = table, threads
        self.transaction = table.transaction()
        self.metadata = self.transaction.table_metadata
        self.snapshot = self.metadata.current_snapshot()
        self.tasks = (snapshot_tasks(table, self.snapshot.snapshot_id)
                      if self.snapshot is not None else [])
        self.uuid = uuid.uuid4()
        self.counter = itertools.count(0)
        self.written: List[str] = []

    def write(self, rows: pa.Table) -> list:
        files = write_rows(self.metadata, self.table.io, rows, self.uuid, self.counter)
        self.written.extend(f.file_path for f in files)
        return files

    def read(self, task, columns=None) -> pa.Table:
        return read_task(self.metadata, self.table.io, task, columns)

    def map(self, function: Callable, items: list) -> list:
        if len(items) <= 1 or self.threads <= 1:
            return [function(item) for item in items]
        with concurrent.futures.ThreadPoolExecutor(min(self.threads, len(items))) as pool:
            return list(pool.map(function, items))

    def discard(self):
        for path in self.written:
            try:
                self.table.io.delete(path)
            except OSError:  # listed by orphan_files
                pass
        self.written.clear()


def commit_with_retries(table, plan: Callable[[Attempt], Changes], *, retries: int,
                        threads: int, snapshot_properties, branch) -> Changes:
    """Runs ``plan`` against the table's current snapshot and commits its changes as one
    overwrite snapshot in one transaction; on a conflict (another writer's commit that
    PyIceberg's validation rejects at the table's isolation level: serializable by default,
    any data file added or removed since) the attempt's files are deleted, the table
    refreshed and the change planned again, at most ``retries`` more times."""
    from pyiceberg.exceptions import CommitFailedException, ValidationException

    for attempt_number in range(retries + 1):
        if attempt_number:
            table.refresh()
        attempt = Attempt(table, threads)
        committing = False
        try:
            changes = plan(attempt)
            changes.attempt = attempt
            if not changes.removed and not changes.added:
                attempt.discard()
                return changes
            update = attempt.transaction.update_snapshot(snapshot_properties=snapshot_properties,
                                                         branch=branch)
            with update.overwrite(commit_uuid=attempt.uuid) as overwrite:
                for data_file in changes.removed:
                    overwrite.delete_data_file(data_file)
                for data_file in changes.added:
                    overwrite.append_data_file(data_file)
            committing = True
            attempt.transaction.commit_transaction()
            return changes
        except (CommitFailedException, ValidationException):
            attempt.discard()  # PyIceberg says these never land
            if attempt_number == retries:
                raise
        except BaseException:
            if not committing:  # an unknown commit outcome keeps its files
                attempt.discard()
            raise
    raise AssertionError("unreachable")


def refresh_index(table, columns: Sequence[str], threads: int, changes: Changes):
    """The indexes of ``columns`` brought to the new snapshot (a delta over the written files),
    its live files derived from the commit (:func:`live_after`) where they can be; a failure
    leaves them stale, which is correct (files they do not know are read for every key), and
    warns."""
    live = live_after(table, changes)
    for column in columns:
        try:
            update_index(table, column, threads=threads, _live=live)
        except Exception as e:  # the data commit stands either way
            warnings.warn(f"ribbon.lake.iceberg: the index of {column!r} is left stale (still "
                          f"correct, slower): {e}", stacklevel=3)


def live_after(table, changes: Changes) -> Optional[dict]:
    """{path: DataFile} of the current snapshot's live data files without planning it: the
    attempt's plan less the files the commit removed, plus the files its own manifests add
    (as recorded there: spec id and all). None (plan it) unless the current snapshot is that
    commit's: the child of the attempt's snapshot, its summary's file counts the change's."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    base, current = changes.attempt.snapshot, table.current_snapshot()
    if base is None or current is None or current.parent_snapshot_id != base.snapshot_id:
        return None
    live = {t.file.file_path: t.file for t in changes.attempt.tasks}
    for data_file in changes.removed:
        live.pop(data_file.file_path, None)
    added = [entry.data_file for manifest in current.manifests(table.io)
             if manifest.added_snapshot_id == current.snapshot_id
             and manifest.content == ManifestContent.DATA
             for entry in manifest.fetch_manifest_entry(table.io)
             if entry.status == ManifestEntryStatus.ADDED]
    live.update((f.file_path, f) for f in added)
    summary = current.summary.additional_properties if current.summary else {}
    counts = (summary.get("added-data-files", "0"), summary.get("deleted-data-files", "0"),
              summary.get("total-data-files"))
    if counts != (str(len(added)), str(len(changes.removed)), str(len(live))):
        return None
    return live


# ---------------------------------------------------------------------------------------
# Orphans: data files no snapshot references (an attempt killed before its commit).


def orphan_files(table, *, delete: bool = False, older_than_s: float = 3600.0) -> List[str]:
    """The files under the table's ``data/`` directory that no snapshot's manifests
    reference (data or delete files), last modified more than ``older_than_s`` seconds ago
    (younger ones may be a writer's commit in flight), as ``scheme://`` paths; removed too
    with ``delete=True``."""
    from pyarrow import fs as pafs

    table.refresh()
    referenced = set()
    for snapshot in table.metadata.snapshots:
        for manifest in snapshot.manifests(table.io):
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                referenced.add(_plain_path(entry.data_file.file_path))
    filesystem, root = pafs.FileSystem.from_uri(table.metadata.location.rstrip("/") + "/data")
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    except FileNotFoundError:
        return []
    scheme = table.metadata.location.split("://", 1)[0] if "://" in table.metadata.location else "file"
    now = time.time()
    orphans = []
    for info in infos:
        if info.type != pafs.FileType.File or _plain_path(info.path) in referenced:
            continue
        if info.mtime is not None and now - info.mtime.timestamp() < older_than_s:
            continue
        orphans.append(f"{scheme}://{info.path}")
    if delete:
        for path in orphans:
            filesystem.delete_file(_plain_path(path))
    return sorted(orphans)


def _plain_path(path: str) -> str:
    """A path without its scheme (file:///a/b and /a/b alike; s3://b/k as b/k)."""
    return path.split("://", 1)[1] if "://" in path else path


def unique_keys_and_rows(values: pa.Array):
    """(the unique values, and for each a CSR of the batch rows that hold it: offsets and
    row positions) of one column of the batch; no Python per row."""
    unique = pc.unique(values)
    owner = pc.index_in(values, value_set=unique).to_numpy(zero_copy_only=False)
    order = np.argsort(owner, kind="stable").astype(np.int64)
    offsets = np.zeros(len(unique) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(unique)), out=offsets[1:])
    return unique, offsets, order


def rows_of_keys(offsets: np.ndarray, order: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The batch rows holding the unique keys at positions ``keys`` (CSR gather)."""
    starts, counts = offsets[keys], offsets[keys + 1] - offsets[keys]
    total = int(counts.sum())
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return order[np.repeat(starts, counts) + within]


def cpu_threads(threads: int) -> int:
    return threads or os.cpu_count() or 1
