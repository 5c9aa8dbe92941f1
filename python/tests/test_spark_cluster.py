"""ribbon.spark.build on a local cluster that loses an executor mid-stage: Spark reruns the
lost tasks (and the shuffle outputs that lived on it) on a replacement executor, and the
file is still byte-identical to `ribbon build`'s (filters) or ribbon.build's (values=).

Runs spark_lost_executor.py in a process of its own (1.5-2 minutes: a local cluster
starts its JVMs). Run alone: pytest python/tests/test_spark_cluster.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spark_fixtures import cli_build, random_u64, write_keys

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_lost_executor.py")
CANNOT_START = 77
# Layer 0 of 40000 keys in ranges of 2500: at least 16 range tasks, against 5 partitions of
# the source frame, so the helper's kill lands in the range tasks' stage.
RANGE_TASKS = 16
# The source frame partitioned by the key (determinate rows per partition, in any order, as
# after a join) and round robin (indeterminate rows per partition), routed in the JVM (where
# ribbon.jar exists) and in Python; filters, and a retrieval structure (values=).


def builds() -> list:
    """SOURCE:ENGINE:KIND of each build the helper runs."""
    import ribbon.spark_jvm

    try:
        ribbon.spark_jvm.jar_path()
    except FileNotFoundError:
        return ["hash:python:filter", "round-robin:python:filter", "round-robin:python:values"]
    return ["hash:jvm:filter", "round-robin:jvm:filter", "round-robin:python:filter",
            "round-robin:jvm:values"]


def test_a_lost_executor_is_replaced_and_the_file_unchanged(tmp_path):
    pytest.importorskip("pyspark")
    keys = random_u64(40000, seed=31)
    import ribbon

    expected = {
        "filter": cli_build(keys, str(tmp_path), "-w", "32", "--shard-size", "1024"),
        "values": ribbon.build(keys, values=keys & 0xFFF, bits=12, width=32,
                               shard_size=1024).to_bytes(),
    }
    keys_file = write_keys(keys, str(tmp_path / "keys.u64"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    specs = builds()
    run = subprocess.run([sys.executable, HELPER, keys_file, str(out_dir), str(RANGE_TASKS),
                          ",".join(specs)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    if run.returncode == CANNOT_START:
        pytest.skip(run.stderr.strip().splitlines()[-1])
    assert run.returncode == 0, failure_of(run.stderr)
    reports = json.loads(run.stdout.strip().splitlines()[-1])
    for spec in specs:
        report = reports[spec]
        assert report["layers"][0]["ranges"] >= RANGE_TASKS, report
        assert "stage" in report, f"{spec}: no stage of {RANGE_TASKS}+ tasks ran two: {report}"
        # Mid-stage: some range tasks done (Spark cannot start the stage over), some not.
        assert 0 < report["completed_when_killed"] < report["stage_tasks"], report
        assert not report["killed_pid_alive"], report
        # The cluster noticed: a new executor JVM took the lost one's place.
        assert report["killed_pid"] not in report["executors_after"], report
        assert len(set(report["executors_after"]) - set(report["executors_before"])) >= 1, report
        built = (out_dir / f"{spec.replace(':', '-')}.ribbon").read_bytes()
        assert built == expected[spec.split(":")[2]], spec
    assert [n for n in os.listdir(out_dir) if "ribbon-parts" in n or ".tmp-" in n] == []


def failure_of(stderr: str) -> str:
    """The Python traceback in a helper's stderr (Spark's shutdown noise comes after it)."""
    start = stderr.find("Traceback (most recent call last)")
    return stderr[start : start + 6000] if start >= 0 else stderr[-6000:]
