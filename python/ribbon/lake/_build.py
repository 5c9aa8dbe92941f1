"""Building ribbon.lake's indexes: the local engine (pyarrow and ribbon.BulkBuilder) and the
Spark engine (ribbon.spark.build_set), build_index, and update_index (deltas, rebuilds)."""

from __future__ import annotations

import concurrent.futures
import json
import os
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .. import _ribbon
from .. import distributed as dist
from .._lakecore.index import _delta_paths, load_index
from .._lakecore.schema import unify_key_types
from .._lakecore.table import (INDEX_FORMAT, MAX_DELTAS, REBUILD_SHARE, IndexUnusable, LakeError, Table,
                     _footer_facts, key_kind_of_type, list_files, open_table, relative_of_uri,
                     spark_path)


# ---------------------------------------------------------------------------------------
# What the index records of the table (the same functions for both engines, on the driver):
# every file's facts (_table._footer_facts) and the metadata JSON.


def _survey(table: Table, files: Dict[str, pafs.FileInfo], column: str, threads: int,
            known_type: Optional[pa.DataType] = None):
    """({relative: facts}, {relative: the column's type, None where a file lacks it}, the
    column's type unified over the files (as pyarrow.dataset unifies a drifted directory:
    integer widths promote) and its key kind. A file without the column holds no key; the
    column must be in some file (or have ``known_type``: a delta's files may all lack it),
    its types of one kind and unifiable."""
    with concurrent.futures.ThreadPoolExecutor(max(1, threads)) as pool:
        found = list(pool.map(lambda item: _footer_facts(table, item[0], item[1], column),
                              files.items()))
    facts = {relative: f for relative, (f, _) in zip(files, found)}
    types = {relative: t for relative, (_, t) in zip(files, found)}
    present = [(r, t) for r, t in types.items() if t is not None]
    if not present and known_type is not None:
        return facts, types, known_type, key_kind_of_type(known_type, column)
    if not present:
        first = next(iter(files))
        names = pq.read_schema(table.path(first), filesystem=table.fs).names
        raise LakeError(f"column {column!r} is not in any file of {table.id}: not in "
                        f"{table.uri(first)} (its columns: {', '.join(names)})")
    # A column of type null (a file written from no or only null values) holds no key.
    typed = [(r, t) for r, t in present if not pa.types.is_null(t)] or present[:1]
    arrow_type, kind = unify_key_types(table, column, typed)
    return facts, types, arrow_type, kind


def _metadata(table: Table, column: str, arrow_type, kind: str, facts: dict, nulls: dict,
              extra: Optional[dict] = None) -> bytes:
    files = {r: dict(f, nulls=int(nulls.get(r, 0))) for r, f in facts.items()}
    doc = {
        "format": INDEX_FORMAT,
        "table": table.id,
        "column": column,
        "type": str(arrow_type),
        "key_kind": kind,
        "rows": sum(f["rows"] for f in files.values()),
        "nulls": sum(f["nulls"] for f in files.values()),
        "files": files,
    }
    doc.update(extra or {})
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------
# The local engine: files read in parallel (only the key column, a row group at a time), the
# (file, key) pairs hashed at once and kept as 8-byte hashes (deduplicated per file), spilled
# to disk past a memory limit, then the distributed builder's steps (ribbon.distributed) run
# here range by range: the bytes of ribbon.build_set over the same pairs.


def _key_column(array, arrow_type) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array


def _parquet_pair_hashes(parquet: pq.ParquetFile, column: str, arrow_type, name: bytes,
                         kind: str, seed: int):
    """(pair hashes, nulls) of one Parquet file's ``column``, its keys paired with the group
    ``name``, read a row group at a time (a file without the column: none, every row null).
    Repeated pairs are left to the builder, which stores a pair once."""
    if parquet.schema_arrow.get_field_index(column) < 0:  # written before the column was
        return np.empty(0, np.uint64), parquet.metadata.num_rows  # added: all null
    chunks, nulls = [], 0
    for i in range(parquet.num_row_groups):
        keys = _key_column(parquet.read_row_group(i, columns=[column]).column(0), arrow_type)
        if keys.null_count:
            nulls += keys.null_count
            keys = pc.drop_null(keys)
        if len(keys):
            chunks.append(_ribbon.hash_pairs([name], keys, seed=seed, group_kind="bytes",
                                             key_kind=kind))
    hashes = np.concatenate(chunks) if len(chunks) > 1 else (chunks[0] if chunks else
                                                              np.empty(0, np.uint64))
    return hashes, nulls


def _file_pair_hashes(table: Table, relative: str, column: str, arrow_type, kind: str,
                      seed: int):
    """(pair hashes, nulls) of one file of the table."""
    with table.fs.open_input_file(table.path(relative)) as f:
        return _parquet_pair_hashes(pq.ParquetFile(f), column, arrow_type, relative.encode(),
                                    kind, seed)


@dataclass
class IndexStats:
    """What :func:`build_index` and :func:`update_index` did."""

    path: str = ""
    files: int = 0
    files_indexed: int = 0
    rows: int = 0
    nulls: int = 0
    files_without_column: int = 0  # files written before the column was added: all null
    pairs: int = 0
    bytes: int = 0
    spilled: bool = False
    action: str = "build"  # "build", "delta", "rebuild", "none"
    seconds: Dict[str, float] = field(default_factory=dict)


def _build_local(table, files, column, arrow_type, kind, out, metadata_of, *, fpr, bits,
                 seed, threads, memory_limit, tmp_dir):
    """The local engine: files read ``threads`` at a time, their pair hashes streamed into
    the out-of-core bulk builder (ribbon.BulkBuilder), which keeps them in memory while they
    fit in ``memory_limit`` and spills them under ``tmp_dir`` beyond it, and writes ``out``
    once, with ``metadata_of(nulls)``. Returns the builder's statistics and the nulls."""
    nulls, with_keys = {}, 0
    window = max(1, threads) * 2  # at most 2 * threads files' hashes wait at once
    with _ribbon.BulkBuilder(kind, memory_limit=memory_limit, tmp_dir=tmp_dir, fpr=fpr,
                             bits=bits, seed=seed, threads=threads, groups="bytes") as builder:
        def take(relative, hashes, file_nulls):
            nonlocal with_keys
            nulls[relative] = file_nulls
            with_keys += bool(len(hashes))
            builder.add_hashes(hashes)

        with concurrent.futures.ThreadPoolExecutor(max(1, threads)) as pool:
            pending = []
            for relative in files:
                pending.append((relative, pool.submit(_file_pair_hashes, table, relative,
                                                      column, arrow_type, kind, seed)))
                if len(pending) >= window:
                    done, future = pending.pop(0)
                    take(done, *future.result())
            for done, future in pending:
                take(done, *future.result())
        builder.set_group_count(with_keys)
        builder.set_group_names([r.encode() for r in files])
        builder.set_metadata(metadata_of(nulls))
        result = builder.finish(out)  # a temporary file and a rename
    return result, nulls


def _build_spark(spark, table, files, types, column, arrow_type, kind, out, metadata_of, *, fpr,
                 bits, seed):
    """The Spark engine: only the listed files read, the groups named from
    ``_metadata.file_path`` (decoded on the driver), ribbon.spark's build_set route, which
    writes ``out`` once, with ``metadata_of(nulls)``. Returns its statistics, as the local
    engine's, and the nulls."""
    from pyspark.sql import functions as F

    from ..spark import api as ribbon_spark
    from ..spark.functions import spark_schema

    unsigned = [r for r, t in types.items() if t is not None and pa.types.is_uint64(t)]
    if unsigned:
        raise LakeError(f"column {column!r} is uint64 in {table.uri(unsigned[0])}, which Spark "
                        "reads as a decimal: build its index with engine='local'")
    paths = [spark_path(table.uri(r)) for r in files]
    quoted = "`" + column.replace("`", "``") + "`"
    # The unified type given as the schema: Spark's mergeSchema refuses int and bigint
    # (CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE); a given schema reads int32 as long, and a file
    # without the column as nulls.
    wanted = spark_schema(pa.schema([pa.field(column, pa.int64() if kind == "u64"
                                              else arrow_type)]))
    root = spark_path(table.uri("")).rstrip("/")
    df = (spark.read.schema(wanted).option("basePath", root).parquet(*paths)
          .select(F.col(quoted).alias("key"), F.col("_metadata.file_path").alias("uri")))
    counts = df.groupBy("uri").agg(F.count(F.lit(1)).alias("rows"),
                                   F.count("key").alias("keys")).collect()
    mapping, nulls = [], {}
    for row in counts:
        relative = relative_of_uri(table, row["uri"])
        if relative not in files:
            raise LakeError(f"Spark read {row['uri']}, which the listing of {table.id} has not")
        mapping.append((row["uri"], relative))
        nulls[relative] = row["rows"] - row["keys"]
    names = spark.createDataFrame(mapping, "uri string, file string")
    pairs = df.where(F.col("key").isNotNull()).join(F.broadcast(names), "uri").select("file", "key")
    built = ribbon_spark.build_set(pairs, "file", "key", out, fpr=fpr, bits=bits, seed=seed,
                                   group_names=[r.encode() for r in files],
                                   metadata=metadata_of(nulls))
    stats = {"key_count": built.keys, "file_bytes": built.file_bytes, "out_of_core": False}
    return stats, nulls


def _check_engine(engine: str, spark) -> None:
    if engine not in ("local", "spark"):
        raise ValueError(f"engine must be 'local' or 'spark', not {engine!r}")
    if engine == "spark" and spark is None:
        raise ValueError("engine='spark' needs spark= (a SparkSession)")


def build_index(table, column: str, index_path, *, fpr: Optional[float] = None,
                bits: Optional[int] = None, seed: int = 0, engine: str = "local", spark=None,
                threads: int = 0, memory_limit: int = 1 << 30, tmp_dir: Optional[str] = None,
                filesystem: Optional[pafs.FileSystem] = None, _only: Optional[Sequence[str]] = None,
                _extra: Optional[dict] = None, _known_type=None) -> IndexStats:
    """Indexes ``column`` of ``table`` (a directory or glob of Parquet files, local or a URI)
    into ``index_path`` (a local path): one filter set whose groups are the data files
    (relative to the table root; every file, those with no key or only nulls too), nulls
    skipped and counted, and the metadata JSON that :func:`load_index` checks. The file is
    replaced atomically, and only once everything is built (an earlier index stays intact on
    any error); the table's delta files (:func:`update_index`) are removed after it.

    ``engine``: ``"local"`` (pyarrow here: only the key column read, ``threads`` files at
    once (0: all cores), pairs kept as 8-byte hashes by ``ribbon.BulkBuilder``, in memory
    while they fit in ``memory_limit`` and spilled under ``tmp_dir`` beyond it) or
    ``"spark"`` (``ribbon.spark.build_set`` on the session ``spark``; the same bytes).
    ``fpr``/``bits``: as ``ribbon.build_set`` (default r = 8: 1/256 a file)."""
    clock = time.monotonic()
    _check_engine(engine, spark)
    out = os.fspath(index_path)
    dist.check_output_path(out)
    threads = threads or os.cpu_count() or 1
    source = open_table(table, filesystem)
    files = list_files(source)
    if _only is not None:
        files = {r: files[r] for r in _only}
    if not files:
        raise LakeError(f"table {source.id} has no Parquet files")
    facts, types, arrow_type, kind = _survey(source, files, column, threads, _known_type)
    surveyed = time.monotonic()

    def metadata_of(nulls):
        return _metadata(source, column, arrow_type, kind, facts, nulls, _extra)

    # Written once, atomically (a temporary file and a rename), metadata included.
    if engine == "local":
        built, nulls = _build_local(source, files, column, arrow_type, kind, out, metadata_of,
                                    fpr=fpr, bits=bits, seed=seed, threads=threads,
                                    memory_limit=memory_limit, tmp_dir=tmp_dir)
    else:
        built, nulls = _build_spark(spark, source, files, types, column, arrow_type, kind, out,
                                    metadata_of, fpr=fpr, bits=bits, seed=seed)
    if _only is None:
        for delta in _delta_paths(out):
            os.remove(delta)
    stats = IndexStats(path=out, files=len(files), files_indexed=len(files),
                       rows=sum(f["rows"] for f in facts.values()), nulls=sum(nulls.values()),
                       files_without_column=sum(t is None for t in types.values()),
                       pairs=built["key_count"], bytes=built["file_bytes"],
                       spilled=built["out_of_core"],
                       seconds={"survey": surveyed - clock, "total": time.monotonic() - clock})
    return stats


# ---------------------------------------------------------------------------------------
# Keeping it current.


def update_index(table, column: str, index_path, *, fpr: Optional[float] = None,
                 bits: Optional[int] = None, engine: str = "local", spark=None,
                 threads: int = 0, **options) -> IndexStats:
    """Indexes the files added or changed since ``index_path`` was built: a delta file
    (``INDEX.delta-N``, beside it; every query consults them) holding only those files, or,
    when they are more than a quarter of the table, there are already MAX_DELTAS deltas, or
    the index is unusable, a rebuild of the whole index. Deleted files need nothing (reads
    open only the files listed). Nothing changed: nothing written (``action`` "none")."""
    out = os.fspath(index_path)
    source = open_table(table, options.get("filesystem"))
    try:
        index = load_index(out, table=table, column=column)
    except IndexUnusable:
        stats = build_index(table, column, out, fpr=fpr, bits=bits, engine=engine, spark=spark,
                            threads=threads, **options)
        stats.action = "rebuild"
        return stats
    listed = list_files(source)
    stale = [r for r, info in listed.items()
             if r not in index.files or index.files[r][0]["size"] != info.size
             or index.files[r][0]["mtime_ns"] != info.mtime_ns]
    if not stale:
        return IndexStats(path=out, files=len(listed), action="none")
    deltas = _delta_paths(out)
    if len(stale) > REBUILD_SHARE * len(listed) or len(deltas) >= MAX_DELTAS:
        stats = build_index(table, column, out, fpr=fpr, bits=bits, engine=engine, spark=spark,
                            threads=threads, **options)
        stats.action = "rebuild"
        return stats
    number = 1 + max([int(p.rsplit("-", 1)[1]) for p in deltas] or [0])
    stats = build_index(table, column, f"{out}.delta-{number}", fpr=fpr, bits=bits,
                        engine=engine, spark=spark, threads=threads, _only=stale,
                        _extra={"delta": number}, _known_type=pa.type_for_alias(index.type),
                        **options)
    stats.files, stats.action = len(listed), "delta"
    return stats
