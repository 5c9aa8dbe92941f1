"""Building and updating the index of an Iceberg table's column: a filter set over data
files (local: PyIceberg's reader; Spark), its metadata, its blob, and ``update_index``'s
delta or rebuild; the statistics commit is _iceberg_commit's."""

from __future__ import annotations

import concurrent.futures
import json
import os
import tempfile
import time
from typing import Dict, Optional, Sequence

from .. import _ribbon
from .._lakecore.table import MAX_DELTAS, REBUILD_SHARE, IndexUnusable, LakeError
from ..sets import FilterSet
from . import _puffin
from ._build import IndexStats, _check_engine
from ._iceberg_commit import commit_statistics
from ._iceberg_plan import load_index
from ._iceberg_table import (BLOB_TYPE, INDEX_FORMAT, file_facts, file_pair_hashes,
                             file_values, key_field, live_files, resolution, snapshot_of,
                             table_name)



def _read_file(table, data_file, field_id, kind, seed):
    """(pair hashes, facts with nulls) of one data file."""
    facts = file_facts(table, data_file, field_id)
    hashes, nulls = file_pair_hashes(table, data_file, field_id, kind, seed)
    facts["nulls"] = int(nulls)
    return hashes, facts


def _build_set(table, files: Dict[str, object], field_id: int, kind: str, *, fpr, bits, seed,
               threads, memory_limit, tmp_dir):
    """(set bytes without metadata, {path: facts}) over ``files`` ({path: DataFile}), every
    file a group (those without keys too)."""
    paths, facts, with_keys = sorted(files), {}, 0
    with tempfile.TemporaryDirectory(dir=tmp_dir) as scratch:
        built = os.path.join(scratch, "index.ribbon")
        with _ribbon.BulkBuilder(kind, memory_limit=memory_limit, tmp_dir=scratch, fpr=fpr,
                                 bits=bits, seed=seed, threads=threads, groups="bytes") as builder:
            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                # In order, at most 2 * threads files' hashes waiting at once.
                pending = []
                for path in paths + [None] * (2 * threads):
                    if path is not None:
                        pending.append((path, pool.submit(_read_file, table, files[path],
                                                          field_id, kind, seed)))
                    if pending and (path is None or len(pending) >= 2 * threads):
                        done, future = pending.pop(0)
                        hashes, facts[done] = future.result()
                        with_keys += bool(len(hashes))
                        builder.add_hashes(hashes)
            builder.set_group_count(with_keys)
            builder.set_group_names([p.encode() for p in paths])
            builder.finish(built)
        with open(built, "rb") as f:
            return f.read(), facts


def _build_set_spark(spark, table, files, field_id, kind, *, fpr, bits, seed):
    """The Spark engine: the files whose field PyIceberg finds by its Parquet field id read as
    plain Parquet by Spark (no Iceberg runtime jar), the others (name mapping, partition
    values, defaults) by PyIceberg's reader here; ribbon.spark.build_set: the local bytes."""
    from pyspark.sql import types as T

    from ..spark import api as ribbon_spark

    facts = {p: file_facts(table, f, field_id) for p, f in files.items()}
    by_id = sorted(p for p, f in facts.items() if f["by"] == "id")
    spark_type = T.LongType() if kind == "u64" else T.BinaryType()
    pairs = spark.createDataFrame([], T.StructType([T.StructField("file", T.StringType()),
                                                    T.StructField("key", spark_type)]))
    for path in sorted(set(files) - set(by_id)):
        values = list(file_values(table, files[path], field_id))  # string or large_string
        facts[path]["nulls"] = sum(v.null_count for v in values)
        rows = [(path, v.encode() if isinstance(v, str) else v)
                for array in values for v in array.drop_null().to_pylist()]
        pairs = pairs.union(spark.createDataFrame(rows, pairs.schema)) if rows else pairs
    previous = spark.conf.get("spark.sql.parquet.fieldId.read.enabled", "false")
    spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    try:
        if by_id:
            pairs = pairs.union(_spark_pairs(spark, by_id, field_id, spark_type, facts))
        with tempfile.TemporaryDirectory() as scratch:
            built = os.path.join(scratch, "index.ribbon")
            ribbon_spark.build_set(pairs, "file", "key", built, fpr=fpr, bits=bits, seed=seed,
                                   group_names=[p.encode() for p in sorted(files)])
            with open(built, "rb") as f:
                data = f.read()
    finally:
        spark.conf.set("spark.sql.parquet.fieldId.read.enabled", previous)
    return data, facts


def _spark_pairs(spark, paths, field_id, spark_type, facts):
    """(file, key) pairs Spark reads, the column matched by Parquet field id; each file's
    nulls into ``facts``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from .._lakecore.table import spark_path

    schema = T.StructType([T.StructField("key", spark_type, True,
                                         metadata={"parquet.field.id": field_id})])
    by_uri = {_spark_uri(p): p for p in paths}
    df = (spark.read.schema(schema).parquet(*[spark_path(p) for p in paths])
          .select("key", F.col("_metadata.file_path").alias("uri")))
    for row in df.groupBy("uri").agg(F.count(F.lit(1)).alias("rows"),
                                     F.count("key").alias("keys")).collect():
        if _spark_uri(row["uri"]) not in by_uri:
            raise LakeError(f"Spark read {row['uri']}, which the snapshot does not list")
        facts[by_uri[_spark_uri(row["uri"])]]["nulls"] = row["rows"] - row["keys"]
    for path in paths:  # files Spark read no row of
        facts[path].setdefault("nulls", 0)
    names = spark.createDataFrame(list(by_uri.items()), "uri string, file string")
    return (df.where(F.col("key").isNotNull()).join(F.broadcast(names), "uri")
            .select("file", "key"))


def _spark_uri(uri: str) -> str:
    """A file URI as Spark's _metadata.file_path spells it (file:/a, not file:///a; s3a://),
    decoded: the key that matches a manifest's path to the file Spark read."""
    import urllib.parse

    uri = urllib.parse.unquote(uri)
    if uri.startswith("file:///"):
        return "file:" + uri[len("file://"):]
    return "s3a://" + uri[len("s3://"):] if uri.startswith("s3://") else uri


def _blob_metadata(table, snapshot, field_id, column, arrow_type, kind, facts, delta: int,
                   options: dict) -> bytes:
    doc = {"format": INDEX_FORMAT, "table": str(table.metadata.table_uuid),
           "field_id": field_id, "column": column, "type": str(arrow_type), "key_kind": kind,
           "snapshot_id": snapshot.snapshot_id, "delta": delta, "options": options,
           "resolution": resolution(table, field_id),
           "rows": sum(f["rows"] for f in facts.values()),
           "nulls": sum(f["nulls"] for f in facts.values()), "files": facts}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _blob(data: bytes, snapshot, field_id: int, meta: dict) -> _puffin.Blob:
    index = FilterSet.from_bytes(data)
    return _puffin.Blob(
        type=BLOB_TYPE, fields=[field_id], snapshot_id=snapshot.snapshot_id,
        sequence_number=snapshot.sequence_number or 0, data=data,
        properties={"ribbon.format-version": str(index.info()["format_version"]),
                    "ribbon.fpr": repr(index.fpr), "ribbon.delta": str(meta["delta"]),
                    "ribbon.rows": str(meta["rows"]), "ribbon.files": str(len(meta["files"])),
                    "ribbon.pairs": str(index.key_count)})


def build_index(table, column: str, *, fpr: Optional[float] = None,
                bits: Optional[int] = None, seed: int = 0, snapshot_id: Optional[int] = None,
                engine: str = "local", spark=None, threads: int = 0,
                memory_limit: int = 1 << 30, tmp_dir: Optional[str] = None,
                _only: Optional[Sequence[str]] = None, _carry=None,
                _live: Optional[Dict[str, object]] = None) -> IndexStats:
    """Indexes ``column`` of the Iceberg ``table`` (a ``pyiceberg.table.Table``) at its current
    snapshot (or ``snapshot_id``): one filter set whose groups are the snapshot's live data
    files, named by their paths as the manifests record them, and whose keys are the column's
    non-null values, each file's read as PyIceberg's reader reads it (by field id, the name
    mapping for files without field ids, partition values, the column's initial default).
    Written as a Puffin file (blob type ``ribbon-filter-set-v1``) in the table's metadata
    directory through its FileIO, and registered as the snapshot's statistics file; the other
    blobs of the statistics file registered for that snapshot (any type, any codec) are
    carried over as stored (``_iceberg_commit.commit_statistics``).

    ``engine``: ``"local"`` (PyIceberg's reader, ``threads`` files at once) or ``"spark"``
    (the files with field ids read as plain Parquet by ``spark``; the same bytes).
    ``fpr``/``bits``/``seed``: as ``ribbon.build_set`` (default r = 8: 1/256 a file),
    recorded in the index, which ``update_index`` reuses."""
    clock = time.monotonic()
    _check_engine(engine, spark)
    threads = threads or os.cpu_count() or 1
    snapshot = snapshot_of(table, snapshot_id)
    field_id, arrow_type, kind = key_field(table, column)
    live = _live if _live is not None else live_files(table, snapshot)
    files = {p: live[p] for p in _only} if _only is not None else live
    if not files:
        raise LakeError(f"snapshot {snapshot.snapshot_id} of table {table_name(table)} has no "
                        "data files")
    if engine == "local":
        data, facts = _build_set(table, files, field_id, kind, fpr=fpr, bits=bits, seed=seed,
                                 threads=threads, memory_limit=memory_limit, tmp_dir=tmp_dir)
    else:
        data, facts = _build_set_spark(spark, table, files, field_id, kind, fpr=fpr,
                                       bits=bits, seed=seed)
    delta = len(_carry.parts) if _carry is not None else 0
    options = {"fpr": fpr, "bits": bits, "seed": seed}
    meta = _blob_metadata(table, snapshot, field_id, column, arrow_type, kind, facts, delta,
                          options)
    data = _ribbon.Filter.from_bytes(data).with_metadata(meta).to_bytes()
    built = time.monotonic()
    blobs = [] if _carry is None else [
        _puffin.Blob(BLOB_TYPE, [field_id], snapshot.snapshot_id, snapshot.sequence_number or 0,
                     index.to_bytes(), _carried_properties(index, part_meta))
        for _, index, part_meta in _carry.parts]
    blobs.append(_blob(data, snapshot, field_id, json.loads(meta)))
    path = commit_statistics(table, snapshot.snapshot_id, blobs)
    return IndexStats(path=path, files=len(live), files_indexed=len(files),
                      rows=sum(f["rows"] for f in facts.values()),
                      nulls=sum(f["nulls"] for f in facts.values()),
                      pairs=FilterSet.from_bytes(data).key_count,
                      bytes=sum(len(b.data) for b in blobs), action="build",
                      seconds={"build": built - clock, "total": time.monotonic() - clock})


def _carried_properties(index: FilterSet, meta: dict) -> Dict[str, str]:
    return {"ribbon.format-version": str(index.info()["format_version"]),
            "ribbon.fpr": repr(index.fpr), "ribbon.delta": str(meta["delta"]),
            "ribbon.rows": str(meta["rows"]), "ribbon.files": str(len(meta["files"])),
            "ribbon.pairs": str(index.key_count)}


def update_index(table, column: str, *, fpr: Optional[float] = None,
                 bits: Optional[int] = None, engine: str = "local", spark=None,
                 threads: int = 0, _live: Optional[Dict[str, object]] = None,
                 **options) -> IndexStats:
    """Brings the index of ``column`` to the current snapshot: a delta blob over only the
    data files the index cannot answer for (the earlier blobs carried into the new
    snapshot's Puffin file as they are), or, when those are more than a quarter of the
    snapshot's files, there are already MAX_DELTAS deltas, fewer than half of the indexed
    files are still live, or there is no usable index, a rebuild. The index's fpr, bits and
    seed are reused unless given. ``action`` says which; "none" when the index already
    answers for every live file of the current snapshot. ``_live``: those files
    ({path: DataFile}) where the caller knows them (a write it just committed), else planned."""
    snapshot = snapshot_of(table, None)
    try:
        index = load_index(table, column)
    except IndexUnusable:
        index = None
    kept = index.parts[0][2].get("options", {}) if index is not None else {}
    common = dict(fpr=fpr if fpr is not None or bits is not None else kept.get("fpr"),
                  bits=bits if fpr is not None or bits is not None else kept.get("bits"),
                  engine=engine, spark=spark, threads=threads, **options)
    common.setdefault("seed", kept.get("seed", 0))
    live = _live if _live is not None else live_files(table, snapshot)
    common["_live"] = live
    if index is None:
        return _with_action(build_index(table, column, **common), "rebuild")
    stale = sorted(p for p, f in live.items() if index.unusable_for(f))
    still_live = sum(p in live for p in index.files)
    if not stale:
        return IndexStats(path=index.statistics_path, files=len(live), action="none")
    if (len(stale) > REBUILD_SHARE * len(live) or len(index.parts) > MAX_DELTAS
            or still_live < len(index.files) / 2):
        return _with_action(build_index(table, column, **common), "rebuild")
    return _with_action(build_index(table, column, _only=stale, _carry=index, **common), "delta")


def _with_action(stats: IndexStats, action: str) -> IndexStats:
    stats.action = action
    return stats
