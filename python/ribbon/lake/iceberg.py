"""ribbon.lake for Apache Iceberg tables (PyIceberg): the data-skipping index stored the way
Iceberg stores statistics, a blob in a Puffin file registered for a snapshot, and PyIceberg's
own scan plan pruned by it (docs/lake.md, "Iceberg tables").

>>> from ribbon.lake import iceberg
>>> iceberg.build_index(table, "user_id")               # the current snapshot's data files
>>> iceberg.plan_files(table, "user_id", [42])          # PyIceberg's plan, less what cannot match
>>> iceberg.read(table, "user_id", [42])                # = table.scan(In("user_id", [42])).to_arrow()
>>> iceberg.update_index(table, "user_id")              # after appends: only the new files

The index is advisory, as for Parquet directories: a data file the index does not know (added
after the indexed snapshot) is planned; a missing, foreign or corrupt index means PyIceberg's
full plan with one warning. Data files are immutable in Iceberg, and the index checks each
file's size and row count against the manifest's record before it skips one.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import tempfile
import time
import uuid
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import _ribbon
from .._lakecore.index import FilesForEach, LakeIndex
from .._lakecore.table import MAX_DELTAS, REBUILD_SHARE, IndexUnusable, LakeError, key_kind_of_type
from ..sets import FilterSet
from . import _puffin
from ._build import IndexStats, _check_engine, _parquet_pair_hashes

try:
    from pyiceberg.expressions import In
    from pyiceberg.table.statistics import StatisticsFile
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError("ribbon.lake.iceberg needs PyIceberg: pip install "
                      "'ribbon-filter[iceberg]'") from e

#: The blob type of a ribbon index in a Puffin file, and the format of its metadata JSON.
BLOB_TYPE = "ribbon-filter-set-v1"
INDEX_FORMAT = "ribbon.lake.iceberg/1"
# The blob types PyIceberg 0.12's table metadata accepts in a statistics file's blob-metadata
# (its model is a Literal of the spec's types): a statistics file that listed a ribbon blob
# there would make the table unreadable by PyIceberg, so ribbon's blobs are found from the
# Puffin footer and only these are listed.
_LISTABLE_BLOB_TYPES = {"apache-datasketches-theta-v1", "deletion-vector-v1"}


# ---------------------------------------------------------------------------------------
# The table: the column's field id, a snapshot's data files.


def _snapshot(table, snapshot_id: Optional[int]):
    snapshot = (table.current_snapshot() if snapshot_id is None
                else table.snapshot_by_id(snapshot_id))
    if snapshot is None:
        raise LakeError(f"table {_name(table)} has no snapshot"
                        + (f" {snapshot_id}" if snapshot_id is not None else ""))
    return snapshot


def _name(table) -> str:
    return ".".join(table.name()) if hasattr(table, "name") else str(table)


def _field(table, column: str):
    """The Iceberg field of ``column`` in the table's current schema (field ids outlive
    renames: a snapshot written under another name is read by the same id); LakeError for a
    missing, nested or non-key column."""
    schema = table.schema()
    try:
        found = schema.find_field(column)
    except ValueError:
        raise LakeError(f"table {_name(table)} has no column {column!r}") from None
    if found.field_id not in {f.field_id for f in schema.fields}:
        raise LakeError(f"column {column!r} is nested: an index takes a top-level column")
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    arrow_type = schema_to_pyarrow(schema.select(column)).field(0).type
    return found.field_id, arrow_type, key_kind_of_type(arrow_type, column)


def _live_files(table, snapshot) -> Dict[str, object]:
    """{path as the manifests record it: DataFile} of the snapshot's live data files."""
    tasks = table.scan(snapshot_id=snapshot.snapshot_id).plan_files()
    return {t.file.file_path: t.file for t in tasks}


def _parquet_column(parquet: pq.ParquetFile, field_id: int) -> Optional[int]:
    """The index of the top-level Parquet column with this Iceberg field id, or None (a file
    written before the column was added)."""
    for i, f in enumerate(parquet.schema_arrow):
        if f.metadata and f.metadata.get(b"PARQUET:field_id") == str(field_id).encode():
            return i
    return None


def _file_pair_hashes(table, path: str, field_id: int, kind: str, seed: int):
    """(pair hashes, nulls, rows) of one data file, the column matched by its field id (as
    Iceberg matches it: the file may have the column under an older name)."""
    with table.io.new_input(path).open() as f:
        parquet = pq.ParquetFile(f)
        rows = parquet.metadata.num_rows
        index = _parquet_column(parquet, field_id)
        if index is None:
            return np.empty(0, np.uint64), rows, rows
        field = parquet.schema_arrow.field(index)
        if key_kind_of_type(field.type, field.name) != kind:
            raise LakeError(f"field {field_id} is {field.type} in {path}, not of the table's "
                            "key kind")
        hashes, nulls = _parquet_pair_hashes(parquet, field.name, field.type, path.encode(),
                                             kind, seed)
        return hashes, nulls, rows


# ---------------------------------------------------------------------------------------
# Building a filter set over data files: local (pyarrow) or Spark.


def _build_set(table, paths: Sequence[str], field_id: int, kind: str, *, fpr, bits, seed,
               threads, memory_limit, tmp_dir):
    """(set bytes without metadata, {path: (nulls, rows)}) over ``paths``, every path a
    group (those without keys too)."""
    counts, with_keys = {}, 0
    with tempfile.TemporaryDirectory(dir=tmp_dir) as scratch:
        built = os.path.join(scratch, "index.ribbon")
        with _ribbon.BulkBuilder(kind, memory_limit=memory_limit, tmp_dir=scratch, fpr=fpr,
                                 bits=bits, seed=seed, threads=threads, groups="bytes") as builder:
            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                # In order, at most 2 * threads files' hashes waiting at once.
                pending = []
                for path in list(paths) + [None] * (2 * threads):
                    if path is not None:
                        pending.append((path, pool.submit(_file_pair_hashes, table, path,
                                                          field_id, kind, seed)))
                    if pending and (path is None or len(pending) >= 2 * threads):
                        done, future = pending.pop(0)
                        hashes, nulls, rows = future.result()
                        counts[done] = (nulls, rows)
                        with_keys += bool(len(hashes))
                        builder.add_hashes(hashes)
            builder.set_group_count(with_keys)
            builder.set_group_names([p.encode() for p in paths])
            builder.finish(built)
        with open(built, "rb") as f:
            return f.read(), counts


def _build_set_spark(spark, table, paths, field_id, kind, *, fpr, bits, seed):
    """The Spark engine: the same listed files read as plain Parquet (no Iceberg runtime),
    the column matched by its Parquet field id, ribbon.spark.build_set: the local bytes."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..spark import api as ribbon_spark
    from .._lakecore.table import spark_path

    spark_type = T.LongType() if kind == "u64" else T.BinaryType()
    schema = T.StructType([T.StructField("key", spark_type, True,
                                         metadata={"parquet.field.id": field_id})])
    by_uri = {_spark_uri(p): p for p in paths}
    previous = spark.conf.get("spark.sql.parquet.fieldId.read.enabled", "false")
    spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    try:
        df = (spark.read.schema(schema).parquet(*[spark_path(p) for p in paths])
              .select("key", F.col("_metadata.file_path").alias("uri")))
        counts = {row["uri"]: (row["rows"], row["keys"]) for row in
                  df.groupBy("uri").agg(F.count(F.lit(1)).alias("rows"),
                                        F.count("key").alias("keys")).collect()}
        names = spark.createDataFrame([(u, p) for u, p in by_uri.items()],
                                      "uri string, file string")
        pairs = (df.where(F.col("key").isNotNull()).join(F.broadcast(names), "uri")
                 .select("file", "key"))
        with tempfile.TemporaryDirectory() as scratch:
            built = os.path.join(scratch, "index.ribbon")
            ribbon_spark.build_set(pairs, "file", "key", built, fpr=fpr, bits=bits, seed=seed,
                                   group_names=[p.encode() for p in paths])
            with open(built, "rb") as f:
                data = f.read()
    finally:
        spark.conf.set("spark.sql.parquet.fieldId.read.enabled", previous)
    result = {}
    for uri, (rows, keys) in counts.items():
        if _spark_uri(uri) not in by_uri:
            raise LakeError(f"Spark read {uri}, which the snapshot does not list")
        result[by_uri[_spark_uri(uri)]] = (rows - keys, rows)
    for path in paths:  # files Spark read no row of
        result.setdefault(path, (0, 0))
    return data, result


def _spark_uri(uri: str) -> str:
    """A file URI as Spark's _metadata.file_path spells it (file:/a, not file:///a; s3a://),
    decoded: the key that matches a manifest's path to the file Spark read."""
    import urllib.parse

    uri = urllib.parse.unquote(uri)
    if uri.startswith("file:///"):
        return "file:" + uri[len("file://"):]
    return "s3a://" + uri[len("s3://"):] if uri.startswith("s3://") else uri


# ---------------------------------------------------------------------------------------
# The index: blobs in a Puffin file, registered as the snapshot's statistics file.


def _blob_metadata(table, snapshot, field_id, column, arrow_type, kind, files, counts,
                   delta: int) -> bytes:
    entries = {path: {"size": int(files[path].file_size_in_bytes),
                      "rows": int(files[path].record_count), "nulls": int(counts[path][0])}
               for path in files}
    doc = {"format": INDEX_FORMAT, "table": str(table.metadata.table_uuid),
           "field_id": field_id, "column": column, "type": str(arrow_type), "key_kind": kind,
           "snapshot_id": snapshot.snapshot_id, "delta": delta,
           "rows": sum(e["rows"] for e in entries.values()),
           "nulls": sum(e["nulls"] for e in entries.values()), "files": entries}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _blob(data: bytes, snapshot, field_id: int, delta: int, files: int) -> _puffin.Blob:
    index = FilterSet.from_bytes(data)
    meta = json.loads(index.metadata)
    info = index.info()
    return _puffin.Blob(
        type=BLOB_TYPE, fields=[field_id], snapshot_id=snapshot.snapshot_id,
        sequence_number=snapshot.sequence_number or 0, data=data,
        properties={"ribbon.format-version": str(info["format_version"]),
                    "ribbon.fpr": repr(index.fpr), "ribbon.delta": str(delta),
                    "ribbon.rows": str(meta["rows"]), "ribbon.files": str(files),
                    "ribbon.pairs": str(index.key_count)})


def _statistics_of(table, snapshot_id: int):
    return next((s for s in table.metadata.statistics if s.snapshot_id == snapshot_id), None)


def _read_statistics(table, statistics) -> List[_puffin.Blob]:
    try:
        with table.io.new_input(statistics.statistics_path).open() as f:
            data = f.read()
    except (OSError, FileNotFoundError) as e:
        raise IndexUnusable(f"statistics file {statistics.statistics_path} cannot be read: "
                            f"{e}") from None
    try:
        return _puffin.read(data, statistics.statistics_path)
    except LakeError as e:
        raise IndexUnusable(str(e)) from None


def _register(table, snapshot, blobs: List[_puffin.Blob]):
    """Writes ``blobs`` as a new Puffin file in the table's metadata directory through its
    FileIO, and registers it as the snapshot's statistics file (replacing the one there was,
    whose other blobs ``blobs`` carries). Returns the Puffin file's path."""
    from .. import __version__

    layout = _puffin.write(blobs, {"created-by": f"ribbon {__version__}"})
    path = (f"{table.metadata.location.rstrip('/')}/metadata/"
            f"{snapshot.snapshot_id}-{uuid.uuid4()}-ribbon.stats")
    with table.io.new_output(path).create(overwrite=False) as out:
        out.write(layout.data)
    listed = [{"type": b.type, "snapshot-id": b.snapshot_id, "sequence-number":
               b.sequence_number, "fields": b.fields, "properties": b.properties or None}
              for b in blobs if b.type in _LISTABLE_BLOB_TYPES]
    statistics = StatisticsFile(**{"snapshot-id": snapshot.snapshot_id,
                                   "statistics-path": path,
                                   "file-size-in-bytes": len(layout.data),
                                   "file-footer-size-in-bytes": layout.footer_size,
                                   "blob-metadata": listed})
    with table.update_statistics() as update:
        update.set_statistics(statistics)
    return path


def _is_ours(blob: _puffin.Blob, field_id: int) -> bool:
    return blob.type == BLOB_TYPE and blob.fields == [field_id]


class IcebergIndex(LakeIndex):
    """An index of one column of an Iceberg table: the base blob and its deltas, as
    :class:`ribbon.lake.LakeIndex` answers (``files_for``), files named by their paths."""

    def __init__(self, statistics_path: str, snapshot_id: int, parts):
        super().__init__(parts)
        self.statistics_path, self.snapshot_id = statistics_path, snapshot_id
        self.field_id = self.parts[0][2]["field_id"]

    def unusable_for(self, data_file) -> bool:
        """Whether the index cannot answer for this data file (unknown, or recorded with
        another size or row count)."""
        known = self.files.get(data_file.file_path)
        return (known is None or known[0]["size"] != data_file.file_size_in_bytes
                or known[0]["rows"] != data_file.record_count)

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


# Loaded indexes by (statistics path, file size, field id): a statistics file is written once
# under a new name and never changed, so a loaded one stays valid; a few are kept.
_LOADED: collections.OrderedDict = collections.OrderedDict()
_LOADED_MAX = 8


def _cached_index(table, statistics, field_id):
    key = (statistics.statistics_path, statistics.file_size_in_bytes, field_id)
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]
    blobs = _read_statistics(table, statistics)
    if not any(b.type.startswith("ribbon-") and field_id in b.fields for b in blobs):
        return None
    index = _index_from_blobs(table, statistics, blobs, field_id)
    _LOADED[key] = index
    while len(_LOADED) > _LOADED_MAX:
        _LOADED.popitem(last=False)
    return index


def _index_from_blobs(table, statistics, blobs, field_id) -> IcebergIndex:
    parts = []
    for blob in blobs:
        if blob.type.startswith("ribbon-") and blob.type != BLOB_TYPE and field_id in blob.fields:
            raise IndexUnusable(f"{statistics.statistics_path} holds a {blob.type} blob, a "
                                f"version this ribbon does not read (it reads {BLOB_TYPE})")
        if not _is_ours(blob, field_id):
            continue
        try:
            index = FilterSet.from_bytes(blob.data)
            meta = json.loads(index.metadata or b"")
        except (ValueError, _ribbon.Error) as e:
            raise IndexUnusable(f"the {BLOB_TYPE} blob of {statistics.statistics_path} is "
                                f"corrupt: {e}") from None
        if meta.get("format") != INDEX_FORMAT or meta.get("table") != str(
                table.metadata.table_uuid):
            raise IndexUnusable(f"the {BLOB_TYPE} blob of {statistics.statistics_path} is "
                                "not an index of this table")
        parts.append((statistics.statistics_path, index, meta))
    if not parts:
        raise IndexUnusable(f"{statistics.statistics_path} holds no {BLOB_TYPE} blob of "
                            f"field {field_id}")
    parts.sort(key=lambda p: p[2]["delta"])
    return IcebergIndex(statistics.statistics_path, statistics.snapshot_id, parts)


def load_index(table, column: str, snapshot_id: Optional[int] = None) -> IcebergIndex:
    """The index of ``column`` that answers for the snapshot (the current one by default):
    the statistics file of the newest snapshot, among the snapshot and its ancestors, that
    holds a ribbon blob of the column's field id. IndexUnusable (a LakeError) where there is
    none or it cannot be read; its message says why."""
    snapshot = _snapshot(table, snapshot_id)
    field_id, _, _ = _field(table, column)
    by_snapshot = {s.snapshot_id: s for s in table.metadata.statistics}
    known = {s.snapshot_id for s in table.metadata.snapshots}
    expired = [s for s in by_snapshot if s not in known]
    ancestor = snapshot
    while ancestor is not None:
        statistics = by_snapshot.get(ancestor.snapshot_id)
        if statistics is not None:
            index = _cached_index(table, statistics, field_id)
            if index is not None:
                return index
        parent = ancestor.parent_snapshot_id
        ancestor = table.snapshot_by_id(parent) if parent is not None else None
    why = (f"no statistics file of snapshot {snapshot.snapshot_id} or its ancestors holds a "
           f"{BLOB_TYPE} blob of column {column!r} (field {field_id})")
    if expired:
        why += f"; statistics of expired snapshots {sorted(expired)} are not used"
    raise IndexUnusable(why)


def build_index(table, column: str, *, fpr: Optional[float] = None,
                bits: Optional[int] = None, seed: int = 0, snapshot_id: Optional[int] = None,
                engine: str = "local", spark=None, threads: int = 0,
                memory_limit: int = 1 << 30, tmp_dir: Optional[str] = None,
                _only: Optional[Sequence[str]] = None, _carry=None) -> IndexStats:
    """Indexes ``column`` of the Iceberg ``table`` (a ``pyiceberg.table.Table``) at its current
    snapshot (or ``snapshot_id``): one filter set whose groups are the snapshot's live data
    files, named by their paths as the manifests record them, and whose keys are the column's
    non-null values (read by the column's field id, so files written before a rename count).
    Written as a Puffin file (blob type ``ribbon-filter-set-v1``) in the table's metadata
    directory through its FileIO, and registered as the snapshot's statistics file; the other
    blobs of a statistics file registered for that snapshot are carried over.

    ``engine``: ``"local"`` (pyarrow, ``threads`` files at once) or ``"spark"`` (the same
    files read as plain Parquet by ``spark``, matched by Parquet field id; the same bytes).
    ``fpr``/``bits``: as ``ribbon.build_set`` (default r = 8: 1/256 a file)."""
    clock = time.monotonic()
    _check_engine(engine, spark)
    threads = threads or os.cpu_count() or 1
    snapshot = _snapshot(table, snapshot_id)
    field_id, arrow_type, kind = _field(table, column)
    live = _live_files(table, snapshot)
    files = {p: live[p] for p in _only} if _only is not None else live
    if not files:
        raise LakeError(f"snapshot {snapshot.snapshot_id} of table {_name(table)} has no data "
                        "files")
    paths = sorted(files)
    if engine == "local":
        data, counts = _build_set(table, paths, field_id, kind, fpr=fpr, bits=bits, seed=seed,
                                  threads=threads, memory_limit=memory_limit, tmp_dir=tmp_dir)
    else:
        data, counts = _build_set_spark(spark, table, paths, field_id, kind, fpr=fpr,
                                        bits=bits, seed=seed)
    delta = len(_carry.parts) if _carry is not None else 0
    meta = _blob_metadata(table, snapshot, field_id, column, arrow_type, kind, files, counts,
                          delta)
    data = _ribbon.Filter.from_bytes(data).with_metadata(meta).to_bytes()
    built = time.monotonic()
    blobs = []
    previous = _statistics_of(table, snapshot.snapshot_id)
    if previous is not None:  # carry the other blobs over (and ours, for a delta)
        try:
            blobs = [b for b in _read_statistics(table, previous)
                     if not _is_ours(b, field_id)]
        except LakeError as e:
            warnings.warn(f"ribbon.lake.iceberg: the statistics file registered for snapshot "
                          f"{snapshot.snapshot_id} is replaced and not carried over: {e}")
    if _carry is not None:
        blobs += [_puffin.Blob(BLOB_TYPE, [field_id], snapshot.snapshot_id,
                               snapshot.sequence_number or 0, index.to_bytes(),
                               _carried_properties(index, meta_of))
                  for _, index, meta_of in _carry.parts]
    blobs.append(_blob(data, snapshot, field_id, delta, len(files)))
    path = _register(table, snapshot, blobs)
    ours = [b for b in blobs if _is_ours(b, field_id)]
    return IndexStats(path=path, files=len(live), files_indexed=len(files),
                      rows=sum(r for _, r in counts.values()),
                      nulls=sum(n for n, _ in counts.values()),
                      pairs=sum(FilterSet.from_bytes(b.data).key_count for b in ours[-1:]),
                      bytes=sum(len(b.data) for b in ours), action="build",
                      seconds={"build": built - clock, "total": time.monotonic() - clock})


def _carried_properties(index: FilterSet, meta: dict) -> Dict[str, str]:
    return {"ribbon.format-version": str(index.info()["format_version"]),
            "ribbon.fpr": repr(index.fpr), "ribbon.delta": str(meta["delta"]),
            "ribbon.rows": str(meta["rows"]), "ribbon.files": str(len(meta["files"])),
            "ribbon.pairs": str(index.key_count)}


def update_index(table, column: str, *, fpr: Optional[float] = None,
                 bits: Optional[int] = None, engine: str = "local", spark=None,
                 threads: int = 0, **options) -> IndexStats:
    """Brings the index of ``column`` to the current snapshot: a delta blob over only the
    data files the index does not know (the earlier blobs carried into the new snapshot's
    Puffin file as they are), or, when those are more than a quarter of the snapshot's
    files, there are already MAX_DELTAS deltas, fewer than half of the indexed files are
    still live, or there is no usable index, a rebuild. ``action`` says which; "none" when
    the index already answers for every live file of the current snapshot."""
    snapshot = _snapshot(table, None)
    common = dict(fpr=fpr, bits=bits, engine=engine, spark=spark, threads=threads, **options)
    try:
        index = load_index(table, column)
    except IndexUnusable:
        stats = build_index(table, column, **common)
        stats.action = "rebuild"
        return stats
    live = _live_files(table, snapshot)
    stale = sorted(p for p, f in live.items() if index.unusable_for(f))
    still_live = sum(p in live for p in index.files)
    if not stale:
        return IndexStats(path=index.statistics_path, files=len(live), action="none")
    if (len(stale) > REBUILD_SHARE * len(live) or len(index.parts) > MAX_DELTAS
            or still_live < len(index.files) / 2):
        stats = build_index(table, column, **common)
        stats.action = "rebuild"
        return stats
    stats = build_index(table, column, _only=stale, _carry=index, **common)
    stats.action = "delta"
    return stats


# ---------------------------------------------------------------------------------------
# Planning and reading through the index.


def _key_list(keys) -> list:
    if isinstance(keys, (pa.Array, pa.ChunkedArray)):
        return keys.to_pylist()
    if isinstance(keys, np.ndarray):
        return keys.tolist()
    if isinstance(keys, (str, bytes, int, np.integer)):
        return [keys]
    return list(keys)


def _scan(table, column, keys, snapshot_id, columns=None, *, row_filter=True):
    options = {"snapshot_id": snapshot_id}
    if row_filter:
        options["row_filter"] = In(column, keys)
    if columns is not None:
        options["selected_fields"] = tuple(columns)
    return table.scan(**options)


# Whole-snapshot plans by (table UUID, snapshot id, projection): a snapshot's data files and
# their delete files never change, so a plan made once answers every later read of it.
_PLANS: collections.OrderedDict = collections.OrderedDict()
_PLANS_MAX = 4


def _whole_plan(table, column, keys, snapshot_id, columns):
    """(scan over every file of the snapshot, its tasks), the tasks planned once a snapshot."""
    whole = _scan(table, column, keys, snapshot_id, columns, row_filter=False)
    snapshot = whole.snapshot()
    key = (str(table.metadata.table_uuid), snapshot.snapshot_id if snapshot else None)
    if key not in _PLANS:
        _PLANS[key] = list(whole.plan_files())
        while len(_PLANS) > _PLANS_MAX:
            _PLANS.popitem(last=False)
    _PLANS.move_to_end(key)
    return _PLANS[key]


def _index_or_warning(table, column, snapshot_id):
    try:
        return load_index(table, column, snapshot_id)
    except IndexUnusable as e:
        warnings.warn(f"ribbon.lake.iceberg: full plan of {_name(table)}: {e}", stacklevel=4)
        return None


def _pruned(table, column, keys, scan, index):
    tasks = list(scan.plan_files())
    if index is None:
        return tasks
    candidates = set(index.files_for(keys)) if keys else set()
    return [t for t in tasks if t.file.file_path in candidates or index.unusable_for(t.file)]


def plan_files(table, column: str, keys, snapshot_id: Optional[int] = None) -> list:
    """PyIceberg's plan of ``table.scan(row_filter=In(column, keys))`` (its partition and
    min/max pruning first), less the data files the index proves hold none of the keys: a
    list of ``FileScanTask``, delete files attached as PyIceberg attached them. Data files
    added after the indexed snapshot are kept; a missing or unusable index: the full plan and
    one warning."""
    keys = _key_list(keys)
    index = _index_or_warning(table, column, snapshot_id)
    return _pruned(table, column, keys, _scan(table, column, keys, snapshot_id), index)


def files_for_each(table, column: str, keys, snapshot_id: Optional[int] = None) -> FilesForEach:
    """For each of many keys at once (an upsert's batch: 10^5-10^6), the data files of the
    snapshot that may hold it (paths as the manifests record them): a
    :class:`ribbon.lake.FilesForEach`. The files the index does not know are there for every
    key; IndexUnusable where there is no usable index."""
    keys = _key_list(keys)
    index = load_index(table, column, snapshot_id)
    tasks = _whole_plan(table, column, keys, snapshot_id, None)
    return index.files_for_each(keys, [t.file for t in tasks])


def read(table, column: str, keys, columns: Optional[Sequence[str]] = None,
         snapshot_id: Optional[int] = None) -> pa.Table:
    """The rows of ``table.scan(row_filter=In(column, keys), selected_fields=columns,
    snapshot_id=snapshot_id).to_arrow()``, reading only the data files that may hold a key,
    each with only the keys it may hold, through PyIceberg's own reader
    (``pyiceberg.io.pyarrow.ArrowScan``), so deletes, schema evolution and projections are
    PyIceberg's. The snapshot's files come from PyIceberg's plan of the whole snapshot, made
    once per snapshot and kept (a snapshot never changes; its min/max pruning, which the
    index makes moot, is left out); with no usable index, PyIceberg's plan and one warning."""
    from pyiceberg.io.pyarrow import ArrowScan

    keys = _key_list(keys)
    index = _index_or_warning(table, column, snapshot_id)
    scan = _scan(table, column, keys, snapshot_id, columns)
    if index is None:
        return scan.to_arrow()
    projection = scan.projection()
    tasks = {t.file.file_path: t for t in _whole_plan(table, column, keys, snapshot_id, columns)}
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


# ---------------------------------------------------------------------------------------
# DuckDB over the candidate files.


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_FILE_SCHEMAS: Dict[str, pa.Schema] = {}


def _parquet_matches(task, io, projection, key_field) -> bool:
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
    for field in list(projection.fields) + [key_field]:
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
        candidates = set(index.files_for(keys)) if keys else set()
        tasks = [t for t in _whole_plan(table, column, keys, snapshot_id, columns)
                 if t.file.file_path in candidates or index.unusable_for(t.file)]
    names = ", ".join(_quoted(f.name) for f in projection.fields)
    key_field = table.schema().find_field(column)
    direct = [t for t in tasks if _parquet_matches(t, scan.io, projection, key_field)]
    others = [t for t in tasks if t not in direct]
    arrow_schema = schema_to_pyarrow(projection, include_field_ids=False)
    relation = None
    if others or not direct:  # what DuckDB cannot read as PyIceberg does, through PyIceberg
        rows = (ArrowScan(scan.table_metadata, scan.io, projection, scan.row_filter,
                          scan.case_sensitive).to_table(others) if others
                else arrow_schema.empty_table())
        relation = con.from_arrow(rows.cast(arrow_schema)).project(names)
    if direct:
        _, arrow_type, _ = _field(table, column)
        rows = con.read_parquet([t.file.file_path[len("file://"):] for t in direct])
        with_key = names if column in projection.column_names else f"{names}, {_quoted(column)}"
        rows = rows.project(with_key).set_alias("ribbon_rows")
        wanted = con.from_arrow(pa.table({"key": pa.array(keys, type=arrow_type)}))
        matching = rows.join(wanted.set_alias("ribbon_keys"),
                             f"ribbon_rows.{_quoted(column)} = ribbon_keys.key", how="semi")
        matching = matching.project(names)
        relation = matching if relation is None else matching.union(relation)
    return relation


# Writes by key (docs/lake.md, "Upserts and deletes"), after the index they stand on.
from ._iceberg_rewrite import orphan_files  # noqa: E402
from ._iceberg_upsert import delete, upsert  # noqa: E402

__all__ = ["BLOB_TYPE", "INDEX_FORMAT", "IcebergIndex", "build_index", "delete", "duckdb_relation", "files_for_each", "load_index",
           "orphan_files", "plan_files", "read", "update_index", "upsert"]
