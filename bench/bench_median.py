#!/usr/bin/env python3
"""Runs `ribbon bench ... --json` several times and prints the median of every figure.

Usage: bench/bench_median.py RUNS path/to/ribbon bench [options...]
Medians because the machines are shared and noisy; min and max are shown beside them.
"""
import json
import statistics
import subprocess
import sys


def flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, inner in value.items():
            flatten(f"{prefix}{key}.", inner, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.setdefault(prefix[:-1], []).append(value)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    command = sys.argv[2:] + ["--json"]
    series = {}
    for _ in range(runs):
        result = subprocess.run(command, check=True, capture_output=True, text=True)
        flatten("", json.loads(result.stdout), series)
    print(f"{runs} runs of: {' '.join(command)}")
    for name, values in series.items():
        print(f"  {name:50s} median {statistics.median(values):14.6g}"
              f"   [{min(values):.6g} .. {max(values):.6g}]")


if __name__ == "__main__":
    main()
