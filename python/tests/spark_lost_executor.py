"""Run by test_spark_cluster.py in a process of its own (a JVM holds one Spark context, and the
other Spark tests' is local[2,4]): builds filters with ribbon.spark.build on
local-cluster[2,1,1024], a master with two workers and two executor JVMs of one core each,
while a thread kills one executor JVM (SIGKILL) once the range tasks run.

    python spark_lost_executor.py KEYS.u64 OUT_DIR MIN_TASKS SOURCE:ENGINE:KIND[,...]

KEYS.u64: little-endian 64-bit keys. One build per SOURCE:ENGINE:KIND, into
OUT_DIR/SOURCE-ENGINE-KIND.ribbon (KIND: "filter", or "values": a retrieval structure of
each key's low 12 bits, values="v", bits=12), from a
source frame partitioned by "hash" (by the key, as after a join or an aggregation: the same
rows per partition on a rerun, in any order) or "round-robin" (a `repartition(n)`: which rows
a partition gets is itself indeterminate). Each build's kill comes in its first stage of at
least MIN_TASKS tasks (layer 0's range tasks: the source frame has fewer partitions) with two
running and one done; the next build waits for the replacement executor. ENGINE: where layer 0
routes ("jvm": the session gets ribbon.jar; "python"). Prints one JSON
line: per SOURCE:ENGINE:KIND, the build's layers and what was killed when. Exits 77 if the local cluster
cannot start.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import numpy as np

CANNOT_START = 77


def executor_pids(app_id: str) -> list:
    """Process ids of this application's executor JVMs, found by their command lines."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        executor = b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args
        if executor and app_id.encode() in args:
            pids.append(int(entry))
    return sorted(pids)


def kill_an_executor_when_ranges_run(sc, min_tasks: int, report: dict, done: threading.Event):
    tracker = sc.statusTracker()
    while not done.is_set():
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is None or info.numTasks < min_tasks or info.numActiveTasks < 2:
                continue
            if info.numCompletedTasks < 1:  # some done: Spark cannot just start the stage over
                continue
            pids = executor_pids(sc.applicationId)
            os.kill(pids[0], signal.SIGKILL)
            report.update(killed_pid=pids[0], executors_before=pids, stage=stage_id,
                          stage_tasks=info.numTasks, completed_when_killed=info.numCompletedTasks)
            return
        time.sleep(0.05)


def executors_after_replacement(sc, before: list, wait_seconds: float = 120) -> list:
    """The executor pids once the master has launched one not in `before` (it may come after
    the build, which the surviving executor can finish alone), or after `wait_seconds`."""
    deadline = time.monotonic() + wait_seconds
    while True:
        pids = executor_pids(sc.applicationId)
        if set(pids) - set(before) or time.monotonic() > deadline:
            return pids
        time.sleep(0.2)


def wait_for_executors(sc, count: int, wait_seconds: float = 120) -> None:
    """Until `count` executors have registered with the driver (or `wait_seconds` passed)."""
    deadline = time.monotonic() + wait_seconds
    # The driver is one of the tracker's "executors".
    while len(sc._jsc.sc().statusTracker().getExecutorInfos()) < count + 1:
        if time.monotonic() > deadline:
            return
        time.sleep(0.2)


def build_losing_an_executor(session, keys, spec: str, out: str, min_tasks: int) -> dict:
    import pandas as pd

    import ribbon.spark

    source, engine, kind = spec.split(":")
    sc = session.sparkContext
    wait_for_executors(sc, 2)  # the killer needs two running tasks
    columns = {"k": keys, "v": keys & 0xFFF} if kind == "values" else {"k": keys}
    df = session.createDataFrame(pd.DataFrame(columns))
    df = df.repartition(5, "k") if source == "hash" else df.repartition(5)
    report: dict = {}
    done = threading.Event()
    killer = threading.Thread(target=kill_an_executor_when_ranges_run,
                              args=(sc, min_tasks, report, done), daemon=True)
    killer.start()
    values = {"values": "v", "bits": 12} if kind == "values" else {}
    stats = ribbon.spark.build(df, "k", out, width=32, shard_size=1024, range_keys=2500,
                               one_place_keys=10000,  # layer 1 on the driver: fewer jobs
                               engine=engine, **values)
    done.set()
    killer.join()
    report["layers"] = stats.layers
    if "stage" in report:
        report["killed_pid_alive"] = os.path.exists(f"/proc/{report['killed_pid']}")
        report["executors_after"] = executors_after_replacement(sc, report["executors_before"])
    return report


def main(keys_path: str, out_dir: str, min_tasks: int, specs: list) -> int:
    import pyspark
    from pyspark.sql import SparkSession

    # local-cluster launches executors from a Spark installation: pip's pyspark is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder
    if any(":jvm:" in spec for spec in specs):
        import ribbon.spark_jvm

        builder = builder.config("spark.jars", ribbon.spark_jvm.jar_path())
    try:
        session = (
            builder.master("local-cluster[2,1,1024]")
            .appName("ribbon-lost-executor")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "1g")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
            .getOrCreate()
        )
    except Exception as e:  # noqa: BLE001 (any failure to start is reported, then skipped)
        print(f"local-cluster[2,1,1024] did not start: {e}", file=sys.stderr)
        return CANNOT_START
    session.sparkContext.setLogLevel("ERROR")
    keys = np.fromfile(keys_path, dtype="<u8").astype(np.int64)  # two's complement, as the CLI
    reports = {
        spec: build_losing_an_executor(
            session, keys, spec, os.path.join(out_dir, spec.replace(":", "-") + ".ribbon"),
            min_tasks)
        for spec in specs
    }
    session.stop()
    print(json.dumps(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")))
