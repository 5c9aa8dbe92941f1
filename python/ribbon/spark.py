"""Ribbon filters on Apache Spark: a distributed build, byte-identical to ``ribbon build``,
and vectorized membership (``contains``) and retrieval (``lookup``) column functions.

``build`` runs the engine-neutral steps of :mod:`ribbon.distributed` with Spark as the engine:

* one aggregation counts the rows and the nulls of the key column (errors before any heavy
  work: nulls, a column of another type, an output path that cannot be written);
* executors hash their rows and route each hash to its shard range: one row per (batch,
  range) with the range's hashes as one binary blob, so the shuffle carries 8 bytes per key
  plus Spark's framing. Layer 0 does it in the executors' JVMs where the session has
  ribbon.jar (no key reaches a Python worker), else in Arrow batches (``mapInArrow``; no
  per-row Python); later layers route the bumped hashes in Arrow batches;
* Spark's DataFrame exchange (``repartition`` on a column chosen so that partition r receives
  range r) brings each range to one task (``mapInArrow``), which hands the blobs' buffers to
  C++ (one copy), sorts, drops repeats, solves on ``spark.task.cpus`` threads, writes the
  range's part file under the output's directory and returns the range's bumped hashes
  (about 8 %), kept by Spark (memory, then disk) for the next layer;
* layers of at most ``one_place_keys`` keys are finished on the driver; tasks then compute the
  sections' checksums and place the parts' bytes in the file (positioned writes on a local or
  shared file system, one streaming task elsewhere); the driver writes only the header, the
  descriptors and the finished layers, and renames (or moves) the file into place.

The output can be a path on a file system that the executors and the driver share (a local
path in ``local[...]`` mode, NFS...) or a URI of any file system ``pyarrow.fs`` resolves
(``s3://``, ``hdfs://``, ``gs://``...).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
import uuid
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from . import _ribbon
from . import distributed as dist

#: Hashes a map task routes at once (32 MiB of hashes): larger blobs, fewer shuffle rows.
ROUTE_BATCH_KEYS = 1 << 22

ROUTED_SCHEMA = "part long, hashes binary"
#: Retrieval: each blob of hashes has a blob of their values (little-endian u32) beside it.
ROUTED_VALUES_SCHEMA = "part long, hashes binary, values binary"
RESULT_COLUMNS = ["range", "received", "distinct", "solved", "bumped_keys", "conflict_hash",
                  "conflict"]
SOLVED_SCHEMA = ("range long, received long, distinct long, solved boolean, bumped_keys long, "
                 "conflict_hash long, conflict string, bumped binary, bumped_values binary")


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


# ---------------------------------------------------------------------------------------
# Routing with Spark's DataFrame exchange. `repartition(n, "part")` puts a row in partition
# pmod(murmur3_32(part, seed 42), n) (Spark's HashPartitioning); giving range r the smallest
# `part` value that lands in partition r makes partition r hold exactly range r's hashes.
# The range tasks check it, so a Spark that hashed otherwise fails loudly, never wrongly.


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def spark_partition_of(values: np.ndarray, partitions: int) -> np.ndarray:
    """The partition of each long in `repartition(partitions, column)` (Murmur3_x86_32
    hashLong with seed 42, then pmod), vectorized."""
    v = values.astype(np.int64).view(np.uint64)
    h = np.full(len(v), 42, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for word in ((v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)):
            k = _rotl32(word * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)
            h = _rotl32(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(8)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return np.mod(h.view(np.int32).astype(np.int64), partitions)


def partition_keys(partitions: int) -> np.ndarray:
    """For each partition p < `partitions`, the smallest long that Spark puts there."""
    keys = np.full(partitions, -1, dtype=np.int64)
    start, step = 0, max(1 << 16, 8 * partitions)
    while (keys < 0).any():
        candidates = np.arange(start, start + step, dtype=np.int64)
        where = spark_partition_of(candidates, partitions)
        first = np.unique(where, return_index=True)
        unset = keys[first[0]] < 0
        keys[first[0][unset]] = candidates[first[1][unset]]
        start += step
    return keys


def _blob_views(column: pa.Array, dtype=np.uint64) -> List[np.ndarray]:
    """The items of a binary column of blobs (hashes; values with dtype np.uint32), as views
    of its buffers (no copy)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    views = []
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if pa.types.is_binary(chunk.type):
            offset_type = np.int32
        elif pa.types.is_large_binary(chunk.type):  # spark.sql.execution.arrow.useLargeVarTypes
            offset_type = np.int64
        else:
            raise TypeError(f"hash blobs must be binary, not {chunk.type}")
        _, offsets, data = chunk.buffers()
        ends = np.frombuffer(offsets, dtype=offset_type)[chunk.offset : chunk.offset + len(chunk) + 1]
        size = np.dtype(dtype).itemsize
        views.append(
            np.frombuffer(data, dtype=dtype, count=(ends[-1] - ends[0]) // size, offset=ends[0])
        )
    return views


def _blob_ends(ends: np.ndarray) -> np.ndarray:
    """A binary column's 32-bit offsets (Spark's Arrow binary type), refused past 2^31 bytes
    instead of wrapping: lower batch_keys or range_keys."""
    if len(ends) and int(ends[-1]) >= 2**31:
        raise ValueError(f"a batch of {int(ends[-1])} bytes of hashes is over Arrow binary's "
                         "2 GiB: lower batch_keys (or range_keys)")
    return ends.astype(np.int32)


def _blobs(items: np.ndarray, ends: np.ndarray) -> pa.Array:
    """A binary column whose value i is items[ends[i - 1]:ends[i]] (ends in items), no copy."""
    offsets = _blob_ends(ends * items.dtype.itemsize)
    return pa.Array.from_buffers(
        pa.binary(), len(ends) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(items)])


def _routed_batch(plan, keys_of_ranges: np.ndarray, previous_hashes: np.ndarray,
                  previous_values: Optional[np.ndarray] = None) -> pa.RecordBatch:
    """One row per range reached: its partition key and its hashes (one blob, no copy), and
    for retrieval their values (a blob beside it)."""
    layer_hashes = dist.to_layer_hashes(plan, previous_hashes)
    if previous_values is None:
        grouped, offsets = dist.group_by_range(plan, layer_hashes)
    else:
        grouped, offsets, grouped_values = dist.group_by_range(
            plan, layer_hashes, np.ascontiguousarray(previous_values, dtype=np.uint32))
    reached = np.flatnonzero(np.diff(offsets))
    # Reached ranges are in order and the others empty: blob i ends where blob i + 1 starts.
    ends = offsets[np.append(reached, plan.num_ranges)]
    columns = [pa.array(keys_of_ranges[reached]), _blobs(grouped, ends)]
    names = ["part", "hashes"]
    if previous_values is not None:
        columns.append(_blobs(grouped_values, ends))
        names.append("values")
    return pa.RecordBatch.from_arrays(columns, names=names)


def _hash_columns(params, batch: pa.RecordBatch) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """The hashes of a batch of the build's columns, (key), (group, key) for a filter set or
    (key, value) for a retrieval structure, and the values (or None)."""
    if params.group_kind is not None:
        return dist.hash_batch(params, batch.column(1), groups=batch.column(0)), None
    hashes = dist.hash_batch(params, batch.column(0))
    if not params.values:
        return hashes, None
    # The counting aggregation checked the values: no nulls, each in [0, 2^value_bits).
    values = batch.column(1).to_numpy(zero_copy_only=False).astype(np.uint32)
    return hashes, values


def _hash_and_route(params, plan, keys_of_ranges, batch_keys: int):
    """The map side of layer 0: Arrow batches of the build's columns -> (partition key, hash
    blob[, value blob]) rows."""

    def routed(pending):
        hashes = np.concatenate([h for h, _ in pending])
        values = np.concatenate([v for _, v in pending]) if params.values else None
        return _routed_batch(plan, keys_of_ranges, hashes, values)

    def run(batches):
        pending, pending_keys = [], 0
        for batch in batches:
            pending.append(_hash_columns(params, batch))
            pending_keys += batch.num_rows
            if pending_keys >= batch_keys:
                yield routed(pending)
                pending, pending_keys = [], 0
        if pending_keys:
            yield routed(pending)

    return run


def _check_engine(engine: str) -> None:
    if engine not in ("auto", "jvm", "python"):
        raise ValueError("engine must be 'auto', 'jvm' or 'python', not %r" % (engine,))


def _signed64(value: int) -> int:
    """A 64-bit value as the Java long with the same bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _routed_in_jvm(df, params, plan, keys_of_ranges, batch_keys: int):
    """The map side of layer 0 inside the executors' JVMs (ribbon.jar's
    ``dev.ribbon.spark.Routing``): the rows :func:`_hash_and_route` makes, but the keys never
    reach a Python worker."""
    from pyspark.sql import DataFrame

    session = df.sparkSession
    geometry = (
        _signed64(params.seed),
        plan.num_starts,
        plan.shard_bits,
        plan.shards_per_range,
        bytearray(keys_of_ranges.astype("<i8").tobytes()),
        batch_keys,
    )
    routing = session._jvm.dev.ribbon.spark.Routing
    if params.values:
        routed = routing.hashAndRouteValues(df._jdf, params.key_kind == "u64", *geometry)
    elif params.group_kind is None:
        routed = routing.hashAndRoute(df._jdf, params.key_kind == "u64", *geometry)
    else:
        routed = routing.hashAndRoutePairs(
            df._jdf, params.group_kind == "u64", params.key_kind == "u64", *geometry
        )
    return DataFrame(routed, session)


def _route_bumped(plan, keys_of_ranges, with_values: bool):
    """The map side of layer l > 0: blobs of bumped hashes (and their values) -> (partition
    key, blob[, value blob]) rows."""

    def run(batches):
        for batch in batches:
            views = _blob_views(batch.column(0))
            if views:
                values = None
                if with_values:
                    values = np.concatenate(_blob_views(batch.column(1), np.uint32))
                yield _routed_batch(plan, keys_of_ranges, np.concatenate(views), values)

    return run


def _solve_ranges(task, layer: int, keys_of_ranges, with_values: bool, fail_first_attempt):
    """The reduce side: partition r holds range r's blobs; solve it, one row out."""

    def run(batches):
        from pyspark import TaskContext

        context = TaskContext.get()
        r = context.partitionId()
        arrays, value_arrays = [], []
        for batch in batches:
            parts = batch.column(0).to_numpy()
            if (parts != keys_of_ranges[r]).any():
                raise RuntimeError(
                    f"layer {layer}: Spark put hashes of other ranges in partition {r} "
                    "(its hash partitioning is not Murmur3 with seed 42?)"
                )
            arrays.extend(_blob_views(batch.column(1)))
            if with_values:
                value_arrays.extend(_blob_views(batch.column(2), np.uint32))
        result, bumped, bumped_values = task(r, arrays, value_arrays if with_values else None)
        for fault_layer, fault_range, marker in fail_first_attempt or ():
            if (fault_layer, fault_range) == (layer, r) and context.attemptNumber() == 0:
                open(marker, "w").close()  # a test's fault, after the part: tells it it fired
                raise RuntimeError(f"injected fault in layer {layer}, range {r}")
        if bumped_values is None:
            bumped_values = np.empty(0, dtype=np.uint32)
        conflict_hash = None if result.conflict_hash is None else _signed64(result.conflict_hash)
        report = [pa.array([r]), pa.array([result.received]), pa.array([result.distinct]),
                  pa.array([result.solved]), pa.array([result.bumped]),
                  pa.array([conflict_hash], pa.int64()), pa.array([result.conflict], pa.string())]
        yield pa.RecordBatch.from_arrays(
            report + [_blobs(bumped, np.array([0, len(bumped)])),
                      _blobs(bumped_values, np.array([0, len(bumped_values)]))],
            names=RESULT_COLUMNS + ["bumped", "bumped_values"],
        )

    return run


def _collect(df) -> pa.Table:
    """``df`` on the driver through one more exchange (to one partition), so that the stage
    computing ``df`` is a shuffle map stage: one that Spark can rerun whole (see
    :func:`_build_settings`)."""
    return df.repartition(1).toArrow()


@contextlib.contextmanager
def _build_settings(session):
    """The session's settings while a build runs, restored after it (failed or not).

    Adaptive query execution off. Spark 4 compares a rerun map task's output with its first
    attempt's (order-independent checksums). Routed blobs group hashes as their rows arrived,
    and rows read from a shuffle arrive in any order: after a lost executor, rerun route tasks
    may differ, and Spark then reruns every task of the stage that read them. It can rerun a
    shuffle map stage; a result stage some of whose tasks have finished it cannot, and it fails
    the job ("A shuffle map stage with indeterminate output was failed and retried"). With
    AQE, caching a layer's ranges is a job of its own whose last stage is such a result stage;
    without it, the ranges are solved and cached inside a map stage of the job that collects
    them (:func:`_collect`). The build's exchanges have fixed partition counts, so AQE has
    nothing to adapt there.

    ``spark.sql.shuffle.partitions`` at the session's parallelism: without AQE nothing
    coalesces its default of 200 partitions, and a filter set's ``count_distinct`` of the
    groups (the one aggregation that shuffles by it) then ran 200 tiny tasks, 1.3 s of a
    10^8-pair build on two cores (bench/RESULTS.md, "Filter sets on Spark")."""
    settings = {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(max(1, session.sparkContext.defaultParallelism)),
    }
    before = {key: session.conf.get(key) for key in settings}
    for key, value in settings.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            session.conf.set(key, value)


def _run_pickled(tasks):
    """mapInArrow over spark.range: partition i runs tasks[i], its result pickled."""

    def run(batches):
        for batch in batches:
            for i in batch.column(0).to_numpy():
                result = pickle.dumps(tasks[int(i)]())
                yield pa.RecordBatch.from_arrays(
                    [pa.array([int(i)]), pa.array([result], pa.binary())], names=["i", "result"]
                )

    return run


@dataclass
class _Counts:
    """What the counting aggregation found: rows, a filter set's distinct groups, the values'
    smallest and largest (retrieval)."""

    rows: int
    groups: int = 0
    smallest_value: int = 0
    largest_value: int = 0


class SparkEngine(dist.Engine):
    """Spark as the engine of :func:`ribbon.distributed.run_build`: DataFrames only (Arrow
    batches in Python, Spark's exchange for the shuffle), no RDD, no per-row Python.
    ``columns``: (key), (group, key) for a filter set, (key, value) for a retrieval structure
    (``roles`` names them so: "key", "group", "value"). ``params`` may be set after
    :meth:`counts` (a retrieval's value bits can follow from the largest value)."""

    def __init__(self, df, columns: Sequence[str], roles: Sequence[str], *, batch_keys: int,
                 route_in_jvm: bool = False, fail_first_attempt=None):
        self.df = df.select(*columns)
        self.spark = df.sparkSession
        self.columns = list(columns)
        self.roles = list(roles)
        self.params = None
        self.batch_keys = batch_keys
        self.route_in_jvm = route_in_jvm
        self.fail_first_attempt = fail_first_attempt
        self.persisted = []
        self._counts: Optional[_Counts] = None
        # Range tasks at once: the session's cores (the default parallelism of local[n] and of
        # a cluster's executors).
        self.task_slots = max(1, self.spark.sparkContext.defaultParallelism)

    def counts(self) -> _Counts:
        """Rows, a filter set's distinct groups and a retrieval's smallest and largest value,
        in one aggregation (once); a null in any of the build's columns is refused."""
        if self._counts is not None:
            return self._counts
        from pyspark.sql import functions as F

        aggregates = [F.count(F.lit(1)).alias("rows")]
        aggregates += [F.count(F.col(c)).alias(f"filled_{i}") for i, c in enumerate(self.columns)]
        if "group" in self.roles:
            aggregates.append(F.count_distinct(F.col(self.columns[0])).alias("groups"))
        if "value" in self.roles:
            value = F.col(self.columns[self.roles.index("value")])
            aggregates += [F.min(value).alias("smallest"), F.max(value).alias("largest")]
        row = self.df.agg(*aggregates).first()
        for i, (column, role) in enumerate(zip(self.columns, self.roles)):
            nulls = row["rows"] - row[f"filled_{i}"]
            if nulls:
                raise _error("KeysError", ValueError)(
                    f"column {column!r} has {nulls} null values in {row['rows']} rows: {role}s "
                    f"cannot be null (drop them first, e.g. df.na.drop(subset=[{column!r}]))"
                )
        counts = _Counts(int(row["rows"]))
        if "group" in self.roles:
            counts.groups = int(row["groups"])
        if "value" in self.roles and counts.rows:
            counts.smallest_value, counts.largest_value = int(row["smallest"]), int(row["largest"])
        self._counts = counts
        return counts

    def count(self) -> int:
        return self.counts().rows

    def count_groups(self) -> int:
        return self.counts().groups

    def group_names(self):
        column = self.df.select(self.columns[0]).distinct()
        names = [row[0] for row in column.collect()]
        return dist.as_group_names(names)

    def find_key(self, key_hash: int):
        """The first key of the input whose hash is ``key_hash`` (a pass over the key column,
        hashed in Python workers: only to name a key given twice with two values)."""
        params, wanted = self.params, np.uint64(key_hash)

        def matching(batches):
            for batch in batches:
                found = np.flatnonzero(dist.hash_batch(params, batch.column(0)) == wanted)
                yield batch.take(pa.array(found[:1], pa.int64()))

        key = self.columns[self.roles.index("key")]
        rows = self.df.select(key).mapInArrow(matching, self.df.select(key).schema).limit(1)
        found = rows.collect()
        return found[0][0] if found else None

    def solve_layer(self, plan, source, task):
        from pyspark import StorageLevel

        keys_of_ranges = partition_keys(plan.num_ranges)
        with_values = self.params.values
        schema = ROUTED_VALUES_SCHEMA if with_values else ROUTED_SCHEMA
        if source is None and self.route_in_jvm:
            routed = _routed_in_jvm(self.df, self.params, plan, keys_of_ranges, self.batch_keys)
        elif source is None:
            route = _hash_and_route(self.params, plan, keys_of_ranges, self.batch_keys)
            routed = self.df.mapInArrow(route, schema)
        else:
            routed = source.select("bumped", "bumped_values").mapInArrow(
                _route_bumped(plan, keys_of_ranges, with_values), schema
            )
        solve = _solve_ranges(task, plan.layer, keys_of_ranges, with_values,
                              self.fail_first_attempt)
        solved = (
            routed.repartition(plan.num_ranges, "part")
            .mapInArrow(solve, SOLVED_SCHEMA)
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        self.persisted.append(solved)
        rows = _collect(solved.select(*RESULT_COLUMNS)).to_pylist()
        results = []
        for row in rows:
            result = dist.RangeResult(*(row[c] for c in RESULT_COLUMNS))
            if result.conflict_hash is not None:
                result.conflict_hash &= (1 << 64) - 1  # the Java long's bits, unsigned
            results.append(result)
        return results, solved

    def collect(self, source):
        table = _collect(source.select("bumped", "bumped_values"))
        views = _blob_views(table.column(0))
        hashes = np.concatenate(views) if views else np.empty(0, dtype=np.uint64)
        if not self.params.values:
            return hashes, None
        views = _blob_views(table.column(1), np.uint32)
        return hashes, np.concatenate(views) if views else np.empty(0, dtype=np.uint32)

    def run_tasks(self, tasks):
        rows = (
            self.spark.range(0, len(tasks), 1, len(tasks))
            .mapInArrow(_run_pickled(tasks), "i long, result binary")
            .toArrow()
            .sort_by("i")
        )
        return [pickle.loads(b) for b in rows.column("result").to_pylist()]

    def release(self, source) -> None:
        pass  # everything is unpersisted at the end (lineage may still need a layer)

    def release_all(self) -> None:
        for df in self.persisted:
            df.unpersist()
        self.persisted = []


def build(
    df,
    column: str,
    path: Union[str, os.PathLike],
    *,
    values: Optional[str] = None,
    check_bits: int = 0,
    fpr: Optional[float] = None,
    bits: Optional[int] = None,
    width: int = 64,
    seed: int = 0,
    shard_size: Optional[int] = None,
    threshold_codes: Optional[str] = None,
    range_keys: int = dist.DEFAULT_RANGE_KEYS,
    one_place_keys: int = dist.DEFAULT_ONE_PLACE_KEYS,
    batch_keys: int = ROUTE_BATCH_KEYS,
    filesystem=None,
    engine: str = "auto",
    _fail_first_attempt: Sequence[Tuple[int, int, str]] = (),
) -> dist.BuildStats:
    """Builds the default (bumped) filter of the keys in ``df[column]`` into ``path``.

    The file is byte-identical to ``ribbon build`` over the same distinct keys and options
    (integer columns as ``--format u64``, string/binary columns as byte strings), whatever
    the partitioning, the number of executors, the order of rows, task retries and lost
    executors (adaptive query execution is off while the build runs: see
    :func:`_build_settings`). Repeated keys count once. ``range_keys``: keys per range task (its memory: about 40 bytes per key);
    ``one_place_keys``: layers this small are finished on the driver. ``path``: a path on a
    file system that the executors and the driver share, or a URI that ``pyarrow.fs``
    resolves (``s3://bucket/key``, ``hdfs://...``; credentials from the usual environment
    variables) or a path on ``filesystem`` (a ``pyarrow.fs.FileSystem``). The file is either
    complete or untouched (a rename, or on object stores a copy once it is whole).

    ``engine``: where layer 0's keys are hashed and routed. ``"auto"`` (default): in the
    executors' JVMs (ribbon.jar, the hashes of ``ribbon build``) when the session's class path
    has the jar (``spark.jars`` set to ``ribbon.spark_jvm.jar_path()``), else in Python
    workers from Arrow batches; ``"jvm"`` and ``"python"`` force one. The file is the same;
    the JVM route spares handing every key to Python, which took the map stage a fifth of
    its executor time in bench/RESULTS.md ("Layer 0 routed inside the JVM").
    ``batch_keys``: keys a map task routes at once (at most 2^28 - 1).

    ``values``: a retrieval structure instead (key -> value; ``ribbon.load(path).lookup``,
    :func:`lookup`), the values in that integer column, byte-identical to ``ribbon build
    --values`` over the same pairs: ``bits`` value bits (default: as many as the largest value
    needs), ``check_bits`` check bits (non-members found at 2^-check_bits). A key given twice
    with one value counts once; nulls, negative values, values of more than ``bits`` bits
    (``ribbon.KeysError``) and a key given with two values (``ribbon.ConflictingValuesError``,
    naming the key) are refused, and nothing is written.
    """
    if values is None:
        if check_bits:
            raise _error("OptionsError", ValueError)("check_bits is for builds with values")
        return _build(df, [column], ["key"], path, **_options(locals()))
    return _build(df, [column, values], ["key", "value"], path, **_options(locals()))


def build_set(
    df,
    group_column: str,
    key_column: str,
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
    filesystem=None,
    engine: str = "auto",
    group_names: Union[bool, Any] = True,
    metadata: Optional[bytes] = None,
    _fail_first_attempt: Sequence[Tuple[int, int, str]] = (),
) -> dist.BuildStats:
    """Builds the filter set of the pairs (``df[group_column]``, ``df[key_column]``) into
    ``path``: one file answering "may group g hold key k?" (``ribbon.load_set``,
    :func:`contains_in`, ``ribbon query --group``), byte-identical to ``ribbon build --groups
    -o`` over the same distinct pairs (integer groups and keys as ``--format u64``, string
    columns as ``group<TAB>key`` lines) and to ``ribbon.build_set``, whatever the
    partitioning. Groups and keys are each integers (long, int, short, byte) or byte strings
    (string, binary); neither may be null. The returned stats count the groups. Options,
    engines, retries and the output as for :func:`build`; the JVM route hashes the pairs in
    the executors' JVMs. The file names every group (format version 7, so that
    ``FilterSet.groups_of`` answers; the driver collects the distinct groups) unless
    ``group_names`` is False (version 6, for readers of the release before) or the names
    themselves (every group, those without pairs too: not collected); ``metadata``
    (bytes) is stored with the file as ``ribbon.build_set(metadata=)`` stores it."""
    return _build(df, [group_column, key_column], ["group", "key"], path, check_bits=0,
                  **_options(locals()))


_BUILD_OPTIONS = ("fpr", "bits", "width", "seed", "shard_size", "threshold_codes", "range_keys",
                  "one_place_keys", "batch_keys", "filesystem", "engine", "_fail_first_attempt",
                  "check_bits", "group_names", "metadata")


def _options(arguments: dict) -> dict:
    return {name: arguments[name] for name in _BUILD_OPTIONS if name in arguments}


def _build(df, columns, roles, path, *, fpr, bits, width, seed, shard_size, threshold_codes,
           check_bits, range_keys, one_place_keys, batch_keys, filesystem, engine,
           _fail_first_attempt, group_names=True, metadata=None) -> dist.BuildStats:
    """build() and build_set(): ``columns`` in their ``roles`` ("key"; "group", "key";
    "key", "value")."""
    _check_engine(engine)
    if not 1 <= batch_keys < 1 << 28:
        raise ValueError(f"batch_keys must be in [1, 2^28), not {batch_keys}")
    destination = dist.Destination(path, filesystem)
    destination.check()
    kinds = {role: key_kind_of_column(df, column) for column, role in zip(columns, roles)}
    if kinds.get("value", "u64") != "u64":
        raise _error("KeyTypeError", TypeError)(
            f"column {columns[roles.index('value')]!r} holds the values: it must be of an "
            "integer type (long, int, short, byte)")
    spark_engine = SparkEngine(
        df,
        columns,
        roles,
        batch_keys=batch_keys,
        route_in_jvm=_route_in_jvm(df.sparkSession, engine),
        fail_first_attempt=_fail_first_attempt,
    )
    try:
        with _build_settings(df.sparkSession):
            clock = time.monotonic()
            counts = spark_engine.counts()  # before the parameters: values may set the bits
            counting = time.monotonic() - clock
            if "value" in roles:
                bits = _value_bits(counts, bits, check_bits, columns[roles.index("value")])
            spark_engine.params = dist.build_params(
                kinds["key"],
                fpr=fpr,
                bits=bits,
                width=width,
                seed=seed,
                shard_size=shard_size,
                threshold_codes=threshold_codes,
                group_kind=kinds.get("group"),
                values="value" in roles,
                check_bits=check_bits,
            )
            threads = int(df.sparkSession.conf.get("spark.task.cpus", "1"))
            stats = dist.run_build(
                spark_engine,
                spark_engine.params,
                destination,
                range_keys=range_keys,
                one_place_keys=one_place_keys,
                threads=threads,
                group_names=group_names,
                metadata=metadata,
            )
        stats.seconds["count"] += counting  # run_build's count() found it done
        stats.layer0_route = "jvm" if spark_engine.route_in_jvm else "python"
        return stats
    finally:
        spark_engine.release_all()


def _value_bits(counts: _Counts, bits: Optional[int], check_bits: int, column: str) -> int:
    """The value bits of a retrieval build, as ``ribbon build --values`` picks them: ``bits``
    where given (every value must fit), else as many as the largest value needs (at least
    1); KeysError for negative values and values of 32 bits or more."""
    keys_error = _error("KeysError", ValueError)
    if counts.smallest_value < 0:
        raise keys_error(f"column {column!r} holds the negative value {counts.smallest_value}: "
                         "values are unsigned")
    if counts.largest_value >= 1 << 32:
        raise keys_error(f"column {column!r} holds the value {counts.largest_value}, which does "
                         "not fit in 32 bits")
    if bits is None:
        return max(1, counts.largest_value.bit_length())
    if counts.largest_value >= 1 << bits:
        raise keys_error(f"column {column!r} holds the value {counts.largest_value}, which does "
                         f"not fit in bits={bits} (values must be below 2^{bits})")
    return bits


def _route_in_jvm(session, engine: str) -> bool:
    """Does layer 0 route in the JVM (see :func:`build`'s ``engine``)? "jvm" raises
    JvmUnavailableError where it cannot; "auto" warns (once per session) that it takes the
    Python route, and why."""
    from . import spark_jvm

    if engine == "jvm":
        spark_jvm.add_jar(session, routing=True)
        return True
    if engine == "python":
        return False
    problem = spark_jvm.jvm_problem(session, routing=True)
    if problem is not None:
        spark_jvm.warn_python_route(session, "ribbon.spark.build's layer 0", problem)
    return problem is None


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


# lookup()'s answer for keys whose check bits fail: no value can be 2^32 - 1, as a file with
# check bits keeps at most 31 value bits.
_NOT_FOUND = 2**32 - 1


def _without_nulls(array: pa.Array) -> Tuple[pa.Array, Optional[np.ndarray]]:
    """The array with nulls filled (0 or b"") and where they were (None if nowhere)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not array.null_count:
        return array, None
    where = array.is_null().to_numpy(zero_copy_only=False)
    return array.fill_null(0 if pa.types.is_integer(array.type) else b""), where


def _answer(source, method: str, *columns: pa.Array) -> pa.Array:
    """The method's answers for a batch of keys (contains_in: of groups and keys): null where
    any of them is null and, for lookups in a file with check bits, for keys found absent."""
    f = _filter_on_executor(source)
    absent = None
    filled = []
    for column in columns:  # a null group or key is no member: its answer is null
        column, nulls = _without_nulls(column)
        filled.append(column)
        if nulls is not None:
            absent = nulls if absent is None else absent | nulls
    if method == "lookup" and f.check_bits:
        answers = f.lookup(*filled, absent=_NOT_FOUND)
        not_found = answers == _NOT_FOUND
        absent = not_found if absent is None else absent | not_found
    else:
        answers = getattr(f, method)(*filled)
    return pa.array(answers, mask=absent)


def _column_function(source, method: str, return_type: str):
    try:
        from pyspark.sql.functions import arrow_udf  # Spark >= 4.1: Arrow in and out

        def run(*columns: pa.Array) -> pa.Array:
            out = _answer(source, method, *columns)
            return out.cast(pa.int64()) if method == "lookup" else out

        return arrow_udf(run, return_type)
    except ImportError:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        def run_pandas(*columns: pd.Series) -> pd.Series:
            out = _answer(source, method, *(pa.Array.from_pandas(c) for c in columns))
            return (out.cast(pa.int64()) if method == "lookup" else out).to_pandas()

        return pandas_udf(run_pandas, return_type)


def _query_column(method: str, return_type: str, columns, filter, spark, engine: str):
    """The column of one query method: the JVM's ribbon_<method> (ribbon.spark_jvm) where it
    can run, else the Arrow UDF over the batched query path."""
    _check_engine(engine)
    if engine != "python" and isinstance(filter, (str, os.PathLike)):
        from pyspark.sql import SparkSession

        from . import spark_jvm

        session = spark or SparkSession.getActiveSession()
        if session is None:
            raise RuntimeError("no active Spark session: start one, or pass spark=")
        problem = None if engine == "jvm" else spark_jvm.jvm_problem(session)
        if problem is None:
            os.stat(filter)  # a missing file is refused here, as the Arrow path refuses it
            spark_jvm.register(session)
            return getattr(spark_jvm, method + "_column")(filter, *columns)
        spark_jvm.warn_python_route(session, f"ribbon.spark.{method}", problem)
    if engine == "jvm":
        raise TypeError("engine='jvm' needs a filter path (the JVM maps the file itself)")
    return _column_function(_filter_source(filter, spark), method, return_type)(*columns)


def contains(column, filter, *, spark=None, engine: str = "auto"):
    """A boolean column: may ``column``'s key be in the filter? (null for null keys).

    ``filter``: a path that every executor can read, or a ``ribbon.Filter`` (its file bytes
    are broadcast once). The pre-filter of a join, e.g.
    ``big.where(ribbon.spark.contains("user_id", "/shared/users.ribbon"))``.

    ``engine``: ``"auto"`` (default) queries a path inside the executors' JVMs
    (``ribbon_contains`` of ribbon.jar, no Python worker) when the session's class path has
    the jar (``spark.jars`` set to ``ribbon.spark_jvm.jar_path()``), else in Python workers
    through an Arrow UDF over the batched query path; ``"jvm"`` and ``"python"`` force one.
    """
    return _query_column("contains", "boolean", [column], filter, spark, engine)


def contains_in(group_column, key_column, filter_set, *, spark=None, engine: str = "auto"):
    """A boolean column: may the group in ``group_column`` hold the key in ``key_column``, in
    a filter set (:func:`build_set`, ``ribbon build --groups -o``)? Null where the group or
    the key is null. ``filter_set``: a path that every executor can read, or a
    ``ribbon.FilterSet`` (its bytes are broadcast once). E.g. the files that may hold each
    key: ``keys.crossJoin(files).where(ribbon.spark.contains_in("file", "key", path))``.
    ``engine`` as for :func:`contains` (the JVM's ``ribbon_contains_in``)."""
    from .sets import FilterSet

    if isinstance(filter_set, FilterSet):
        filter_set = filter_set._filter  # the Filter it wraps: broadcast as file bytes
    return _query_column("contains_in", "boolean", [group_column, key_column], filter_set, spark,
                         engine)


def lookup(column, filter, *, spark=None, engine: str = "auto"):
    """A long column: the value a retrieval file (:func:`build` with ``values=``, or built on
    one machine) stores for each key (an arbitrary value below 2^bits for keys outside its
    set, except in files with check bits: null where the key's check bits fail; null for null
    keys).
    ``engine`` as for :func:`contains`."""
    return _query_column("lookup", "long", [column], filter, spark, engine)


# ---------------------------------------------------------------------------------------
# ribbon.lake on Spark: the index's build (its engine="spark") and reads through it.


def read_indexed(spark, table, column: str, keys, index):
    """A DataFrame of the rows of Parquet ``table`` whose ``column`` is one of ``keys``,
    scanning only the files ``ribbon.lake.candidate_files`` names through ``index`` (a path
    or a ``ribbon.lake.LakeIndex``): the index's candidates and every file it does not know or
    that changed; a full scan, with a warning, if the index cannot answer for this table and
    column. The rows are a full scan's (``column IN keys`` is applied)."""
    from pyspark.sql import functions as F

    from . import lake

    source, files = lake.candidate_files(table, column, keys, index)
    everything = files or list(lake.list_files(source))[:1]
    if not everything:
        raise lake.LakeError(f"table {source.id} has no Parquet files")
    df = (spark.read.option("basePath", lake.spark_path(source.uri("")).rstrip("/"))
          .parquet(*[lake.spark_path(source.uri(r)) for r in everything]))
    if not files:
        return df.where(F.lit(False))
    if isinstance(keys, (pa.Array, pa.ChunkedArray)):
        keys = keys.to_pylist()
    elif isinstance(keys, np.ndarray):
        keys = keys.tolist()
    elif isinstance(keys, (str, bytes, int)):
        keys = [keys]
    name = "`" + column.replace("`", "``") + "`"
    if df.schema[column].dataType.typeName() == "binary":
        keys = [bytearray(k.encode() if isinstance(k, str) else k) for k in keys]
    else:
        keys = [k.decode() if isinstance(k, bytes) else k for k in keys]
    return df.where(F.col(name).isin(list(keys)))
