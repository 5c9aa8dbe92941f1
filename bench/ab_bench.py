#!/usr/bin/env python3
"""Runs `ribbon bench ... --json` with two or more binaries in rotation (A B C, then C B A, ...)
and prints the median [min..max] of the build, stage, memory and query figures of each and
their ratio to the first binary's.

Usage: bench/ab_bench.py ROUNDS path/to/ribbon-A path/to/ribbon-B [...] -- [ribbon bench options]
Alternating in one session is how versions are compared on the shared, noisy machines.
"""
import json
import statistics
import subprocess
import sys

FIELDS = ["build_ns_per_key", "solve_thread_ns_per_key.sort",
          "solve_thread_ns_per_key.eliminate", "solve_thread_ns_per_key.back_substitute",
          "peak_rss_bytes_per_key", "query_ns_per_key.scalar_positive",
          "query_ns_per_key.scalar_negative", "query_ns_per_key.batched_negative_per_thread",
          "query_ns_per_key.batched_negative_one_thread", "false_positives", "filter_bytes"]


def field(result, name):
    for part in name.split("."):
        result = result[part]
    return result


def main():
    if "--" not in sys.argv or sys.argv.index("--") < 4:
        sys.exit(__doc__)
    split = sys.argv.index("--")
    rounds, binaries, options = int(sys.argv[1]), sys.argv[2:split], sys.argv[split + 1:]
    results = {binary: [] for binary in binaries}
    for round_index in range(rounds):
        for binary in binaries if round_index % 2 == 0 else binaries[::-1]:
            out = subprocess.run([binary, "bench", *options, "--json"], check=True,
                                 capture_output=True, text=True).stdout
            results[binary].append(json.loads(out))
            print(binary, " ".join(f"{name.split('.')[-1]}={field(results[binary][-1], name):.2f}"
                                   for name in FIELDS), flush=True)
    for name in FIELDS:
        base = statistics.median(field(r, name) for r in results[binaries[0]])
        cells = []
        for binary in binaries:
            values = [field(r, name) for r in results[binary]]
            median = statistics.median(values)
            ratio = median / base if base else float("nan")
            cells.append(f"{median:.2f} [{min(values):.1f}..{max(values):.1f}] x{ratio:.3f}")
        print(f"{name}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
