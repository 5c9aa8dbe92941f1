"""The pre-filter of a join on local[2]: the JVM functions of ribbon.spark_jvm (the column
function, which binds the path in the JVM, and the SQL function ribbon_contains(path, k))
against ribbon.spark.contains (the Arrow UDF) and Spark's broadcast left-semi join.

A filter of 10^6 keys (xxhash64 of ids 0..10^6-1, built by `ribbon build --format u64`) and
2*10^7 probe rows (xxhash64 of ids 0..2*10^7-1, cached in memory first); each method counts
the rows it keeps, in alternating rounds; prints each time and the medians, in rows/s.
Usage (repository root, after a build with the jar):
  PYTHONPATH=build/python RIBBON_JAVA_JAR=build/java/ribbon.jar .venv/bin/python \
      bench/spark_jvm_bench.py [--rows N] [--keys N] [--rounds N]
"""

import statistics
import time

from spark_session import local_session, workload, workload_arguments


def main():
    args = workload_arguments(rounds=3).parse_args()

    import ribbon.spark
    import ribbon.spark_jvm
    from pyspark.sql import functions as F

    spark = local_session()
    keys, path, probes = workload(spark, args)

    methods = {
        "contains_column (JVM, path bound)": lambda: probes.where(ribbon.spark_jvm.contains_column(path, "k")).count(),
        "ribbon_contains SQL (JVM, path per row)": lambda: probes.where(F.expr("ribbon_contains('%s', k)" % path)).count(),
        "ribbon.spark.contains (Arrow UDF)": lambda: probes.where(ribbon.spark.contains("k", path, engine="python")).count(),
        "broadcast left-semi join": lambda: probes.join(F.broadcast(keys), "k", "left_semi").count(),
    }
    times = {name: [] for name in methods}
    counts = {}
    for run in range(args.rounds + 1):  # round 0 warms up (JIT, Python workers, caches)
        for name, method in methods.items():
            start = time.perf_counter()
            counts[name] = method()
            elapsed = time.perf_counter() - start
            if run > 0:
                times[name].append(elapsed)
                print("round %d %-36s %7.2f s  %6.2f M rows/s  (%d rows kept)"
                      % (run, name, elapsed, args.rows / elapsed / 1e6, counts[name]), flush=True)
    for name in methods:
        median = statistics.median(times[name])
        print("median %-36s %7.2f s  %6.2f M rows/s  rounds %s"
              % (name, median, args.rows / median / 1e6, " ".join("%.2f" % t for t in times[name])))
    spark.stop()


main()
