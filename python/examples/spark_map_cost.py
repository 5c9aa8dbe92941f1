"""Where the Spark build's map stage spends its time: the same keys through four jobs.

    PYSPARK_PYTHON=.venv/bin/python PYTHONPATH=build/python \\
        python python/examples/spark_map_cost.py [--keys 10000000] [--master local[2]] [--batch 1048576]

1. the JVM alone (spark.range, a sum): Spark's floor;
2. the keys to Python workers (mapInArrow) that only count them: the JVM -> Arrow -> Python
   hand-over;
3. the same, hashing every batch (ribbon.distributed.hash_batch);
4. layer 0's map side as ribbon.spark.build runs it: hash, route, shuffle write;
5. keys hashed in the JVM (Spark's xxhash64, a stand-in) and gathered per range by Spark's
   collect_list, the lists to Python: what built-in functions give without the row hand-over.
Each job runs twice (the first of a session also starts the Python workers); wall seconds.
"""

from __future__ import annotations

import argparse
import time

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import ribbon.distributed as dist
import ribbon.spark as rs


def counted(f):
    """A mapInArrow function yielding one row: the count of f(batch)'s elements."""

    def run(batches):
        total = sum(len(f(b)) for b in batches)
        yield pa.RecordBatch.from_arrays([pa.array([total])], names=["c"])

    return run


def count_list_elements(batches):
    total = sum(len(b.column(1).flatten()) for b in batches)
    yield pa.RecordBatch.from_arrays([pa.array([total])], names=["c"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=10**7)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--batch", type=int, default=1 << 20, help="arrow.maxRecordsPerBatch")
    args = ap.parse_args()
    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    n = args.keys
    df = spark.range(0, n, 1, args.partitions).withColumnRenamed("id", "k")
    params = dist.build_params("u64", width=64)
    plan = dist.plan_layer(params, 0, n, dist.DEFAULT_RANGE_KEYS)
    route = rs._hash_and_route(params, plan, rs.partition_keys(plan.num_ranges),
                               rs.ROUTE_BATCH_KEYS)
    jobs = {
        "JVM only (range, sum)": lambda: df.agg({"k": "sum"}).collect(),
        "to Python, count": lambda: df.mapInArrow(counted(lambda b: b.column(0)), "c long")
        .agg({"c": "sum"}).collect(),
        "to Python, hash": lambda: df.mapInArrow(
            counted(lambda b: dist.hash_batch(params, b.column(0))), "c long")
        .agg({"c": "sum"}).collect(),
        "hash, route, shuffle write": lambda: df.mapInArrow(route, rs.ROUTED_SCHEMA)
        .repartition(plan.num_ranges, "part").count(),
        "JVM hash, collect_list per range, to Python": lambda: df.select(
            F.xxhash64("k").alias("h"))
        .groupBy(F.pmod("h", F.lit(max(2, plan.num_ranges))).alias("r"))
        .agg(F.collect_list("h").alias("hashes"))
        .mapInArrow(count_list_elements, "c long").agg({"c": "sum"}).collect(),
    }
    df.count()  # Spark's own first-job costs, outside the figures
    for attempt in (1, 2):
        for name, job in jobs.items():
            clock = time.perf_counter()
            job()
            seconds = time.perf_counter() - clock
            print(f"run {attempt} | {name} | {seconds:.2f} s | {1e9 * seconds / n:.0f} ns/key",
                  flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
