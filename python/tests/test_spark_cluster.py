"""ribbon.spark.build on a local cluster that loses an executor mid-stage: Spark reruns the
lost tasks (and the shuffle outputs that lived on it) on a replacement executor, and the
file is still byte-identical to `ribbon build`'s.

Runs spark_lost_executor.py in a process of its own (about 1.5 minutes: a local cluster
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


def test_a_lost_executor_is_replaced_and_the_file_unchanged(tmp_path):
    pytest.importorskip("pyspark")
    keys = random_u64(40000, seed=31)
    expected = cli_build(keys, str(tmp_path), "-w", "32", "--shard-size", "1024")
    source = write_keys(keys, str(tmp_path / "keys.u64"))
    out = tmp_path / "k.ribbon"
    run = subprocess.run([sys.executable, HELPER, source, str(out), str(RANGE_TASKS)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    if run.returncode == CANNOT_START:
        pytest.skip(run.stderr.strip().splitlines()[-1])
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["layers"][0]["ranges"] >= RANGE_TASKS, report
    assert "stage" in report, f"no stage of {RANGE_TASKS}+ tasks ran two at once: no kill: {report}"
    assert report["completed_when_killed"] < report["stage_tasks"], report  # mid-stage
    assert not report["killed_pid_alive"], report
    # The cluster noticed: a new executor JVM took the lost one's place.
    assert report["killed_pid"] not in report["executors_after"], report
    assert len(set(report["executors_after"]) - set(report["executors_before"])) >= 1, report
    assert out.read_bytes() == expected
    assert [n for n in os.listdir(tmp_path) if "ribbon-parts" in n or ".tmp-" in n] == []
