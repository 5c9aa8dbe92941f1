"""The Spark session of the Spark benchmarks (spark_jvm_bench.py, spark_sql_bench.py):
local[2], the ribbon jar on its class path and the JVM functions registered."""

import os
import sys


def workload_arguments(rounds: int):
    """The parser of the pre-filter workload both benchmarks run: --rows probe rows, a
    --keys-key filter built by --ribbon, --rounds rounds."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--ribbon", default="build/tools/ribbon")
    return parser


def workload(spark, args):
    """(keys, path, probes): a filter of --keys keys (xxhash64 of ids 0..keys-1, built by
    `ribbon build --format u64` into a temporary directory), its keys' DataFrame and --rows
    probe rows (xxhash64 of ids 0..rows-1), both cached."""
    import subprocess
    import tempfile

    import numpy as np
    from pyspark.sql import functions as F

    tmp = tempfile.mkdtemp()
    keys = spark.range(args.keys).select(F.xxhash64("id").alias("k")).cache()
    keys.toPandas()["k"].to_numpy(dtype="<i8").tofile(os.path.join(tmp, "keys.u64"))
    path = os.path.join(tmp, "keys.ribbon")
    subprocess.run([args.ribbon, "build", "-q", "--format", "u64", "-i",
                    os.path.join(tmp, "keys.u64"), "-o", path], check=True)
    probes = spark.range(args.rows).select(F.xxhash64("id").alias("k")).cache()
    probes.count()
    return keys, path, probes


def local_session(**conf):
    """A local[2] session with ribbon.jar and ``conf`` (Spark settings, dots as in Spark:
    pass a dict with ``**{"spark.x": v}``); the ribbon SQL functions registered."""
    import ribbon.spark_jvm
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.jars", ribbon.spark_jvm.jar_path())
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", 1 << 16)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    ribbon.spark_jvm.register(spark)
    return spark
