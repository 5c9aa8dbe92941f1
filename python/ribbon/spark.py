"""Ribbon filters on Apache Spark: a distributed build, byte-identical to ``ribbon build``,
and vectorized membership (``contains``) and retrieval (``lookup``) column functions.

``build`` runs the engine-neutral steps of :mod:`ribbon.distributed` with Spark as the engine:

* one aggregation counts the rows and the nulls of the key column (errors before any heavy
  work: nulls, a column of another type, an output path that cannot be written);
* executors hash their rows in Arrow batches (``mapInArrow``; no per-row Python) and route
  each hash to its shard range, one binary blob per (task, range): the shuffle carries
  8 bytes per key plus Spark's framing;
* one task per range (``partitionBy`` with the range as the partition) sorts, drops repeats,
  solves and writes the range's part file under the output's directory (a temporary name,
  then a rename: a retried or speculative task leaves one complete part) and returns the
  range's bumped hashes (about 8 %), kept by Spark (memory, then disk) for the next layer;
* layers of at most ``one_place_keys`` keys are finished on the driver, which then writes the
  file from the parts (temporary file + rename) and removes them.

The output path must be on a file system that the executors and the driver share (a local
path in ``local[...]`` mode; NFS, a mounted bucket or similar on a cluster).
"""

from __future__ import annotations

import os
import uuid
from typing import Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from . import _ribbon
from . import distributed as dist

#: Hashes a map task routes at once (32 MiB of hashes): larger blobs, fewer shuffle rows.
ROUTE_BATCH_KEYS = 1 << 22


def _error(name: str, fallback: type) -> type:
    return getattr(_ribbon, name, fallback)


def key_kind_of_column(df, column: str) -> str:
    """"u64" for integer columns (long, int, short, byte), "bytes" for string and binary
    columns; ribbon.KeyTypeError for any other type or a missing column."""
    from pyspark.sql import types as T

    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        raise _error("KeyTypeError", TypeError)(
            f"no column {column!r} (columns: {', '.join(fields) or 'none'})"
        )
    data_type = fields[column].dataType
    if isinstance(data_type, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "u64"
    if isinstance(data_type, (T.StringType, T.BinaryType)):
        return "bytes"
    raise _error("KeyTypeError", TypeError)(
        f"column {column!r} has type {data_type.simpleString()}: keys must be integers "
        "(long, int) or byte strings (string, binary)"
    )


def _range_partition(range_index: int) -> int:
    return range_index  # partitionBy takes it modulo the number of ranges: one range each


def _routed_rows(plan, previous_hashes: np.ndarray) -> Tuple[list, list]:
    ranges, blobs = [], []
    for r, hashes in dist.route_batch(plan, previous_hashes):
        ranges.append(r)
        blobs.append(hashes.tobytes())
    return ranges, blobs


def _hash_and_route(params, plan, batch_keys: int):
    """The map side of layer 0: Arrow batches of keys -> (range, hash blob) rows."""

    def run(batches):
        pending, pending_keys = [], 0

        def flush():
            hashes = np.concatenate(pending) if len(pending) > 1 else pending[0]
            ranges, blobs = _routed_rows(plan, hashes)
            return pa.RecordBatch.from_arrays(
                [pa.array(ranges, pa.int64()), pa.array(blobs, pa.binary())],
                names=["range", "hashes"],
            )

        for batch in batches:
            pending.append(dist.hash_batch(params, batch.column(0)))
            pending_keys += batch.num_rows
            if pending_keys >= batch_keys:
                yield flush()
                pending, pending_keys = [], 0
        if pending_keys:
            yield flush()

    return run


def _route_bumped(plan):
    """The map side of layer l > 0: blobs of bumped hashes -> (range, hash blob) pairs."""

    def run(blobs):
        for blob in blobs:
            if blob:
                ranges, routed = _routed_rows(plan, np.frombuffer(blob, dtype=np.uint64))
                yield from zip(ranges, routed)

    return run


def _solve_ranges(task, layer: int, fail_first_attempt):
    """The reduce side: partition i holds range i's blobs; solve it, return (report, bumped)."""

    def run(index, pairs):
        arrays = [np.frombuffer(blob, dtype=np.uint64) for _, blob in pairs]
        result, bumped = task(index, arrays)
        for fault_layer, fault_range, marker in fail_first_attempt or ():
            from pyspark import TaskContext

            if (fault_layer, fault_range) == (layer, index) and TaskContext.get().attemptNumber() == 0:
                open(marker, "w").close()  # a test's fault, after the part: tells it it fired
                raise RuntimeError(f"injected fault in layer {layer}, range {index}")
        yield result, bumped.tobytes()

    return run


class SparkEngine(dist.Engine):
    """Spark as the engine of :func:`ribbon.distributed.run_build`."""

    def __init__(self, df, column: str, params, *, batch_keys: int, fail_first_attempt=None):
        self.df = df.select(column)
        self.column = column
        self.params = params
        self.batch_keys = batch_keys
        self.fail_first_attempt = fail_first_attempt
        self.persisted = []

    def count(self) -> int:
        from pyspark.sql import functions as F

        row = self.df.agg(
            F.count(F.lit(1)).alias("rows"), F.count(F.col(self.column)).alias("keys")
        ).first()
        if row["keys"] != row["rows"]:
            raise _error("KeysError", ValueError)(
                f"column {self.column!r} has {row['rows'] - row['keys']} null values in "
                f"{row['rows']} rows: keys cannot be null (drop them first, e.g. "
                f"df.na.drop(subset=[{self.column!r}]))"
            )
        return int(row["rows"])

    def solve_layer(self, plan, source, task):
        from pyspark import StorageLevel

        if source is None:
            rows = self.df.mapInArrow(
                _hash_and_route(self.params, plan, self.batch_keys), "range long, hashes binary"
            )
            pairs = rows.rdd.map(tuple)
        else:
            pairs = source.mapPartitions(_route_bumped(plan))
        solved = (
            pairs.partitionBy(plan.num_ranges, _range_partition)
            .mapPartitionsWithIndex(_solve_ranges(task, plan.layer, self.fail_first_attempt))
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        self.persisted.append(solved)
        results = solved.map(lambda pair: pair[0]).collect()
        return results, solved.map(lambda pair: pair[1])

    def collect(self, source) -> np.ndarray:
        blobs = source.collect()
        if not blobs:
            return np.empty(0, dtype=np.uint64)
        return np.concatenate([np.frombuffer(b, dtype=np.uint64) for b in blobs])

    def release(self, source) -> None:
        pass  # everything is unpersisted at the end (lineage may still need a layer)

    def release_all(self) -> None:
        for rdd in self.persisted:
            rdd.unpersist()
        self.persisted = []


def build(
    df,
    column: str,
    path: Union[str, os.PathLike],
    *,
    fpr: Optional[float] = None,
    bits: Optional[int] = None,
    width: int = 64,
    seed: int = 0,
    shard_size: Optional[int] = None,
    threshold_codes: Optional[str] = None,
    range_keys: int = dist.DEFAULT_RANGE_KEYS,
    one_place_keys: int = dist.DEFAULT_ONE_PLACE_KEYS,
    batch_keys: int = ROUTE_BATCH_KEYS,
    _fail_first_attempt: Sequence[Tuple[int, int, str]] = (),
) -> dist.BuildStats:
    """Builds the default (bumped) filter of the keys in ``df[column]`` into ``path``.

    The file is byte-identical to ``ribbon build`` over the same distinct keys and options
    (integer columns as ``--format u64``, string/binary columns as byte strings), whatever
    the partitioning, the number of executors, the order of rows and task retries. Repeated
    keys count once. ``range_keys``: keys per range task (its memory: about 40 bytes per key);
    ``one_place_keys``: layers this small are finished on the driver. ``path`` must be on a
    file system that the executors and the driver share; it is written through a temporary
    file and a rename, so it is either the complete file or untouched.
    """
    path = os.fspath(path)
    dist.check_output_path(path)
    key_kind = key_kind_of_column(df, column)
    params = dist.build_params(
        key_kind,
        fpr=fpr,
        bits=bits,
        width=width,
        seed=seed,
        shard_size=shard_size,
        threshold_codes=threshold_codes,
    )
    threads = int(df.sparkSession.conf.get("spark.task.cpus", "1"))
    engine = SparkEngine(
        df, column, params, batch_keys=batch_keys, fail_first_attempt=_fail_first_attempt
    )
    try:
        return dist.run_build(
            engine,
            params,
            path,
            range_keys=range_keys,
            one_place_keys=one_place_keys,
            threads=threads,
        )
    finally:
        engine.release_all()


# ---------------------------------------------------------------------------------------
# Queries

_executor_filters: dict = {}  # per Python worker: filters loaded once, reused by batches


def _filter_on_executor(source):
    kind, value, key = source
    f = _executor_filters.get(key)
    if f is None:
        f = _ribbon.load(value) if kind == "path" else _ribbon.Filter.from_bytes(value.value)
        _executor_filters[key] = f
    return f


def _filter_source(filter_or_path, spark):
    """(kind, path or broadcast, cache key) for the executors."""
    if isinstance(filter_or_path, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(filter_or_path))
        stat = os.stat(path)  # a rewritten file is loaded again
        return ("path", path, (path, stat.st_mtime_ns, stat.st_size))
    if isinstance(filter_or_path, _ribbon.Filter):
        from pyspark.sql import SparkSession

        session = spark or SparkSession.getActiveSession()
        broadcast = session.sparkContext.broadcast(filter_or_path.to_bytes())
        return ("broadcast", broadcast, ("broadcast", uuid.uuid4().hex))
    raise TypeError("filter must be a path (str) or a ribbon.Filter")


def _answer(source, method: str, keys: pa.Array) -> pa.Array:
    f = _filter_on_executor(source)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    nulls = keys.null_count
    if nulls:  # a null key is no member: its answer is null
        filler = 0 if pa.types.is_integer(keys.type) else b""
        answers = getattr(f, method)(keys.fill_null(filler))
        return pa.array(answers, mask=keys.is_null().to_numpy(zero_copy_only=False))
    return pa.array(getattr(f, method)(keys))


def _column_function(source, method: str, return_type: str):
    try:
        from pyspark.sql.functions import arrow_udf  # Spark >= 4.1: Arrow in and out

        def run(keys: pa.Array) -> pa.Array:
            out = _answer(source, method, keys)
            return out.cast(pa.int64()) if method == "lookup" else out

        return arrow_udf(run, return_type)
    except ImportError:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        def run_pandas(keys: pd.Series) -> pd.Series:
            out = _answer(source, method, pa.Array.from_pandas(keys))
            return (out.cast(pa.int64()) if method == "lookup" else out).to_pandas()

        return pandas_udf(run_pandas, return_type)


def contains(column, filter, *, spark=None):
    """A boolean column: may ``column``'s key be in the filter? (null for null keys).

    ``filter``: a path that every executor can read (each Python worker maps it once), or a
    ``ribbon.Filter`` (its file bytes are broadcast once). Keys go through the batched query
    path in Arrow batches: the pre-filter of a join, e.g.
    ``big.where(ribbon.spark.contains("user_id", "/shared/users.ribbon"))``.
    """
    return _column_function(_filter_source(filter, spark), "contains", "boolean")(column)


def lookup(column, filter, *, spark=None):
    """A long column: the value a retrieval file (built on one machine) stores for each key
    (an arbitrary value below 2^bits for keys outside its set; null for null keys)."""
    return _column_function(_filter_source(filter, spark), "lookup", "long")(column)
