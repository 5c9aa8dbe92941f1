"""Ctrl-C during a long build stops it within about a second, leaving no output or temporary
files. Each case runs in a child interpreter that sends itself SIGINT 0.5 s into the build."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, os, signal, sys, threading, time
import numpy as np
import ribbon

mode, out_dir = sys.argv[1], sys.argv[2]
# As in an interactive interpreter: a background job (CI run with `&`) starts with SIGINT
# ignored, and Python then installs no KeyboardInterrupt handler.
signal.signal(signal.SIGINT, signal.default_int_handler)
keys = np.random.default_rng(1).integers(0, 2**64, size=40_000_000, dtype=np.uint64)
sent = []
def interrupt():
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
timer = threading.Timer(0.5, interrupt)
result = {"interrupted": False}
try:
    if mode == "build":
        timer.start()
        ribbon.build(keys, threads=2, width=128)
    else:
        spill = os.path.join(out_dir, "spill")
        os.mkdir(spill)
        with ribbon.BulkBuilder("u64", memory_limit=64 << 20, tmp_dir=spill, threads=2) as b:
            b.add(keys)
            timer.start()
            b.finish(os.path.join(out_dir, "out.ribbon"))
except KeyboardInterrupt:
    result = {"interrupted": True, "seconds": time.monotonic() - sent[0]}
timer.cancel()
result["files"] = sorted(os.path.relpath(os.path.join(d, f), out_dir)
                         for d, _, files in os.walk(out_dir) for f in files)
print(json.dumps(result))
"""


@pytest.mark.parametrize("mode", ["build", "bulk"])
def test_ctrl_c_stops_the_build(tmp_path, mode):
    run = subprocess.run([sys.executable, "-c", SCRIPT, mode, str(tmp_path)], capture_output=True,
                         text=True, timeout=300, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["interrupted"], result  # the build did not run to its end
    # "Within about a second": the builders poll per group of shards (an uncancelled build would run on for seconds).
    assert result["seconds"] < 2.5, result
    assert result["files"] == [], result  # no output, no spill files
