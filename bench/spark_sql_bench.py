"""The pre-filter of a join on local[2], every way ribbon offers it (issue #49): the function
catalog's ribbon.contains (path argument, and path in the name, as contains_column makes it),
the Java UDF ribbon_contains(path, k), the older path-bound UDF (BoundQuery), the Python route
(engine="python", an Arrow UDF) and Spark's broadcast left-semi join; and, on the same keys,
the C++ batched query of the same filter (ribbon.Filter.contains on a numpy array, one thread).

A filter of --keys keys (xxhash64 of ids 0..keys-1, built by `ribbon build --format u64`) and
--rows probe rows (xxhash64 of ids 0..rows-1, cached in memory first). Each method counts the
rows it keeps; a warm-up round first, then --rounds rounds; prints each time, the median, and
the median minus the plain count's, per row per core (2 cores), and the JVM process's CPU time
(its user + system time from /proc: on a machine shared with other work the steadier figure)
per row, minus the plain count's and minus a trivial predicate's (k <> 0: the rows
materialized from the cache for a predicate).
Usage (repository root, after a build with the jar):
  PYTHONPATH=build/python RIBBON_JAVA_JAR=build/java/ribbon.jar .venv/bin/python \\
      bench/spark_sql_bench.py [--rows N] [--keys N] [--rounds N] [--skip NAME ...]
"""

import os
import statistics
import time

import numpy as np
from spark_session import local_session, workload, workload_arguments


def main():
    parser = workload_arguments(rounds=1)
    parser.add_argument("--skip", nargs="*", default=[], help="methods to leave out (substrings)")
    args = parser.parse_args()

    import ribbon
    import ribbon.spark
    import ribbon.spark_jvm
    from pyspark.sql import functions as F


    spark = local_session(**{"spark.sql.execution.arrow.pyspark.enabled": "true"})
    # The Java reader's row checks and key hashing use the Vector API where the JVM has its
    # module (docs/jvm.md); say which, since the figures depend on it.
    vector = spark._jvm.java.lang.ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
    print("JVM with jdk.incubator.vector:", "yes (the reader's vector lanes)" if vector else "no (scalar lanes)")

    keys, path, probes = workload(spark, args)
    named = ribbon.spark_jvm.function_name("contains", path)

    methods = {
        "plain count": lambda: probes.count(),
        "trivial predicate (k <> 0)": lambda: probes.where("k <> 0").count(),
        "ribbon.contains(path, k) (catalog)": lambda: probes.where(F.expr("ribbon.contains('%s', k)" % path)).count(),
        "ribbon.`path`.contains(k) (catalog; contains_column)":
            lambda: probes.where(ribbon.spark_jvm.contains_column(path, "k")).count(),
        "ribbon_contains(path, k) (Java UDF)": lambda: probes.where(F.expr("ribbon_contains('%s', k)" % path)).count(),
        "path-bound Java UDF (old contains_column)":
            lambda: probes.where(ribbon.spark_jvm._bound_udf("ribbon_contains", path, "k")).count(),
        "engine='python' (Arrow UDF)": lambda: probes.where(ribbon.spark.contains("k", path, engine="python")).count(),
        "broadcast left-semi join": lambda: probes.join(F.broadcast(keys), "k", "left_semi").count(),
    }
    methods = {n: m for n, m in methods.items() if not any(s in n for s in args.skip)}
    print("catalog function with the path in its name:", named)
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    tick = os.sysconf("SC_CLK_TCK")

    def jvm_cpu():
        """The driver JVM's CPU seconds (user + system; local[2]: the executor threads too)."""
        with open("/proc/%d/stat" % jvm_pid) as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    times = {name: [] for name in methods}
    cpus = {name: [] for name in methods}
    counts = {}
    for run in range(args.rounds + 1):  # round 0 warms up (JIT, Python workers, caches)
        for name, method in methods.items():
            cpu0 = jvm_cpu()
            start = time.perf_counter()
            counts[name] = method()
            elapsed = time.perf_counter() - start
            cpu = jvm_cpu() - cpu0
            if run > 0:
                times[name].append(elapsed)
                cpus[name].append(cpu)
                print("round %d %-52s %7.3f s  JVM CPU %7.2f s  (%d rows kept)"
                      % (run, name, elapsed, cpu, counts[name]), flush=True)
    plain = statistics.median(times["plain count"])
    plain_cpu = statistics.median(cpus["plain count"])
    trivial_cpu = statistics.median(cpus.get("trivial predicate (k <> 0)", [plain_cpu]))
    print("\n| method | count time, s | minus plain count, s | wall ns a row per core (2 cores) | "
          "JVM CPU, s | CPU ns a row, minus plain count | CPU ns a row, minus the trivial predicate | rows kept |")
    print("|---|---|---|---|---|---|---|---|")
    for name in methods:
        median = statistics.median(times[name])
        cpu = statistics.median(cpus[name])
        print("| %s | %.3f | %.3f | %.1f | %.2f | %.1f | %.1f | %d |"
              % (name, median, median - plain, (median - plain) * 2 / args.rows * 1e9, cpu,
                 (cpu - plain_cpu) / args.rows * 1e9, (cpu - trivial_cpu) / args.rows * 1e9, counts[name]))

    # The C++ batched query of the same filter on the same probe keys, one thread.
    f = ribbon.load(path)
    try:
        f.query_threads = 1
    except (AttributeError, TypeError):
        pass
    keys_np = probes.toPandas()["k"].to_numpy(dtype=np.int64).view(np.uint64)
    best = best_cpu = float("inf")
    for _ in range(3):
        cpu0 = time.process_time()
        start = time.perf_counter()
        kept = int(f.contains(keys_np).sum())
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu0)
    print("C++ batched (ribbon.Filter.contains on a numpy array, query_threads=%s): %.3f s, %.2f ns a key "
          "(CPU %.2f ns a key), %d kept"
          % (getattr(f, "query_threads", "?"), best, best / args.rows * 1e9, best_cpu / args.rows * 1e9, kept))
    spark.stop()


if __name__ == "__main__":
    main()
