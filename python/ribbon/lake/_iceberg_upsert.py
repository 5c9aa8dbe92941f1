"""ribbon.lake.iceberg.upsert and delete: PyIceberg's ``Table.upsert`` and
``Table.delete(In(column, keys))``, their semantics and results, with the files to read
found by the index and only the data files that hold a changed or deleted row rewritten
(docs/lake.md, "Upserts and deletes"). The machinery (candidates, reads, writes, the one
commit and its retries) is _iceberg_rewrite's."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _iceberg_rewrite as rewrite

_SOURCE_ROW = "__ribbon_source_row"
_TARGET_ROW = "__ribbon_target_row"


def _join_columns(table, join_cols: Optional[Sequence[str]]) -> List[str]:
    """The join columns, from the identifier fields when None (as PyIceberg finds them)."""
    if join_cols is None:
        schema = table.schema()
        join_cols = []
        for field_id in schema.identifier_field_ids:
            name = schema.find_column_name(field_id)
            if name is None:
                raise ValueError(f"Field-ID could not be found: {join_cols}")
            join_cols.append(name)
    if len(join_cols) == 0:
        raise ValueError("Join columns could not be found, please set identifier-field-ids or "
                         "pass in explicitly.")
    return list(join_cols)


def _check_batch(table, df: pa.Table, join_cols: List[str]):
    """PyIceberg's checks of an upsert's batch, in its order, with its errors."""
    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible
    from pyiceberg.table import DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE
    from pyiceberg.table.upsert_util import has_duplicate_rows
    from pyiceberg.utils.config import Config

    if has_duplicate_rows(df, join_cols):
        raise ValueError("Duplicate rows found in source dataset based on the key columns. "
                         "No upsert executed")
    downcast = Config().get_bool(DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE) or False
    _check_pyarrow_schema_compatible(table.schema(), provided_schema=df.schema,
                                     downcast_ns_timestamp_to_us=downcast,
                                     format_version=table.metadata.format_version)
    _refuse_nulls(df.select(join_cols))


def _refuse_nulls(keys: pa.Table):
    # PyIceberg builds an In/EqualTo literal of every key, and a null is no literal.
    if any(keys.column(i).null_count for i in range(keys.num_columns)):
        raise TypeError("Invalid literal value: None")


def _matches(target: pa.Table, source_keys: pa.Table, source_rows: np.ndarray,
             join_cols: List[str]):
    """(source rows, target rows) of the pairs whose join columns are equal (nulls match
    nothing), as int64 arrays: an Arrow hash join of the file's rows with the batch rows that
    the index gave it."""
    types = {name: target.schema.field(name).type for name in join_cols}
    left = pa.table({name: source_keys.column(name).take(pa.array(source_rows))
                     .cast(types[name]) for name in join_cols})
    left = left.append_column(_SOURCE_ROW, pa.array(source_rows, pa.int64()))
    right = target.select(join_cols).append_column(
        _TARGET_ROW, pa.array(np.arange(target.num_rows, dtype=np.int64)))
    joined = right.join(left, keys=join_cols, join_type="inner")
    return (joined.column(_SOURCE_ROW).to_numpy().astype(np.int64),
            joined.column(_TARGET_ROW).to_numpy().astype(np.int64))


def _differs(source: pa.Array, target: pa.Array) -> np.ndarray:
    """Per row, whether the values differ as PyIceberg's ``source != target`` of Python
    values says: null equals null, NaN differs from NaN."""
    if source.type != target.type:
        try:
            source = source.cast(target.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    try:
        unequal = pc.fill_null(pc.not_equal(source, target), False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):  # nested: as PyIceberg
        return np.array([a != b for a, b in zip(source.to_pylist(), target.to_pylist())],
                        dtype=bool)
    one_null = pc.xor(pc.is_null(source), pc.is_null(target))
    return pc.or_(unequal, one_null).to_numpy(zero_copy_only=False).astype(bool)


@dataclass
class _Batch:
    """An upsert's batch as every file's worker needs it: its join columns, the column whose
    index prunes, that column's unique values and, per value, the batch rows holding it."""
    df: pa.Table
    join_cols: List[str]
    other_cols: List[str]
    column: str

    def __post_init__(self):
        self.keys = self.df.select(self.join_cols)
        values = self.df.column(self.column).combine_chunks()
        self.unique, self.offsets, self.order = rewrite.unique_keys_and_rows(values)


@dataclass
class _FileOutcome:
    matched: np.ndarray          # batch rows that match a row of the file
    changed: np.ndarray          # those whose other columns differ (updated)
    removed: object = None       # the DataFile, when it is rewritten or dropped
    added: tuple = ()            # its rewritten DataFiles


def _progress_counter(progress, total: int, what: str) -> Callable[[], None]:
    done = itertools.count(1)
    if progress is None:
        return lambda: None
    progress(f"{what}: {total} candidate data files")
    return lambda: progress(f"{what}: {next(done)}/{total} candidate data files read")


def upsert(table, df: pa.Table, join_cols: Optional[Sequence[str]] = None,
           when_matched_update_all: bool = True, when_not_matched_insert_all: bool = True,
           snapshot_properties: Optional[Dict[str, str]] = None, *, retries: int = 3,
           threads: int = 0, progress: Optional[Callable[[str], None]] = None):
    """``table.upsert(df, join_cols, ...)``'s semantics and ``UpsertResult``: rows of ``df``
    whose join columns match a row of the table replace it where another of ``df``'s columns
    differs (null equal to null, NaN never equal), the others are inserted; PyIceberg's
    checks and errors (duplicate keys in ``df`` or among the matched rows, schema, a null
    key). The index of a join column (the first that has one) gives each data file the keys
    it may hold; a file is read only for those, rewritten only if it holds a changed row,
    and the change is one overwrite snapshot in one transaction, re-planned and retried at
    most ``retries`` times on a conflict; then the table's indexes are brought to the new
    snapshot. ``progress``: called with a line now and then."""
    from pyiceberg.table import UpsertResult

    rewrite.check_pyiceberg()
    join_cols = _join_columns(table, join_cols)
    if not when_matched_update_all and not when_not_matched_insert_all:
        raise ValueError("no upsert options selected...exiting")
    _check_batch(table, df, join_cols)
    pruning = rewrite.indexed_column(table, join_cols)
    batch = _Batch(df, join_cols, [c for c in df.column_names if c not in join_cols],
                   pruning or join_cols[0])
    threads = rewrite.cpu_threads(threads)
    indexed = rewrite.indexed_columns(table, pruning)

    def plan(attempt: rewrite.Attempt) -> rewrite.Changes:
        cands = rewrite.candidates(table, attempt, batch.column, batch.unique)
        tick = _progress_counter(progress, len(cands), "upsert")

        def one_file(cand: rewrite.Candidate) -> Optional[_FileOutcome]:
            outcome = _upsert_file(attempt, cand, batch, when_matched_update_all)
            tick()
            return outcome

        outcomes = [o for o in attempt.map(one_file, cands) if o is not None]
        matched = np.concatenate([o.matched for o in outcomes] + [np.empty(0, np.int64)])
        # PyIceberg checks this only within one record batch of its scan (and else writes the
        # key twice); here over the whole table.
        if when_matched_update_all and len(np.unique(matched)) != len(matched):
            raise ValueError("Target table has duplicate rows, aborting upsert")
        matched = np.unique(matched)
        changed = np.concatenate([o.changed for o in outcomes] + [np.empty(0, np.int64)])
        inserted = (np.setdiff1d(np.arange(df.num_rows, dtype=np.int64), matched)
                    if when_not_matched_insert_all else np.empty(0, np.int64))
        written = attempt.write(df.take(pa.array(np.sort(np.concatenate([changed, inserted])))))
        rewritten = [f for o in outcomes for f in o.added]
        return rewrite.Changes(removed=[o.removed for o in outcomes if o.removed is not None],
                               added=rewritten + written,
                               result=UpsertResult(rows_updated=len(changed),
                                                   rows_inserted=len(inserted)))

    changes = rewrite.commit_with_retries(table, plan, retries=retries, threads=threads,
                                          snapshot_properties=snapshot_properties or {},
                                          branch="main")
    if changes.removed or changes.added:
        rewrite.refresh_index(table, indexed, threads, changes)
    return changes.result


def _upsert_file(attempt, cand: rewrite.Candidate, batch: _Batch,
                 update_matched: bool) -> Optional[_FileOutcome]:
    """One candidate file: its join columns read and matched against the batch rows of its
    keys; if a match has changed values, the whole file read, compared and rewritten
    without the changed rows."""
    rows = rewrite.rows_of_keys(batch.offsets, batch.order, cand.keys)
    keys = attempt.read(cand.task, batch.join_cols)
    found = keys.column(batch.column)
    mine = batch.unique.take(pa.array(cand.keys)).cast(found.type)
    matched, _ = _matches(keys.filter(pc.is_in(found, value_set=mine)), batch.keys, rows,
                          batch.join_cols)
    if len(matched) == 0:
        return None  # the index's false positive
    none = np.empty(0, np.int64)
    if not update_matched or not batch.other_cols:
        return _FileOutcome(matched, none)
    full = attempt.read(cand.task)
    sources, targets = _matches(full, batch.keys, np.unique(matched), batch.join_cols)
    differs = np.zeros(len(sources), dtype=bool)
    for name in batch.other_cols:
        differs |= _differs(batch.df.column(name).take(pa.array(sources)).combine_chunks(),
                            full.column(name).take(pa.array(targets)).combine_chunks())
    if not differs.any():
        return _FileOutcome(sources, none)  # unchanged rows are not rewritten
    keep = np.ones(full.num_rows, dtype=bool)
    keep[targets[differs]] = False
    added = attempt.write(full.filter(pa.array(keep)))
    return _FileOutcome(sources, sources[differs], cand.task.file, tuple(added))


def delete(table, column: str, keys, snapshot_properties: Optional[Dict[str, str]] = None, *,
           retries: int = 3, threads: int = 0,
           progress: Optional[Callable[[str], None]] = None) -> int:
    """``table.delete(In(column, keys))``'s result: the rows whose ``column`` is one of
    ``keys`` removed, reading only the data files the index says may hold one (each for its
    keys) and rewriting (or dropping) only those that do, one overwrite snapshot in one
    transaction, retried as :func:`upsert`'s; the indexes brought to the new snapshot.
    Returns the number of rows deleted; warns as PyIceberg does when none matched."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    rewrite.check_pyiceberg()
    arrow_type = schema_to_pyarrow(table.schema().select(column)).field(0).type
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else pa.array(keys)
    _refuse_nulls(pa.table({column: keys}))
    unique = pc.unique(keys.cast(arrow_type))
    threads = rewrite.cpu_threads(threads)
    indexed = rewrite.indexed_columns(table, rewrite.indexed_column(table, [column]))

    def plan(attempt: rewrite.Attempt) -> rewrite.Changes:
        cands = rewrite.candidates(table, attempt, column, unique)
        tick = _progress_counter(progress, len(cands), "delete")

        def one_file(cand: rewrite.Candidate):
            mine = unique.take(pa.array(cand.keys))
            found = attempt.read(cand.task, [column]).column(column)
            tick()
            if not pc.any(pc.is_in(found, value_set=mine.cast(found.type))).as_py():
                return None
            full = attempt.read(cand.task)
            hit = pc.fill_null(pc.is_in(full.column(column), value_set=mine.cast(found.type)),
                               False)
            return cand.task.file, attempt.write(full.filter(pc.invert(hit))), pc.sum(hit).as_py()

        outcomes = [o for o in attempt.map(one_file, cands) if o is not None]
        return rewrite.Changes(removed=[o[0] for o in outcomes],
                               added=[f for o in outcomes for f in o[1]],
                               result=sum(o[2] for o in outcomes))

    changes = rewrite.commit_with_retries(table, plan, retries=retries, threads=threads,
                                          snapshot_properties=snapshot_properties or {},
                                          branch="main")
    if not changes.removed:
        warnings.warn("Delete operation did not match any records", stacklevel=2)
    else:
        rewrite.refresh_index(table, indexed, threads, changes)
    return changes.result
