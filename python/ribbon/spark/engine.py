"""Spark as the engine of :func:`ribbon.distributed.run_build` (:class:`SparkEngine`): the
reduce side that solves each range, the session's settings while a build runs, the driver's
collections and small tasks."""

from __future__ import annotations

import contextlib
import pickle
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from .. import _ribbon
from .. import distributed as dist
from .routing import (
    ROUTED_SCHEMA,
    ROUTED_VALUES_SCHEMA,
    _blob_views,
    _blobs,
    _hash_and_route,
    _route_bumped,
    _routed_in_jvm,
    _signed64,
    partition_keys,
)

RESULT_COLUMNS = ["range", "received", "distinct", "solved", "bumped_keys", "conflict_hash",
                  "conflict"]
SOLVED_SCHEMA = ("range long, received long, distinct long, solved boolean, bumped_keys long, "
                 "conflict_hash long, conflict string, bumped binary, bumped_values binary")


def _error(name: str, fallback: type) -> type:
    return getattr(_ribbon, name, fallback)


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
