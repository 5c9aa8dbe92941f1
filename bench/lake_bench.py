"""ribbon.lake against a full scan and Parquet's bloom filters, in pyarrow.dataset (issue 48).

Writes a table of FILES Parquet files of ROWS rows each (an int64 id column of random ids,
each id in one file; a string id column; a payload column), once without and once with
Parquet bloom filters on both id columns (fpp 1/256, ndv = the file's true distinct count;
and a third copy with pyarrow's default ndv, for its size only), then for needles (an id in
one file) and misses (an id in none) measures files opened, bytes read (the process's rchar
from /proc/self/io: pread bytes, page cache or not) and latency p50 over LOOKUPS lookups:

  (A) a full scan, predicate pushed down (ds.dataset(...).to_table(filter=id == k));
  (B) the same over the files with bloom filters (pyarrow's scanner does not read them,
      apache/arrow#36268: (B) is (A) with other files);
  (C) ribbon.lake.read through the index (listing the table, opening the candidates).

And the index's size against the bloom filters' bytes, and its build time (local engine,
warm page cache, THREADS threads) against reading the id column of every file with pyarrow on
the same threads. Writes a JSON line per result and, with --figure, a PNG.

  python bench/lake_bench.py --files 200 --rows 100000 --lookups 200 --dir /tmp/lakebench
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import ribbon.lake as lake


def rchar(pid="self") -> int:
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def write_tables(directory, files, rows, seed=1):
    rng = np.random.default_rng(seed)
    all_ids = rng.choice(np.iinfo(np.int64).max, size=files * rows, replace=False)
    plain, bloom, default = (os.path.join(directory, n) for n in ("plain", "bloom", "bloom_default"))
    for d in (plain, bloom, default):
        os.makedirs(d, exist_ok=True)
    for i in range(files):
        ids = all_ids[i * rows:(i + 1) * rows]
        table = pa.table({"id": ids, "sid": pa.array([f"id-{x:x}" for x in ids]),
                          "payload": rng.random(rows)})
        name = f"part-{i:05d}.parquet"
        options = dict(row_group_size=rows)  # one row group a file: ndv = its rows
        pq.write_table(table, os.path.join(plain, name), **options)
        pq.write_table(table, os.path.join(bloom, name), **options, bloom_filter_options={
            "id": {"ndv": rows, "fpp": 1 / 256}, "sid": {"ndv": rows, "fpp": 1 / 256}})
        pq.write_table(table, os.path.join(default, name), **options, bloom_filter_options={
            "id": {"fpp": 1 / 256}, "sid": {"fpp": 1 / 256}})
    return plain, bloom, default, all_ids


def bloom_bytes(directory, column):
    total = 0
    for name in sorted(os.listdir(directory)):
        meta = pq.ParquetFile(os.path.join(directory, name)).metadata
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            for c in range(rg.num_columns):
                if rg.column(c).path_in_schema == column:
                    total += rg.column(c).bloom_filter_length or 0
    return total


def measure(label, lookup, keys, pid="self"):
    times, opened, read = [], [], []
    for k in keys:
        before = rchar(pid)
        clock = time.perf_counter()
        files = lookup(int(k))
        times.append(time.perf_counter() - clock)
        read.append(rchar(pid) - before)
        opened.append(files)
    return {"what": label, "lookups": len(keys), "p50_ms": 1e3 * statistics.median(times),
            "mean_files": float(np.mean(opened)), "mean_bytes_read": float(np.mean(read))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dir", default="/tmp/lakebench")
    parser.add_argument("--scan-lookups", type=int,
                        help="lookups for (A) and (B), which scan every file (default --lookups)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the tables and indexes of an earlier run in --dir")
    parser.add_argument("--figure")
    parser.add_argument("--spark", action="store_true",
                        help="measure the lookups in Spark local[THREADS] instead of pyarrow")
    args = parser.parse_args()
    if not args.reuse:
        shutil.rmtree(args.dir, ignore_errors=True)
        os.makedirs(args.dir)
    results = []

    def emit(record):
        results.append(record)
        print(json.dumps(record), flush=True)

    clock = time.perf_counter()
    if args.reuse:
        plain, bloom, default = (os.path.join(args.dir, n) for n in ("plain", "bloom", "bloom_default"))
        all_ids = np.random.default_rng(1).choice(np.iinfo(np.int64).max,
                                                  size=args.files * args.rows, replace=False)
        if args.spark:
            measure_spark_lookups(args, plain, bloom, all_ids, emit, results)
        else:
            measure_lookups(args, plain, bloom, all_ids, emit, results)
        return
    plain, bloom, default, all_ids = write_tables(args.dir, args.files, args.rows)
    emit({"what": "write", "files": args.files, "rows": args.files * args.rows,
          "seconds": time.perf_counter() - clock})

    # Build time against one read of the id column, warm cache, same threads.
    index = os.path.join(args.dir, "id.ribbon")
    names = sorted(os.listdir(plain))
    lake.build_index(plain, "id", index, threads=args.threads)  # warms the page cache
    read_s = []
    for _ in range(3):
        clock = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(lambda n: pq.read_table(os.path.join(plain, n), columns=["id"],
                                                  use_threads=False), names))
        read_s.append(time.perf_counter() - clock)
    build_s = []
    for _ in range(3):
        clock = time.perf_counter()
        stats = lake.build_index(plain, "id", index, threads=args.threads)
        build_s.append(time.perf_counter() - clock)
    emit({"what": "build", "threads": args.threads, "read_column_s": min(read_s),
          "build_s": min(build_s), "ratio": min(build_s) / min(read_s),
          "index_bytes": stats.bytes, "pairs": stats.pairs})
    sindex = os.path.join(args.dir, "sid.ribbon")
    clock = time.perf_counter()
    sstats = lake.build_index(plain, "sid", sindex, threads=args.threads)
    emit({"what": "build sid", "build_s": time.perf_counter() - clock, "index_bytes": sstats.bytes})

    for column, path in (("id", index), ("sid", sindex)):
        ribbon_bytes = os.path.getsize(path)
        best, dflt = bloom_bytes(bloom, column), bloom_bytes(default, column)
        emit({"what": f"size {column}", "ribbon_index_bytes": ribbon_bytes,
              "bloom_bytes_true_ndv": best, "bloom_bytes_default_ndv": dflt,
              "ratio_to_true_ndv": ribbon_bytes / best, "ratio_to_default_ndv": ribbon_bytes / dflt,
              "ribbon_bits_per_key": 8 * ribbon_bytes / len(all_ids),
              "bloom_bits_per_key": 8 * best / len(all_ids)})

    measure_lookups(args, plain, bloom, all_ids, emit, results)


def lookup_keys(args, all_ids):
    rng = np.random.default_rng(7)
    needles = rng.choice(all_ids, size=args.lookups, replace=False)
    misses = rng.integers(0, 2**62, size=args.lookups)  # distinct from the ids with near certainty
    return needles, misses[~np.isin(misses, all_ids)]


def measure_spark_lookups(args, plain, bloom, all_ids, emit, results):
    """The same lookups in Spark local[THREADS]: (A) spark.read.parquet(table).where(id = k)
    (Spark 4 pushes the equality down to Parquet's statistics and, for (B), its bloom
    filters, after opening every file's footer); (C) ribbon.spark.read_indexed. Bytes read:
    the JVM's rchar. Files opened: all of them for (A) and (B), the candidates for (C)."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import ribbon.spark

    spark = (SparkSession.builder.master(f"local[{args.threads}]")
             .config("spark.ui.enabled", "false").getOrCreate())
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    index = lake.load_index(os.path.join(args.dir, "id.ribbon"))
    needles, misses = lookup_keys(args, all_ids)

    def scan(path):
        def run(k):
            df = spark.read.parquet(path).where(F.col("id") == k)
            df.count()
            return len(df.inputFiles())
        return run

    def indexed(k):  # the candidates listed again (about 1 ms): a miss's plan opens none
        ribbon.spark.read_indexed(spark, plain, "id", [k], index).count()
        return len(lake.candidate_files(plain, "id", [k], index)[1])

    scan(plain)(int(needles[0]))  # warm-up: the JVM's classes, the page cache
    for kind, keys in (("needle", needles), ("miss", misses)):
        for label, fn in (("A full scan", scan(plain)), ("B bloom files", scan(bloom)),
                          ("C ribbon index", indexed)):
            scans = args.scan_lookups or args.lookups
            record = measure("spark " + label, fn,
                             keys if label.startswith("C") else keys[:scans], jvm_pid)
            record["keys"] = kind
            emit(record)
    spark.stop()


def measure_lookups(args, plain, bloom, all_ids, emit, results):
    index = os.path.join(args.dir, "id.ribbon")
    needles, misses = lookup_keys(args, all_ids)
    loaded = lake.load_index(index)
    datasets = {p: ds.dataset(p, format="parquet") for p in (plain, bloom)}

    def scan(path):
        def run(k):
            datasets[path].to_table(filter=ds.field("id") == k)
            return args.files
        return run

    def indexed(k):  # ribbon.lake.read's steps, counting the files it opens
        source, files = lake.candidate_files(plain, "id", [k], loaded)
        if files:
            ds.dataset([source.path(r) for r in files], format="parquet").to_table(
                filter=ds.field("id") == k)
        return len(files)

    for kind, keys in (("needle", needles), ("miss", misses)):
        for label, fn in (("A full scan", scan(plain)), ("B bloom files", scan(bloom)),
                          ("C ribbon index", indexed)):
            scans = args.scan_lookups or args.lookups
            record = measure(label, fn, keys if label.startswith("C") else keys[:scans])
            record["keys"] = kind
            emit(record)
    target = 1 + 1.5 * (args.files - 1) / 256
    emit({"what": "needle files target", "at_most": target})
    with open(os.path.join(args.dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    if args.figure:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        rows = [r for r in results if "p50_ms" in r]
        fig, ax = plt.subplots(figsize=(6, 3.2))
        labels = [f"{r['what'].split()[0]} {r['keys']}" for r in rows]
        ax.bar(labels, [r["p50_ms"] for r in rows],
               color=["#999", "#bbb", "#2a7"] * 2)
        ax.set_yscale("log")
        ax.set_ylabel("p50 latency (ms, log)")
        ax.set_title(f"Point lookup, {args.files} Parquet files x {args.rows} rows (pyarrow)\n"
                     "A: full scan, B: + Parquet bloom filters, C: ribbon.lake index", fontsize=9)
        fig.tight_layout()
        fig.savefig(args.figure, dpi=110)


if __name__ == "__main__":
    main()
