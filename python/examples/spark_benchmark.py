"""Benchmark: ribbon.spark.build against `ribbon build` on the same integer keys.

    python python/examples/spark_benchmark.py --keys 100000000 --cli build/tools/ribbon \\
        --workdir /tmp/ribbon-bench [--master local[2]] [--partitions 16] [--batch 1048576] \\
        [--engine auto|jvm|python] [--repeat 1] [--groups G | --values]

Keys are 0 .. n-1 (spark.range; hashing makes them random), written once as a u64 file for
the CLI. With --groups G, a filter set instead: the pairs (k mod G, k), built by
ribbon.spark.build_set against `ribbon build --groups --format u64`. With --values, a
retrieval structure of k -> k mod 2^16 (16 value bits), against `ribbon build --value-file`. Prints the wall time of
both builds, whether the files are identical, the build's per-layer seconds, and per Spark
stage (from the UI's REST API): duration, executor run time, shuffle bytes written and read,
and shuffle bytes per key.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import time
import urllib.request

import numpy as np


def write_u64_keys(path: str, n: int) -> None:
    chunk = 1 << 24
    with open(path, "wb") as out:
        for start in range(0, n, chunk):
            np.arange(start, min(n, start + chunk), dtype="<u8").tofile(out)


def write_u64_pairs(path: str, n: int, groups: int) -> None:
    chunk = 1 << 24
    with open(path, "wb") as out:
        for start in range(0, n, chunk):
            keys = np.arange(start, min(n, start + chunk), dtype="<u8")
            pairs = np.empty(2 * len(keys), dtype="<u8")
            pairs[0::2], pairs[1::2] = keys % np.uint64(groups), keys
            pairs.tofile(out)


def write_u64_values(path: str, n: int) -> None:
    chunk = 1 << 24
    with open(path, "wb") as out:
        for start in range(0, n, chunk):
            (np.arange(start, min(n, start + chunk), dtype="<u8") % np.uint64(1 << 16)).tofile(out)


def write_string_keys(path: str, n: int) -> None:
    chunk = 1 << 22
    with open(path, "w") as out:
        for start in range(0, n, chunk):
            out.write("\n".join(map(str, range(start, min(n, start + chunk)))) + "\n")


def stage_metrics(spark) -> list:
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
    with urllib.request.urlopen(url) as response:
        stages = json.load(response)
    return sorted(stages, key=lambda s: s["stageId"])


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=10**8)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--workdir", default="/tmp/ribbon-bench")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--range-keys", type=int, default=None)
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--strings", action="store_true", help="keys as decimal strings")
    ap.add_argument("--values", action="store_true",
                    help="a retrieval structure k -> k mod 2^16 (integer keys only)")
    ap.add_argument("--groups", type=int, default=0,
                    help="a filter set of the pairs (k mod GROUPS, k) (integer keys only)")
    ap.add_argument("--batch", type=int, default=1 << 20, help="arrow.maxRecordsPerBatch")
    ap.add_argument("--engine", default="auto", choices=["auto", "jvm", "python"],
                    help="where layer 0 routes (auto/jvm: the session gets ribbon.jar)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="builds in the session (the figures below are the last one's)")
    return ap.parse_args()


def build_with_cli(args, out: str) -> float:
    """Writes the keys file once, builds it with `ribbon build`; returns the seconds."""
    n = args.keys
    fmt = "lines" if args.strings else "u64"
    if args.groups:
        keys_file = os.path.join(args.workdir, f"pairs-{n}-{args.groups}.{fmt}")
        if not os.path.exists(keys_file):
            write_u64_pairs(keys_file, n, args.groups)
    else:
        keys_file = os.path.join(args.workdir, f"keys-{n}.{fmt}")
        if not os.path.exists(keys_file):
            (write_string_keys if args.strings else write_u64_keys)(keys_file, n)
    extra = ["--groups"] if args.groups else []
    if args.values:
        values_file = os.path.join(args.workdir, f"values-{n}.u64")
        if not os.path.exists(values_file):
            write_u64_values(values_file, n)
        extra = ["--value-file", values_file, "--bits", "16"]
    start = time.monotonic()
    subprocess.run([args.cli, "build", "-i", keys_file, "--format", fmt, "-o", out,
                    "--threads", "2"] + extra, check=True)
    seconds = time.monotonic() - start
    print(f"ribbon build: {seconds:.2f} s")
    return seconds


def start_session(args):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this interpreter
    from pyspark.sql import SparkSession

    import ribbon.spark_jvm

    builder = SparkSession.builder
    if args.engine != "python":
        builder = builder.config("spark.jars", ribbon.spark_jvm.jar_path())
    spark = (
        builder.master(args.master)
        .appName("ribbon-spark-benchmark")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))
        .config("spark.local.dir", args.workdir)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


def print_build_stats(stats) -> None:
    print("driver stages (s):", {k: round(v, 2) for k, v in stats.seconds.items()})
    driver_bytes = getattr(stats, "driver_bytes_written", None)
    if driver_bytes is not None:
        print(f"driver wrote {driver_bytes} B of the file ({driver_bytes / stats.keys:.5f} B/key), "
              f"read 0 B of it")
    for layer in stats.layers:
        print(f"  layer {layer['layer']}: {layer['keys']} keys, {layer['ranges']} ranges, "
              f"{layer['bumped']} bumped, {layer['seconds']:.2f} s")
    print(f"  finished on the driver: {stats.one_place_layers} layers")


def print_stages(spark, n: int) -> None:
    from datetime import datetime

    print("stage | name | tasks | duration s | executor run s | shuffle write B | read B | "
          "write B/key")
    for s in stage_metrics(spark):
        duration = 0.0
        if s.get("submissionTime") and s.get("completionTime"):
            fmt = "%Y-%m-%dT%H:%M:%S.%f%Z"
            duration = (datetime.strptime(s["completionTime"], fmt)
                        - datetime.strptime(s["submissionTime"], fmt)).total_seconds()
        print(f"{s['stageId']} | {s['name']} | {s['numTasks']} | {duration:.2f} | "
              f"{s['executorRunTime'] / 1000:.2f} | {s['shuffleWriteBytes']} | "
              f"{s['shuffleReadBytes']} | {s['shuffleWriteBytes'] / n:.2f}")


def main() -> None:
    import resource

    args = parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    n = args.keys
    cli_out = os.path.join(args.workdir, "cli.ribbon")
    cli_seconds = None if args.skip_cli else build_with_cli(args, cli_out)

    spark = start_session(args)
    import ribbon.spark

    df = spark.range(0, n, 1, args.partitions).withColumnRenamed("id", "k")
    if args.strings and (args.groups or args.values):
        raise SystemExit("--groups and --values build integer keys only")
    if args.strings:
        df = df.selectExpr("cast(k as string) as k")
    if args.groups:
        df = df.selectExpr(f"k % {args.groups} as g", "k")
    if args.values:
        df = df.selectExpr("k", "k % 65536 as v")
    out = os.path.join(args.workdir, "spark.ribbon")
    options = {"range_keys": args.range_keys} if args.range_keys else {}
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds = []
    for run in range(args.repeat):  # later runs: a warm session (JIT, Python workers)
        start = time.monotonic()
        if args.groups:
            stats = ribbon.spark.build_set(df, "g", "k", out, engine=args.engine, **options)
        elif args.values:
            stats = ribbon.spark.build(df, "k", out, values="v", bits=16, engine=args.engine,
                                       **options)
        else:
            stats = ribbon.spark.build(df, "k", out, engine=args.engine, **options)
        seconds.append(time.monotonic() - start)
        print(f"ribbon.spark.build{'_set' if args.groups else ''} (engine {args.engine}, layer 0 routed in "
              f"{stats.layer0_route}, run {run + 1} of the session): "
              f"{seconds[-1]:.2f} s, {stats.keys} keys, {stats.bits_per_key:.3f} bits/key")
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # before the comparison reads
    print(f"driver Python process: peak RSS {rss_after / 1024:.0f} MB, "
          f"{(rss_after - rss_before) / 1024:.0f} MB above its peak before the build")
    if cli_seconds is not None:
        same = filecmp.cmp(out, cli_out, shallow=False)
        ratios = ", ".join(f"{s / cli_seconds:.1f}" for s in seconds)
        print(f"identical files: {same}; ratio spark/cli, run by run: {ratios}")
    print_build_stats(stats)
    print_stages(spark, n)
    spark.stop()


if __name__ == "__main__":
    main()
