"""The map side of a Spark build: each layer's hashes routed to their shard ranges as binary
blobs (one row per batch and range), in Arrow batches or, for layer 0, in the executors' JVMs.

Spark's DataFrame exchange does the shuffle. `repartition(n, "part")` puts a row in partition
pmod(murmur3_32(part, seed 42), n) (Spark's HashPartitioning); giving range r the smallest
`part` value that lands in partition r makes partition r hold exactly range r's hashes.
The range tasks check it, so a Spark that hashed otherwise fails loudly, never wrongly.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np
import pyarrow as pa

from .. import distributed as dist

#: Hashes a map task routes at once (32 MiB of hashes): larger blobs, fewer shuffle rows.
ROUTE_BATCH_KEYS = 1 << 22

ROUTED_SCHEMA = "part long, hashes binary"
#: Retrieval: each blob of hashes has a blob of their values (little-endian u32) beside it.
ROUTED_VALUES_SCHEMA = "part long, hashes binary, values binary"


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

def _route_in_jvm(session, engine: str) -> bool:
    """Does layer 0 route in the JVM (see :func:`build`'s ``engine``)? "jvm" raises
    JvmUnavailableError where it cannot; "auto" warns (once per session) that it takes the
    Python route, and why."""
    from .. import spark_jvm

    if engine == "jvm":
        spark_jvm.add_jar(session, routing=True)
        return True
    if engine == "python":
        return False
    problem = spark_jvm.jvm_problem(session, routing=True)
    if problem is not None:
        spark_jvm.warn_python_route(session, "ribbon.spark.build's layer 0", problem)
    return problem is None
